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
"""
import base64
import copy
import json
import os
import ssl
import subprocess
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from fakeapi.journal import snapshot
from fakeapi.selectors import (  # noqa: F401 (MAX_CONFIGMAP_BYTES: for the tests)
    MAX_CONFIGMAP_BYTES, ApiError, check_size as _check_size, field_match as _field_match, label_match as _label_match)
from fakeapi.server import LocalServer

# plural -> (kind, apiVersion, namespaced)
RESOURCES = {
    "nodes": ("Node", "v1", False),
    "pods": ("Pod", "v1", True),
    "persistentvolumes": ("PersistentVolume", "v1", False),
    "persistentvolumeclaims": ("PersistentVolumeClaim", "v1", True),
    "volumeattachments": ("VolumeAttachment", "storage.k8s.io/v1", False),
    "csidrivers": ("CSIDriver", "storage.k8s.io/v1", False),
    "leases": ("Lease", "coordination.k8s.io/v1", True),
    "secrets": ("Secret", "v1", True),  # read one by one, for an external CSI driver's secret references
    "configmaps": ("ConfigMap", "v1", True),  # the run's plan record (run/plan_record_k8s.py)
    "storageclasses": ("StorageClass", "storage.k8s.io/v1", False),
    "csinodes": ("CSINode", "storage.k8s.io/v1", False),
    "volumesnapshotclasses": ("VolumeSnapshotClass", "snapshot.storage.k8s.io/v1", False),
    "volumesnapshots": ("VolumeSnapshot", "snapshot.storage.k8s.io/v1", True),
    "volumesnapshotcontents": ("VolumeSnapshotContent", "snapshot.storage.k8s.io/v1", False),
}
SNAPSHOT_PLURALS = frozenset(("volumesnapshotclasses", "volumesnapshots", "volumesnapshotcontents"))
# StorageObjectInUseProtection: the finalizer the admission plugin adds to a new PV or claim
PROTECTION = {"persistentvolumes": "kubernetes.io/pv-protection", "persistentvolumeclaims": "kubernetes.io/pvc-protection"}
PLURAL = dict((kind, plural) for plural, (kind, _v, _n) in RESOURCES.items())
VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class Die(Exception):
    """Raised by a hook: the server drops this request's connection and stops (an API that dies)."""


class FakeApiServer(LocalServer):
    def __init__(self, tokens=("test-token",), users=None, tls=None, port=0):
        """tls: None, or {"cert": path, "key": path, "client_ca": path (optional, enables client certs)}."""
        self.tokens = set(tokens or ())
        self.users = dict(users or {})
        self.tls = tls
        self.port = port
        self.lock = threading.RLock()
        self.objects = {}          # (plural, namespace or "", name) -> object (kind/apiVersion included)
        self.rv = 100
        self.deny = set()          # {(verb, "plural[/sub]")}
        self.log = []              # [{"method", "path", "query", "status", "user"}]
        self.journal = []          # after each write answered 2xx: what the server held (journal.py)
        self.hooks = []            # callables(server, request dict) run before a write; return True to unhook
        self.delay = 0.0
        self.serve_snapshots = True  # False: the snapshot CRDs are not installed (their paths answer 404)
        self.httpd = None
        self.thread = None
        self.dead = False
        self._stop_lock = threading.Lock()

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def scheme(self):
        return "https" if self.tls else "http"

    @property
    def url(self):
        return "%s://127.0.0.1:%d" % (self.scheme, self.port)

    def handler_class(self):
        return type("Handler", (_Handler,), {"api": self})

    def tls_context(self):
        if not self.tls:
            return None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.tls["cert"], self.tls["key"])
        if self.tls.get("client_ca"):
            context.load_verify_locations(self.tls["client_ca"])
            context.verify_mode = ssl.CERT_OPTIONAL
        return context

    def start(self):
        self.dead = False
        return super().start()

    def restart(self):
        self.stop()
        for _attempt in range(50):
            try:
                return self.start()
            except OSError:
                time.sleep(0.1)
        return self.start()

    # -- state, for tests ----------------------------------------------------------------------
    def _next_rv(self):
        self.rv += 1
        return str(self.rv)

    def _store(self, plural, obj, new=False):
        meta = obj.setdefault("metadata", {})
        kind, version, namespaced = RESOURCES[plural]
        obj["kind"], obj["apiVersion"] = kind, version
        if namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        if new:
            meta.setdefault("uid", str(uuid.uuid4()))
            meta.setdefault("creationTimestamp", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        meta["resourceVersion"] = self._next_rv()
        self.objects[(plural, meta.get("namespace", ""), meta["name"])] = obj
        return obj

    def load(self, cluster_list):
        """Put every object of a List (or list of objects) in, as created objects."""
        items = cluster_list["items"] if isinstance(cluster_list, dict) else cluster_list
        with self.lock:
            for obj in items:
                plural = PLURAL.get(obj.get("kind"))
                if plural:
                    self._store(plural, copy.deepcopy(obj), new=True)

    def load_file(self, path):
        with open(path) as fh:
            self.load(yaml.safe_load(fh))

    def key(self, kind, name, namespace=None):
        plural = PLURAL[kind]
        return (plural, (namespace or "default") if RESOURCES[plural][2] else "", name)

    def get(self, kind, name, namespace=None):
        with self.lock:
            obj = self.objects.get(self.key(kind, name, namespace))
            return copy.deepcopy(obj)

    def list(self, kind):
        plural = PLURAL[kind]
        with self.lock:
            return [copy.deepcopy(o) for k, o in sorted(self.objects.items()) if k[0] == plural]

    def put(self, obj):
        """Create or replace an object as a writer would (bumps resourceVersion)."""
        with self.lock:
            return copy.deepcopy(self._store(PLURAL[obj["kind"]], copy.deepcopy(obj), new=True))

    def mutate(self, kind, name, change, namespace=None):
        """A concurrent writer: change(obj) edits the stored object in place; bumps resourceVersion."""
        with self.lock:
            key = self.key(kind, name, namespace)
            obj = copy.deepcopy(self.objects[key])
            change(obj)
            return copy.deepcopy(self._store(key[0], obj))

    def delete(self, kind, name, namespace=None):
        with self.lock:
            self.objects.pop(self.key(kind, name, namespace), None)
            self._next_rv()

    def request_delete(self, kind, name, namespace=None):
        """What ``kubectl delete`` asks: gone at once, or, with finalizers, marked with a deletionTimestamp."""
        with self.lock:
            key = self.key(kind, name, namespace)
            route = {"plural": key[0], "namespace": namespace, "name": name, "sub": None}
            return self._delete(route, {}, {}, None)[1]

    def requests(self, method=None, path=None):
        return [r for r in self.log if (method is None or r["method"] == method) and (path is None or r["path"] == path)]

    def writes(self):
        return [r for r in self.log if r["method"] != "GET"]

    # -- request handling ----------------------------------------------------------------------
    def handle(self, method, raw_path, headers, body, peer_cert):
        parts = urlsplit(raw_path)
        query = dict((k, v[0]) for k, v in parse_qs(parts.query, keep_blank_values=True).items())
        entry = {"method": method, "path": parts.path, "query": query, "status": None, "user": None,
                 "impersonate_user": headers.get("Impersonate-User"),
                 "impersonate_groups": headers.get_all("Impersonate-Group") or [],
                 "user_agent": headers.get_all("User-Agent") or []}
        self.log.append(entry)
        if self.dead:
            raise Die()
        try:
            entry["user"] = self._authenticate(headers, peer_cert)
            route = self._route(parts.path)
            if route["plural"] in SNAPSHOT_PLURALS and not self.serve_snapshots:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            resource = route["plural"] + ("/" + route["sub"] if route["sub"] else "")
            verb = VERBS[method]
            if method == "GET" and route["name"] is None:
                verb = "list"
            elif method == "DELETE" and route["name"] is None:
                verb = "deletecollection"
            if (verb, resource) in self.deny or (verb, "*") in self.deny:
                raise ApiError(403, "Forbidden", '%s "%s" is forbidden: User "%s" cannot %s resource "%s"'
                               % (route["plural"], route["name"] or "", entry["user"], verb, resource))
            if self.delay:
                time.sleep(self.delay)
            if method != "GET":
                for hook in list(self.hooks):
                    if hook(self, dict(route, method=method)):
                        self.hooks.remove(hook)
            with self.lock:
                status, data = getattr(self, "_" + method.lower())(route, query, headers, body)
                if method != "GET" and status < 300:
                    self.journal.append(snapshot(self.objects, method, parts.path, status))
        except ApiError as err:
            status, data = err.code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                      "message": err.message, "reason": err.reason, "code": err.code}
        entry["status"] = status
        return status, data

    def _authenticate(self, headers, peer_cert):
        auth = headers.get("Authorization") or ""
        if auth.lower().startswith("bearer "):
            if auth[7:].strip() in self.tokens:
                return "token"
        elif auth.lower().startswith("basic "):
            try:
                user, _sep, password = base64.b64decode(auth[6:].strip()).decode().partition(":")
            except ValueError:
                user = password = None
            if user in self.users and self.users[user] == password:
                return user
        elif peer_cert:
            for rdn in peer_cert.get("subject", ()):
                for key, value in rdn:
                    if key == "commonName":
                        return value
        raise ApiError(401, "Unauthorized", "Unauthorized")

    @staticmethod
    def _route(path):
        segments = [unquote(s) for s in path.strip("/").split("/")]
        if segments[:2] == ["api", "v1"]:
            rest, version = segments[2:], "v1"
        elif segments[:1] == ["apis"] and len(segments) >= 3:
            rest, version = segments[3:], segments[1] + "/" + segments[2]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            namespace, rest = rest[1], rest[2:]
        if not rest or rest[0] not in RESOURCES or RESOURCES[rest[0]][1] != version or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        plural = rest[0]
        if namespace and not RESOURCES[plural][2]:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        sub = rest[2] if len(rest) == 3 else None
        if sub not in (None, "status"):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return {"plural": plural, "namespace": namespace, "name": rest[1] if len(rest) >= 2 else None, "sub": sub}

    def _key(self, route, name=None):
        namespaced = RESOURCES[route["plural"]][2]
        return (route["plural"], (route["namespace"] or "default") if namespaced else "", name or route["name"])

    def _existing(self, route):
        obj = self.objects.get(self._key(route))
        if obj is None:
            raise ApiError(404, "NotFound", '%s "%s" not found' % (route["plural"], route["name"]))
        return obj

    def _get(self, route, query, headers, body):
        if route["name"] is not None:
            return 200, self._existing(route)
        kind, version, _namespaced = RESOURCES[route["plural"]]
        items = [o for k, o in sorted(self.objects.items())
                 if k[0] == route["plural"] and (route["namespace"] is None or k[1] == route["namespace"])]
        selector = query.get("fieldSelector")
        if selector:
            items = [o for o in items if _field_match(o, selector)]
        if query.get("labelSelector"):
            items = [o for o in items if _label_match(o, query["labelSelector"])]
        start = 0
        if query.get("continue"):
            try:
                start = json.loads(base64.urlsafe_b64decode(query["continue"].encode()).decode())["start"]
            except (ValueError, KeyError):
                raise ApiError(400, "BadRequest", "invalid continue token")
        limit = int(query.get("limit") or 0)
        end = start + limit if limit else len(items)
        page = items[start:end]
        meta = {"resourceVersion": str(self.rv)}
        if end < len(items):
            meta["continue"] = base64.urlsafe_b64encode(json.dumps({"start": end}).encode()).decode()
            meta["remainingItemCount"] = len(items) - end
        out = []
        for obj in page:
            obj = dict(obj)
            obj.pop("kind", None)
            obj.pop("apiVersion", None)
            out.append(obj)
        return 200, {"kind": kind + "List", "apiVersion": version, "metadata": meta, "items": out}

    def _post(self, route, query, headers, body):
        if route["name"] is not None or not isinstance(body, dict):
            raise ApiError(405, "MethodNotAllowed", "POST to a collection with an object body only")
        name = (body.get("metadata") or {}).get("name")
        if not name:
            raise ApiError(422, "Invalid", "metadata.name: Required value")
        if route["plural"] == "volumeattachments":
            spec = body.get("spec") or {}
            if not spec.get("attacher") or not spec.get("nodeName") or not spec.get("source"):
                raise ApiError(422, "Invalid", "VolumeAttachment.storage.k8s.io %r is invalid: spec: Required value" % name)
        _check_size(route["plural"], name, body)
        key = self._key(route, name)
        if key in self.objects:
            raise ApiError(409, "AlreadyExists", '%s "%s" already exists' % (route["plural"], name))
        obj = copy.deepcopy(body)
        obj.pop("status", None)  # status is set through the status subresource
        if route["namespace"]:
            obj["metadata"]["namespace"] = route["namespace"]
        if route["plural"] in PROTECTION and PROTECTION[route["plural"]] not in obj["metadata"].get("finalizers", []):
            obj["metadata"]["finalizers"] = list(obj["metadata"].get("finalizers") or []) + [PROTECTION[route["plural"]]]
        if route["plural"] == "persistentvolumes":
            obj["status"] = {"phase": "Pending"}  # persistentvolume strategy PrepareForCreate
        return 201, self._store(route["plural"], obj, new=True)

    def _delete(self, route, query, headers, body):
        if route["name"] is None:  # deletecollection
            kind, version, _namespaced = RESOURCES[route["plural"]]
            doomed = [k for k, o in sorted(self.objects.items())
                      if k[0] == route["plural"] and (route["namespace"] is None or k[1] == route["namespace"])
                      and _label_match(o, query.get("labelSelector") or "")]
            items = [self.objects.pop(k) for k in doomed]
            self._next_rv()
            return 200, {"kind": kind + "List", "apiVersion": version, "metadata": {}, "items": items}
        obj = self._existing(route)
        wanted = ((body or {}).get("preconditions") or {}).get("resourceVersion") if isinstance(body, dict) else None
        if wanted and wanted != obj["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "Operation cannot be fulfilled on %s \"%s\": Precondition failed: "
                           "ResourceVersion in precondition: %s, ResourceVersion in object meta: %s"
                           % (route["plural"], route["name"], wanted, obj["metadata"]["resourceVersion"]))
        if obj["metadata"].get("finalizers"):  # graceful: kept until its finalizers are removed
            if not obj["metadata"].get("deletionTimestamp"):
                obj = copy.deepcopy(obj)
                obj["metadata"]["deletionTimestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                obj = self._store(route["plural"], obj)
            return 200, obj
        del self.objects[self._key(route)]
        self._next_rv()
        return 200, obj

    def _update(self, route, old, new):
        rv = (new.get("metadata") or {}).get("resourceVersion")
        if rv and rv != old["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": the object has been modified; '
                           "please apply your changes to the latest version and try again" % (route["plural"], route["name"]))
        if route["sub"] == "status":
            result = copy.deepcopy(old)
            if new.get("status") is None:
                result.pop("status", None)
            else:
                result["status"] = new["status"]
        else:
            result = copy.deepcopy(new)
            result["metadata"]["name"] = old["metadata"]["name"]
            for key in ("uid", "creationTimestamp", "namespace"):
                if key in old["metadata"]:
                    result["metadata"][key] = old["metadata"][key]
            if "status" in old:
                result["status"] = old["status"]
            else:
                result.pop("status", None)
        if route["plural"] == "volumeattachments" and result.get("spec") != old.get("spec"):
            raise ApiError(422, "Invalid", "VolumeAttachment %r is invalid: spec: field is immutable" % route["name"])
        if result == old:
            return 200, old
        if result["metadata"].get("deletionTimestamp") and not result["metadata"].get("finalizers"):
            del self.objects[self._key(route)]  # its last finalizer is gone: so is the object
            self._next_rv()
            return 200, result
        return 200, self._store(route["plural"], result)

    def _put(self, route, query, headers, body):
        old = self._existing(route)
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "body must be an object")
        _check_size(route["plural"], route["name"], body)
        return self._update(route, old, body)

    def _patch(self, route, query, headers, body):
        old = self._existing(route)
        ctype = (headers.get("Content-Type") or "").split(";")[0].strip()
        if ctype not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
            raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                           "accepted media types include: application/merge-patch+json, "
                           "application/strategic-merge-patch+json (got %s)" % ctype)
        if not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "patch must be an object")
        new = merge_patch(old, body)
        new.setdefault("metadata", {})
        rv = (body.get("metadata") or {}).get("resourceVersion")
        new["metadata"]["resourceVersion"] = rv or old["metadata"]["resourceVersion"]
        return self._update(route, old, new)


class _Handler(BaseHTTPRequestHandler):
    api = None
    protocol_version = "HTTP/1.1"
    # headers and body go out in separate writes: without TCP_NODELAY each answer on a kept-alive connection waits
    # for the client's delayed ACK (40 ms), which a real API server (Go sets TCP_NODELAY) never does
    disable_nagle_algorithm = True

    def log_message(self, *args):  # quiet
        pass

    def _serve(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw.decode()) if raw else None
        except ValueError:
            body = None
        peer = None
        if hasattr(self.connection, "getpeercert"):
            try:
                peer = self.connection.getpeercert()
            except ValueError:
                peer = None
        try:
            status, data = self.api.handle(self.command, self.path, self.headers, body, peer)
        except Die:
            self.api.dead = True
            self.close_connection = True
            threading.Thread(target=self.api.stop, daemon=True).start()
            return
        out = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve


# -- helpers for tests -------------------------------------------------------------------------
def make_certs(directory):
    """A CA, a server cert for 127.0.0.1/localhost and a client cert (CN kubevol-admin), with openssl."""
    def sh(*argv):
        subprocess.run(argv, check=True, cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    os.makedirs(directory, exist_ok=True)
    sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=fake-kube-ca",
       "-keyout", "ca.key", "-out", "ca.crt")
    with open(os.path.join(directory, "san.cnf"), "w") as fh:
        fh.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n")
    for name, cn, ext in (("server", "127.0.0.1", True), ("client", "kubevol-admin", False)):
        sh("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=" + cn,
           "-keyout", name + ".key", "-out", name + ".csr")
        argv = ["openssl", "x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                "-CAcreateserial", "-days", "2", "-out", name + ".crt"]
        if ext:
            argv += ["-extfile", "san.cnf"]
        sh(*argv)
    return dict((n, os.path.join(directory, n)) for n in
                ("ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key"))


def write_kubeconfig(path, contexts, current=None):
    """contexts: {name: {"server": url, "token"|"username"+"password"|"client-certificate"+"client-key",
    "certificate-authority"?, "insecure-skip-tls-verify"?}}."""
    clusters, users, ctxs = [], [], []
    for name, spec in contexts.items():
        cluster = {"server": spec["server"]}
        for key in ("certificate-authority", "insecure-skip-tls-verify"):
            if key in spec:
                cluster[key] = spec[key]
        user = dict((k, v) for k, v in spec.items()
                    if k in ("token", "username", "password", "client-certificate", "client-key"))
        clusters.append({"name": name, "cluster": cluster})
        users.append({"name": name, "user": user})
        ctxs.append({"name": name, "context": {"cluster": name, "user": name}})
    config = {"apiVersion": "v1", "kind": "Config", "clusters": clusters, "users": users, "contexts": ctxs,
              "current-context": current or next(iter(contexts)), "preferences": {}}
    with open(path, "w") as fh:
        yaml.safe_dump(config, fh)
    return path
