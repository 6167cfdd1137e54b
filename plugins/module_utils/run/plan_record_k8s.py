# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's plan record as ConfigMaps in the Kubernetes API, so that every controller of a sliced run reads the
same record: the record kind of the Kubernetes API store, behind plan_record.py's interface (write, manifest,
read_plan, read_node, finish, prune).

Where: the namespace the store keeps its own objects in, the run lock Lease's (``lease_namespace``, default
kube-system); the handle's path is ``k8s:<namespace>/<run id>``: it names the record, never how to reach the API
(the readers are given the cluster store options, as every store task is).

What, for run ``R`` (names ``kubevol-plan-<r>-...``, ``<r>`` the run id in lower case, as object names must be):

- ``-begin``: an empty marker, created first, so that a writer killed midway leaves something pruning finds by
  its label without listing the big objects;
- ``-p-<i>``: the rest of the plan (run/plan_record_parts.py: all of the volume_reconcile_plan result but the run's
  hosts' shares), gzip-compressed and cut into chunks of at most CHUNK_BYTES;
- ``-b-<j>-<i>``: bucket j of the run's hosts: {host: its share (steps, their positions, its volume items), or None
  for a host with nothing to do}, a host's bucket chosen by its name's sha256, the same way; a node task reads one
  bucket of NODES_PER_BUCKET hosts, not the whole plan, and each share is written once;
- ``kubevol-plan-<r>``: the manifest (``data: manifest.json``: version, run id, each chunk's sha256 and each
  whole part's), written LAST: a record without it is not a record, and a reader refuses it;
- ``-finished``: an empty marker created by the run's last step (plan_record.finish).

Every object carries ``app.kubernetes.io/managed-by: kubevol`` and ``kubevol.io/plan-run: R``; the three small
markers also ``kubevol.io/plan-marker: "true"`` (pruning lists only those). Why gzip and ``binaryData``: a plan is
JSON that compresses about twentyfold, and the API keeps every object in etcd (its default quota is 2 GiB). Why
CHUNK_BYTES: kube-apiserver refuses a ConfigMap over 1 MiB of data (stores/k8s_configmaps.py) and etcd a request over
1.5 MiB; 720 KiB is 960 KiB once base64-encoded in the request's JSON, so that no object is over 1 MiB however it is
counted (decoded, as the API's validation counts it, or as the JSON sent and kept by an API server that stores JSON).
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

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError, PlanRecordFailed
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record_parts as parts
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_record_parts import (
    RUN_ID, STALE_TEMP_SECONDS, UNFINISHED_SECONDS, VERSION, _digest, _dumps, _started)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import CLUSTER_STORE_ARGSPEC, get_store
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import k8s_configmaps as cms

SCHEME = "k8s:"
CHUNK_BYTES = 720 * 1024
NODES_PER_BUCKET = 256
BUCKET_BYTES = 4 * 1024 * 1024  # of JSON, about one chunk once compressed: a node task reads the manifest and one chunk
WRITERS = 8  # concurrent POSTs of the buckets (client-go's default QPS burst is 10)
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
            raise PlanRecordFailed("plan record %s: it is kept in the Kubernetes API, and reading or writing it needs "
                                   "the API's connection options (none were given): %s"
                                   % (location(namespace) + ("/" + run_id if run_id else ""), CONNECTION_HINT))
        names = {}
        for key, spec in CLUSTER_STORE_ARGSPEC.items():
            for name in [key] + list(spec.get("aliases") or ()):
                names[name] = key
        given = dict((k, v) for k, v in connection.items() if k in names and k not in ("cluster_source", "cluster_state"))
        validated = ArgumentSpecValidator(CLUSTER_STORE_ARGSPEC).validate(given)
        if validated.error_messages:
            raise PlanRecordFailed("plan record in %s: the API's options are not valid: %s; %s"
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
            raise PlanRecordFailed("plan record of run %s: ConfigMap %s/%s exists already (another writer with this "
                                   "run id?): nothing was changed in the cluster; run the reconcile again (a new run "
                                   "id)"
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
    # the record is written by this run's plan task and kept until two later runs have planned
    return PlanRecordFailed("plan record of run %s: %s %s, so it is not used: run the reconcile again (it plans anew)"
                            % (handle["run_id"], what, why))


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


def write(rest, shares, where, run_id, connection):
    """Write the record of run ``run_id`` in namespace ``where`` (``k8s:<namespace>``): (path, manifest digest).

    ``rest``, ``shares``: plan_record_parts.split's (the run's hosts' shares, None for a host with nothing to do)."""
    namespace = where[len(SCHEME):]
    with _Api(connection, namespace, run_id) as api:
        try:
            return _write(api, rest, shares, namespace, run_id)
        except KubevolError as err:
            # what was written is pruned after an hour (it has no manifest)
            raise KubevolError("plan record of run %s: cannot write it as ConfigMaps in namespace %s (%s), so nothing "
                               "was changed on the nodes: check the run's access to ConfigMaps there and run again"
                               % (run_id, namespace, err.msg))


def _write(api, rest, shares, namespace, run_id):
    """write()'s requests: the begin marker, the rest, the buckets, the manifest last."""
    api.create(run_id, _name(run_id, "begin"), "begin", marker=True)
    manifest = {"version": VERSION, "run_id": run_id, "plan": _put(api, run_id, "p", _dumps(rest))}
    # each share encoded once; a bucket is their JSON object, put together from the encoded shares
    encoded = [(_dumps(node), _dumps(share)) for node, share in shares]
    size = sum(len(name) + len(data) + 2 for name, data in encoded)
    count = max(1, -(-len(shares) // NODES_PER_BUCKET), -(-size // BUCKET_BYTES))
    buckets = [[] for _number in range(count)]
    for (node, _share), (name, data) in zip(shares, encoded):
        buckets[_bucket(node, count)].append(name + b":" + data)
    # a bucket or more per NODES_PER_BUCKET hosts (twenty at 5,000 hosts), sent WRITERS at a time: each POST waits
    # for its answer, and the API server serves many at once; the manifest still comes after all
    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        manifest["buckets"] = list(pool.map(lambda job: _put(api, run_id, "b-%d" % job[0],
                                                             b"{" + b",".join(job[1]) + b"}"), enumerate(buckets)))
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
    """The whole plan: the manifest, the rest and every bucket."""
    with _Api(connection, _parse(handle["path"])[0], handle["run_id"]) as api:
        found = _manifest(api, handle)
        shares = []
        for number, entry in enumerate(found["buckets"]):
            shares.extend(_get(api, handle, "b-%d" % number, entry).items())
        return parts.assemble(_get(api, handle, "p", found["plan"]), shares)


def read_node(handle, node, connection):
    """One node's share: the manifest and the node's bucket (two GETs for a host of the run; a node outside them is
    in the rest)."""
    with _Api(connection, _parse(handle["path"])[0], handle["run_id"]) as api:
        found = _manifest(api, handle)
        number = _bucket(node, len(found["buckets"]))
        bucket = _get(api, handle, "b-%d" % number, found["buckets"][number])
        if node in bucket:
            return parts.node_view(node, bucket[node])
        return parts.other_share(_get(api, handle, "p", found["plan"]), node)


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
