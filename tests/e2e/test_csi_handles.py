"""A real CSI driver's volume handle end to end, through the role on an SSH test node (issue 40).

A CSI volume handle is opaque: a GKE persistent disk's is ``projects/<p>/zones/<z>/disks/<d>``, csi-driver-nfs's
``server#share#dir``. The test CSI plugin (tests/csiplugin) makes a volume whose handle has '/', '#' and spaces (its
CreateVolume names it so); kubevol attaches, stages, publishes, unpublishes, unstages and detaches it, the data
written stays on it, every file and directory named after it is named after its sha256 (the global mount
``<driver>/<sha256(handle)>/globalmount``, as the kubelet's makeDeviceMountPath), node facts identify the global mount
by its vol_data.json, and the VolumeAttachment is ``csi-<sha256(handle + driver + node)>``. In the same cluster a loop
PV whose handle is ``a/b`` is refused at plan time by the loop driver's own rule (it names its image after the
handle), and nothing of it reaches the node.
"""
import hashlib
import json
import os
import subprocess

import pytest

from e2e_lib import KUBELET, get, items, node_object, write_list
from csi_lib import DRIVER, MUTATING, NodePlugin, _loops_backed_under, csi_volume, pod, target

HANDLE = "projects/kv e2e/zones/zone#1/disks/vol with spaces#2"
LOOP = "loop.kubevol.io"


def staging(handle):
    digest = hashlib.sha256(handle.encode()).hexdigest()
    return "%s/plugins/kubernetes.io/csi/%s/%s/globalmount" % (KUBELET, DRIVER, digest)


def loop_pv_with_a_slash():
    """A loop PV (its image would be <pool>/a/b) bound to a claim, and a pod using it on node1."""
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-slash"},
             "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                      "claimRef": {"namespace": "apps", "name": "slash", "uid": "uid-claim-slash"},
                      "csi": {"driver": LOOP, "volumeHandle": "a/b", "fsType": "ext4"}},
             "status": {"phase": "Bound"}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"namespace": "apps", "name": "slash", "uid": "uid-claim-slash"},
             "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv-slash",
                      "resources": {"requests": {"storage": "64Mi"}}},
             "status": {"phase": "Bound", "capacity": {"storage": "64Mi"}}},
            pod("slash", "p-slash", "node1", "apps/slash")]


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("handles", 1)
    pool = os.path.join(cluster.dir, "csi-pool")
    os.makedirs(pool)
    plugin = NodePlugin(cluster, "node1", pool)
    try:
        plugin.start()
        plugin.create(HANDLE, 64 << 20)  # CreateVolume answers volume_id = the name it was given
        cluster.plugin = plugin
        cluster.shared = {}
        cluster.options = ["-e", json.dumps({"kubevol_driver_options": {DRIVER: {"controller": "node"}}})]
        objects = [node_object("node1"),
                   {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
                    "spec": {"attachRequired": True}}]
        objects += csi_volume("pv-odd", "apps/odd", HANDLE) + [pod("odd", "p-odd", "node1", "apps/odd")]
        objects += loop_pv_with_a_slash()
        write_list(cluster.state, objects)
        yield cluster
    finally:
        plugin.stop()
        plugin.unmount_all()
        for device in _loops_backed_under(pool):
            subprocess.run(["losetup", "-d", device], check=False)
        left = _loops_backed_under(pool)
        assert not left, "loop devices left behind: %s" % left


def blocked(run):
    return (run.result("Plan the operations") or {}).get("blocked") or []


def test_a_handle_with_slashes_hashes_and_spaces_is_attached_staged_and_published(kv):
    run = kv.reconcile(kv.options)
    mutating = [m for m in kv.plugin.methods() if m in MUTATING]
    assert mutating == ["ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"], (mutating, run.describe())
    requests = dict((c["method"], c["request"]) for c in kv.plugin.calls() if c["method"] in MUTATING)
    assert all((r.get("volume_id") or r.get("volumeId")) == HANDLE for r in requests.values()), requests
    stage = requests["NodeStageVolume"]
    assert (stage.get("staging_target_path") or stage.get("stagingTargetPath")) == staging(HANDLE)
    mounts = kv.mounts("node1")
    assert target("p-odd", "pv-odd") in mounts and staging(HANDLE) in mounts, (mounts, run.describe())
    # vol_data.json beside the global mount names the handle whole; nothing on the node is named after it
    vol_data = json.loads(kv.ssh("node1", "cat '%s/vol_data.json'" % os.path.dirname(staging(HANDLE))))
    assert (vol_data["driverName"], vol_data["volumeHandle"], vol_data["specVolID"]) == (DRIVER, HANDLE, "pv-odd")
    tree = kv.ssh("node1", "find %s /run/kubevol 2>/dev/null || true" % KUBELET)
    assert "zone#1" not in tree and "vol with spaces" not in tree, tree
    kv.shared["sum"] = kv.write_data("node1", target("p-odd", "pv-odd"), "data.bin")
    [va] = items(kv.cluster(), "VolumeAttachment")
    assert va["metadata"]["name"] == "csi-" + hashlib.sha256((HANDLE + DRIVER + "node1").encode()).hexdigest()
    assert va["status"]["attached"] is True
    status = get(kv.cluster(), "Node", "node1")["status"]
    assert [v["name"] for v in status["volumesAttached"]] == ["kubernetes.io/csi/%s^%s" % (DRIVER, HANDLE)]
    # the loop PV named a/b: refused at plan time by the loop driver's own rule, nothing of it planned
    [refused] = [b for b in blocked(run) if b["volume"] == "pv-slash"]
    assert refused["reason"].startswith(
        "PersistentVolume pv-slash: spec.csi.volumeHandle 'a/b' is refused: driver loop.kubevol.io names a file after "
        "each volume handle, so it refuses a handle that is not one safe path component"), refused
    assert not [s for s in run.plan() if s["volume"] == "pv-slash"]
    assert not [t for t in kv.mounts("node1") if "pv-slash" in t]
    kv.shared["set_up"] = True


def test_a_second_run_changes_nothing_and_facts_identify_the_global_mount(kv):
    assert kv.shared.get("set_up"), "needs the first run"
    since = len(kv.plugin.calls())
    again = kv.reconcile(kv.options)
    assert again.changed("node1") == 0 and again.plan() == [], again.describe()
    assert not [m for m in kv.plugin.methods(since) if m in MUTATING]
    facts = kv.node_facts()["node1"]
    [entry] = [g for g in facts["global_mounts"] if g["path"] == staging(HANDLE)]
    assert (entry["unique_volume_name"], entry["volume_handle"], entry["uncertain"]) == (
        "kubernetes.io/csi/%s^%s" % (DRIVER, HANDLE), HANDLE, None), entry
    [pod_entry] = [m for m in facts["pod_mounts"] if m["pv_name"] == "pv-odd"]
    assert pod_entry["unique_volume_name"] == entry["unique_volume_name"] and pod_entry["mounted"], pod_entry
    kv.shared["converged"] = True


def test_pod_gone_unpublish_unstage_detach_and_the_data_stays(kv):
    assert kv.shared.get("converged"), "needs the converged cluster"
    data = kv.cluster()
    write_list(kv.state, [o for o in data["items"] if not (o["kind"] == "Pod" and o["metadata"]["name"] == "odd")])
    since = len(kv.plugin.calls())
    run = kv.reconcile(kv.options)
    mutating = [m for m in kv.plugin.methods(since) if m in MUTATING]
    assert mutating == ["NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume"], (
        mutating, run.describe())
    assert kv.mounts("node1") == {}
    assert items(kv.cluster(), "VolumeAttachment") == []
    assert kv.ssh("node1", "test -e '%s' && echo yes || echo no" % os.path.dirname(staging(HANDLE))).strip() == "no"
    # the pod back: the same volume, by the same handle, with the data written before
    data = kv.cluster()
    write_list(kv.state, data["items"] + [pod("odd", "p-odd2", "node1", "apps/odd")])
    kv.reconcile(kv.options)
    assert kv.read_sum("node1", target("p-odd2", "pv-odd"), "data.bin") == kv.shared["sum"]
    data = kv.cluster()
    write_list(kv.state, [o for o in data["items"] if not (o["kind"] == "Pod" and o["metadata"]["name"] == "odd")])
    kv.reconcile(kv.options)
    assert kv.mounts("node1") == {} and items(kv.cluster(), "VolumeAttachment") == []
