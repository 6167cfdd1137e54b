"""The node modules the reconcile engine runs (node_volume_setup, volume_detach) keep their guards: run each as
Ansible runs it on a real node (own mount namespace, loop devices) with what a hostile or odd cluster would send,
and nothing is unmounted, detached or formatted that must be left alone.

- a foreign driver's volume, mounted, with data: failed (never skipped as done) by attach, mount and detach,
  naming the driver; its bytes unchanged;
- a PV naming a pool outside the node's loop_pools: refused before anything runs, the file's bytes unchanged;
- stale paths through a symlink, outside the kubelet layout or climbing out of it: refused, nothing removed.

(These ran through the engine's former direct runner too, which is gone: the role runs these same modules. A
partial snapshot, a node whose facts are missing, is the planner's to refuse: tests/e2e/test_trust.py.)
"""
import os

from test_trust import EBS, GONE, WRITER, make_foreign

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names


def test_a_foreign_drivers_volume_fails_and_is_left_alone(node):
    fgpath, fppath = make_foreign(node)
    data = os.path.join(fppath, "data")
    before = node.sha256(data)
    foreign = node.vol("pv-ebs", driver=EBS, handle="vol-0abc", pods=[{"uid": WRITER}])
    for name, args in (("node_volume_setup", {"attach": {"volumes": [foreign], "provision": True},
                                              "mount": {"volumes": [foreign]}}),
                       ("volume_detach", {"volumes": [foreign], "stale_paths": [fgpath]})):
        result = node.module(name, **args)
        failed = result["phase_results"]["attach"] if name == "node_volume_setup" else result
        assert failed["failed"] and failed["changed"] is False, result
        assert "driver ebs.csi.aws.com cannot be served there" in failed["msg"], failed
        assert [f["step"] for f in failed["failures"]] == ["find driver"] and failed["volumes"] == []
    assert result["stale_kept"][0]["path"] == fgpath and "no kubevol backend" in result["stale_kept"][0]["reason"]
    assert node.mounts_under() == sorted([fgpath, fppath]) and node.loops() == []
    assert node.sha256(data) == before


def test_a_pool_outside_the_nodes_pools_is_refused(node, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    log = app / "app.log"
    log.write_bytes(b"2026-11-24 request served\n" * 40000)
    before = node.sha256(str(log))
    vol = dict(node.vol("pv-app", handle="app.log", pods=[{"uid": WRITER}]), volume_attributes={"pool": str(app)})
    args = {"attach": {"volumes": [vol], "provision": True}, "mount": {"volumes": [vol]}}
    result = node.module("node_volume_setup", **args)
    attach = result["phase_results"]["attach"]
    assert attach["failed"] and "keeps loop images only in %s" % node.pool in attach["msg"], result
    assert "pv-app" in attach["msg"] and "node1" in attach["msg"]
    assert attach["failures"][0]["step"] == "validate"
    assert node.sha256(str(log)) == before
    assert node.loops() == [] and node.mounts_under() == []


def test_stale_paths_through_a_symlink_or_outside_the_layout_are_refused(node):
    stale_p = names.pod_mount_path(node.kubelet_dir, GONE, "pv-gone")
    os.makedirs(stale_p)
    outside = os.path.join(node.tmp, "outside", "volumes", "kubernetes.io~csi", "pv-x", "mount")
    os.makedirs(outside)
    link_uid = os.path.join(node.kubelet_dir, "pods", "linked")
    os.symlink(os.path.join(node.tmp, "outside"), link_uid)
    for bad in (os.path.join(link_uid, "volumes", "kubernetes.io~csi", "pv-x", "mount"), "/etc/globalmount",
                stale_p + "/../../../../../../etc"):
        result = node.module("volume_detach", stale_paths=[stale_p, bad])
        assert result["_rc"] != 0 and result["failed"] and bad in result["msg"], result
    # refused before anything ran: the good stale path too is still there, and the symlink's target
    assert os.path.isdir(stale_p) and os.path.isdir(outside)
