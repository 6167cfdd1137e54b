# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubernetesStore: the cluster store backed by the Kubernetes API (the official ``kubernetes`` client).

Reads list Nodes, scheduled Pods (``fieldSelector=spec.nodeName!=``), PersistentVolumes,
PersistentVolumeClaims, VolumeAttachments and CSIDrivers in pages (``limit``/``continue``) and return
the same raw List the file store returns. Requests go through the client's own ``ApiClient.call_api``
(so its auth, TLS, proxy and default headers apply) in the form each client generation has (``send``:
kubernetes >= 37 and the 24.2-36 generation), and the JSON bodies are parsed here, so objects stay plain
dicts whatever the client's model classes look like.

Writes: ``apply`` reads the objects the records name, applies the records to a small List holding
those objects with record.py's RecordApplier (the file store's semantics exactly), and sends what
changed, as Kubernetes' own controllers do:

Objects are written in record order, deletions last (docs/stores.md section 7):

- a new VolumeAttachment: POST, then its status through the ``status`` subresource;
- a deleted VolumeAttachment: DELETE with a resourceVersion precondition;
- a changed object: a JSON merge patch of ``metadata``/``spec`` on the object and one of ``status`` on
  its ``status`` subresource, each carrying the resourceVersion that was read.

A 409 Conflict (a concurrent writer), a 404 on an update (deleted meanwhile) or an AlreadyExists on a
create re-reads the objects and applies the records again, with bounded exponential backoff; records
are idempotent, so what the earlier attempt already wrote is not written twice and nothing is lost.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import random
import time

from ansible_collections.kubevol.volumes.plugins.module_utils import k8s_auth, run_lock
from ansible_collections.kubevol.volumes.plugins.module_utils.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.names import volume_attachment_name
from ansible_collections.kubevol.volumes.plugins.module_utils.record import RecordApplier, validate_record
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import (
    DEFAULT_PAGE_SIZE, DELETE, ClusterStore, StoreError, empty_list)

try:  # this module is imported only when the kubernetes store is used (stores.get_store)
    from kubernetes.client.exceptions import ApiException
    import urllib3
except ImportError:  # KubernetesStore() raises MissingLibrary (k8s_auth.require_client)
    ApiException = urllib3 = None

DEFAULT_TIMEOUT = (10, 60)   # connect, read seconds per request
MAX_ATTEMPTS = 6             # reads + writes per apply, on conflicts
BACKOFF_BASE = 0.1
BACKOFF_CAP = 2.0


class Resource:
    def __init__(self, kind, api_version, plural, namespaced, list_query=None):
        self.kind = kind
        self.api_version = api_version
        self.plural = plural
        self.namespaced = namespaced
        self.list_query = list_query or []

    @property
    def prefix(self):
        return "/api/v1" if self.api_version == "v1" else "/apis/" + self.api_version

    def path(self, name=None, namespace=None, subresource=None):
        parts = [self.prefix]
        if self.namespaced and namespace:
            parts.append("namespaces/" + _quote(namespace))
        parts.append(self.plural)
        if name is not None:
            parts.append(_quote(name))
        if subresource:
            parts.append(subresource)
        return "/".join(parts)

    @property
    def group(self):
        return self.api_version.rpartition("/")[0] if "/" in self.api_version else ""


def _quote(text):
    from urllib.parse import quote
    return quote(text, safe="")


RESOURCES = (
    Resource("Node", "v1", "nodes", False),
    Resource("Pod", "v1", "pods", True, [("fieldSelector", "spec.nodeName!=")]),
    Resource("PersistentVolume", "v1", "persistentvolumes", False),
    Resource("PersistentVolumeClaim", "v1", "persistentvolumeclaims", True),
    Resource("VolumeAttachment", "storage.k8s.io/v1", "volumeattachments", False),
    Resource("CSIDriver", "storage.k8s.io/v1", "csidrivers", False),
)
BY_KIND = dict((r.kind, r) for r in RESOURCES)
LEASE = Resource("Lease", "coordination.k8s.io/v1", "leases", True)
RUN_ANNOTATIONS = {"host": "kubevol.io/run-host", "pid": "kubevol.io/run-pid", "pid_start": "kubevol.io/run-pid-start"}


def lease_record(lease):
    """The run-lock record (run_lock.py) a Lease holds, or None when nobody holds it."""
    spec = (lease or {}).get("spec") or {}
    if not spec.get("holderIdentity"):
        return None
    notes = ((lease.get("metadata") or {}).get("annotations") or {})
    record = {"holder": spec["holderIdentity"], "since": spec.get("acquireTime"), "renewed": spec.get("renewTime"),
              "duration": spec.get("leaseDurationSeconds"), "host": notes.get(RUN_ANNOTATIONS["host"])}
    for key in ("pid", "pid_start"):
        try:
            record[key] = int(notes[RUN_ANNOTATIONS[key]])
        except (KeyError, TypeError, ValueError):
            record[key] = None
    return record


def lease_body(name, namespace, record, current=None):
    """A Lease for ``record`` (None: released, as client-go's leader election releases: no holder)."""
    lease = {"apiVersion": LEASE.api_version, "kind": LEASE.kind,
             "metadata": {"name": name, "namespace": namespace, "annotations": {}}, "spec": {}}
    if current is not None:
        lease["metadata"]["resourceVersion"] = (current.get("metadata") or {}).get("resourceVersion")
        transitions = ((current.get("spec") or {}).get("leaseTransitions") or 0)
    else:
        transitions = 0
    if record is None:
        lease["spec"] = {"leaseDurationSeconds": 1, "leaseTransitions": transitions}
        return lease
    before = lease_record(current) if current is not None else None
    if before is not None and before.get("holder") != record["holder"]:
        transitions += 1
    lease["spec"] = {"holderIdentity": record["holder"], "leaseDurationSeconds": record["duration"],
                     "acquireTime": record["since"], "renewTime": record["renewed"], "leaseTransitions": transitions}
    lease["metadata"]["annotations"] = dict((RUN_ANNOTATIONS[k], str(record[k])) for k in RUN_ANNOTATIONS
                                            if record.get(k) is not None)
    return lease


class KubernetesApiError(StoreError):
    """An API request failed; the message names the request, the object and what to check."""

    message = "cluster store {store}: {verb} {target} failed: {reason}"


class _Retry(Exception):
    """A write lost a race (409, or 404 on an update): re-read and apply the records again."""

    def __init__(self, what):
        super(_Retry, self).__init__(what)
        self.what = what


def _label(obj):
    meta = obj.get("metadata") or {}
    if meta.get("namespace"):
        return "%s/%s/%s" % (obj.get("kind"), meta["namespace"], meta.get("name"))
    return "%s/%s" % (obj.get("kind"), meta.get("name"))


def merge_patch(before, after):
    """The JSON merge patch (RFC 7386) that turns ``before`` into ``after``; {} when equal."""
    patch = {}
    for key in before:
        if key not in after:
            patch[key] = None
    for key, value in after.items():
        old = before.get(key, _MISSING)
        if old is _MISSING:
            patch[key] = copy.deepcopy(value)
        elif isinstance(old, dict) and isinstance(value, dict):
            sub = merge_patch(old, value)
            if sub:
                patch[key] = sub
        elif old != value:
            patch[key] = copy.deepcopy(value)
    return patch


_MISSING = object()


def send(api_client, method, path, query, headers, body, timeout):
    """One request through ``api_client.call_api``; returns (HTTP status, raw body) for any status.

    The generated client changed shape in kubernetes 37: ``param_serialize`` builds the request and
    ``call_api(method, url, headers, body, post_params, _request_timeout)`` sends it and returns the
    response whatever its status. Before (24.2 to 36.x), ``call_api(resource_path, method, ...)`` did
    both and raised ApiException for a non-2xx answer. Both apply the configuration's auth settings
    (``BearerToken``) and the client's default headers. Connection and TLS failures raise (ApiException
    with status 0, urllib3 errors, OSError).
    """
    if hasattr(api_client, "param_serialize"):  # kubernetes >= 37
        request = api_client.param_serialize(method, path, query_params=query, header_params=headers, body=body,
                                             auth_settings=["BearerToken"])
        response = api_client.call_api(*request, _request_timeout=timeout)
        return response.status, response.read()
    try:  # kubernetes 24.2 - 36: the raw urllib3 response (not preloaded, not deserialized)
        response = api_client.call_api(path, method, query_params=query, header_params=headers, body=body,
                                       auth_settings=["BearerToken"], _preload_content=False,
                                       _return_http_data_only=True, _request_timeout=timeout)
    except ApiException as err:
        if not err.status:
            raise
        return err.status, err.body
    try:
        return response.status, response.data
    finally:
        response.release_conn()


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
        self.configuration, self.config_source = k8s_auth.build_configuration(self.auth, environ)
        self.api_client = k8s_auth.new_api_client(self.configuration, self.auth)
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
        reason = getattr(err, "reason", None) or err
        text = str(reason)
        if "SSL" in text or "CERTIFICATE" in text.upper():
            hint = ("TLS failed; check ca_cert (the API server's CA), client_cert/client_key, or set "
                    "validate_certs=false only for a test cluster")
        elif "timed out" in text.lower() or "timeout" in type(reason).__name__.lower():
            hint = "the request timed out; check that the API server is reachable and not overloaded, then retry"
        else:
            hint = "check host (or the kubeconfig's server), proxy, and that the API server is running and reachable"
        return KubernetesApiError(store=self.describe(), verb=method, target=path,
                                  reason="cannot reach the API server at %s (%s): %s; %s"
                                         % (self.configuration.host, self.config_source, text, hint))

    def _error(self, method, resource, target, status, data, subresource=None):
        message = (data or {}).get("message") if isinstance(data, dict) else None
        what = "%s %s" % (resource.plural + ("/" + subresource if subresource else ""),
                          ("(%s)" % resource.group) if resource.group else "(core)")
        verb = {"GET": "get", "POST": "create", "DELETE": "delete", "PATCH": "patch", "PUT": "update"}[method]
        if method == "GET" and target.endswith(" (list)"):
            verb = "list"
        if status == 401:
            hint = ("the API server rejected the credentials (%s); check api_key, username/password, "
                    "client_cert/client_key or the kubeconfig user" % k8s_auth.describe_auth(self.auth))
        elif status == 403:
            hint = ("forbidden by RBAC: the user needs verb %r on %s; kubevol needs get/list on nodes, pods, "
                    "persistentvolumes, persistentvolumeclaims, volumeattachments, csidrivers, create/delete/patch "
                    "on volumeattachments, and patch on nodes/status, persistentvolumes, "
                    "persistentvolumeclaims/status, volumeattachments/status" % (verb, what))
        elif status == 404:
            hint = "not found; check that the object exists (and the API serves %s)" % what
        elif status == 409:
            hint = "conflict with a concurrent writer; retry the run"
        elif status == 422:
            hint = "the API server refused the change as invalid; check admission policies, or report a kubevol bug"
        elif status == 410:
            hint = "the list expired while paging; retry the run"
        elif status in (429, 500, 502, 503, 504):
            hint = "the API server is overloaded or failing; retry later"
        else:
            hint = "unexpected answer"
        reason = "HTTP %s: %s%s" % (status, hint, (" (server: %s)" % message) if message else "")
        return KubernetesApiError(store=self.describe(), verb=verb, target=target, reason=reason)

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
            if rtype == "controller_expanded":
                wanted.append(("PersistentVolume", None, record["pv_name"]))
            if rtype in ("node_expanded", "resize_intent") or (rtype == "controller_expanded" and record.get("pvc")):
                namespace, name = record["pvc"].split("/")
                wanted.append(("PersistentVolumeClaim", namespace, name))
        seen, result = set(), []
        for key in wanted:
            if key not in seen:
                seen.add(key)
                result.append(key)
        return result

    def apply(self, records, check_mode=False):
        if not isinstance(records, list):
            raise InvalidInput(field="records", value=records, reason="must be a list of record dicts")
        for position, record in enumerate(records):
            validate_record(record, position)
        keys = self.objects_named(records)
        first_before = {}
        written_after = {}
        changes_by_index = {}
        changed = False
        last_conflict = None
        for attempt in range(MAX_ATTEMPTS):
            if attempt:
                self._sleep(min(BACKOFF_CAP, BACKOFF_BASE * (2 ** (attempt - 1))) * (0.5 + random.random() / 2))
            current = {}
            items = []
            for kind, namespace, name in keys:
                obj = self.get(kind, name, namespace)
                if obj is not None:
                    current[_label(obj)] = obj
                    items.append(copy.deepcopy(obj))
            cluster = {"apiVersion": "v1", "kind": "List", "items": items}
            applier = RecordApplier(cluster)
            changes = applier.apply_all(records)   # ObjectNotFound here: nothing was written in this attempt
            diff = applier.diff()
            for label, obj in diff["before"].items():
                first_before.setdefault(label, obj)
            for summary in changes:
                changes_by_index.setdefault(summary["index"], summary)
            if check_mode:
                return self._result(bool(changes), changes, diff)
            try:
                for label in _write_order(changes, diff):
                    self._write(label, current.get(label), diff["after"].get(label))
                    changed = True
                    written_after[label] = diff["after"].get(label)
            except _Retry as retry:
                last_conflict = retry.what
                continue
            final = {"before": dict((label, first_before[label]) for label in written_after if label in first_before),
                     "after": dict((label, obj) for label, obj in written_after.items() if obj is not None)}
            summaries = [changes_by_index[i] for i in sorted(changes_by_index)] if changed else []
            return self._result(changed, summaries, final)
        raise KubernetesApiError(store=self.describe(), verb="update", target=last_conflict,
                                 reason="conflict: another writer kept changing it; gave up after %d attempts "
                                        "(each re-read the objects); retry the run" % MAX_ATTEMPTS)

    def _result(self, changed, changes, diff):
        diff = dict(diff)
        diff["before_header"] = diff["after_header"] = self.describe()
        return {"changed": changed, "changes": changes, "diff": diff}

    def _write(self, label, current, wanted):
        """Send one object's change: create, delete, or patch object and status with the read resourceVersion."""
        if current is None and wanted is None:
            return
        obj = wanted if wanted is not None else current
        resource = BY_KIND[obj["kind"]]
        meta = obj["metadata"]
        name, namespace = meta["name"], meta.get("namespace")
        if current is None:
            body = dict((k, v) for k, v in wanted.items() if k != "status")
            status, data = self._request("POST", resource.path(namespace=namespace), body=body)
            if status == 409:
                raise _Retry(label)  # AlreadyExists: someone created it meanwhile
            if status not in (200, 201):
                raise self._error("POST", resource, label, status, data)
            if wanted.get("status"):
                rv = (data.get("metadata") or {}).get("resourceVersion")
                self._patch(resource, label, name, namespace, "status",
                            {"metadata": {"resourceVersion": rv}, "status": wanted["status"]})
            return
        rv = current["metadata"].get("resourceVersion")
        if wanted is None:
            body = {"apiVersion": "v1", "kind": "DeleteOptions"}
            if rv:
                body["preconditions"] = {"resourceVersion": rv}
            status, data = self._request("DELETE", resource.path(name, namespace), body=body)
            if status == 404:
                return  # already gone: that is what we wanted
            if status == 409:
                raise _Retry(label)
            if status not in (200, 202):
                raise self._error("DELETE", resource, label, status, data)
            return
        main_before = dict((k, v) for k, v in current.items() if k != "status")
        main_after = dict((k, v) for k, v in wanted.items() if k != "status")
        patch = merge_patch(main_before, main_after)
        if patch:
            patch.setdefault("metadata", {})["resourceVersion"] = rv
            data = self._patch(resource, label, name, namespace, None, patch)
            rv = (data.get("metadata") or {}).get("resourceVersion", rv)
        status_patch = merge_patch({"status": current.get("status") or {}}, {"status": wanted.get("status") or {}})
        if status_patch:
            status_patch["metadata"] = {"resourceVersion": rv}
            self._patch(resource, label, name, namespace, "status", status_patch)

    def _patch(self, resource, label, name, namespace, subresource, patch):
        status, data = self._request("PATCH", resource.path(name, namespace, subresource), body=patch,
                                     content_type="application/merge-patch+json")
        if status in (404, 409):
            raise _Retry(label)
        if status != 200:
            raise self._error("PATCH", resource, label + ("/" + subresource if subresource else ""), status, data,
                              subresource)
        return data if isinstance(data, dict) else {}


def _target(kind, name, namespace):
    return "%s/%s%s" % (kind, (namespace + "/") if namespace else "", name)


def _write_order(changes, diff):
    """The changed objects in the order the records touched them, deletions last: an attach creates
    the VolumeAttachment before the node status reports it, a detach removes the volume from the node
    status before the VolumeAttachment goes (the A/D controller's RemoveVolumeFromReportAsAttached)."""
    order, seen = [], set()
    for summary in changes:
        for label in summary["objects"]:
            if label not in seen:
                seen.add(label)
                order.append(label)
    for label in list(diff["before"]) + list(diff["after"]):
        if label not in seen:
            seen.add(label)
            order.append(label)
    order = [label for label in order if label in diff["before"] or label in diff["after"]]
    return [label for label in order if label in diff["after"]] + [label for label in order if label not in diff["after"]]
