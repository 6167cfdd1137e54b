"""A small fake Kubernetes API server for tests (stdlib only): real HTTP(S) on 127.0.0.1.

It speaks what kubevol's kubernetes store uses, the way kube-apiserver answers:

- paths ``/api/v1/[namespaces/NS/]PLURAL[/NAME[/status]]`` and ``/apis/GROUP/VERSION/...`` for nodes,
  pods, persistentvolumes, persistentvolumeclaims (namespaced), volumeattachments, csidrivers, storageclasses,
  csinodes, leases, secrets, configmaps and the external-snapshotter's volumesnapshotclasses, volumesnapshots
  (namespaced) and volumesnapshotcontents (``serve_snapshots = False``: their CRDs are not installed, 404);
- finalizers as kube-apiserver keeps them: a DELETE of an object that has finalizers sets its deletionTimestamp and
  keeps it; an update that leaves such an object without finalizers removes it; a PV or claim created (POST) gets
  the ``kubernetes.io/pv-protection`` / ``pvc-protection`` finalizer (the StorageObjectInUseProtection admission
  plugin) and a new PV the phase Pending;
- GET list with ``limit``/``continue`` paging, ``fieldSelector`` (``spec.nodeName!=``, ``spec.nodeName=X``) and
  ``labelSelector`` (``a=b``, ``a!=b``, ``a``, ``!a``, comma-joined); list items carry no kind/apiVersion, as in the
  real API; DELETE on a collection (``deletecollection``, with a labelSelector);
- ConfigMaps (the plan record's) refused with 422 over 1 MiB of data, as kube-apiserver's ValidateConfigMap does
  (``data`` values and the decoded ``binaryData`` values count);
- GET one, POST (201; status dropped on create; 409 AlreadyExists), DELETE (DeleteOptions
  ``preconditions.resourceVersion``), PUT and PATCH (merge-patch and strategic-merge-patch, both
  treated as a JSON merge patch) on the object and its ``status`` subresource: an object update
  keeps the old status, a status update keeps everything but the status;
- ``metadata.resourceVersion`` on every object, from one counter bumped per write; an update or
  patch whose body carries a different resourceVersion gets 409 Conflict;
- authentication: bearer tokens, basic users, or a verified TLS client certificate; 401 otherwise;
- a configurable RBAC deny list of ``(verb, resource)`` -> 403 (resource like ``nodes/status``);
- a request log (with the impersonation headers and user agents each request carried), a journal of
  what the server held after each write (journal.py: VolumeAttachments, nodes' volumesAttached), hooks run
  before a write (to inject a concurrent writer, or raise Die to make the server drop the request and
  stop), stop() and restart() on the same port.

One concern per module, every name importable from ``fakeapi`` as well: apiserver.py (FakeApiServer: its state,
its life, the handling of a request), storage.py (the verbs on the stored objects), resources.py (the resource
table, merge_patch), selectors.py (validation and selectors), handler.py (the HTTP handler, Die), journal.py,
server.py (a test server's life), clientconfig.py (certificates and a kubeconfig for clients), oidc.py and
proxy.py (an OIDC issuer and a forward proxy for the authentication tests).
"""
from fakeapi.apiserver import FakeApiServer  # noqa: F401 (the names importers use)
from fakeapi.clientconfig import make_certs, write_kubeconfig  # noqa: F401
from fakeapi.handler import Die, _Handler  # noqa: F401
from fakeapi.resources import PLURAL, PROTECTION, RESOURCES, SNAPSHOT_PLURALS, VERBS, merge_patch  # noqa: F401
from fakeapi.selectors import MAX_CONFIGMAP_BYTES, ApiError  # noqa: F401
