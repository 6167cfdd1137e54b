# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only: build cluster Lists and node facts, and apply a plan to them as the modules would.

``apply_plan(result, cluster, node_facts)`` returns new (cluster, node_facts) after every step of
``result["plan"]`` succeeded: VolumeAttachments and node status for attach/detach, node facts for
mounts, PV capacity and PVC status capacity for expansion, and the detach-requested annotations.
"""

import copy

from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (
    DETACH_REQUESTED_AT_ANNOTATION, MANAGED_ATTACH_DETACH_ANNOTATION, volume_attachment_name)

LOOP = "loop.kubevol.io"


# ---- builders ---------------------------------------------------------------------------------------

def node(name, managed=True, ready=True, attached=(), in_use=(), taints=()):
    obj = {"kind": "Node", "metadata": {"name": name, "annotations": {}},
           "spec": {"taints": [dict(t) for t in taints]},
           "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                      "volumesAttached": [{"name": n, "devicePath": ""} for n in attached],
                      "volumesInUse": list(in_use)}}
    if managed:
        obj["metadata"]["annotations"][MANAGED_ATTACH_DETACH_ANNOTATION] = "true"
    return obj


def pv(name, size="1Gi", modes=("ReadWriteOnce",), driver=LOOP, claim=None, uid=None, mode="Filesystem",
       fs_type="ext4", read_only=False, source=None):
    spec = {"capacity": {"storage": size}, "accessModes": list(modes), "volumeMode": mode}
    if claim:
        ns, claim_name = claim.split("/")
        spec["claimRef"] = {"namespace": ns, "name": claim_name, "uid": uid or "uid-" + claim}
    if source:
        spec[source] = {"path": "/x"}
    else:
        spec["csi"] = {"driver": driver, "volumeHandle": name + ".img", "fsType": fs_type, "readOnly": read_only,
                       "volumeAttributes": {"pool": "/var/lib/kubevol/pool"}}
    return {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def pvc(key, volume_name, request="1Gi", capacity=None, phase="Bound", uid=None, owner=None):
    ns, name = key.split("/")
    obj = {"kind": "PersistentVolumeClaim",
           "metadata": {"namespace": ns, "name": name, "uid": uid or "uid-" + key},
           "spec": {"volumeName": volume_name, "resources": {"requests": {"storage": request}}},
           "status": {"phase": phase, "capacity": {"storage": capacity or request}}}
    if owner:
        obj["metadata"]["ownerReferences"] = [{"uid": owner}]
    return obj


def bound(pv_name, claim_key, size="1Gi", **kwargs):
    """A PV and its bound PVC."""
    pvc_kwargs = dict((k, kwargs.pop(k)) for k in ("request", "capacity") if k in kwargs)
    return [pv(pv_name, size, claim=claim_key, **kwargs), pvc(claim_key, pv_name, pvc_kwargs.get("request", size),
                                                              pvc_kwargs.get("capacity"))]


def pod(key, node_name, claims=(), uid=None, phase="Running", read_only_mounts=(), devices=(), deleted=False,
        states=(), volumes=None, claim_read_only=()):
    ns, name = key.split("/")
    vols = [{"name": "v-" + c, "persistentVolumeClaim": {"claimName": c, "readOnly": c in claim_read_only}}
            for c in claims]
    if volumes:
        vols.extend(volumes)
    mounts = [{"name": "v-" + c, "mountPath": "/m/" + c, "readOnly": c in read_only_mounts}
              for c in claims if c not in devices]
    obj = {"kind": "Pod", "metadata": {"namespace": ns, "name": name, "uid": uid or "uid-" + key.replace("/", "-")},
           "spec": {"nodeName": node_name, "volumes": vols,
                    "containers": [{"name": "c", "volumeMounts": mounts,
                                    "volumeDevices": [{"name": "v-" + c, "devicePath": "/d/" + c} for c in devices]}]},
           "status": {"phase": phase,
                      "containerStatuses": [{"name": "c", "state": {s: {}}} for s in states]}}
    if deleted:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return obj


def va(pv_name, node_name, attached=True, annotations=None, driver=LOOP):
    return {"kind": "VolumeAttachment",
            "metadata": {"name": volume_attachment_name(pv_name + ".img", driver, node_name),
                         "annotations": dict(annotations or {})},
            "spec": {"attacher": driver, "nodeName": node_name, "source": {"persistentVolumeName": pv_name}},
            "status": {"attached": attached}}


def csidriver(name=LOOP, attach_required=True):
    return {"kind": "CSIDriver", "metadata": {"name": name}, "spec": {"attachRequired": attach_required}}


def cluster(*objects):
    items = []
    for obj in objects:
        items.extend(obj if isinstance(obj, list) else [obj])
    # kubectl's key order: a YAML file dumped from this with sort_keys=False shows it is whole (stores/file_text.py)
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def uvn(pv_name, driver=LOOP):
    return "kubernetes.io/csi/%s^%s.img" % (driver, pv_name)


def facts(node_name, devices=(), global_mounts=(), pod_mounts=(), reachable=True, error=None):
    """devices/global_mounts: PV names; pod_mounts: (uid, pv[, read_only[, mounted]])."""
    if not reachable:
        return {"node_name": node_name, "reachable": False, "error": error or "ssh: connect timed out"}
    return {"node_name": node_name, "reachable": True, "error": None,
            "devices": [{"unique_volume_name": uvn(p), "driver": LOOP, "volume_handle": p + ".img",
                         "device": "/dev/loop0", "size_bytes": 0, "read_only": False} for p in devices],
            "global_mounts": [{"unique_volume_name": uvn(p), "driver": LOOP, "volume_handle": p + ".img", "pv_name": p,
                               "path": "/g/" + p, "mounted": True, "device": "/dev/loop0", "fs_type": "ext4",
                               "fs_size_bytes": None, "read_only": False} for p in global_mounts],
            "pod_mounts": [{"pod_uid": m[0], "pv_name": m[1], "mode": "Filesystem", "path": "/p/%s/%s" % m[:2],
                            "mounted": m[3] if len(m) > 3 else True, "read_only": m[2] if len(m) > 2 else False,
                            "device": "/dev/loop0", "unique_volume_name": uvn(m[1])} for m in pod_mounts]}


# ---- applying a plan --------------------------------------------------------------------------------

def _find(items, kind, name):
    for obj in items:
        if obj.get("kind") == kind and obj["metadata"]["name"] == name:
            return obj
    return None


def _find_va(items, pv_name, node_name):
    for obj in items:
        if (obj.get("kind") == "VolumeAttachment" and obj["spec"]["nodeName"] == node_name
                and obj["spec"].get("source", {}).get("persistentVolumeName") == pv_name):
            return obj
    return None


def _status(items, node_name):
    node_obj = _find(items, "Node", node_name)
    if node_obj is None:
        return None
    status = node_obj.setdefault("status", {})
    status.setdefault("volumesAttached", [])
    status.setdefault("volumesInUse", [])
    return status


def _node_facts(node_facts, node_name):
    f = node_facts.get(node_name)
    if f is None or f.get("reachable") is False:
        return None
    for key in ("devices", "global_mounts", "pod_mounts"):
        f.setdefault(key, [])
    return f


def _attach(items, node_facts, step, item):
    name, node_name = step["unique_volume_name"], step["node"]
    status = _status(items, node_name)
    if status is not None and all(v["name"] != name for v in status["volumesAttached"]):
        status["volumesAttached"].append({"name": name, "devicePath": "/dev/loop9"})
    obj = _find_va(items, step["volume"], node_name)
    if obj is None:
        items.append(va(step["volume"], node_name, driver=item["driver"]))
    else:
        obj.setdefault("status", {})["attached"] = True
    f = _node_facts(node_facts, node_name)
    if f is not None and all(d["unique_volume_name"] != name for d in f["devices"]):
        f["devices"].append({"unique_volume_name": name, "driver": item["driver"],
                             "volume_handle": item["volume_handle"], "device": "/dev/loop9",
                             "size_bytes": item["capacity_bytes"], "read_only": False})


def _detach(items, node_facts, step):
    name, node_name = step["unique_volume_name"], step["node"]
    status = _status(items, node_name)
    if status is not None:
        status["volumesAttached"] = [v for v in status["volumesAttached"] if v["name"] != name]
        status["volumesInUse"] = [v for v in status["volumesInUse"] if v != name]
    items[:] = [o for o in items if not (o.get("kind") == "VolumeAttachment" and o["spec"]["nodeName"] == node_name
                                         and o["spec"].get("source", {}).get("persistentVolumeName") == step["volume"])]
    f = _node_facts(node_facts, node_name)
    if f is not None:
        f["devices"] = [d for d in f["devices"] if d["unique_volume_name"] != name]
        f["global_mounts"] = [g for g in f["global_mounts"] if g["unique_volume_name"] != name]
        f["pod_mounts"] = [m for m in f["pod_mounts"] if m.get("unique_volume_name") != name]


def _in_use(items, node_name, name):
    status = _status(items, node_name)
    if status is not None and name not in status["volumesInUse"]:
        status["volumesInUse"].append(name)


def _apply_step(items, node_facts, step, item):
    action, target, node_name = step["action"], step["target"], step["node"]
    name = step["unique_volume_name"]
    f = _node_facts(node_facts, node_name)
    if action == "unmount" and f is not None:
        if target == "pod":
            f["pod_mounts"] = [m for m in f["pod_mounts"]
                               if not (m["pod_uid"] == step["pod_uid"] and m["pv_name"] == step["volume"])]
        else:
            f["global_mounts"] = [g for g in f["global_mounts"] if g["unique_volume_name"] != name]
    elif action == "detach":
        _detach(items, node_facts, step)
    elif action == "attach":
        _attach(items, node_facts, step, item)
    elif action == "mount":
        _in_use(items, node_name, name)
        if f is None:
            return
        if target == "device":
            f["global_mounts"] = [g for g in f["global_mounts"] if g["unique_volume_name"] != name]
            f["global_mounts"].append({"unique_volume_name": name, "driver": item["driver"],
                                       "volume_handle": item["volume_handle"], "pv_name": item["pv_name"],
                                       "path": "/g/" + item["pv_name"], "mounted": True, "device": "/dev/loop9",
                                       "fs_type": item["fs_type"], "fs_size_bytes": item["capacity_bytes"],
                                       "read_only": item["read_only"]})
        else:
            f["pod_mounts"] = [m for m in f["pod_mounts"]
                               if not (m["pod_uid"] == step["pod_uid"] and m["pv_name"] == step["volume"])]
            f["pod_mounts"].append({"pod_uid": step["pod_uid"], "pv_name": step["volume"], "mode": item["mode"],
                                    "path": "/p/%s/%s" % (step["pod_uid"], step["volume"]), "mounted": True,
                                    "read_only": step["pod_read_only"], "device": "/dev/loop9",
                                    "unique_volume_name": name})
    elif action == "expand" and target == "controller":
        _find(items, "PersistentVolume", step["volume"])["spec"]["capacity"]["storage"] = str(step["size_to"])
    elif action == "expand" and target == "node":
        pv_obj = _find(items, "PersistentVolume", step["volume"])
        ref = pv_obj["spec"]["claimRef"]
        for obj in items:
            if (obj.get("kind") == "PersistentVolumeClaim" and obj["metadata"]["name"] == ref["name"]
                    and obj["metadata"].get("namespace") == ref["namespace"]):
                obj.setdefault("status", {}).setdefault("capacity", {})["storage"] = str(step["size_to"])


def apply_plan(result, cluster_list, node_facts=None):
    """The (cluster, node_facts) after every planned step and annotation change succeeded."""
    new_cluster = copy.deepcopy(cluster_list)
    new_facts = copy.deepcopy(node_facts or {})
    items = new_cluster["items"]
    for step in result["plan"]:
        item = result["volume_items"].get(step["node"], {}).get(step["unique_volume_name"])
        _apply_step(items, new_facts, step, item)
    for request in result["detach_requests"]:
        obj = _find(items, "VolumeAttachment", request["name"])
        if obj is not None:
            obj["metadata"].setdefault("annotations", {})[DETACH_REQUESTED_AT_ANNOTATION] = request["requested_at"]
    for request in result["detach_requests_to_clear"]:
        obj = _find(items, "VolumeAttachment", request["name"])
        if obj is not None:
            obj["metadata"].get("annotations", {}).pop(DETACH_REQUESTED_AT_ANNOTATION, None)
    return new_cluster, new_facts
