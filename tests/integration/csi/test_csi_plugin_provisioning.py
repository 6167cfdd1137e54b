"""The test CSI plugin's provisioning side over a real socket (tests/csiplugin/controller.py): CreateVolume with
topology, idempotent by name, clones, snapshots and restores, each doing real work on real images (a file written
into a volume's filesystem is in its clone and in the volume restored from its snapshot), and the failure knobs (a
final error before the work, a non-final one after it)."""
import os

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.csi.client import CsiClient
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import CsiFinalError, CsiUncertainError

MiB = 1024 * 1024
KEY = "topology.csi.kubevol.test/node"


def topology(*nodes):
    return [{"segments": {KEY: node}} for node in nodes]


def create(csi, name, size=64 * MiB, **request):
    request.update(name=name, capacity_range={"required_bytes": size},
                   volume_capabilities=[{"mount": {"fs_type": "ext4"}, "access_mode": {"mode": "SINGLE_NODE_WRITER"}}])
    return csi.to_dict(csi.call("CreateVolume", request))["volume"]


def images(driver):
    pool = driver.path(driver.name + "-state", "pool")
    return sorted(name for name in os.listdir(pool) if name.endswith(".img"))


def test_topology_is_reported_and_honoured(driver):
    driver.start(node_id="node2", topology=True, max_volumes_per_node=2)
    with CsiClient(driver.socket, timeout=10) as csi:
        plugin = csi.to_dict(csi.call("GetPluginCapabilities"))["capabilities"]
        assert {"service": {"type": "VOLUME_ACCESSIBILITY_CONSTRAINTS"}} in plugin
        info = csi.to_dict(csi.call("NodeGetInfo"))
        assert info == {"node_id": "node2", "max_volumes_per_node": 2,
                        "accessible_topology": {"segments": {KEY: "node2"}}}
        # the first preferred segment wins; without requirements, the plugin's own
        made = create(csi, "pvc-a", accessibility_requirements={"requisite": topology("node1", "node3"),
                                                                "preferred": topology("node3", "node1")})
        assert made["accessible_topology"] == topology("node3")
        assert create(csi, "pvc-b")["accessible_topology"] == topology("node2")
        # the same name again answers the volume made before, in its topology: no second image
        again = create(csi, "pvc-a", accessibility_requirements={"requisite": topology("node1")})
        assert again["accessible_topology"] == topology("node3") and again["volume_id"] == "pvc-a"
        assert images(driver) == ["pvc-a.img", "pvc-b.img"]
        # a topology it does not serve
        driver.configure(topology_serves=[{KEY: "node1"}])
        # (the client calls RESOURCE_EXHAUSTED uncertain, as the kubelet's isFinalError; the external-provisioner's
        # checkError calls it final for CreateVolume: kubevol's provisioner decides so itself)
        with pytest.raises(CsiUncertainError) as err:
            create(csi, "pvc-c", accessibility_requirements={"requisite": topology("node5")})
        assert err.value.code == "RESOURCE_EXHAUSTED"
        assert "pvc-c.img" not in images(driver)


def test_clone_snapshot_and_restore_copy_the_data(driver):
    driver.start(node_caps=["STAGE_UNSTAGE_VOLUME"])
    stage = driver.path("stage")
    driver.run("mkdir", "-p", stage)
    with CsiClient(driver.socket, timeout=30) as csi:
        create(csi, "src", 320 * MiB)
        cap = {"mount": {"fs_type": "ext4"}, "access_mode": {"mode": "SINGLE_NODE_WRITER"}}
        csi.call("NodeStageVolume", {"volume_id": "src", "staging_target_path": stage, "volume_capability": cap})
        driver.run("sh", "-c", "echo payload > %s/data && sync" % stage)
        snap = csi.to_dict(csi.call("CreateSnapshot", {"source_volume_id": "src", "name": "snap-1"}))["snapshot"]
        assert (snap["snapshot_id"], snap["source_volume_id"], snap["ready_to_use"]) == ("snap-1", "src", True)
        assert snap["size_bytes"] == 320 * MiB and snap["creation_time"]
        clone = create(csi, "clone", 320 * MiB, volume_content_source={"volume": {"volume_id": "src"}})
        assert clone["content_source"] == {"volume": {"volume_id": "src"}}
        csi.call("NodeUnstageVolume", {"volume_id": "src", "staging_target_path": stage})
        restored = create(csi, "restored", 400 * MiB, volume_content_source={"snapshot": {"snapshot_id": "snap-1"}})
        assert restored["capacity_bytes"] == 400 * MiB
        for volume in ("clone", "restored"):
            csi.call("NodeStageVolume", {"volume_id": volume, "staging_target_path": stage, "volume_capability": cap})
            assert driver.run("cat", stage + "/data").stdout == "payload\n", volume
            csi.call("NodeUnstageVolume", {"volume_id": volume, "staging_target_path": stage})
        # the same snapshot name of another volume is refused; deleting twice is fine
        with pytest.raises(CsiFinalError) as err:
            csi.call("CreateSnapshot", {"source_volume_id": "clone", "name": "snap-1"})
        assert err.value.code == "ALREADY_EXISTS"
        for _twice in range(2):
            csi.call("DeleteSnapshot", {"snapshot_id": "snap-1"})
        assert not os.path.exists(driver.path("csi-state", "pool", "snapshots", "snap-1.img"))
        # a clone is refused when CLONE_VOLUME is off
        driver.configure(controller_caps=["CREATE_DELETE_VOLUME"])
        with pytest.raises(CsiFinalError) as err:
            create(csi, "clone2", volume_content_source={"volume": {"volume_id": "src"}})
        assert err.value.code == "INVALID_ARGUMENT"
        for volume in ("src", "clone", "restored"):
            csi.call("DeleteVolume", {"volume_id": volume})
    assert images(driver) == []


def test_failure_knobs(driver):
    driver.start(fail={"DeleteVolume": {"code": "FAILED_PRECONDITION", "message": "busy"}},
                 fail_after={"CreateVolume": {"code": "DEADLINE_EXCEEDED", "message": "slow backend"}})
    with CsiClient(driver.socket, timeout=10) as csi:
        # non-final, after the work: the volume exists, and the same name later makes no second one
        with pytest.raises(CsiUncertainError):
            create(csi, "pvc-u")
        assert images(driver) == ["pvc-u.img"]
        driver.configure(fail_after={})
        assert create(csi, "pvc-u")["volume_id"] == "pvc-u"
        assert images(driver) == ["pvc-u.img"]
        # final, before the work: nothing was deleted
        with pytest.raises(CsiFinalError) as err:
            csi.call("DeleteVolume", {"volume_id": "pvc-u"})
        assert err.value.code == "FAILED_PRECONDITION"
        assert images(driver) == ["pvc-u.img"]
        driver.configure(fail={})
        csi.call("DeleteVolume", {"volume_id": "pvc-u"})
    assert images(driver) == []
    assert [(c["method"], c["code"]) for c in driver.calls() if c["method"] in ("CreateVolume", "DeleteVolume")] == [
        ("CreateVolume", "DEADLINE_EXCEEDED"), ("CreateVolume", "OK"), ("DeleteVolume", "FAILED_PRECONDITION"),
        ("DeleteVolume", "OK")]


def test_the_node_facts_register_the_plugin(driver):
    """node/csi_registration.py: NodeGetInfo of each external driver with a socket on the node, read-only; a plugin
    that does not answer is null with a warning; a driver with no socket on the node is not reported."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.csi_registration import csi_nodes
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import process_runner

    driver.start(node_id="n-7", topology={"zone": "z1", KEY: "node7"}, max_volumes_per_node=5)
    options = {"csi.kubevol.test": {"socket": driver.socket, "controller": "node"},
               "absent.csi": {"socket": driver.path("none.sock"), "controller": "node"}}
    ctx = NodeContext(process_runner(30, 60), node_name="node7", kubelet_dir=driver.work, driver_options=options)
    assert csi_nodes(ctx) == {"csi.kubevol.test": {"node_id": "n-7", "max_volumes_per_node": 5,
                                                   "topology": {"zone": "z1", KEY: "node7"}}}
    assert not ctx.warnings
    assert [c["method"] for c in driver.calls()] == ["GetPluginInfo", "Probe", "NodeGetInfo"]
    driver.configure(fail={"NodeGetInfo": {"code": "INTERNAL", "message": "not yet"}})
    ctx = NodeContext(process_runner(30, 60), node_name="node7", kubelet_dir=driver.work, driver_options=options)
    assert csi_nodes(ctx) == {"csi.kubevol.test": None}
    assert "did not register (NodeGetInfo)" in ctx.warnings[0] and "not yet" in ctx.warnings[0]
