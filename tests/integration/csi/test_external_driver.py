"""drivers/external.py through the driver interface against the test CSI plugin (tests/csiplugin), as root, with
real loop devices, filesystems and mounts in the plugin's mount namespace: CSI's verbs forwarded in the kubelet's
order, the plugin's capabilities deciding what is called, check mode making only read-only calls, and failures
named with the driver's code (final or uncertain)."""
import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.client import CsiClient
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import STAGE_UNSTAGE
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external import ExternalDriver
from ansible_collections.kubevol.volumes.plugins.module_utils.node import mount
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item

NAME = "csi.kubevol.test"
MiB = 1024 * 1024
POD = "44444444-4444-4444-8444-444444444444"
READ_ONLY_CALLS = {"GetPluginInfo", "Probe", "GetPluginCapabilities", "NodeGetCapabilities",
                   "ControllerGetCapabilities", "NodeGetInfo"}
ATTACH = ["CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME", "EXPAND_VOLUME"]


def result():
    return {"changed": False, "actions": [], "diff": {"before": {}, "after": {}}, "published": [], "unmounted": []}


def table(driver):
    """The mount table of the plugin's namespace (where its mounts are)."""
    return mount.MountTable(mount.parse_findmnt(driver.run(*mount.FINDMNT).stdout))


def setup(driver, size=64 * MiB, mode="Filesystem", name=NAME, **options):
    kubelet = driver.path("kubelet")
    with CsiClient(driver.socket, timeout=30) as csi:
        csi.call("CreateVolume", {"name": "vol1", "capacity_range": {"required_bytes": size}})
    drv = ExternalDriver.named(name)(None, kubelet, "node1", dict({"socket": driver.socket, "timeout": 30}, **options))
    item = volume_item({"pv_name": "pv-1", "driver": NAME, "volume_handle": "vol1", "capacity_bytes": size,
                        "mode": mode, "pods": [{"uid": POD}]})
    staging = names.device_mount_path(kubelet, NAME, "vol1")
    target = (names.pod_device_path if item.block else names.pod_mount_path)(kubelet, POD, "pv-1")
    return drv, item, staging, target


def methods(driver, since=0):
    return [c["method"] for c in driver.calls()[since:]]


def test_attach_stage_publish_and_back_in_the_kubelets_order(driver):
    driver.start(node_id="csi-node-1", controller_caps=ATTACH)
    drv, item, staging, target = setup(driver)
    try:
        start = len(driver.calls())
        # check mode: read-only calls only, nothing attached or mounted
        res = result()
        att = drv.controller_publish(item, "node1", check_mode=True)
        drv.node_stage(item, staging, {}, check_mode=True, res=res, mounts=table(driver))
        drv.node_publish(item, target, staging, {}, item.pods[0], check_mode=True, res=res, mounts=table(driver))
        assert att.attached and att.device is None and res["changed"] and res["published"] == [POD]
        assert set(methods(driver, start)) <= READ_ONLY_CALLS and driver.loops() == []
        assert driver.mounts_under_work() == []

        start = len(driver.calls())
        att = drv.controller_publish(item, "node1")
        device = att.publish_context["devicePath"]
        assert att.device == device and driver.loops() == [device]
        res = result()
        assert drv.node_stage(item, staging, att.publish_context, res=res, mounts=table(driver)) == staging
        drv.node_publish(item, target, staging, att.publish_context, item.pods[0], res=res, mounts=table(driver))
        assert res["actions"] == ["stage %s" % staging, "publish %s" % target] and res["published"] == [POD]
        assert table(driver).at(staging).source == device and table(driver).mounted(target)
        driver.write(target + "/data.txt", "kept")
        calls = [c for c in driver.calls()[start:] if c["method"] not in READ_ONLY_CALLS]
        assert [c["method"] for c in calls] == ["ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"]
        assert calls[0]["request"]["node_id"] == "csi-node-1"  # NodeGetInfo's id, not the Kubernetes node name
        assert calls[1]["request"]["publish_context"] == {"devicePath": device}

        # a second run: already staged and published, no call changes anything
        again, start = result(), len(driver.calls())
        drv.node_stage(item, staging, att.publish_context, res=again, mounts=table(driver))
        drv.node_publish(item, target, staging, att.publish_context, item.pods[0], res=again, mounts=table(driver))
        assert not again["changed"] and again["actions"] == [] and methods(driver, start) == []

        gone, start = result(), len(driver.calls())
        drv.node_unpublish(item, target, res=gone)
        drv.node_unstage(item, staging, res=gone)
        drv.controller_unpublish(item, "node1")
        assert methods(driver, start) == ["NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume"]
        assert gone["unmounted"] == [target, staging] and driver.loops() == [] and driver.mounts_under_work() == []

        # the data stayed on the volume: back again, read-only
        att = drv.controller_publish(item, "node1")
        drv.node_stage(item, staging, att.publish_context, res=result())
        reader = item.pods[0].__class__(uid=POD, read_only=True)
        drv.node_publish(item, target, staging, att.publish_context, reader, res=result())
        assert driver.read(target + "/data.txt") == "kept" and "ro" in table(driver).at(target).options
        drv.node_unpublish(item, target, res=result())
        drv.node_unstage(item, staging, res=result())
        drv.controller_unpublish(item, "node1")
    finally:
        drv.close()
    assert driver.loops() == [] and driver.mounts_under_work() == []


def test_without_attach_or_staging_only_publish_is_called(driver):
    driver.start(node_caps=["EXPAND_VOLUME"], controller_caps=["CREATE_DELETE_VOLUME"])
    drv, item, staging, target = setup(driver)
    try:
        assert not drv.can(STAGE_UNSTAGE)
        att = drv.controller_publish(item, "node1")
        assert att.device is None and att.publish_context == {} and not att.attached  # attached by the record alone
        assert drv.node_stage(item, staging, {}, res=result()) is None
        drv.node_publish(item, target, None, {}, item.pods[0], res=result())
        assert table(driver).at(target).fstype == "ext4"
        drv.node_unpublish(item, target, res=result())
        drv.node_unstage(item, staging, res=result())
        drv.controller_unpublish(item, "node1")
        done = [m for m in methods(driver) if m not in READ_ONLY_CALLS]
        assert done == ["CreateVolume", "NodePublishVolume", "NodeUnpublishVolume"]
    finally:
        drv.close()
    assert driver.loops() == [] and driver.mounts_under_work() == []


def test_block_volume_and_its_controller_expansion(driver):
    driver.start(controller_caps=ATTACH)
    drv, item, staging, target = setup(driver, size=16 * MiB, mode="Block")
    try:
        att = drv.controller_publish(item, "node1")
        drv.node_stage(item, staging, att.publish_context, res=result())
        drv.node_publish(item, target, staging, att.publish_context, item.pods[0], res=result())
        assert int(driver.run("blockdev", "--getsize64", target).stdout) == 16 * MiB
        bigger = volume_item({"pv_name": "pv-1", "driver": NAME, "volume_handle": "vol1", "capacity_bytes": 32 * MiB,
                              "mode": "Block", "pods": [{"uid": POD}]})
        grown = drv.controller_expand(bigger)
        # the plugin grows an attached Block volume itself and says no node expansion is required
        assert grown.new_bytes == 32 * MiB and grown.node_expansion_required is False
        assert int(driver.run("blockdev", "--getsize64", target).stdout) == 32 * MiB
        drv.node_unpublish(item, target, res=result())
        drv.node_unstage(item, staging, res=result())
        drv.controller_unpublish(item, "node1")
    finally:
        drv.close()
    assert driver.loops() == [] and driver.mounts_under_work() == []


def test_expansion_controller_then_node_grows_the_filesystem(driver):
    """xfs (online ext4 grow fails on this machine; xfs needs >= 300 MB)."""
    driver.start()
    size = 320 * MiB
    drv, item, staging, target = setup(driver, size=size)
    item = volume_item({"pv_name": "pv-1", "driver": NAME, "volume_handle": "vol1", "capacity_bytes": size,
                        "fs_type": "xfs", "pods": [{"uid": POD}]})
    try:
        drv.node_stage(item, staging, {}, res=result())
        drv.node_publish(item, target, staging, {}, item.pods[0], res=result())
        before = driver.fs_size(target)
        bigger = volume_item({"pv_name": "pv-1", "driver": NAME, "volume_handle": "vol1", "capacity_bytes": 2 * size,
                              "fs_type": "xfs", "pods": [{"uid": POD}]})
        check = drv.controller_expand(bigger, check_mode=True)
        assert check.new_bytes == 2 * size and "ControllerExpandVolume" not in methods(driver)
        grown = drv.controller_expand(bigger)
        assert grown.new_bytes == 2 * size and grown.node_expansion_required
        res = drv.node_expand(bigger, target, staging, res=dict(result(), fs_size_bytes=None))
        assert res["changed"] and res["fs_size_bytes"]["new"] == 2 * size
        assert driver.fs_size(target) > before + size // 2
        assert methods(driver)[-2:] == ["ControllerExpandVolume", "NodeExpandVolume"]
        drv.node_unpublish(item, target, res=result())
        drv.node_unstage(item, staging, res=result())
    finally:
        drv.close()
    assert driver.loops() == [] and driver.mounts_under_work() == []


def test_failures_name_the_driver_and_say_whether_the_outcome_is_uncertain(driver):
    driver.start(fail={"NodeStageVolume": {"code": "INTERNAL", "message": "disk on fire"},
                       "NodePublishVolume": {"code": "UNAVAILABLE", "message": "try later"}})
    drv, item, staging, target = setup(driver)
    try:
        with pytest.raises(KubevolError) as final:
            drv.node_stage(item, staging, {}, res=result())
        assert final.value.kwargs["code"] == "INTERNAL" and final.value.kwargs["uncertain"] is False
        assert "disk on fire" in final.value.msg and NAME in final.value.msg and "node1" in final.value.msg
        with pytest.raises(KubevolError) as uncertain:
            drv.node_publish(item, target, staging, {}, item.pods[0], res=result())
        assert uncertain.value.kwargs["code"] == "UNAVAILABLE" and uncertain.value.kwargs["uncertain"] is True
    finally:
        drv.close()
    other = ExternalDriver.named("other.csi.example")(None, driver.path("kubelet"), "node1", {"socket": driver.socket})
    with pytest.raises(KubevolError, match="is 'csi.kubevol.test', not other.csi.example"):
        other.controller_publish(item, "node1")
    missing = ExternalDriver.named(NAME)(None, driver.path("kubelet"), "node1", {})
    with pytest.raises(KubevolError) as err:
        missing.controller_publish(item, "node1")
    assert driver.path("kubelet", "plugins", NAME, "csi.sock") in err.value.msg
    assert driver.mounts_under_work() == [] and driver.loops() == []
