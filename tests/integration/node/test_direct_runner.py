"""The reconcile engine's direct runner (plugin_utils/node_runner.py) keeps every guard of the node modules: run
its exact command line on a real node (own mount namespace, loop devices) with what a hostile or odd cluster
would send, and nothing is unmounted, detached or formatted that the module would leave alone.

- a foreign driver's volume, mounted, with data: skipped by attach, mount and detach; its bytes unchanged;
- a PV naming a pool outside the node's loop_pools: refused before anything runs, the file's bytes unchanged;
- stale paths through a symlink, outside the kubelet layout or climbing out of it: refused, nothing removed.

Each case runs on both paths and the results must match: the direct path is the module's own code. (A partial
snapshot, a node whose facts are missing, is the planner's to refuse: tests/e2e/test_trust.py runs it through this
runner, the role's default.)
"""
import os

from test_trust import EBS, GONE, WRITER, make_foreign

from ansible_collections.kubevol.volumes.plugins.module_utils import names


def same(direct, module):
    """The two results, without what only the module path adds (Ansible's own keys)."""
    strip = ("_rc", "invocation", "warnings")
    return (dict((k, v) for k, v in direct.items() if k not in strip),
            dict((k, v) for k, v in module.items() if k not in strip))


def test_a_foreign_drivers_volume_fails_and_is_left_alone_by_a_direct_run(node):
    fgpath, fppath = make_foreign(node)
    data = os.path.join(fppath, "data")
    before = node.sha256(data)
    foreign = node.vol("pv-ebs", driver=EBS, handle="vol-0abc", pods=[{"uid": WRITER}])
    for name, args in (("node_volume_setup", {"attach": {"volumes": [foreign], "provision": True},
                                              "mount": {"volumes": [foreign]}}),
                       ("volume_detach", {"volumes": [foreign], "stale_paths": [fgpath]})):
        direct = node.direct(name, **args)
        failed = direct["phase_results"]["attach"] if name == "node_volume_setup" else direct
        assert failed["failed"] and failed["changed"] is False, direct
        assert "driver ebs.csi.aws.com cannot be served there" in failed["msg"], failed
        assert [f["step"] for f in failed["failures"]] == ["find driver"] and failed["volumes"] == []
        a, b = same(direct, node.module(name, **args))
        assert a == b
    assert direct["stale_kept"][0]["path"] == fgpath and "no kubevol backend" in direct["stale_kept"][0]["reason"]
    assert node.mounts_under() == sorted([fgpath, fppath]) and node.loops() == []
    assert node.sha256(data) == before
    assert os.listdir(node.code_cache)  # the second run's node code came from the node's code cache


def test_a_pool_outside_the_nodes_pools_is_refused_by_a_direct_run(node, tmp_path):
    app = tmp_path / "app"
    app.mkdir()
    log = app / "app.log"
    log.write_bytes(b"2026-11-24 request served\n" * 40000)
    before = node.sha256(str(log))
    vol = dict(node.vol("pv-app", handle="app.log", pods=[{"uid": WRITER}]), volume_attributes={"pool": str(app)})
    args = {"attach": {"volumes": [vol], "provision": True}, "mount": {"volumes": [vol]}}
    direct = node.direct("node_volume_setup", **args)
    attach = direct["phase_results"]["attach"]
    assert attach["failed"] and "keeps loop images only in %s" % node.pool in attach["msg"], direct
    assert "pv-app" in attach["msg"] and "node1" in attach["msg"]
    assert attach["failures"][0]["step"] == "validate"
    a, b = same(direct, node.module("node_volume_setup", **args))
    assert a == b
    assert node.sha256(str(log)) == before
    assert node.loops() == [] and node.mounts_under() == []


def test_stale_paths_through_a_symlink_or_outside_the_layout_are_refused_by_a_direct_run(node):
    stale_p = names.pod_mount_path(node.kubelet_dir, GONE, "pv-gone")
    os.makedirs(stale_p)
    outside = os.path.join(node.tmp, "outside", "volumes", "kubernetes.io~csi", "pv-x", "mount")
    os.makedirs(outside)
    link_uid = os.path.join(node.kubelet_dir, "pods", "linked")
    os.symlink(os.path.join(node.tmp, "outside"), link_uid)
    for bad in (os.path.join(link_uid, "volumes", "kubernetes.io~csi", "pv-x", "mount"), "/etc/globalmount",
                stale_p + "/../../../../../../etc"):
        direct = node.direct("volume_detach", stale_paths=[stale_p, bad])
        assert direct["_rc"] != 0 and direct["failed"] and bad in direct["msg"], direct
        a, b = same(direct, node.module("volume_detach", stale_paths=[stale_p, bad]))
        assert a == b
    # refused before anything ran: the good stale path too is still there, and the symlink's target
    assert os.path.isdir(stale_p) and os.path.isdir(outside)
    assert os.listdir(node.code_cache)  # the later refusals ran the node code from the node's code cache
