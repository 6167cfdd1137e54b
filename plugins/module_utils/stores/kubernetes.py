# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubernetesStore: the cluster store backed by the Kubernetes API (the official ``kubernetes`` client).

Reads list Nodes, scheduled Pods (``fieldSelector=spec.nodeName!=``), PersistentVolumes,
PersistentVolumeClaims, VolumeAttachments and CSIDrivers in pages (``limit``/``continue``) and return
the same raw List the file store returns. Requests go through the client's own ``ApiClient.call_api``
(so its auth, TLS, proxy and default headers apply) in the form each client generation has (k8s_api.py ``send``:
kubernetes >= 37 and the 24.2-36 generation), and the JSON bodies are parsed here, so objects stay plain
dicts whatever the client's model classes look like. Failures: k8s_errors.py (the RBAC kubevol needs, timeouts).

Writes: ``apply`` reads the objects the records name, applies the records to a small List holding
those objects with record.py's RecordApplier (the file store's semantics exactly), and sends what
changed, as Kubernetes' own controllers do, in the attach/detach controller's order (k8s_writes.py: a
teardown's records answered before the next setup's are written; docs/stores.md section 7):

- a new VolumeAttachment: POST, then its status through the ``status`` subresource;
- a deleted VolumeAttachment: DELETE with a resourceVersion precondition;
- a changed object: a JSON merge patch of ``metadata``/``spec`` on the object and one of ``status`` on
  its ``status`` subresource, each carrying the resourceVersion that was read.

A 409 Conflict (a concurrent writer), a 404 on an update (deleted meanwhile) or an AlreadyExists on a
create re-reads the stage's objects and applies its records again, with bounded exponential backoff; records
are idempotent, so what the earlier attempt already wrote is not written twice and nothing is lost.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import random
import time

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import k8s_auth
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import k8s_client
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import volume_attachment_name
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import RecordApplier, validate_record
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import (
    DEFAULT_PAGE_SIZE, DELETE, ClusterStore, empty_list)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.k8s_errors import (
    KubernetesApiError, http_error, unreachable_error)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.k8s_writes import (
    Retry, write_object, write_order, write_stages)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.k8s_lease import lease_body, lease_record
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.k8s_api import (  # noqa: F401 (DEFAULT_TIMEOUT)
    BY_KIND, DEFAULT_TIMEOUT, LEASE, RESOURCES, send)

try:  # this module is imported only when the kubernetes store is used (stores.get_store)
    from kubernetes.client.exceptions import ApiException
    import urllib3
except ImportError:  # KubernetesStore() raises MissingLibrary (k8s_auth.require_client)
    ApiException = urllib3 = None

MAX_ATTEMPTS = 6             # reads + writes per apply, on conflicts
BACKOFF_BASE = 0.1
BACKOFF_CAP = 2.0


def _label(obj):
    meta = obj.get("metadata") or {}
    if meta.get("namespace"):
        return "%s/%s/%s" % (obj.get("kind"), meta["namespace"], meta.get("name"))
    return "%s/%s" % (obj.get("kind"), meta.get("name"))


class KubernetesStore(ClusterStore):
    source = "kubernetes"

    def __init__(self, auth=None, page_size=None, request_timeout=None, environ=None, sleep=time.sleep):
        k8s_auth.require_client()
        self.auth = k8s_auth.resolve_auth(auth or {}, environ)
        page_size = DEFAULT_PAGE_SIZE if page_size is None else page_size
        if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
            raise InvalidInput(field="page_size", value=page_size, reason="must be a positive integer")
        self.page_size = page_size
        self.timeout = request_timeout or DEFAULT_TIMEOUT
        self.configuration, self.config_source = k8s_client.build_configuration(self.auth, environ)
        self.configuration.retries = False  # one attempt per request, bounded by self.timeout (DEFAULT_TIMEOUT)
        self.api_client = k8s_client.new_api_client(self.configuration, self.auth)
        self.api_client.user_agent = "kubevol/kubernetes-store"
        self._sleep = sleep
        self.requests = 0
        self.lease_namespace = run_lock.DEFAULT_LEASE_NAMESPACE
        self.lease_name = run_lock.DEFAULT_LEASE_NAME

    @classmethod
    def from_options(cls, page_size=None, lock_timeout=None, **options):
        # lock_timeout is the file store's; the API has no lock (conflicts are retried instead).
        auth = dict((k, options.pop(k)) for k in list(options) if k in k8s_auth.K8S_AUTH_ARGSPEC)
        extra = sorted(k for k, v in options.items() if v is not None)
        if extra:
            raise InvalidInput(field=extra[0], value=options[extra[0]], reason="does not apply to cluster_source=kubernetes")
        return cls(auth, page_size=page_size)

    def describe(self):
        return "kubernetes %s" % self.configuration.host

    # -- the run lock: a coordination.k8s.io/v1 Lease, written with the resourceVersion it read ----------
    def use_run_lock(self, lock):
        self.lease_namespace = lock.get("lease_namespace") or run_lock.DEFAULT_LEASE_NAMESPACE
        self.lease_name = lock.get("lease_name") or run_lock.DEFAULT_LEASE_NAME

    def run_lock_location(self):
        return "Lease %s/%s" % (self.lease_namespace, self.lease_name)

    def _run_lock_swap(self, change):
        path = LEASE.path(self.lease_name, self.lease_namespace)
        label = self.run_lock_location()
        for attempt in range(MAX_ATTEMPTS):
            status, current = self._request("GET", path)
            if status == 404:
                current = None
            elif status != 200 or not isinstance(current, dict):
                raise self._error("GET", LEASE, label, status, current)
            wanted = change(lease_record(current))
            if wanted is None or (wanted is DELETE and current is None):
                return
            body = lease_body(self.lease_name, self.lease_namespace, None if wanted is DELETE else wanted, current)
            if current is None:
                status, data = self._request("POST", LEASE.path(namespace=self.lease_namespace), body=body)
            else:
                status, data = self._request("PUT", path, body=body)
            if status in (200, 201):
                return
            if status != 409:
                raise self._error("POST" if current is None else "PUT", LEASE, label, status, data)
            self._sleep(min(BACKOFF_CAP, BACKOFF_BASE * (2 ** attempt)))  # another run wrote it: decide again
        raise KubernetesApiError(store=self.describe(), verb="update", target=label,
                                 reason="kept conflicting with other writers; retry the run")

    def close(self):
        try:
            self.api_client.close()
        except Exception:  # pylint: disable=broad-except
            pass

    # -- HTTP -----------------------------------------------------------------------------------
    def _request(self, method, path, query=None, body=None, content_type=None):
        """(status, parsed JSON body or None). Connection-level failures raise KubernetesApiError."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type or "application/json"
        self.requests += 1
        try:
            status, raw = send(self.api_client, method, path, list(query or []), headers, body, self.timeout)
        except ApiException as err:  # the client turns TLS errors into ApiException(status=0)
            raise self._unreachable(method, path, err.reason or err)
        except urllib3.exceptions.HTTPError as err:
            raise self._unreachable(method, path, err)
        except (OSError, ValueError) as err:
            raise self._unreachable(method, path, err)
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        try:
            data = json.loads(raw.decode("utf-8")) if raw else None
        except ValueError:
            data = {"message": raw[:300].decode("utf-8", "replace")}
        return status, data

    def _unreachable(self, method, path, err):
        return unreachable_error(self, method, path, err)

    def _error(self, method, resource, target, status, data, subresource=None):
        return http_error(self, method, resource, target, status, data, subresource)

    # -- reading --------------------------------------------------------------------------------
    def list_kind(self, resource):
        """All objects of one kind, paged; items get kind and apiVersion (list responses omit them)."""
        items = []
        token = None
        restarted = False
        pages = 0
        while True:
            query = [("limit", self.page_size)] + list(resource.list_query)
            if token:
                query.append(("continue", token))
            status, data = self._request("GET", resource.path(), query)
            if status == 404 and resource.optional and not token:
                return []  # the cluster does not serve this kind (its CRD is not installed): none of it
            if status == 410 and token and not restarted:
                # The continue token expired (etcd compaction): start over once, as client-go's pager does.
                items, token, restarted = [], None, True
                continue
            if status != 200:
                raise self._error("GET", resource, "%s (list)" % resource.plural, status, data)
            if not isinstance(data, dict) or not isinstance(data.get("items"), list):
                raise KubernetesApiError(store=self.describe(), verb="list", target=resource.plural,
                                         reason="the answer is not a Kubernetes List")
            for obj in data["items"]:
                if isinstance(obj, dict):
                    obj.setdefault("kind", resource.kind)
                    obj.setdefault("apiVersion", resource.api_version)
                    items.append(obj)
            pages += 1
            token = (data.get("metadata") or {}).get("continue")
            if not token:
                return items

    def load(self):
        cluster = empty_list()
        cluster["metadata"] = {"resourceVersion": ""}
        for resource in RESOURCES:
            cluster["items"].extend(self.list_kind(resource))
        return cluster

    def get(self, kind, name, namespace=None):
        """One object as a dict (kind/apiVersion filled in), or None when it does not exist."""
        resource = BY_KIND[kind]
        status, data = self._request("GET", resource.path(name, namespace))
        if status == 404:
            return None
        if status != 200 or not isinstance(data, dict):
            raise self._error("GET", resource, _target(kind, name, namespace), status, data)
        data.setdefault("kind", resource.kind)
        data.setdefault("apiVersion", resource.api_version)
        return data

    # -- writing --------------------------------------------------------------------------------
    @staticmethod
    def objects_named(records):
        """The (kind, namespace, name) of every object the records can read or change."""
        wanted = []
        for record in records:
            rtype = record["type"]
            if record.get("node"):
                wanted.append(("Node", None, record["node"]))
            if rtype in ("attach_intent", "attached", "detached", "detach_requested", "detach_request_cleared"):
                if record.get("driver") is None and record.get("volume_handle") is None and record.get("name"):
                    va = record["name"]
                else:
                    va = volume_attachment_name(record["volume_handle"], record["driver"], record["node"])
                wanted.append(("VolumeAttachment", None, va))
            if rtype in ("controller_expanded", "released", "pv_deleted"):
                wanted.append(("PersistentVolume", None, record["pv_name"]))
            if rtype == "provisioned":
                wanted.append(("PersistentVolume", None, record["pv"]["metadata"]["name"]))
            if rtype == "node_registration":
                wanted.append(("CSINode", None, record["node"]))
            if rtype in ("snapshot_created", "snapshot_bound", "snapshot_released") or (
                    rtype == "snapshot_content_deleted" and record.get("snapshot")):
                namespace, name = record["snapshot"].split("/", 1)
                wanted.append(("VolumeSnapshot", namespace, name))
            if rtype in ("snapshot_created", "snapshot_bound", "snapshot_content_deleted", "snapshot_content_released"):
                wanted.append(("VolumeSnapshotContent", None, record["content_name"]))
            if rtype == "snapshot_created" and record.get("claim"):  # its pvc-as-source-protection finalizer
                namespace, name = record["claim"].split("/", 1)
                wanted.append(("PersistentVolumeClaim", namespace, name))
            if rtype in ("node_expanded", "resize_intent", "node_expansion_pending", "provisioning_started",
                         "provisioning_uncertain", "provisioned", "claim_released") or (
                    rtype == "controller_expanded" and record.get("pvc")):
                namespace, name = record["pvc"].split("/")
                wanted.append(("PersistentVolumeClaim", namespace, name))
        seen, result = set(), []
        for key in wanted:
            if key not in seen:
                seen.add(key)
                result.append(key)
        return result

    def _read(self, keys):
        """{label: object} of the named objects that exist, and the labels of those that do not."""
        found, absent = {}, []
        for kind, namespace, name in keys:
            obj = self.get(kind, name, namespace)
            if obj is None:
                absent.append(_target(kind, name, namespace))
            else:
                found[_label(obj)] = obj
        return found, absent

    def apply(self, records, check_mode=False):
        """Apply the records to the objects they name, and write what changed, stage by stage (k8s_writes.py)."""
        if not isinstance(records, list):
            raise InvalidInput(field="records", value=records, reason="must be a list of record dicts")
        for position, record in enumerate(records):
            validate_record(record, position)
        current, _absent = self._read(self.objects_named(records))
        # All the records on what was read: a missing Node, PV or PVC fails here, before anything is written.
        applier = RecordApplier(_as_list(current))
        changes = applier.apply_all(records)
        if check_mode or not changes:
            return self._result(bool(changes), changes, applier.diff())
        run = {"before": {}, "after": {}, "changes": {}}
        for positions in write_stages(records):
            self._apply_stage([records[i] for i in positions], positions, current, run)
        final = {"before": dict((label, run["before"][label]) for label in run["after"] if label in run["before"]),
                 "after": dict((label, obj) for label, obj in run["after"].items() if obj is not None)}
        summaries = [run["changes"][i] for i in sorted(run["changes"])] if run["after"] else []
        return self._result(bool(run["after"]), summaries, final)

    def _apply_stage(self, records, positions, current, run):
        """Apply one stage's records to ``current`` (what the API holds, kept up to date from the answers) and
        write its changes; a conflict re-reads the stage's objects and applies its records again, with bounded
        exponential backoff; records are idempotent, so nothing is written twice and nothing is lost."""
        last_conflict = None
        for attempt in range(MAX_ATTEMPTS):
            if attempt:
                self._sleep(min(BACKOFF_CAP, BACKOFF_BASE * (2 ** (attempt - 1))) * (0.5 + random.random() / 2))
                found, absent = self._read(self.objects_named(records))
                current.update(found)
                for label in absent:
                    current.pop(label, None)
            applier = RecordApplier(_as_list(current))
            changes = applier.apply_all(records)
            diff = applier.diff()
            for label, obj in diff["before"].items():
                run["before"].setdefault(label, obj)
            for summary in changes:
                run["changes"].setdefault(positions[summary["index"]], dict(summary, index=positions[summary["index"]]))
            try:
                for label in write_order(changes, diff):
                    wanted = diff["after"].get(label)
                    obj = wanted if wanted is not None else current[label]
                    answer = write_object(self, BY_KIND[obj["kind"]], label, current.get(label), wanted)
                    run["after"][label] = wanted
                    if answer is None:
                        current.pop(label, None)
                    elif (answer.get("metadata") or {}).get("resourceVersion"):
                        current[label] = answer
                    else:  # an answer without the object: read it before the next stage writes it again
                        meta = obj["metadata"]
                        current[label] = self.get(obj["kind"], meta["name"], meta.get("namespace"))
                return
            except Retry as retry:
                last_conflict = retry.what
        raise KubernetesApiError(store=self.describe(), verb="update", target=last_conflict,
                                 reason="conflict: another writer kept changing it; gave up after %d attempts "
                                        "(each re-read the objects); retry the run" % MAX_ATTEMPTS)

    def _result(self, changed, changes, diff):
        diff = dict(diff)
        diff["before_header"] = diff["after_header"] = self.describe()
        return {"changed": changed, "changes": changes, "diff": diff}


def _target(kind, name, namespace):
    return "%s/%s%s" % (kind, (namespace + "/") if namespace else "", name)


def _as_list(objects):
    """A List of copies of ``objects`` ({label: object}) for RecordApplier, which changes its items in place."""
    return {"apiVersion": "v1", "kind": "List", "items": [copy.deepcopy(obj) for obj in objects.values()]}
