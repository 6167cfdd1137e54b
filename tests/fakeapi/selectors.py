"""The fake API server's validation and selectors, as kube-apiserver applies them (tests/fakeapi/)."""
import base64

MAX_CONFIGMAP_BYTES = 1048576  # k8s.io/kubernetes pkg/apis/core/validation ValidateConfigMap: core.MaxSecretSize


class ApiError(Exception):
    """An answer other than 2xx: the server sends it as a v1 Status."""

    def __init__(self, code, reason, message):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message


def check_size(plural, name, body):
    """kube-apiserver's ValidateConfigMap: data and binaryData (decoded) together at most 1 MiB."""
    if plural != "configmaps":
        return
    size = sum(len(value.encode("utf-8")) for value in (body.get("data") or {}).values())
    for key, value in (body.get("binaryData") or {}).items():
        size += len(base64.b64decode(value))
    if size > MAX_CONFIGMAP_BYTES:
        raise ApiError(422, "Invalid", 'ConfigMap "%s" is invalid: []: Too long: must have at most %d bytes'
                       % (name, MAX_CONFIGMAP_BYTES))


def label_match(obj, selector):
    """An equality-based label selector (apimachinery labels.Parse): a=b, a==b, a!=b, a, !a, comma-joined."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in (t.strip() for t in selector.split(",") if t.strip()):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, value = term.split("=", 1)
            if labels.get(key.strip()) != value.lstrip("=").strip():
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True


def field_match(obj, selector):
    for term in selector.split(","):
        if "!=" in term:
            field, value = term.split("!=", 1)
            negate = True
        else:
            field, _sep, value = term.partition("=")
            value = value.lstrip("=")
            negate = False
        current = obj
        for part in field.split("."):
            current = current.get(part) if isinstance(current, dict) else None
        current = "" if current is None else str(current)
        if (current == value) == negate:
            return False
    return True
