# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Kubernetes API store says when a request fails: the RBAC it needs, and why the server was not reached.

``PERMISSIONS`` is the one list of what kubevol asks the API for (docs/stores.md section 7 shows it as a
ClusterRole and a Role, and a test checks the two agree): the 403 message prints it whole.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import k8s_auth
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import StoreError

# (API group, resource, verbs): every request the store sends. Leases and ConfigMaps live in the run lock's namespace
# (a Role); the rest are cluster-scoped or read in all namespaces (a ClusterRole).
PERMISSIONS = (
    ("", "nodes", ("get", "list", "patch")),  # patch: the topology labels and node id annotation of registration
    ("", "nodes/status", ("patch",)),
    ("", "pods", ("list",)),
    ("", "persistentvolumes", ("get", "list", "create", "patch", "delete")),  # provisioned, resized, deleted
    ("", "persistentvolumes/status", ("patch",)),  # phase Bound, Released
    ("", "persistentvolumeclaims", ("get", "list", "patch")),  # bound; the pvc-protection finalizer removed
    ("", "persistentvolumeclaims/status", ("patch",)),
    ("storage.k8s.io", "volumeattachments", ("get", "list", "create", "patch", "delete")),
    ("storage.k8s.io", "volumeattachments/status", ("patch",)),
    ("storage.k8s.io", "csidrivers", ("list",)),
    ("storage.k8s.io", "storageclasses", ("list",)),
    ("storage.k8s.io", "csinodes", ("get", "list", "create", "patch")),  # the kubelet's registration
    # the external-snapshotter's CRDs (a cluster without them answers 404, read as none)
    ("snapshot.storage.k8s.io", "volumesnapshotclasses", ("list",)),
    ("snapshot.storage.k8s.io", "volumesnapshots", ("get", "list", "patch")),  # its finalizers; bound: its status
    ("snapshot.storage.k8s.io", "volumesnapshots/status", ("patch",)),
    ("snapshot.storage.k8s.io", "volumesnapshotcontents", ("get", "list", "create", "patch", "delete")),
    ("snapshot.storage.k8s.io", "volumesnapshotcontents/status", ("patch",)),
    # read one by one, never listed: the Secrets an external CSI driver's PV names (spec.csi.*SecretRef) and a
    # StorageClass's provisioner secret (csi.storage.k8s.io/provisioner-secret-name)
    ("", "secrets", ("get",)),
    ("coordination.k8s.io", "leases", ("get", "create", "update")),
    # the run's plan record (run/plan_record_k8s.py): created, read by its parts, its markers listed, pruned
    ("", "configmaps", ("get", "list", "create", "delete", "deletecollection")),
)
NAMESPACED = frozenset(["leases", "configmaps"])


def rbac_rules(namespaced=False):
    """The PolicyRules of the ClusterRole (``namespaced`` False) or of the lease namespace's Role."""
    rules = []
    for group, resource, verbs in PERMISSIONS:
        if (resource in NAMESPACED) == namespaced:
            rules.append({"apiGroups": [group], "resources": [resource], "verbs": list(verbs)})
    return rules


def permissions_text(lease_namespace):
    """Every permission on one line, for the 403 message."""
    parts = []
    for group, resource, verbs in PERMISSIONS:
        where = " in namespace %s" % lease_namespace if resource in NAMESPACED else ""
        parts.append("%s on %s (%s)%s" % ("/".join(verbs), resource, group or "core", where))
    return "; ".join(parts)


class KubernetesApiError(StoreError):
    """An API request failed; the message names the request, the object and what to check."""

    message = "cluster store {store}: {verb} {target} failed: {reason}"


VERBS = {"GET": "get", "POST": "create", "DELETE": "delete", "PATCH": "patch", "PUT": "update"}


def http_error(store, method, resource, target, status, data, subresource=None):
    """KubernetesApiError for an HTTP answer that is not the one expected (store: the KubernetesStore)."""
    message = (data or {}).get("message") if isinstance(data, dict) else None
    what = "%s %s" % (resource.plural + ("/" + subresource if subresource else ""),
                      ("(%s)" % resource.group) if resource.group else "(core)")
    verb = VERBS[method]
    if method == "GET" and target.endswith(" (list)"):
        verb = "list"
    elif method == "DELETE" and target.endswith(" (collection)"):
        verb = "deletecollection"
    if resource.plural in NAMESPACED:
        what += " in namespace %s" % store.lease_namespace
    if status == 401:
        hint = ("the API server rejected the credentials (%s); check api_key, username/password, "
                "client_cert/client_key or the kubeconfig user" % k8s_auth.describe_auth(store.auth))
    elif status == 403:
        hint = ("forbidden by RBAC: the user needs verb %r on %s; grant kubevol all it uses (docs/stores.md, "
                "section 7, has them as a ClusterRole and a Role): %s"
                % (verb, what, permissions_text(store.lease_namespace)))
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
    return KubernetesApiError(store=store.describe(), verb=verb, target=target, reason=reason)


_TIMEOUT_VALUE = re.compile(r"timeout=([0-9.]+)")
_AFTER_A_TIMEOUT = ("records are idempotent: the next run re-reads the objects and writes only what is still "
                    "missing")


def _pair(timeout):
    """(connect, read) seconds of a request timeout given as a pair or one number (both)."""
    return tuple(timeout) if isinstance(timeout, (tuple, list)) else (timeout, timeout)


def _timeout_kind(err, text, timeout):
    """'connect', 'handshake', 'read' or None: which of the request's timeouts (connect, read) expired.

    urllib3 raises ConnectTimeoutError when the TCP connection is not made in time, and ReadTimeoutError both
    when the TLS handshake (bounded by the connect timeout) and when the answer (the read timeout) does not
    come; its message then carries the value that expired ("read timeout=10"), which tells the two apart."""
    names = [type(err).__name__, type(getattr(err, "reason", None)).__name__]
    if "ConnectTimeoutError" in names:
        return "connect"
    if "ReadTimeoutError" not in names and "timed out" not in text.lower():
        return None
    connect, read = _pair(timeout)
    found = _TIMEOUT_VALUE.search(text)
    if found:
        value = float(found.group(1))
        if value == float(read) and value != float(connect):
            return "read"
        if value == float(connect) and value != float(read):
            return "handshake"
    return "read" if "Read timed out" in text else "connect"


def unreachable_error(store, method, path, err):
    """KubernetesApiError for a request that got no HTTP answer: refused, a timeout (which, its value, the
    request), TLS; each with what to check."""
    reason = getattr(err, "reason", None) or err
    text = str(reason)
    connect, read = _pair(store.timeout)
    kind = _timeout_kind(reason, text, store.timeout)
    if kind == "connect":
        hint = ("the connect timeout (%s s) expired: no TCP connection to the API server; check host (or the "
                "kubeconfig's server), proxy, firewall, and that the API server is running; %s"
                % (connect, _AFTER_A_TIMEOUT))
    elif kind == "handshake":
        hint = ("the connect timeout (%s s, TCP connect and TLS handshake) expired: the server took the TCP "
                "connection but did not complete the TLS handshake, so it is frozen or overloaded; check that "
                "kube-apiserver is running and answers (kubectl get --raw /readyz), then run again; %s"
                % (connect, _AFTER_A_TIMEOUT))
    elif kind == "read":
        hint = ("the read timeout (%s s) expired waiting for the answer: the API server took the request but did "
                "not answer, so it (or etcd behind it) is stuck or overloaded; check kubectl get --raw /readyz "
                "and etcd's health, then run again; this request may or may not have been applied, and %s"
                % (read, _AFTER_A_TIMEOUT))
    elif "SSL" in text or "CERTIFICATE" in text.upper():
        hint = ("TLS failed; check ca_cert (the API server's CA), client_cert/client_key, or set "
                "validate_certs=false only for a test cluster")
    else:
        hint = "check host (or the kubeconfig's server), proxy, and that the API server is running and reachable"
    return KubernetesApiError(store=store.describe(), verb=method, target=path,
                              reason="cannot reach the API server at %s (%s): %s; %s"
                                     % (store.configuration.host, store.config_source, text, hint))
