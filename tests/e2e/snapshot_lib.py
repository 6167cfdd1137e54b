"""Helpers of the snapshot end-to-end tests (test_snapshots.py with the file store, test_snapshots_api.py with the fake
API server): the classes, snapshots and claims of a snapshot's life, the calls the test CSI plugin got, and the
scenario's objects in its steps."""
import os

from provision_lib import LOOP, base_objects, claim, pod, storage_class
from csi_lib import DRIVER

GROUP = "snapshot.storage.k8s.io"


def snapshot_class(name, driver, policy="Delete"):
    return {"apiVersion": GROUP + "/v1", "kind": "VolumeSnapshotClass", "metadata": {"name": name},
            "driver": driver, "deletionPolicy": policy}


def snapshot(name, claim_name, cls, namespace="apps"):
    return {"apiVersion": GROUP + "/v1", "kind": "VolumeSnapshot",
            "metadata": {"namespace": namespace, "name": name, "uid": "snapuid-" + name},
            "spec": {"volumeSnapshotClassName": cls, "source": {"persistentVolumeClaimName": claim_name}}}


def restore(name, cls, source, kind="VolumeSnapshot", size="64Mi"):
    obj = claim(name, cls, size=size)
    ref = {"kind": kind, "name": source}
    if kind == "VolumeSnapshot":
        ref["apiGroup"] = GROUP
    obj["spec"]["dataSource"] = ref
    return obj


def first_objects(nodes):
    """Step 1: a claim of the test CSI plugin and one of the loop driver (ext4: a copy of an xfs filesystem has its
    source's UUID, which the kernel refuses to mount twice), their pod on node1."""
    return base_objects(nodes) + [
        storage_class("loop-ext4", provisioner=LOOP, parameters={"csi.storage.k8s.io/fstype": "ext4"}),
        claim("src", "csi-wffc"), claim("lsrc", "loop-ext4"), pod("writer", "node1", ["src", "lsrc"])]


def snapshot_objects():
    """Step 2: the classes and three snapshots (one of them kept by its class's Retain)."""
    return [snapshot_class("csi-snaps", DRIVER), snapshot_class("loop-snaps", LOOP),
            snapshot_class("csi-retain", DRIVER, policy="Retain"),
            snapshot("snap", "src", "csi-snaps"), snapshot("lsnap", "lsrc", "loop-snaps"),
            snapshot("kept", "src", "csi-retain")]


def restore_objects():
    """Step 3: a restore of each snapshot and a clone, their pods."""
    return [restore("restored", "csi-wffc", "snap"), restore("lrestored", "loop-ext4", "lsnap"),
            restore("clone", "csi-wffc", "src", kind="PersistentVolumeClaim"),
            pod("reader", "node2", ["restored", "lrestored"]), pod("cloner", "node1", ["clone"])]


def snapshot_calls(plugins, since=None):
    """[(node, method, request)] of CreateSnapshot, DeleteSnapshot and CreateVolume with a content source."""
    found = []
    for node, plugin in sorted(plugins.items()):
        for entry in plugin.calls()[(since or {}).get(node, 0):]:
            if entry["method"] in ("CreateSnapshot", "DeleteSnapshot") or (
                    entry["method"] == "CreateVolume" and entry["request"].get("volume_content_source")):
                found.append((node, entry["method"], entry["request"]))
    return found


def plugin_snapshots(pool):
    folder = os.path.join(pool, "snapshots")
    return sorted(n for n in os.listdir(folder) if n.endswith(".img")) if os.path.isdir(folder) else []


def loop_snapshots(cluster_dir):
    folder = os.path.join(cluster_dir, "pool", "snapshots")
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []
