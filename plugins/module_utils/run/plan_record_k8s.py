# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's plan record as ConfigMaps in the Kubernetes API (issue 30): the record kind of the Kubernetes API
store, behind plan_record.py's interface (write, manifest, read_plan, read_node, finish, prune).

Where: the namespace the store keeps its own objects in, the run lock Lease's (``lease_namespace``, default
kube-system); the handle's path is ``k8s:<namespace>/<run id>``: it names the record, never how to reach the API
(the readers are given the cluster store options, as every store task is).

What, for run ``R`` (names ``kubevol-plan-<r>-...``, ``<r>`` the run id in lower case, as object names must be):

- ``-begin``: an empty marker, created first, so that a writer killed midway leaves something pruning finds by
  its label without listing the big objects;
- ``-p-<i>``: the plan (the volume_reconcile_plan result, JSON), gzip-compressed and cut into chunks of at most
  CHUNK_BYTES; ``-n-<k>-<i>``: the share of the k-th of the run's hosts with work (run/plan_view.py node_slice), the
  same way; ``-b-<j>-<i>``: bucket j of the node index ({node: where its share is and its digests, or None for a
  host with nothing to do}), a node's bucket chosen by its name's sha256, so that a node task reads one small
  bucket, not an index of every node;
- ``kubevol-plan-<r>``: the manifest (``data: manifest.json``: version, run id, each chunk's sha256 and each
  whole part's), written LAST: a record without it is not a record, and a reader refuses it;
- ``-finished``: an empty marker created by the run's last step (plan_record.finish).

Every object carries ``app.kubernetes.io/managed-by: kubevol`` and ``kubevol.io/plan-run: R``; the three small
markers also ``kubevol.io/plan-marker: "true"`` (pruning lists only those). Why gzip and ``binaryData``: a plan is
JSON that compresses about tenfold, and the API keeps every object in etcd (its default quota is 2 GiB): an 83 MB
plan of 5,000 nodes, twice (the plan and the shares) and for two runs, would be a large part of it, uncompressed.
Why CHUNK_BYTES: kube-apiserver refuses a ConfigMap over 1 MiB of data (stores/k8s_configmaps.py), and etcd a
request over 1.5 MiB; 900 KiB leaves room for the metadata and the base64 of the request.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import gzip
import json
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_view import node_slice
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_record import (
    RUN_ID, STALE_TEMP_SECONDS, UNFINISHED_SECONDS, VERSION, _digest, _dumps, _started)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import CLUSTER_STORE_ARGSPEC, get_store
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import k8s_configmaps as cms

SCHEME = "k8s:"
CHUNK_BYTES = 900 * 1024
NODES_PER_BUCKET = 256
WRITERS = 8  # concurrent POSTs of the hosts' shares (client-go's default QPS burst is 10)
MANAGED_BY = "app.kubernetes.io/managed-by"
RUN = "kubevol.io/plan-run"
PART = "kubevol.io/plan-part"
MARKER = "kubevol.io/plan-marker"
MANIFEST_KEY = "manifest.json"
CONNECTION_HINT = ("the reconcile role passes its store options (kubevol_cluster_source=kubernetes, "
                   "kubevol_k8s_auth) to the tasks that read the record: give the API's options there (or as "
                   "K8S_AUTH_* environment variables, or a kubeconfig)")


def location(namespace):
    return SCHEME + namespace


def _parse(path):
    namespace, _sep, run_id = path[len(SCHEME):].partition("/")
    return namespace, run_id


def _name(run_id, *parts):
    return "kubevol-plan-" + "-".join([run_id.lower()] + [str(part) for part in parts])


def _labels(run_id, part, marker=False):
    labels = {MANAGED_BY: "kubevol", RUN: run_id, PART: part}
    if marker:
        labels[MARKER] = "true"
    return labels


def _bucket(node, count):
    return int(_digest(node.encode("utf-8"))[:8], 16) % count


class _Api:
    """A KubernetesStore for the record's namespace, built from the cluster store options (never kept anywhere)."""

    def __init__(self, connection, namespace, run_id=None):
        if not isinstance(connection, dict):
            raise KubevolError("plan record %s: it is kept in the Kubernetes API, and reading or writing it needs the "
                               "API's connection options (none were given): %s"
                               % (location(namespace) + ("/" + run_id if run_id else ""), CONNECTION_HINT))
        names = {}
        for key, spec in CLUSTER_STORE_ARGSPEC.items():
            for name in [key] + list(spec.get("aliases") or ()):
                names[name] = key
        given = dict((k, v) for k, v in connection.items() if k in names and k not in ("cluster_source", "cluster_state"))
        validated = ArgumentSpecValidator(CLUSTER_STORE_ARGSPEC).validate(given)
        if validated.error_messages:
            raise KubevolError("plan record in %s: the API's options are not valid: %s; %s"
                               % (location(namespace), "; ".join(validated.error_messages), CONNECTION_HINT))
        params = validated.validated_parameters
        options = dict((k, v) for k, v in params.items() if k not in ("cluster_source", "cluster_state")
                       and v is not None and not (k == "page_size" and v == CLUSTER_STORE_ARGSPEC[k].get("default")))
        try:
            self.store = get_store("kubernetes", **options)
        except KubevolError as err:
            raise KubevolError("plan record in %s: cannot use the Kubernetes API: %s; %s"
                               % (location(namespace), err.msg, CONNECTION_HINT))
        self.store.use_run_lock({"lease_namespace": namespace})  # its messages name this namespace
        self.namespace = namespace

    def __enter__(self):
        return self

    def __exit__(self, *_exc):
        self.store.close()

    def create(self, run_id, name, part, binary=None, data=None, marker=False):
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": self.namespace, "labels": _labels(run_id, part, marker)}}
        if binary is not None:
            body["binaryData"] = {"chunk": base64.b64encode(binary).decode("ascii")}
        if data is not None:
            body["data"] = data
        if not cms.create(self.store, self.namespace, body) and not marker:
            raise KubevolError("plan record of run %s: ConfigMap %s/%s exists already (another writer with this run "
                               "id?): nothing was changed in the cluster; run the reconcile again (a new run id)"
                               % (run_id, self.namespace, name))

    def get(self, name):
        return cms.get(self.store, self.namespace, name)


def _put(api, run_id, part, data):
    """Write ``data`` as part ``part``: gzip, cut into chunks, one ConfigMap each. Its manifest entry."""
    packed = gzip.compress(data, mtime=0)
    chunks = [packed[at:at + CHUNK_BYTES] for at in range(0, len(packed), CHUNK_BYTES)] or [b""]
    for index, chunk in enumerate(chunks):
        api.create(run_id, _name(run_id, part, index), part.split("-")[0], binary=chunk)
    return {"digest": _digest(data), "chunks": [_digest(chunk) for chunk in chunks]}


def _refused(handle, what, why):
    return KubevolError("plan record of run %s: %s %s: nothing was done with it. The record is written by this run's "
                        "plan task and kept until two later runs have planned; run the reconcile again (it plans "
                        "anew)" % (handle["run_id"], what, why))


def _get(api, handle, part, entry):
    """Part ``part`` of the record, each chunk checked against the manifest's sha256, then the whole."""
    namespace, run_id = _parse(handle["path"])
    packed = []
    for index, digest in enumerate(entry["chunks"]):
        name = _name(run_id, part, index)
        what = "ConfigMap %s/%s" % (namespace, name)
        obj = api.get(name)
        if obj is None:
            raise _refused(handle, what, "is missing (the record is incomplete, or was pruned)")
        try:
            chunk = base64.b64decode((obj.get("binaryData") or {}).get("chunk") or "")
        except (TypeError, ValueError):
            chunk = None
        if chunk is None or _digest(chunk) != digest:
            raise _refused(handle, what, "is not the one this run wrote (its sha256 differs)")
        packed.append(chunk)
    try:
        data = gzip.decompress(b"".join(packed))
    except (OSError, EOFError, zlib.error):
        data = None
    if data is None or _digest(data) != entry["digest"]:
        raise _refused(handle, "part %s in %s" % (part, namespace), "is not the one this run wrote (its sha256 differs)")
    return json.loads(data.decode("utf-8"))


def write(plan_result, where, run_id, shares, hosts, connection):
    """Write the record of run ``run_id`` in namespace ``where`` (``k8s:<namespace>``): (path, manifest digest).

    ``shares``: [(node, its share)] of the nodes with a share of their own; ``hosts``: the run's hosts (None: every
    node of the plan), each listed in its bucket."""
    namespace = where[len(SCHEME):]
    with _Api(connection, namespace, run_id) as api:
        try:
            return _write(api, plan_result, namespace, run_id, shares, hosts)
        except KubevolError as err:
            raise KubevolError("plan record of run %s: cannot write it as ConfigMaps in namespace %s: %s. Nothing was "
                               "changed on the nodes or in the volumes' objects; what was written is pruned after an "
                               "hour (it has no manifest)" % (run_id, namespace, err.msg))


def _write(api, plan_result, namespace, run_id, shares, hosts):
    """write()'s requests: the begin marker, the plan, the shares, the buckets, the manifest last."""
    api.create(run_id, _name(run_id, "begin"), "begin", marker=True)
    manifest = {"version": VERSION, "run_id": run_id, "plan": _put(api, run_id, "p", _dumps(plan_result)),
                "sharded": hosts is not None}
    index = dict((node, None) for node in hosts or ())
    # the shares (one object or more per host with work: thousands on a fleet) sent WRITERS at a time: each
    # POST waits for its answer, and the API server serves many at once; the manifest still comes after all
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        entries = list(pool.map(lambda job: dict(_put(api, run_id, "n-%d" % job[0], _dumps(job[1][1])), n=job[0]),
                                enumerate(shares)))
    for (node, _share), entry in zip(shares, entries):
        index[node] = entry
    count = max(1, -(-len(index) // NODES_PER_BUCKET))
    buckets = [{} for _number in range(count)]
    for node, entry in index.items():
        buckets[_bucket(node, count)][node] = entry
    manifest["buckets"] = [_put(api, run_id, "b-%d" % number, _dumps(bucket)) for number, bucket in enumerate(buckets)]
    data = _dumps(manifest)
    api.create(run_id, _name(run_id), "manifest", data={MANIFEST_KEY: data.decode("utf-8")}, marker=True)
    return "%s/%s" % (location(namespace), run_id), _digest(data)


def _manifest(api, handle):
    namespace, run_id = _parse(handle["path"])
    name = _name(run_id)
    obj = api.get(name)
    if obj is None:
        raise _refused(handle, "manifest ConfigMap %s/%s" % (namespace, name),
                       "is missing (its writer did not finish, or the record was pruned)")
    data = ((obj.get("data") or {}).get(MANIFEST_KEY) or "").encode("utf-8")
    if _digest(data) != handle["digest"]:
        raise _refused(handle, "manifest ConfigMap %s/%s" % (namespace, name),
                       "is not the one this run wrote (its sha256 differs)")
    found = json.loads(data.decode("utf-8"))
    if found.get("version") != VERSION or found.get("run_id") != run_id:
        raise _refused(handle, "manifest ConfigMap %s/%s" % (namespace, name), "was written by another version or run")
    return found


def manifest(handle, connection):
    namespace = _parse(handle["path"])[0]
    with _Api(connection, namespace, handle["run_id"]) as api:
        return _manifest(api, handle)


def read_plan(handle, connection):
    with _Api(connection, _parse(handle["path"])[0], handle["run_id"]) as api:
        return _get(api, handle, "p", _manifest(api, handle)["plan"])


def read_node(handle, node, connection):
    """One node's share: the manifest, the node's bucket and the node's own chunks (three GETs for most nodes)."""
    with _Api(connection, _parse(handle["path"])[0], handle["run_id"]) as api:
        found = _manifest(api, handle)
        number = _bucket(node, len(found["buckets"]))
        bucket = _get(api, handle, "b-%d" % number, found["buckets"][number])
        if node in bucket:
            entry = bucket[node]
            return {"plan": [], "volume_items": {}} if entry is None else _get(api, handle, "n-%d" % entry["n"], entry)
        if found.get("sharded"):
            return node_slice(_get(api, handle, "p", found["plan"]), node)  # not one of the run's hosts
        return {"plan": [], "volume_items": {}}


def finish(handle, connection):
    namespace, run_id = _parse(handle["path"])
    try:
        with _Api(connection, namespace, run_id) as api:
            api.create(run_id, _name(run_id, "finished"), "finished", marker=True)
    except Exception:  # pylint: disable=broad-except  # an unmarked record stays until UNFINISHED_SECONDS
        pass


def prune(where, keep, current, now, connection):
    """plan_record.prune's rule over the records of namespace ``where``: the ``keep`` newest stay (never
    ``current``), older ones go when finished or older than UNFINISHED_SECONDS; a killed writer's parts (a
    begin marker without a manifest) go after STALE_TEMP_SECONDS. Only kubevol's labelled objects are listed or
    deleted; the manifest first, so that no reader ever sees part of a record as whole."""
    namespace = where[len(SCHEME):]
    now = time.time() if now is None else now
    with _Api(connection, namespace) as api:
        runs = {}
        for obj in cms.list_labelled(api.store, namespace, "%s=kubevol,%s=true" % (MANAGED_BY, MARKER)):
            labels = (obj.get("metadata") or {}).get("labels") or {}
            if RUN_ID.match(labels.get(RUN) or ""):
                runs.setdefault(labels[RUN], set()).add(labels.get(PART))
        records = sorted((run for run, parts in runs.items() if "manifest" in parts and run != current), reverse=True)
        doomed = [run for run in (records[max(keep - 1, 0):] if current else records[keep:])
                  if "finished" in runs[run] or now - _started(run) > UNFINISHED_SECONDS]
        doomed += [run for run, parts in runs.items()
                   if "manifest" not in parts and run != current and now - _started(run) > STALE_TEMP_SECONDS]
        for run in doomed:
            cms.delete(api.store, namespace, _name(run))
            cms.delete_labelled(api.store, namespace, "%s=kubevol,%s=%s" % (MANAGED_BY, RUN, run))
