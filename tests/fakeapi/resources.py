"""The fake API server's resources (plural -> kind, apiVersion, namespaced), the finalizers kube-apiserver's admission
adds, the HTTP methods' RBAC verbs, and the JSON merge patch its PATCH applies."""
import copy

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
