"""Controller-side image growth and node-side filesystem growth (online xfs/btrfs, offline ext4)."""
import json
import os
import subprocess

import pytest

from conftest import MiB, warnings_of

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
POD = "44444444-4444-4444-8444-444444444444"


def setup_mounted(node, pv, fs_type, size):
    vol = node.vol(pv, fs_type=fs_type, size=size, pods=[{"uid": POD}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    assert node.module("node_volume_mount", volumes=[vol])["_rc"] == 0
    return vol


def grow_controller(node, vol, size):
    vol = dict(vol, capacity_bytes=size)
    res = node.module("fs_expand", stage="controller", volumes=[vol])
    assert res["_rc"] == 0 and res["changed"], res
    assert res["volumes"][0]["backing_size_bytes"]["new"] == size
    assert os.path.getsize(node.image(vol)) == size
    again = node.module("fs_expand", stage="controller", volumes=[vol])
    assert again["changed"] is False
    smaller = node.module("fs_expand", stage="controller", volumes=[dict(vol, capacity_bytes=size // 2)])
    assert smaller["changed"] is False and os.path.getsize(node.image(vol)) == size  # never shrinks
    return vol


@pytest.mark.parametrize("fs_type,size,new_size", [("xfs", 320 * MiB, 400 * MiB), ("btrfs", 256 * MiB, 320 * MiB)])
def test_online_growth(node, fs_type, size, new_size):
    vol = setup_mounted(node, "pv-" + fs_type, fs_type, size)
    data = os.path.join(names.pod_mount_path(node.kubelet_dir, POD, vol["pv_name"]), "d.bin")
    node.write_random(data, 2)
    digest = node.sha256(data)
    vol = grow_controller(node, vol, new_size)

    chk = node.module("fs_expand", check_mode=True, volumes=[vol])
    assert chk["_rc"] == 0 and chk["changed"] is True, chk
    assert chk["volumes"][0]["device_size_bytes"]["old"] == size  # nothing rescanned in check mode
    res = node.module("fs_expand", volumes=[vol])
    assert res["_rc"] == 0 and res["changed"], res
    v = res["volumes"][0]
    assert v["device_size_bytes"] == {"old": size, "new": new_size}
    assert v["fs_size_bytes"]["old"] <= size < v["fs_size_bytes"]["new"] <= new_size
    assert new_size - v["fs_size_bytes"]["new"] < 64 * 4096
    assert res["diff"]["after"][vol["pv_name"]]["fs_size_bytes"] == v["fs_size_bytes"]["new"]
    again = node.module("fs_expand", volumes=[vol])
    assert again["_rc"] == 0 and again["changed"] is False, again
    assert node.sha256(data) == digest


def test_ext4_grows_offline_at_mount(node):
    vol = setup_mounted(node, "pv-e", "ext4", 64 * MiB)
    data = os.path.join(names.pod_mount_path(node.kubelet_dir, POD, "pv-e"), "d.bin")
    node.write_random(data, 2)
    digest = node.sha256(data)
    assert node.module("volume_detach", volumes=[vol])["_rc"] == 0
    vol = grow_controller(node, vol, 96 * MiB)
    assert node.module("k8s_volume_attach", volumes=[vol])["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol])
    assert res["_rc"] == 0, res
    assert res["volumes"][0]["grown_offline"] == {"old": 64 * MiB, "new": 96 * MiB}
    assert node.sha256(data) == digest
    assert node.module("fs_expand", volumes=[vol])["changed"] is False


def test_ext4_fs_expand_offline_on_unmounted_device(node):
    vol = node.vol("pv-u", size=64 * MiB)
    subprocess.run(["truncate", "-s", "64M", node.image(vol)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", node.image(vol)], check=True)
    assert node.module("k8s_volume_attach", volumes=[vol])["_rc"] == 0
    vol = grow_controller(node, vol, 80 * MiB)
    res = node.module("fs_expand", volumes=[vol])
    assert res["_rc"] == 0 and res["changed"], res
    v = res["volumes"][0]
    assert v["mount_path"] is None
    assert v["fs_size_bytes"] == {"old": 64 * MiB, "new": 80 * MiB}
    assert node.module("fs_expand", volumes=[vol])["changed"] is False


def test_ext4_online_grow_failure_is_pending_and_harmless(node):
    """Online resize2fs needs CAP_SYS_RESOURCE, which this machine's root lacks: the ext4 grow is pending (the call
    does not fail), the filesystem and its data are as they were, and the xfs volume of the same call grows."""
    vol = setup_mounted(node, "pv-o", "ext4", 64 * MiB)
    xfs = setup_mounted(node, "pv-x", "xfs", 320 * MiB)
    data = os.path.join(names.pod_mount_path(node.kubelet_dir, POD, "pv-o"), "d.bin")
    node.write_random(data, 2)
    digest = node.sha256(data)
    vol, xfs = grow_controller(node, vol, 96 * MiB), grow_controller(node, xfs, 400 * MiB)
    res = node.module("fs_expand", volumes=[vol, xfs])
    assert res["_rc"] == 0, res
    ext4, grown = res["volumes"]
    assert grown["pending"] is None and grown["fs_size_bytes"]["new"] > 320 * MiB, grown
    if ext4["pending"] is None:  # a machine whose root has CAP_SYS_RESOURCE grows ext4 online
        assert ext4["fs_size_bytes"]["new"] == 96 * MiB and res["pending"] == []
    else:
        pending = ext4["pending"]
        assert pending["reason"] == "OnlineExpansionFailed" and pending["offline"] is True, pending
        assert pending["code"] == "KV-GROW-PENDING" and pending["step"] == "grow filesystem online", pending
        msg = pending["msg"]
        assert msg.startswith("volume pv-o on node node1: the filesystem was not grown: `resize2fs "), msg
        assert "Permission denied" in msg and "offline at the volume's next mount" in msg, msg
        assert msg.endswith("[KV-GROW-PENDING]"), msg
        assert res["pending"] == [dict(pending, volume="pv-o", unique_volume_name=ext4["unique_volume_name"],
                                       node="node1")]
        assert "failures" not in res and msg in warnings_of(res)
        # the device sees the new size; the filesystem is unchanged
        assert ext4["device_size_bytes"] == {"old": 64 * MiB, "new": 96 * MiB}
        assert ext4["fs_size_bytes"] == {"old": 64 * MiB, "new": 64 * MiB}
        out = node.run("dumpe2fs", "-h", _device_of(node, vol)).stdout
        assert "Block count:              65536" in out or "Block count:              16384" in out
        # unmounted from its pod and the node, it grows offline at its next mount; nothing is pending then
        assert node.module("volume_detach", volumes=[dict(vol, pods=[{"uid": POD}], detach=False,
                                                          unmount_device=True)])["_rc"] == 0
        mounted = node.module("node_volume_mount", volumes=[dict(vol, pods=[{"uid": POD}])])
        assert mounted["_rc"] == 0 and mounted["volumes"][0]["grown_offline"]["new"] == 96 * MiB, mounted
        again = node.module("fs_expand", volumes=[vol])
        assert again["_rc"] == 0 and again["pending"] == [] and again["volumes"][0]["pending"] is None, again
    assert node.sha256(data) == digest


def _device_of(node, vol):
    """The loop device of ``vol``'s image (by its backing file's inode)."""
    st = os.stat(node.image(vol))
    out = subprocess.run(["losetup", "-J", "--list", "-O", "NAME,BACK-INO,BACK-MAJ:MIN"], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    for dev in json.loads(out)["loopdevices"]:
        if int(dev.get("back-ino") or -1) == st.st_ino and str(dev.get("back-maj:min")).strip() == "%d:%d" % (
                os.major(st.st_dev), os.minor(st.st_dev)):
            return dev["name"]
    raise AssertionError("no loop device for %s" % node.image(vol))


def test_a_missing_grow_tool_is_pending_and_the_other_volumes_go_on(node):
    """xfs_growfs hidden on the node (a character device bound over it in the test's own mount namespace): the xfs
    grow is pending with ToolMissing, naming the tool to install; the btrfs volume of the same call grows."""
    xfs = setup_mounted(node, "pv-x", "xfs", 320 * MiB)
    btr = setup_mounted(node, "pv-b", "btrfs", 256 * MiB)
    xfs, btr = grow_controller(node, xfs, 400 * MiB), grow_controller(node, btr, 320 * MiB)
    tool = node.run("sh", "-c", "command -v xfs_growfs").stdout.strip()
    node.run("mount", "--bind", "/dev/null", os.path.realpath(tool))
    try:
        res = node.module("fs_expand", volumes=[xfs, btr])
    finally:
        node.run("umount", os.path.realpath(tool))
    assert res["_rc"] == 0, res
    pending, grown = res["volumes"]
    assert grown["pending"] is None and grown["fs_size_bytes"]["new"] > 256 * MiB, grown
    assert pending["pending"]["reason"] == "ToolMissing" and pending["pending"]["offline"] is False, pending
    assert "install the xfsprogs package on the node" in pending["pending"]["msg"], pending
    assert [p["volume"] for p in res["pending"]] == ["pv-x"]
    # the tool back: the same call grows it
    again = node.module("fs_expand", volumes=[xfs])
    assert again["_rc"] == 0 and again["pending"] == [] and again["volumes"][0]["fs_size_bytes"]["new"] > 320 * MiB


def test_xfs_not_mounted_is_pending_not_failed(node):
    """xfs grows only while mounted: an attached, unmounted xfs volume's grow waits (VolumeNotMounted)."""
    vol = node.vol("pv-u", fs_type="xfs", size=320 * MiB)
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    subprocess.run(["mkfs.xfs", "-q", "-f", _device_of(node, vol)], check=True)
    vol = grow_controller(node, vol, 400 * MiB)
    res = node.module("fs_expand", volumes=[vol])
    assert res["_rc"] == 0, res
    assert res["volumes"][0]["pending"]["reason"] == "VolumeNotMounted", res
    assert "mount the volume (node_volume_mount)" in res["volumes"][0]["pending"]["msg"]


def test_block_and_read_only_volumes_skipped_but_rescanned(node):
    blk = node.vol("pv-blk", mode="Block")
    ro = node.vol("pv-rof", read_only=True)
    subprocess.run(["truncate", "-s", "64M", node.image(ro)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", node.image(ro)], check=True)
    assert node.module("k8s_volume_attach", volumes=[blk, ro], provision=True)["_rc"] == 0
    blk, ro = [dict(v, capacity_bytes=80 * MiB) for v in (blk, ro)]
    assert node.module("fs_expand", stage="controller", volumes=[blk, ro])["_rc"] == 0
    res = node.module("fs_expand", volumes=[blk, ro])
    assert res["_rc"] == 0, res
    for v in res["volumes"]:
        assert v["device_size_bytes"] == {"old": 64 * MiB, "new": 80 * MiB}
        assert v["skipped"] and v["fs_size_bytes"]["new"] is None
    assert "Block" in res["volumes"][0]["skipped"] and "read-only" in res["volumes"][1]["skipped"]


def test_setup_execution_goes_on_past_a_pending_grow(node):
    """node_volume_setup (the reconcile role's one execution per node): the ext4 grow that cannot run online is
    pending in its expand_node result, and the new volume of the same execution is attached and mounted."""
    vol = setup_mounted(node, "pv-o", "ext4", 64 * MiB)
    bigger = dict(vol, capacity_bytes=96 * MiB)
    new = node.vol("pv-new", size=64 * MiB, pods=[{"uid": POD}])
    res = node.module("node_volume_setup", attach={"volumes": [new], "provision": True}, mount={"volumes": [new]},
                      expand_controller={"volumes": [bigger]}, expand_node={"volumes": [bigger]})
    assert res["_rc"] == 0, res
    phases = res["phase_results"]
    assert not any(r.get("failed") for r in phases.values()), phases
    assert names.pod_mount_path(node.kubelet_dir, POD, "pv-new") in node.mounts_under()
    grow = phases["expand_node"]
    if grow["volumes"][0]["pending"] is not None:  # no CAP_SYS_RESOURCE: online ext4 growth is refused
        assert [p["volume"] for p in grow["pending"]] == ["pv-o"] and grow["pending"][0]["offline"], grow
