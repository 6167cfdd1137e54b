"""Cluster objects as kubectl prints them, the List file, and queries on a loaded cluster file."""
import yaml

from e2e_lib.environment import DRIVER


def node_object(name):
    """A Ready Node the attach/detach controller manages."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def bound_volume(pv, namespace, claim, size="64Mi", modes=("ReadWriteOnce",), fs_type="ext4"):
    """A loop.kubevol.io PV (handle <pv>.img in the default pool) and the claim bound to it: [pv, pvc]."""
    claim_uid = "uid-claim-%s-%s" % (namespace, claim)
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
             "spec": {"capacity": {"storage": size}, "accessModes": list(modes), "volumeMode": "Filesystem",
                      "claimRef": {"namespace": namespace, "name": claim, "uid": claim_uid},
                      "csi": {"driver": DRIVER, "volumeHandle": pv + ".img", "fsType": fs_type}},
             "status": {"phase": "Bound"}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"namespace": namespace, "name": claim, "uid": claim_uid},
             "spec": {"accessModes": list(modes), "volumeName": pv, "resources": {"requests": {"storage": size}}},
             "status": {"phase": "Bound", "capacity": {"storage": size}}}]


def running_pod(namespace, name, uid, node, claim, labels=None):
    """A running pod on ``node`` whose one container mounts ``claim`` at /d."""
    meta = {"namespace": namespace, "name": name, "uid": uid}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}],
                     "containers": [{"name": "c", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}]},
            "status": {"phase": "Running"}}


def write_list(path, objects):
    """A List file as kubectl writes it (keys sorted: apiVersion, items, kind, metadata)."""
    with open(path, "w") as handle:
        yaml.safe_dump({"apiVersion": "v1", "items": list(objects), "kind": "List",
                        "metadata": {"resourceVersion": ""}}, handle)


def taint_out_of_service(data, node):
    """``node`` is shut down: the out-of-service taint and a Ready condition that is no longer True."""
    obj = get(data, "Node", node)
    obj.setdefault("spec", {})["taints"] = [{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown",
                                             "effect": "NoExecute"}]
    for cond in obj["status"].get("conditions") or []:
        if cond["type"] == "Ready":
            cond["status"] = "Unknown"


# -- cluster file queries ---------------------------------------------------------------------------

def items(cluster, kind):
    return [o for o in cluster["items"] if o.get("kind") == kind]


def get(cluster, kind, name, namespace=None):
    for obj in items(cluster, kind):
        meta = obj.get("metadata", {})
        if meta.get("name") == name and (namespace is None or meta.get("namespace") == namespace):
            return obj
    return None


def vas(cluster):
    """{VolumeAttachment name: (pv name, node, attached)}."""
    return dict((va["metadata"]["name"], (va["spec"]["source"].get("persistentVolumeName"), va["spec"]["nodeName"],
                                          (va.get("status") or {}).get("attached")))
                for va in items(cluster, "VolumeAttachment"))


def node_status(cluster, node):
    status = get(cluster, "Node", node).get("status") or {}
    attached = sorted(e["name"] for e in status.get("volumesAttached") or [])
    return attached, sorted(status.get("volumesInUse") or [])


def pod_uid(cluster, ref):
    namespace, name = ref.split("/")
    return get(cluster, "Pod", name, namespace)["metadata"]["uid"]
