"""Kubernetes local PVs on the node (issue 26): a directory and a loop device as the node's disk, real mounts."""
import os
import subprocess

import pytest

from conftest import MiB
from plugin_node_run import run, tree

LOCAL = "kubernetes.io/local-volume"
POD1 = "11111111-1111-4111-8111-111111111111"
POD2 = "22222222-2222-4222-8222-222222222222"


def item(pv, path, pods=(), **kw):
    raw = dict(pv_name=pv, plugin=LOCAL, driver=None, volume_handle=pv, path=path, pods=list(pods))
    raw.update(kw)
    return raw


def pod_dir(node, uid, pv, block=False):
    return os.path.join(node.kubelet_dir, "pods", uid, "volumeDevices" if block else "volumes",
                        "kubernetes.io~local-volume", pv)


def gmount(node, pv):
    return os.path.join(node.kubelet_dir, "plugins", LOCAL, "mounts", pv)


@pytest.fixture
def disks(node):
    root = os.path.join(node.tmp, "disks")
    os.makedirs(root)
    return root


@pytest.fixture
def disk(node):
    """A loop device over a file under the test's tmp dir: the node's local disk (conftest detaches it)."""
    image = os.path.join(node.tmp, "disk.img")
    with open(image, "wb") as handle:
        handle.truncate(64 * MiB)
    return subprocess.run(["losetup", "-f", "--show", image], stdout=subprocess.PIPE, universal_newlines=True,
                          check=True).stdout.strip()


def test_directory_local_pv(node, disks):
    path = os.path.join(disks, "vol1")
    os.makedirs(path)
    with open(os.path.join(path, "keep.txt"), "w") as handle:
        handle.write("data")
    opts = {LOCAL: {"paths": [disks]}}
    vol = item("pv-dir", path, pods=[{"uid": POD1, "fs_group": 2000}, {"uid": POD2, "read_only": True}])
    before = tree(node)
    check = run(node, "mount", [vol], opts, check_mode=True)
    assert check["ok"] and check["changed"] and tree(node) == before and node.mounts_under() == [], check
    assert any("bind" in a for a in check["volumes"][0]["actions"]), check
    res = run(node, "mount", [vol], opts)
    assert res["ok"] and res["changed"] and sorted(res["volumes"][0]["published"]) == [POD1, POD2], res
    assert node.mounts_under() == sorted([pod_dir(node, POD1, "pv-dir"), pod_dir(node, POD2, "pv-dir")])
    assert not os.path.exists(gmount(node, "pv-dir"))  # a directory has no global mount
    assert node.run("cat", os.path.join(pod_dir(node, POD1, "pv-dir"), "keep.txt")).stdout == "data"
    assert os.stat(path).st_gid == 2000  # fsGroup applied through the bind (SetVolumeOwnership)
    ro = node.run("touch", os.path.join(pod_dir(node, POD2, "pv-dir"), "x"), check=False)
    assert ro.returncode != 0 and "Read-only" in ro.stderr
    again = run(node, "mount", [vol], opts)
    assert again["ok"] and again["changed"] is False and again["volumes"][0]["actions"] == [], again

    facts = run(node, "facts")["node_facts"]
    ours = [m for m in facts["pod_mounts"] if m["plugin"] == LOCAL]
    assert [(m["pod_uid"], m["mounted"], m["read_only"], m["unique_volume_name"], m["driver"]) for m in ours] == [
        (POD1, True, False, LOCAL + "/pv-dir", None), (POD2, True, True, LOCAL + "/pv-dir", None)]

    # pod 1 leaves: its bind goes, pod 2 keeps reading, the data stays
    gone = run(node, "detach", [item("pv-dir", path, pods=[{"uid": POD1}], unmount_device=False)], opts)
    assert gone["ok"] and gone["changed"] and not os.path.exists(pod_dir(node, POD1, "pv-dir")), gone
    assert os.path.exists(os.path.join(path, "keep.txt"))
    # a teardown that would leave pod 2 behind is refused unless forced
    blocked = run(node, "detach", [item("pv-dir", path, pods=[{"uid": POD1}])], opts)
    assert not blocked["ok"] and "still mounted" in blocked["msg"] and POD2 in blocked["msg"], blocked
    # the pod returns: same data
    back = run(node, "mount", [vol], opts)
    assert back["ok"] and node.run("cat", os.path.join(pod_dir(node, POD1, "pv-dir"), "keep.txt")).stdout == "data"
    check = run(node, "detach", [vol], opts, check_mode=True)
    assert check["ok"] and check["changed"] and len(node.mounts_under()) == 2, check
    down = run(node, "detach", [vol], opts)
    assert down["ok"] and node.mounts_under() == [], down
    assert sorted(os.listdir(path)) == ["keep.txt"]  # never anything removed under the PV's path
    assert not os.path.exists(os.path.join(node.kubelet_dir, "pods", POD1, "volumes", "kubernetes.io~local-volume"))
    assert run(node, "detach", [vol], opts)["changed"] is False
    # not attachable: attach is a no-op with no VolumeAttachment, never a skip
    att = run(node, "attach", [vol], opts)
    assert att["ok"] and att["changed"] is False and att["volumes"][0]["volume_attachment"] is None, att
    exp = run(node, "expand", [vol], opts)
    assert exp["ok"] and exp["changed"] is False and "directory" in exp["volumes"][0]["skipped"], exp


def test_block_device_local_pv(node, disks, disk):
    link = os.path.join(disks, "disk1")
    os.symlink(disk, link)  # as local-static-provisioner's discovery directory holds them
    opts = {LOCAL: {"paths": [disks, disk]}}  # the symlink's target is allowed too
    vol = item("pv-blk", link, pods=[{"uid": POD1}])
    res = run(node, "mount", [vol], opts)
    assert res["ok"] and res["volumes"][0]["formatted"] and res["volumes"][0]["fs_type"] == "ext4", res
    assert node.mounts_under() == sorted([gmount(node, "pv-blk"), pod_dir(node, POD1, "pv-blk")])
    data = os.path.join(pod_dir(node, POD1, "pv-blk"), "d.bin")
    node.write_random(data, 2)
    digest = node.sha256(data)
    again = run(node, "mount", [vol], opts)
    assert again["ok"] and again["changed"] is False, again
    facts = run(node, "facts")["node_facts"]
    [glob] = [g for g in facts["global_mounts"] if g["plugin"] == LOCAL]
    assert (glob["pv_name"], glob["device"], glob["fs_type"], glob["mounted"]) == ("pv-blk", disk, "ext4", True)
    assert glob["fs_size_bytes"] and glob["unique_volume_name"] == LOCAL + "/pv-blk"

    down = run(node, "detach", [vol], opts)
    assert down["ok"] and node.mounts_under() == [] and gmount(node, "pv-blk") in down["volumes"][0]["unmounted"]
    # the disk grows while unmounted: the filesystem is grown offline (ext4: no online grow here)
    with open(os.path.join(node.tmp, "disk.img"), "r+b") as handle:
        handle.truncate(96 * MiB)
    subprocess.run(["losetup", "-c", disk], check=True)
    exp = run(node, "expand", [vol], opts)
    assert exp["ok"] and exp["changed"] and exp["volumes"][0]["fs_size_bytes"]["new"] > 90 * MiB, exp
    assert run(node, "expand", [vol], opts)["changed"] is False
    back = run(node, "mount", [vol], opts)
    assert back["ok"] and back["volumes"][0]["formatted"] is False, back  # kept, not formatted again
    assert node.sha256(data) == digest


def test_device_holding_another_filesystem_is_kept(node, disks, disk):
    subprocess.run(["mkfs.ext4", "-q", "-F", disk], check=True)
    opts = {LOCAL: {"paths": [disk]}}
    vol = item("pv-xfs", disk, fs_type="xfs", pods=[{"uid": POD1}])
    res = run(node, "mount", [vol], opts)
    assert not res["ok"] and "xfs" in res["msg"] and "ext4" in res["msg"] and "spec.local.fsType" in res["msg"], res
    assert node.mounts_under() == []
    blkid = subprocess.run(["blkid", "-p", "-o", "value", "-s", "TYPE", disk], stdout=subprocess.PIPE,
                           universal_newlines=True, check=False)
    assert blkid.stdout.strip() == "ext4"


def test_block_mode_maps_the_device(node, disk):
    opts = {LOCAL: {"paths": [disk]}}
    vol = item("pv-raw", disk, mode="Block", pods=[{"uid": POD1}])
    res = run(node, "mount", [vol], opts)
    path = pod_dir(node, POD1, "pv-raw", block=True)
    assert res["ok"] and node.mounts_under() == [path], res
    assert node.run("test", "-b", path).returncode == 0  # the device node, seen in the namespace
    assert run(node, "mount", [vol], opts)["changed"] is False
    down = run(node, "detach", [vol], opts)
    assert down["ok"] and node.mounts_under() == [] and not os.path.exists(path), down


@pytest.mark.parametrize("case", ["outside", "symlink", "relative", "file", "missing"])
def test_refused_paths_create_nothing(node, disks, case):
    outside = os.path.join(node.tmp, "outside")
    os.makedirs(outside)
    with open(os.path.join(disks, "afile"), "w") as handle:
        handle.write("x")
    os.symlink(outside, os.path.join(disks, "escape"))
    path = {"outside": outside, "symlink": os.path.join(disks, "escape"), "relative": "disks/vol",
            "file": os.path.join(disks, "afile"), "missing": os.path.join(disks, "nothing")}[case]
    before = tree(node)
    res = run(node, "mount", [item("pv-bad", path, pods=[{"uid": POD1}])], {LOCAL: {"paths": [disks]}})
    assert not res["ok"] and "pv-bad" in res["msg"], res
    if case in ("outside", "symlink"):
        assert "node1" in res["msg"] and disks in res["msg"] and "the paths of driver_options[" in res["msg"]
    if case == "relative":
        assert "path of PV pv-bad" in res["msg"]
    if case in ("file", "missing"):
        assert "only directory and block device are supported" in res["msg"]
    assert tree(node) == before and node.mounts_under() == []


def test_check_mode_formats_nothing_and_readers_get_ro(node, disk):
    opts = {LOCAL: {"paths": [disk]}}
    vol = item("pv-ro", disk, pods=[{"uid": POD1}, {"uid": POD2, "read_only": True}])
    check = run(node, "mount", [vol], opts, check_mode=True)
    assert check["ok"] and check["changed"] and node.mounts_under() == [], check
    assert any(a.startswith("format") for a in check["volumes"][0]["actions"]), check
    blkid = subprocess.run(["blkid", "-p", disk], stdout=subprocess.PIPE, universal_newlines=True, check=False)
    assert blkid.returncode == 2 and not os.path.exists(node.kubelet_dir)  # still blank, nothing created
    res = run(node, "mount", [vol], opts)
    assert res["ok"] and len(node.mounts_under()) == 3, res
    ro = node.run("touch", os.path.join(pod_dir(node, POD2, "pv-ro"), "x"), check=False)
    assert ro.returncode != 0 and "Read-only" in ro.stderr
    node.run("touch", os.path.join(pod_dir(node, POD1, "pv-ro"), "x"))


def test_planted_symlink_in_the_kubelet_dir_is_refused(node, disks):
    path = os.path.join(disks, "vol")
    os.makedirs(path)
    outside = os.path.join(node.tmp, "outside")
    os.makedirs(outside)
    plugin_dir = os.path.dirname(pod_dir(node, POD1, "pv-sym"))
    os.makedirs(plugin_dir)
    os.symlink(outside, pod_dir(node, POD1, "pv-sym"))
    res = run(node, "mount", [item("pv-sym", path, pods=[{"uid": POD1}])], {LOCAL: {"paths": [disks]}})
    assert not res["ok"] and "symlink" in res["msg"] and node.mounts_under() == [], res
    facts = run(node, "facts")["node_facts"]
    [entry] = [m for m in facts["pod_mounts"] if m["plugin"] == LOCAL]
    assert entry["unsafe"] is True and entry["unique_volume_name"] is None
