"""Objects that no longer exist never make every run fail (issue 25), on 2 real SSH nodes.

1. A dangling attachment: pv-x6 (in a second pool, /var/lib/kubevol/pool2, known only from its PV's
   volumeAttributes) is attached to node1 but never mounted (mkfs.ext4 fails: a wrapper bind-mounted over it in
   node1's mount namespace), then its PV is deleted from the state file. The next run detaches the device the
   node's own record names, removes the VolumeAttachment and node status entry, and succeeds; a second run
   changes nothing. (Before: every run failed with "refusing PV name 'kubernetes.io/csi/...'".)
2. Orphan pod volume directories planted on node2: one whose vol_data.json names a volume with no PV any more is
   removed by the first run; a ghost whose vol_data.json names another PV's volume is reported blocked with the
   reason, never "applied" without an effect. The second run plans nothing for either.

The runs give the second pool as kubevol_driver_options' loop.kubevol.io pools; one gives it the old way,
kubevol_loop_pools (deprecated until 2.0.0), and proves the alias still works and says it is deprecated.
"""
import json

import pytest
import yaml

from e2e_lib import DRIVER, KUBELET, get, node_status, unique_name, va_name, vas

POOL2 = "/var/lib/kubevol/pool2"
LOOP_POOLS = ["-e", json.dumps({"kubevol_driver_options": {"loop.kubevol.io": {"pools": ["/var/lib/kubevol/pool",
                                                                                         POOL2]}}})]
# the deprecated alias of the same (roles/reconcile: until 2.0.0)
OLD_LOOP_POOLS = ["-e", json.dumps({"kubevol_loop_pools": ["/var/lib/kubevol/pool", POOL2]})]
HANDLE = "pv-x6.img"

# Inside node1 only: every mkfs.ext4 fails (the device is attached, never formatted).
FAIL_MKFS = (
    "printf '#!/bin/sh\\necho \"mkfs.ext4: injected format failure\" >&2\\nexit 1\\n' > /run/mkfs.wrap && "
    "chmod +x /run/mkfs.wrap && mount --bind /run/mkfs.wrap /usr/sbin/mkfs.ext4")


def node_obj(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def volume(name, handle, pool, claim_uid, claim):
    namespace, claim_name = claim.split("/")
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
          "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                   "claimRef": {"kind": "PersistentVolumeClaim", "namespace": namespace, "name": claim_name,
                                "uid": claim_uid},
                   "csi": {"driver": DRIVER, "volumeHandle": handle, "fsType": "ext4",
                           "volumeAttributes": {"pool": pool}}},
          "status": {"phase": "Bound"}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"namespace": namespace, "name": claim_name, "uid": claim_uid},
           "spec": {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                    "resources": {"requests": {"storage": "64Mi"}}, "volumeName": name},
           "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "64Mi"}}}
    return [pv, pvc]


STATE = {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": [
    node_obj("node1"), node_obj("node2"),
    {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
     "spec": {"attachRequired": True}},
] + volume("pv-x6", HANDLE, POOL2, "c-x6", "apps/x6") + volume("pv-b", "pv-b.img", "/var/lib/kubevol/pool", "c-b",
                                                               "apps/b") + [
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "apps", "name": "app", "uid": "p-app"},
     "spec": {"nodeName": "node1", "containers": [{"name": "c", "image": "busybox",
                                                   "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
              "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "x6"}}]},
     "status": {"phase": "Running"}},
]}


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("gone", 2)
    with open(cluster.state, "w") as handle:
        yaml.safe_dump(STATE, handle)
    cluster.ssh("node1", "mkdir -p %s" % POOL2)
    return cluster


def attached_devices(kv):
    """node1's loop devices backed by pool2's pv-x6.img (losetup -j compares the existing file's inode)."""
    return kv.ssh("node1", "losetup -n -O NAME -j %s/%s" % (POOL2, HANDLE)).split()


def assert_second_run_changes_nothing(kv):
    before = kv.state_bytes()
    again = kv.reconcile(LOOP_POOLS)
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    assert again.node_module_runs() == {}, again.node_module_runs()
    assert again.plan() == [], again.plan()
    assert kv.state_bytes() == before
    return again


def test_attachment_whose_pv_is_gone_is_detached(kv):
    kv.ssh("node1", FAIL_MKFS)
    try:
        # the deprecated kubevol_loop_pools still sets the loop pools: pv-x6 in pool2 is planned and attached (then
        # its format fails), and the run says the variable is deprecated
        failed = kv.reconcile(OLD_LOOP_POOLS, expect_rc="nonzero")
        assert "injected format failure" in failed.stdout, failed.describe()
        assert "loop_pools" in failed.stdout and "deprecated" in failed.stdout, failed.describe()
    finally:
        kv.ssh("node1", "umount /usr/sbin/mkfs.ext4")
    try:
        data = kv.cluster()
        assert vas(data).get(va_name(HANDLE, "node1")) == ("pv-x6", "node1", True)
        assert node_status(data, "node1")[0] == [unique_name(HANDLE)]
        assert len(attached_devices(kv)) == 1
        assert not kv.mounts("node1")  # never formatted, never mounted

        # the PV is deleted (its claim and pod stay, as after a kubectl delete pv)
        data["items"] = [o for o in data["items"] if not (o["kind"] == "PersistentVolume"
                                                          and o["metadata"]["name"] == "pv-x6")]
        with open(kv.state, "w") as handle:
            yaml.safe_dump(data, handle)

        run = kv.reconcile(LOOP_POOLS)
        [detach] = [s for s in run.plan() if s["action"] == "detach"]
        assert (detach["node"], detach["volume"]) == ("node1", "pv-x6"), detach
        assert "its PV is gone: named pv-x6 after its VolumeAttachment" in detach["reason"], detach
        assert attached_devices(kv) == []
        data = kv.cluster()
        assert va_name(HANDLE, "node1") not in vas(data)
        assert node_status(data, "node1") == ([], [])
        # node1's driver record of it is gone with the device
        assert kv.ssh("node1", "ls %s/plugins/kubevol.io/loop/attachments/ 2>/dev/null || true" % KUBELET).strip() == ""
        assert not run.report().get("errors"), run.report()
        # the pod whose claim lost its PV is what stays reported, and only as blocked
        assert all(b["volume"] != "pv-x6" or "PV pv-x6" in b["reason"] for b in run.report().get("blocked") or [])
        assert_second_run_changes_nothing(kv)
    finally:
        for device in attached_devices(kv):  # never leave the device of a node-local pool behind
            kv.ssh("node1", "umount %s 2>/dev/null; losetup -d %s" % (device, device), check=False)


VOL_DATA = {"specVolID": None, "volumeHandle": None, "driverName": DRIVER, "nodeName": "node2",
            "attachmentID": "csi-0", "volumeLifecycleMode": "Persistent"}


def plant(kv, uid, directory, spec_name, handle):
    vol_dir = "%s/pods/%s/volumes/kubernetes.io~csi/%s" % (KUBELET, uid, directory)
    data = dict(VOL_DATA, specVolID=spec_name, volumeHandle=handle)
    kv.ssh("node2", "mkdir -p %s/mount && printf '%%s' '%s' > %s/vol_data.json" % (vol_dir, json.dumps(data), vol_dir))
    return vol_dir


def test_orphan_and_ghost_pod_volume_directories_converge(kv):
    orphan = plant(kv, "orphan-uid", "pv-old", "pv-old", "pv-old.img")  # no PV names pv-old.img: clean it
    ghost = plant(kv, "ghost-uid", "pv-a", "pv-b", "pv-b.img")  # names pv-b's volume, lies under pv-a
    try:
        first = kv.reconcile(LOOP_POOLS)
        unmounts = [(s["node"], s["volume"], s["pod_uid"]) for s in first.plan() if s["action"] == "unmount"]
        assert unmounts == [("node2", "pv-old", "orphan-uid")], first.plan()  # never a step for the ghost
        assert kv.ssh("node2", "test -e %s && echo present || echo gone" % orphan).strip() == "gone"
        blocked = [b for b in first.report().get("blocked") or [] if b["node"] == "node2"]
        assert len(blocked) == 1 and blocked[0]["volume"] == "pv-a", first.report()
        assert "vol_data.json names volume %s" % unique_name("pv-b.img") in blocked[0]["reason"]
        assert "(PV pv-b)" in blocked[0]["reason"] and "remove it by hand [KV-UNIDENTIFIED]" in blocked[0]["reason"]
        assert kv.ssh("node2", "cat %s/vol_data.json" % ghost)  # left alone: kubevol did not write it for pv-a

        second = assert_second_run_changes_nothing(kv)
        assert [b for b in second.report().get("blocked") or [] if b["node"] == "node2"] == blocked
    finally:
        kv.ssh("node2", "rm -rf %s/pods/ghost-uid %s/pods/orphan-uid" % (KUBELET, KUBELET))
    assert get(kv.cluster(), "PersistentVolume", "pv-b") is not None
