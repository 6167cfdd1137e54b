"""The verbs on the stored objects (GET, list, POST, DELETE, PUT, PATCH and the status subresource), answered as
kube-apiserver's generic registry answers them: FakeApiServer's request handling calls them under its lock."""
import base64
import copy
import json
import time

from fakeapi.resources import PROTECTION, RESOURCES, merge_patch
from fakeapi.selectors import ApiError, check_size as _check_size, field_match as _field_match, label_match as _label_match


class Storage:
    """Mixed into FakeApiServer: ``objects``, ``rv``, ``_store`` and ``_next_rv`` are the server's."""

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
