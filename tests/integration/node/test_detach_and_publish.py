"""Detach guards, read-only pod mounts, Block mode publishing."""
import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
POD1 = "55555555-5555-4555-8555-555555555551"
POD2 = "55555555-5555-4555-8555-555555555552"


def test_detach_refused_while_a_pod_mount_remains(node):
    vol = node.vol("pv-g", pods=[{"uid": POD1}, {"uid": POD2}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    assert node.module("node_volume_mount", volumes=[vol])["_rc"] == 0
    before = node.mounts_under()
    assert len(before) == 3
    other = node.vol("pv-g2")
    assert node.module("k8s_volume_attach", volumes=[other], provision=True)["_rc"] == 0

    # pv-g (still mounted for POD2) is refused and untouched; pv-g2, in the same call, is detached all the same:
    # one volume's refusal never takes the others of the node's batch with it.
    res = node.module("volume_detach", volumes=[dict(vol, pods=[{"uid": POD1}]), other])
    assert res["_rc"] != 0 and "still mounted" in res["msg"], res
    assert names.pod_mount_path(node.kubelet_dir, POD2, "pv-g") in res["msg"]
    assert [f["volume"] for f in res["failures"]] == ["pv-g"] and res["completed"] == ["pv-g2"], res
    assert [v["detached"] for v in res["volumes"]] and res["volumes"][0]["pv_name"] == "pv-g2"
    assert node.mounts_under() == before and len(node.loops()) == 1  # pv-g as it was; pv-g2 detached

    res = node.module("volume_detach", volumes=[dict(vol, pods=[{"uid": POD1}], detach=False)])
    assert res["_rc"] == 0 and res["volumes"][0]["unmounted"] == [names.pod_mount_path(node.kubelet_dir, POD1, "pv-g")]
    # the moved pod's empty volumes directory goes too (the kubelet's orphaned pod cleanup); POD2's stays
    assert not os.path.exists(os.path.join(node.kubelet_dir, "pods", POD1, "volumes"))
    assert os.path.isdir(os.path.join(node.kubelet_dir, "pods", POD2, "volumes", "kubernetes.io~csi", "pv-g"))
    res = node.module("volume_detach", volumes=[dict(vol, pods=[{"uid": POD2}]), other])
    assert res["_rc"] == 0 and res["changed"], res
    assert node.mounts_under() == [] and node.loops() == []
    plugin_dir = os.path.join(node.kubelet_dir, "plugins", "kubernetes.io", "csi", vol["driver"])
    assert os.listdir(plugin_dir) == []


def test_unmount_device_without_detach_keeps_the_device_attached(node):
    """The global mount goes once no pod uses it, but the device stays attached (its detach is
    decided elsewhere); a pod mount still present refuses it like a detach."""
    vol = node.vol("pv-u", pods=[{"uid": POD1}, {"uid": POD2}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    assert node.module("node_volume_mount", volumes=[vol])["_rc"] == 0
    res = node.module("volume_detach", volumes=[dict(vol, pods=[{"uid": POD1}], detach=False, unmount_device=True)])
    assert res["_rc"] != 0 and "still mounted" in res["msg"], res
    assert len(node.mounts_under()) == 3
    both = [{"uid": POD1}, {"uid": POD2}]
    res = node.module("volume_detach", volumes=[dict(vol, pods=both, detach=False, unmount_device=True)])
    assert res["_rc"] == 0 and res["changed"] and res["volumes"][0]["detached"] is None, res
    assert node.mounts_under() == [] and len(node.loops()) == 1
    again = node.module("volume_detach", volumes=[dict(vol, pods=[], detach=False, unmount_device=True)])
    assert again["_rc"] == 0 and not again["changed"], again
    assert node.module("volume_detach", volumes=[dict(vol, pods=[])])["_rc"] == 0
    assert node.loops() == []


def test_force_detach_unmounts_remaining_pods(node):
    vol = node.vol("pv-h", pods=[{"uid": POD1}, {"uid": POD2}])
    node.module("k8s_volume_attach", volumes=[vol], provision=True)
    node.module("node_volume_mount", volumes=[vol])
    res = node.module("volume_detach", volumes=[dict(vol, pods=[])], force=True)
    assert res["_rc"] == 0 and len(res["volumes"][0]["unmounted"]) == 3, res
    assert node.mounts_under() == [] and node.loops() == []


def test_detach_never_removes_through_a_mount_or_foreign_files(node):
    vol = node.vol("pv-k", pods=[{"uid": POD1}])
    node.module("k8s_volume_attach", volumes=[vol], provision=True)
    node.module("node_volume_mount", volumes=[vol])
    vol_dir = os.path.dirname(names.pod_mount_path(node.kubelet_dir, POD1, "pv-k"))
    keep = os.path.join(vol_dir, "someone-elses-file")
    with open(keep, "w") as handle:
        handle.write("x")
    res = node.module("volume_detach", volumes=[vol])
    assert res["_rc"] == 0, res
    assert os.path.exists(keep) and not os.path.exists(os.path.join(vol_dir, "mount"))


def test_read_only_pod_mount_is_read_only(node):
    vol = node.vol("pv-r", pods=[{"uid": POD1, "read_only": True}, {"uid": POD2}])
    node.module("k8s_volume_attach", volumes=[vol], provision=True)
    assert node.module("node_volume_mount", volumes=[vol])["_rc"] == 0
    ro = names.pod_mount_path(node.kubelet_dir, POD1, "pv-r")
    rw = names.pod_mount_path(node.kubelet_dir, POD2, "pv-r")
    opts = dict((m["target"], m["options"].split(",")) for m in node.mounts())
    assert "ro" in opts[ro] and "rw" in opts[rw]
    assert node.run("touch", os.path.join(ro, "f"), check=False).returncode != 0
    assert node.run("touch", os.path.join(rw, "f"), check=False).returncode == 0
    assert node.module("node_volume_mount", volumes=[vol])["changed"] is False


def test_block_mode_publishes_the_device(node):
    vol = node.vol("pv-blk", mode="Block", pods=[{"uid": POD1}])
    att = node.module("k8s_volume_attach", volumes=[vol], provision=True)
    dev = att["volumes"][0]["device"]
    res = node.module("node_volume_mount", volumes=[vol])
    assert res["_rc"] == 0 and res["volumes"][0]["published"] == [POD1], res
    assert not res["volumes"][0]["formatted"]
    path = names.pod_device_path(node.kubelet_dir, POD1, "pv-blk")
    assert node.mounts_under() == [path]
    st = node.run("stat", "-L", "-c", "%t:%T", path).stdout.strip()
    assert st == node.run("stat", "-c", "%t:%T", dev).stdout.strip()
    node.run("dd", "if=/dev/urandom", "of=" + path, "bs=64k", "count=1", "conv=fsync", "status=none")
    assert node.run("cmp", "-n", "65536", path, dev).returncode == 0
    assert node.module("node_volume_mount", volumes=[vol])["changed"] is False
    det = node.module("volume_detach", volumes=[vol])
    assert det["_rc"] == 0 and det["volumes"][0]["detached"] == dev, det
    assert node.mounts_under() == [] and node.loops() == [] and not os.path.exists(path)
