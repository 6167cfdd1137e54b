"""The fake API server itself: its state (the objects, the resourceVersion counter, the RBAC deny list, the request
log, the journal, the hooks), its life (start, stop, restart on the same port), the methods tests use to load and
change objects, and the handling of one request (authentication, the route, RBAC, the hooks, the verb)."""
import base64
import copy
import ssl
import threading
import time
import uuid
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from fakeapi.handler import Die, _Handler
from fakeapi.journal import snapshot
from fakeapi.resources import PLURAL, RESOURCES, SNAPSHOT_PLURALS, VERBS
from fakeapi.selectors import ApiError
from fakeapi.server import LocalServer
from fakeapi.storage import Storage


class FakeApiServer(Storage, LocalServer):
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
