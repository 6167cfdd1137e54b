"""Attach, format, mount, publish, detach: the happy path, idempotence, check mode, data safety."""
import json
import os

from conftest import DRIVER, MiB

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
POD1 = "11111111-1111-4111-8111-111111111111"
POD2 = "22222222-2222-4222-8222-222222222222"


def blkid_rc(node, device):
    return node.run("blkid", "-p", device, check=False).returncode


def test_format_then_mount_and_second_run_unchanged(node):
    vol = node.vol("pv-a", fs_type="ext4", pods=[{"uid": POD1, "name": "default/web-0"}])
    att = node.module("k8s_volume_attach", volumes=[vol], provision=True)
    assert att["_rc"] == 0, att
    assert att["changed"] is True
    res = att["volumes"][0]
    dev = res["device"]
    assert dev.startswith("/dev/loop") and res["attached"] and res["provisioned"]
    assert os.path.getsize(node.image(vol)) == 64 * MiB
    va = att["volume_attachments"][0]
    assert va["metadata"]["name"] == names.volume_attachment_name("pv-a.img", DRIVER, "node1")
    assert va["spec"] == {"attacher": DRIVER, "nodeName": "node1", "source": {"persistentVolumeName": "pv-a"}}
    assert va["status"] == {"attached": True, "attachmentMetadata": {"devicePath": dev}}
    assert att["volumes_attached"] == [{"name": "kubernetes.io/csi/%s^pv-a.img" % DRIVER, "devicePath": dev}]

    mnt = node.module("node_volume_mount", volumes=[vol])
    assert mnt["_rc"] == 0, mnt
    res = mnt["volumes"][0]
    assert mnt["changed"] and res["formatted"] and res["fs_type"] == "ext4" and res["published"] == [POD1]
    gpath = names.device_mount_path(node.kubelet_dir, DRIVER, "pv-a.img")
    ppath = names.pod_mount_path(node.kubelet_dir, POD1, "pv-a")
    assert res["global_mount_path"] == gpath
    assert node.mounts_under() == sorted([gpath, ppath])
    assert mnt["diff"]["before"] == {gpath: None, ppath: None}
    assert mnt["diff"]["after"] == {gpath: dev, ppath: dev}
    with open(os.path.join(os.path.dirname(ppath), "vol_data.json")) as handle:
        assert json.load(handle) == {
            "specVolID": "pv-a", "volumeHandle": "pv-a.img", "driverName": DRIVER, "nodeName": "node1",
            "attachmentID": va["metadata"]["name"], "volumeLifecycleMode": "Persistent"}
    with open(os.path.join(os.path.dirname(gpath), "vol_data.json")) as handle:
        assert json.load(handle)["volumeHandle"] == "pv-a.img"

    again = node.module("k8s_volume_attach", volumes=[vol], provision=True)
    assert again["changed"] is False and again["volumes"][0]["device"] == dev
    again = node.module("node_volume_mount", volumes=[vol])
    assert again["changed"] is False, again
    assert node.mounts_under() == sorted([gpath, ppath])  # nothing stacked
    assert len(node.loops()) == 1


def test_check_mode_changes_nothing(node):
    vol = node.vol("pv-c", pods=[{"uid": POD1}])
    chk = node.module("k8s_volume_attach", check_mode=True, volumes=[vol], provision=True)
    assert chk["_rc"] == 0 and chk["changed"] is True, chk
    assert chk["volumes"][0]["provisioned"] and chk["volumes"][0]["device"] is None
    assert not os.path.exists(node.image(vol)) and node.loops() == []

    node.module("k8s_volume_attach", volumes=[vol], provision=True)
    dev = node.loops()[0]
    chk = node.module("node_volume_mount", check_mode=True, volumes=[vol])
    assert chk["_rc"] == 0 and chk["changed"] is True, chk
    assert chk["volumes"][0]["actions"][:2] == ["format", "mount device"]
    assert node.mounts_under() == [] and blkid_rc(node, dev) == 2  # still blank
    assert not os.path.exists(os.path.join(node.kubelet_dir, "pods"))

    node.module("node_volume_mount", volumes=[vol])
    mounted = node.mounts_under()
    chk = node.module("volume_detach", check_mode=True, volumes=[vol])
    assert chk["_rc"] == 0 and chk["changed"] is True and chk["volumes"][0]["detached"] == dev, chk
    assert node.mounts_under() == mounted and node.loops() == [dev]


def test_data_survives_unmount_detach_attach_mount(node):
    vol = node.vol("pv-d", fs_type="xfs", size=320 * MiB, pods=[{"uid": POD1}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    assert node.module("node_volume_mount", volumes=[vol])["_rc"] == 0
    data = os.path.join(names.pod_mount_path(node.kubelet_dir, POD1, "pv-d"), "data.bin")
    node.write_random(data)
    digest = node.sha256(data)

    det = node.module("volume_detach", volumes=[vol])
    assert det["_rc"] == 0 and det["changed"], det
    assert det["volumes"][0]["detached"]
    assert node.mounts_under() == [] and node.loops() == []
    pods_csi = os.path.join(node.kubelet_dir, "pods", POD1, "volumes", "kubernetes.io~csi")
    assert not os.path.exists(pods_csi)  # empty dirs kubevol created are gone
    # and the moved pod's empty volumes directory (the kubelet's orphaned pod cleanup removes it too)
    assert not os.path.exists(os.path.join(node.kubelet_dir, "pods", POD1, "volumes"))
    assert node.module("volume_detach", volumes=[vol])["changed"] is False

    assert node.module("k8s_volume_attach", volumes=[vol])["_rc"] == 0
    mnt = node.module("node_volume_mount", volumes=[vol])
    assert mnt["_rc"] == 0 and not mnt["volumes"][0]["formatted"], mnt
    assert node.sha256(data) == digest


def test_multiple_volumes_in_one_call_and_partial_failure_reported(node):
    vols = [node.vol("pv-m%d" % i, pods=[{"uid": POD1}]) for i in range(3)]
    att = node.module("k8s_volume_attach", volumes=vols, provision=True)
    assert att["_rc"] == 0 and [v["pv_name"] for v in att["volumes"]] == ["pv-m0", "pv-m1", "pv-m2"]
    assert len(set(v["device"] for v in att["volumes"])) == 3
    mnt = node.module("node_volume_mount", volumes=vols)
    assert mnt["_rc"] == 0 and all(v["formatted"] for v in mnt["volumes"])
    assert len(node.mounts_under()) == 6

    missing = node.vol("pv-missing")
    bad = node.module("k8s_volume_attach", volumes=[node.vol("pv-new"), missing], provision=False)
    assert bad["_rc"] != 0 and bad["failed"]
    assert bad["completed"] == [] and bad["failed_volume"] == "pv-new"
    node.run("truncate", "-s", "64M", os.path.join(node.pool, "pv-new.img"))
    bad = node.module("k8s_volume_attach", volumes=[node.vol("pv-new"), missing])
    assert bad["failed"] and bad["completed"] == ["pv-new"] and bad["failed_volume"] == "pv-missing"
    assert "pv-missing" in bad["msg"] and "node1" in bad["msg"] and "provision" in bad["msg"]
    assert bad["volumes"][0]["device"] and bad["changed"] is True

    det = node.module("volume_detach", volumes=vols + [node.vol("pv-new")])
    assert det["_rc"] == 0, det
    assert node.mounts_under() == [] and node.loops() == []
