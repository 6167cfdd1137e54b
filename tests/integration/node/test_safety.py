"""Hostile names are refused before anything runs; the per-volume lock serializes runs."""
import fcntl
import json
import os

import pytest

from conftest import MiB

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.node.lock import lock_path

POD = "66666666-6666-4666-8666-666666666666"
MODULES = ["k8s_volume_attach", "node_volume_mount", "fs_expand", "volume_detach"]


@pytest.mark.parametrize("field,value", [
    ("pv_name", "../x"), ("pv_name", "a/b"), ("pv_name", "x\x00y"),
    ("pod_uid", "../../etc"), ("pod_uid", "a/b"), ("pod_uid", "u\x00"),
])
def test_hostile_names_refused_without_side_effect(node, field, value):
    good = node.vol("pv-ok", pods=[{"uid": POD}])
    bad = node.vol("pv-bad", pods=[{"uid": POD}])
    if field == "pod_uid":
        bad["pods"] = [{"uid": value}]
    else:
        bad[field] = value
    for module in MODULES:
        extra = {"provision": True} if module == "k8s_volume_attach" else {}
        res = node.module(module, volumes=[good, bad], **extra)
        assert res["_rc"] != 0 and res["failed"], (module, res)
        assert "refusing" in res["msg"], res["msg"]
    assert os.listdir(node.pool) == []
    assert not os.path.exists(node.kubelet_dir) and not os.path.exists(node.run_dir)
    assert node.loops() == [] and node.mounts_under() == []


@pytest.mark.parametrize("value", ["../escape.img", "a/b.img", "h\x00.img"])
def test_a_loop_handle_that_is_no_file_name_fails_its_volume_alone_without_side_effect(node, value):
    """A volume handle is opaque (any driver but loop takes it); the loop driver names its image after it, so it
    refuses one that is not one path component by its own rule (KV-HANDLE-REFUSED): that volume fails, before anything
    runs for it, in every module, and the call's other volume goes on."""
    good = node.vol("pv-ok", pods=[{"uid": POD}])
    bad = node.vol("pv-bad", handle=value, pods=[{"uid": POD}])
    res = node.module("k8s_volume_attach", volumes=[good, bad], provision=True)
    assert res["_rc"] != 0 and res["failed"], res
    [failure] = res["failures"]
    assert failure["volume"] == "pv-bad" and "names a file after each volume handle" in failure["msg"], failure
    assert [v["pv_name"] for v in res["volumes"]] == ["pv-ok"], res
    for module in MODULES[1:]:
        res = node.module(module, volumes=[bad])
        assert res["_rc"] != 0 and res["failed"], (module, res)
        assert "volume handle" in res["msg"] and "refused" in res["msg"], (module, res["msg"])
    # nothing made for the refused handle, in the pool (pv-ok's image and holders record only) or beside it
    assert sorted(os.listdir(node.pool)) == [".kubevol-holders", "pv-ok.img"]
    holders = os.listdir(os.path.join(node.pool, ".kubevol-holders"))
    assert holders and all(n.startswith(names.handle_hash("pv-ok.img") + ".") for n in holders), holders
    assert not os.path.exists(os.path.join(os.path.dirname(node.pool), "escape.img"))
    assert not os.path.exists(names.device_mount_path(node.kubelet_dir, "loop.kubevol.io", value))
    node.module("volume_detach", volumes=[good])  # the good volume's device goes: the fixture checks for loops
    assert node.loops() == []


def test_handle_symlink_escaping_the_pool_refused(node, tmp_path):
    outside = tmp_path / "outside.img"
    outside.write_bytes(b"\0" * 1024)
    os.symlink(str(outside), os.path.join(node.pool, "link.img"))
    res = node.module("k8s_volume_attach", volumes=[node.vol("pv-l", handle="link.img")])
    assert res["_rc"] != 0 and "outside the pool" in res["msg"], res
    assert node.loops() == []


def test_unknown_driver_fails_that_volume(node):
    """A volume of a driver without a kubevol backend fails, named with its driver and node (issue 26: a skip
    was reported done); nothing runs on it; a hostile name still refuses the whole call."""
    res = node.module("k8s_volume_attach", volumes=[node.vol("pv-u", driver="nfs.example.com")])
    assert res["_rc"] != 0 and res["changed"] is False, res
    assert res["volumes"] == [] and res.get("volume_attachments") is None, res
    [failure] = res["failures"]
    assert (failure["volume"], failure["node"], failure["step"]) == ("pv-u", "node1", "find driver")
    assert "driver nfs.example.com cannot be served there" in failure["msg"] and "loop.kubevol.io" in failure["msg"]
    assert node.loops() == [] and not os.path.exists(node.run_dir)  # not even a lock
    res = node.module("k8s_volume_attach", volumes=[node.vol("pv-u", driver="nfs.example.com"),
                                                    node.vol("../x", driver="nfs.example.com")])
    assert res["_rc"] != 0 and "refusing PV name '../x'" in res["msg"], res


def test_lock_held_elsewhere_times_out_cleanly(node):
    vol = node.vol("pv-lk", pods=[{"uid": POD}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    path = lock_path(node.run_dir, names.unique_volume_name(vol["driver"], vol["volume_handle"]))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        res = node.module("node_volume_mount", volumes=[vol], lock_timeout=1)
    assert res["_rc"] != 0 and "locked by another kubevol run" in res["msg"] and "node1" in res["msg"], res
    assert node.mounts_under() == [] and node.run("blkid", "-p", node.loops()[0], check=False).returncode == 2


def test_two_concurrent_runs_do_not_both_act(node):
    vol = node.vol("pv-cc", size=320 * MiB, fs_type="xfs", pods=[{"uid": POD}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    procs = [node.start_module("node_volume_mount", volumes=[vol]) for _i in range(2)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        results.append(json.loads(out[out.find("{"):]))
    assert all(not r.get("failed") for r in results), results
    assert sorted(r["volumes"][0]["formatted"] for r in results) == [False, True]
    assert sorted(r["changed"] for r in results) == [False, True]
    assert len(node.mounts_under()) == 2  # global + one pod mount, nothing stacked
