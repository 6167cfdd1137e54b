"""Converged means each pod sees its own volume, on real loop devices: node_volume_info compares the device number of
every pod's Block map and of every global mount with the device attached for that volume now (docs/contracts.md
section 2), and node_volume_mount maps a Block pod path on another number again, naming the pod to restart."""
import os

from conftest import warnings_of

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names

POD = "99999999-9999-4999-8999-999999999991"


def number(path):
    rdev = os.stat(path).st_rdev
    return "%d:%d" % (os.major(rdev), os.minor(rdev))


def mapped(node, path):
    """The device number a pod's map path gives inside the node's mount namespace (the bind lives there)."""
    major, minor = node.run("stat", "-c", "%t %T", path).stdout.split()
    return "%d:%d" % (int(major, 16), int(minor, 16))


def facts_of(node):
    result = node.module("node_volume_info")
    assert result["_rc"] == 0, result
    return result["node_facts"]


def entry(entries, path):
    [found] = [e for e in entries if e["path"] == path]
    return found


def test_a_block_map_whose_device_was_detached_outside_kubevol_is_reported_then_mapped_again(node):
    vol = node.vol("pv-blk", mode="Block", pods=[{"uid": POD, "name": "ns/db-0"}])
    [att] = node.module("k8s_volume_attach", volumes=[vol], provision=True)["volumes"]
    assert node.module("node_volume_mount", volumes=[vol])["_rc"] == 0
    path = names.pod_device_path(node.kubelet_dir, POD, "pv-blk")
    old = att["device"]
    node.run("dd", "if=/dev/urandom", "of=" + path, "bs=1M", "count=1", "conv=fsync", "status=none")
    mine = node.sha256(old)
    pm = entry(facts_of(node)["pod_mounts"], path)
    assert (pm["device_number"], pm["attached_device"], pm["device_mismatch"]) == (number(old), old, False), pm

    # a plain losetup -d under the running pod: the map keeps the old number, the volume has no device now
    node.run("losetup", "-d", old)
    facts = facts_of(node)
    assert facts["devices"] == []
    pm = entry(facts["pod_mounts"], path)
    assert pm["mounted"] is True and pm["device_number"] == number(old) == mapped(node, path)
    assert pm["attached_device"] is None and pm["device_mismatch"] is True, pm

    # the kernel gives the number to the next device; the volume is attached again on another one
    filler = node.vol("pv-other")
    assert node.module("k8s_volume_attach", volumes=[filler], provision=True)["_rc"] == 0
    [again] = node.module("k8s_volume_attach", volumes=[vol])["volumes"]
    new = again["device"]
    assert number(new) != number(old)  # the old number is another device's now, or still taken
    pm = entry(facts_of(node)["pod_mounts"], path)
    assert (pm["device_number"], pm["attached_device"], pm["device_mismatch"]) == (number(old), new, True), pm

    # the pod's mount step maps the volume's device again, and says the pod must be restarted to see it
    check = node.module("node_volume_mount", volumes=[vol], check_mode=True)
    assert check["_rc"] == 0 and check["changed"] is True, check
    assert entry(facts_of(node)["pod_mounts"], path)["device_number"] == number(old)  # check mode changed nothing
    res = node.module("node_volume_mount", volumes=[vol])
    assert res["_rc"] == 0 and res["changed"] is True, res
    [done] = res["volumes"]
    assert done["published"] == [POD] and done["remapped"] == [
        {"pod_uid": POD, "pod": "ns/db-0", "path": path, "old_device_number": number(old), "old_device": old,
         "device": new}], done
    [warning] = [w for w in warnings_of(res) if "KV-BLOCK-REMAPPED" in w]
    assert "pod ns/db-0's block device was" in warning and "restart the pod" in warning, warning
    assert mapped(node, path) == number(new) != number(old)
    assert node.sha256(path) == mine  # the pod's path gives the volume's own data again
    pm = entry(facts_of(node)["pod_mounts"], path)
    assert (pm["device_number"], pm["attached_device"], pm["device_mismatch"]) == (number(new), new, False), pm
    again = node.module("node_volume_mount", volumes=[vol])
    assert again["_rc"] == 0 and again["changed"] is False, again  # converged: a second run changes nothing


def test_a_global_mount_on_another_device_than_the_volumes_is_reported(node):
    vol = node.vol("pv-fs", pods=[{"uid": POD, "name": "ns/web-0"}])
    [att] = node.module("k8s_volume_attach", volumes=[vol], provision=True)["volumes"]
    assert node.module("node_volume_mount", volumes=[vol])["_rc"] == 0
    gpath = names.device_mount_path(node.kubelet_dir, vol["driver"], vol["volume_handle"])
    gm = entry(facts_of(node)["global_mounts"], gpath)
    identity = (gm["device_number"], gm["attached_device"], gm["device_mismatch"])
    assert identity == (number(att["device"]), att["device"], False), gm

    # another volume's filesystem ends up at the volume's global mount (what a reused number gives)
    other = node.vol("pv-else")
    [oatt] = node.module("k8s_volume_attach", volumes=[other], provision=True)["volumes"]
    node.run("mkfs.ext4", "-q", "-F", oatt["device"])
    node.run("umount", names.pod_mount_path(node.kubelet_dir, POD, "pv-fs"))
    node.run("umount", gpath)
    node.run("mount", oatt["device"], gpath)
    facts = facts_of(node)
    gm = entry(facts["global_mounts"], gpath)
    assert gm["mounted"] is True and gm["device"] == oatt["device"]
    identity = (gm["device_number"], gm["attached_device"], gm["device_mismatch"])
    assert identity == (number(oatt["device"]), att["device"], True), gm
    assert entry(facts["global_mounts"], gpath) == entry(facts_of(node)["global_mounts"], gpath)  # stable
    # the node refuses to publish from it, as it always did; nothing is mounted over or unmounted
    res = node.module("node_volume_mount", volumes=[vol])
    assert res["_rc"] != 0 and "not from its device" in res["msg"] and "[KV-DEVICE-CHANGED]" in res["msg"], res
    assert gpath in node.mounts_under() and entry(facts_of(node)["global_mounts"], gpath)["device"] == oatt["device"]
    node.run("umount", gpath)
