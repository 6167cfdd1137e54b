"""Hostile node states: a symlink or a file planted inside the kubelet directory never sends a mount or a
write outside it, and one volume's refusal never hides the others' results (they converge in the same call).
Every test checks the real state: findmnt, the directory outside, the files."""
import json
import os

import pytest

from conftest import DRIVER, warnings_of

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
VICTIM = "99999999-9999-4999-8999-999999999991"
BYSTANDER = "99999999-9999-4999-8999-999999999992"


def outside(node):
    """A directory outside the kubelet directory standing for /etc: it must not change."""
    path = os.path.join(node.tmp, "outside-etc")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "passwd"), "w") as handle:
        handle.write("root:x:0:0:root:/root:/bin/sh\n")
    return path


def listing(path):
    return sorted(os.listdir(path))


def plant(node, vol, level, target):
    """A symlink (or, for level 'file', a regular file) where kubevol needs a directory for ``vol``'s pod mount."""
    mount_dir = names.pod_mount_path(node.kubelet_dir, VICTIM, vol["pv_name"])
    global_mount = names.device_mount_path(node.kubelet_dir, vol["driver"], vol["volume_handle"])
    planted = {
        "mount": mount_dir,
        "volume dir": os.path.dirname(mount_dir),
        "pod dir": os.path.join(node.kubelet_dir, "pods", VICTIM),
        "global parent": os.path.dirname(global_mount),
        "file": mount_dir,
    }[level]
    os.makedirs(os.path.dirname(planted), exist_ok=True)
    if level == "file":
        with open(planted, "w") as handle:
            handle.write("not a directory\n")
    else:
        os.symlink(target, planted)
    return planted


@pytest.mark.parametrize("level", ["mount", "volume dir", "pod dir", "global parent", "file"])
def test_planted_symlink_or_file_is_refused_and_the_other_volumes_converge(node, level):
    etc = outside(node)
    before = listing(etc)
    victim = node.vol("pv-victim", pods=[{"uid": VICTIM}])
    bystander = node.vol("pv-bystander", pods=[{"uid": BYSTANDER}])
    assert node.module("k8s_volume_attach", volumes=[victim, bystander], provision=True)["_rc"] == 0
    planted = plant(node, victim, level, etc)

    res = node.module("node_volume_mount", volumes=[victim, bystander])
    assert res["_rc"] != 0 and res["failed"], res
    what = "a regular file" if level == "file" else "a symlink (to %s)" % etc
    assert "refusing %s on node node1" % planted in res["msg"] and what in res["msg"], res["msg"]
    assert "pv-victim" in res["msg"]
    # structured: node, volume, step for each failed volume; the bystander converged and is reported
    (failure,) = res["failures"]
    assert failure["node"] == "node1" and failure["volume"] == "pv-victim" and failure["msg"]
    assert res["completed"] == ["pv-bystander"] and [v["pv_name"] for v in res["volumes"]] == ["pv-bystander"]
    bystander_mount = names.pod_mount_path(node.kubelet_dir, BYSTANDER, "pv-bystander")
    assert bystander_mount in node.mounts_under()
    # nothing outside changed: no mount there, no file written there
    assert not [m for m in node.mounts() if m["target"].startswith(etc)]
    assert listing(etc) == before
    assert all(not m.startswith(etc) for m in node.mounts_under("/"))
    # check mode refuses the same way and changes nothing
    res = node.module("node_volume_mount", volumes=[victim], check_mode=True)
    assert res["_rc"] != 0 and "refusing %s" % planted in res["msg"], res
    assert listing(etc) == before


def test_node_facts_report_a_symlinked_pod_volume_dir_and_never_follow_it(node):
    etc = outside(node)
    victim = node.vol("pv-victim", pods=[{"uid": VICTIM}])
    plant(node, victim, "volume dir", etc)
    facts = node.module("node_volume_info")
    assert facts["_rc"] == 0, facts
    assert listing(etc) == ["passwd"]
    (entry,) = [m for m in facts["node_facts"]["pod_mounts"] if m["pod_uid"] == VICTIM]
    assert entry["unsafe"] is True and "a symlink (to %s)" % etc in entry["uncertain"]
    assert entry["unique_volume_name"] is None


def shared(node2, node, vol):
    """The same volume item as node2 sees it: its pool is node's (the storage both nodes use)."""
    return dict(vol, volume_attributes={"pool": node.pool})


def test_the_pool_refuses_a_second_node_for_an_rwo_image_and_never_adopts_its_device(node, node2):
    """The storage side answers VolumeInUse as a cloud disk API does: the pool records which node holds each image."""
    vol = node.vol("pv-rwo")
    first = node.module("k8s_volume_attach", volumes=[vol], provision=True)
    assert first["_rc"] == 0, first
    device = first["volumes"][0]["device"]
    res = node2.module("k8s_volume_attach", volumes=[shared(node2, node, vol)], loop_pools=[node.pool])
    assert res["_rc"] != 0 and "held by node node1 (since" in res["msg"] and "node2" in res["msg"], res
    assert node.loops() == [device]  # node2 neither attached nor adopted node1's device
    # ReadWriteMany: both may hold it
    rwx = node.vol("pv-rwx", multi_attach=True)
    assert node.module("k8s_volume_attach", volumes=[rwx], provision=True)["_rc"] == 0
    both = node2.module("k8s_volume_attach", volumes=[shared(node2, node, rwx)], loop_pools=[node.pool])
    assert both["_rc"] == 0, both
    # once node1 detaches, node2 may attach the RWO image
    assert node.module("volume_detach", volumes=[vol])["_rc"] == 0
    moved = node2.module("k8s_volume_attach", volumes=[shared(node2, node, vol)], loop_pools=[node.pool])
    assert moved["_rc"] == 0, moved
    assert node2.module("volume_detach", volumes=[shared(node2, node, vol), shared(node2, node, rwx)],
                        loop_pools=[node.pool])["_rc"] == 0
    assert node.module("volume_detach", volumes=[rwx])["_rc"] == 0
    assert node.loops() == []


def test_another_nodes_hold_waits_for_its_own_detach_or_the_operator(node, node2):
    """Issue 25: a node that was only unreachable (out-of-service for the controller) still has its device. The new
    node never adopts or reuses it: its attach fails naming the holder and since when, while node1's data and device
    stay; node1's own detach releases the image and node2 then attaches a device of its own. An operator's release
    (force_release_holders) of a node whose device still backs the image is refused too; of a node whose device is
    gone, it drops the hold and says so."""
    vol = node.vol("pv-down", pods=[{"uid": "44444444-4444-4444-8444-444444444441"}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    assert node.module("node_volume_mount", volumes=[vol])["_rc"] == 0
    path = names.pod_mount_path(node.kubelet_dir, "44444444-4444-4444-8444-444444444441", "pv-down")
    node.write_random(os.path.join(path, "data"))
    checksum = node.sha256(os.path.join(path, "data"))
    [device] = node.loops()
    other = dict(shared(node2, node, vol), pods=[])
    held = node2.module("k8s_volume_attach", volumes=[other], loop_pools=[node.pool])
    assert held["_rc"] != 0 and "held by node node1 (since 20" in held["msg"] and "node2" in held["msg"], held
    assert "own detach" in held["msg"] and 'force_release_holders=["node1"]' in held["msg"], held["msg"]
    assert held["volumes"] == [] and node.loops() == [device]  # neither adopted nor a second device
    # the operator says node1 is down, but its device still backs the image on this kernel: refused, not adopted
    forced = node2.module("k8s_volume_attach", volumes=[other], loop_pools=[node.pool],
                          force_release_holders=["node1"])
    assert forced["_rc"] != 0 and "loop device %s already backs image" % device in forced["msg"], forced
    assert "node(s) node1" in forced["msg"] and "they are not down" in forced["msg"], forced["msg"]
    assert node.loops() == [device] and node.sha256(os.path.join(path, "data")) == checksum
    # node1 comes back and its cleanup runs: its own detach releases the hold; node2 attaches its own device
    assert node.module("volume_detach", volumes=[vol])["_rc"] == 0
    moved = node2.module("k8s_volume_attach", volumes=[other], loop_pools=[node.pool])
    assert moved["_rc"] == 0 and not moved["volumes"][0]["adopted"] and moved["volumes"][0]["attached"], moved
    assert moved["volumes"][0]["released_holders"] == {}
    assert node2.module("volume_detach", volumes=[other], loop_pools=[node.pool])["_rc"] == 0
    assert node.loops() == []


def test_the_operator_releases_the_hold_of_a_node_down_for_good(node, node2):
    """node1 held the image and is gone for good (its device is gone with its kernel: detached here by hand, its
    hold left in the pool). Without the operator node2 waits; with force_release_holders: [node1] it attaches and
    says whose hold it released."""
    vol = node.vol("pv-gone")
    device = node.module("k8s_volume_attach", volumes=[vol], provision=True)["volumes"][0]["device"]
    node.run("losetup", "-d", device)  # the machine lost its kernel state; the pool (shared storage) did not
    other = shared(node2, node, vol)
    held = node2.module("k8s_volume_attach", volumes=[other], loop_pools=[node.pool])
    assert held["_rc"] != 0 and "held by node node1" in held["msg"], held
    check = node2.module("k8s_volume_attach", check_mode=True, volumes=[other], loop_pools=[node.pool],
                         force_release_holders=["node1"])
    assert check["_rc"] == 0 and list(check["volumes"][0]["released_holders"]) == ["node1"], check
    res = node2.module("k8s_volume_attach", volumes=[other], loop_pools=[node.pool], force_release_holders=["node1"])
    assert res["_rc"] == 0 and res["volumes"][0]["attached"] and not res["volumes"][0]["adopted"], res
    assert list(res["volumes"][0]["released_holders"]) == ["node1"]
    assert any("forced by the operator" in w and "node1" in w for w in warnings_of(res)), res
    again = node2.module("k8s_volume_attach", volumes=[other], loop_pools=[node.pool], force_release_holders=["node1"])
    assert again["_rc"] == 0 and not again["changed"], again  # idempotent: node1's hold is gone
    assert node2.module("volume_detach", volumes=[other], loop_pools=[node.pool])["_rc"] == 0
    assert node.loops() == []


def test_a_lost_local_record_is_adopted_only_by_the_holder(node):
    vol = node.vol("pv-lost")
    device = node.module("k8s_volume_attach", volumes=[vol], provision=True)["volumes"][0]["device"]
    records = os.path.join(node.kubelet_dir, "plugins", "kubevol.io", "loop", "attachments")
    for name in os.listdir(records):
        os.unlink(os.path.join(records, name))  # a run killed between losetup and its record
    again = node.module("k8s_volume_attach", volumes=[vol])
    assert again["_rc"] == 0 and again["volumes"][0]["device"] == device, again
    assert node.loops() == [device]
    assert node.module("volume_detach", volumes=[vol])["_rc"] == 0


def test_teardown_never_reads_or_removes_through_a_symlinked_pod_directory(node, tmp_path):
    """volume_detach on a pod whose volumes directory is a symlink out of the kubelet dir: refused, and the
    vol_data.json and directories over there stay."""
    pod = "77777777-7777-4777-8777-777777777777"
    outside = tmp_path / "elsewhere"
    vol_dir = outside / names.CSI_PLUGIN_DIR / "pv-sym"
    (vol_dir / "mount").mkdir(parents=True)
    with open(str(vol_dir / "vol_data.json"), "w") as handle:
        json.dump({"specVolID": "pv-sym", "volumeHandle": "pv-sym.img", "driverName": DRIVER}, handle)
    volumes = os.path.join(node.kubelet_dir, "pods", pod, "volumes")
    os.makedirs(os.path.dirname(volumes))
    os.symlink(str(outside), volumes)
    vol = node.vol("pv-sym", pods=[{"uid": pod}], detach=False, unmount_device=False)
    res = node.module("volume_detach", volumes=[vol])
    assert res["_rc"] != 0 and "refusing" in res["msg"] and "symlink" in res["msg"], res
    assert sorted(os.listdir(str(vol_dir))) == ["mount", "vol_data.json"] and os.path.islink(volumes)


def _holder_file(node, vol, suffix):
    import hashlib
    return os.path.join(node.pool, ".kubevol-holders", hashlib.sha256(vol["volume_handle"].encode()).hexdigest() + suffix)


def test_the_pool_locks_each_image_alone_and_removes_the_lock_with_the_last_holder(node):
    """One image's holder lock does not hold back another image's attach (ten nodes used to wait on each other's
    losetup under one pool-wide lock); the image's own attach waits for it; the last detach leaves no lock file."""
    import fcntl
    import subprocess
    import sys
    busy, free = node.vol("pv-busy"), node.vol("pv-free")
    os.makedirs(os.path.dirname(_holder_file(node, busy, ".lock")), exist_ok=True)
    # another node in the middle of attaching pv-busy: it holds that image's lock
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
                               "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)",
                               _holder_file(node, busy, ".lock")], stdout=subprocess.PIPE, universal_newlines=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        res = node.module("k8s_volume_attach", volumes=[free], provision=True, lock_timeout=20)
        assert res["_rc"] == 0, res  # not held back by pv-busy's lock
        with open(_holder_file(node, busy, ".lock")) as fh:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # still held: nothing took it from the holder
    finally:
        holder.kill()
        holder.wait()
    assert node.module("k8s_volume_attach", volumes=[busy], provision=True)["_rc"] == 0
    assert os.path.exists(_holder_file(node, free, ".json")) and os.path.exists(_holder_file(node, free, ".lock"))
    assert node.module("volume_detach", volumes=[busy, free])["_rc"] == 0
    # nobody holds either image: neither a holder record nor a lock file is left
    assert listing(os.path.join(node.pool, ".kubevol-holders")) == []
    assert node.loops() == []


def test_a_planted_holder_lock_symlink_is_never_followed(node, tmp_path):
    """A symlink planted where an image's holder lock belongs: attach refuses, the file it points to is untouched,
    nothing is attached."""
    vol = node.vol("pv-planted")
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    lock = _holder_file(node, vol, ".lock")
    os.makedirs(os.path.dirname(lock), exist_ok=True)
    os.symlink(str(victim), lock)
    res = node.module("k8s_volume_attach", volumes=[vol], provision=True)
    assert res["_rc"] != 0 and "refusing %s on node node1: a symlink where volume pv-planted's holder lock" % lock \
        in res["msg"] and "remove it by hand" in res["msg"], res
    assert victim.read_text() == "keep me\n" and os.path.islink(lock)
    assert node.loops() == []
