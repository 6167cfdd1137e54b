"""Controller-side image growth and node-side filesystem growth (online xfs/btrfs, offline ext4)."""
import os
import subprocess

import pytest

from conftest import MiB

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


def test_ext4_online_grow_failure_is_clear_and_harmless(node):
    vol = setup_mounted(node, "pv-o", "ext4", 64 * MiB)
    data = os.path.join(names.pod_mount_path(node.kubelet_dir, POD, "pv-o"), "d.bin")
    node.write_random(data, 2)
    digest = node.sha256(data)
    vol = grow_controller(node, vol, 96 * MiB)
    res = node.module("fs_expand", volumes=[vol])
    if res["_rc"] == 0:  # a machine whose root has CAP_SYS_RESOURCE grows ext4 online
        assert res["volumes"][0]["fs_size_bytes"]["new"] == 96 * MiB
    else:
        msg = res["msg"]
        assert "grow filesystem online failed on node node1 for volume pv-o" in msg, msg
        assert "resize2fs" in msg and "Permission denied" in msg and "offline" in msg, msg
        assert res["step"] == "grow filesystem online" and res["failed_volume"] == "pv-o"
        dev = node.loops()[0]
        out = node.run("dumpe2fs", "-h", dev).stdout
        assert "Block count:              65536" in out or "Block count:              16384" in out
    assert node.sha256(data) == digest


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
