"""ExternalCsiDriver drives the test CSI plugin through CSI's verbs over a real unix socket, with real loop
devices, filesystems and mounts (in the plugin's private mount namespace: conftest.py), deciding as the kubelet
and the external-attacher/-resizer do (drivers/external/driver.py). Errors, secrets and finding the socket:
test_csi_driver_errors.py.

Provisioning (CreateVolume) is not kubevol's: each test creates its volume with the CSI client, as the
external-provisioner would have.
"""
import os

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.errors import CsiDriverRefused
from csi_driver_helpers import (  # noqa: E402  (beside this file)
    ATTACH, MiB, READ_ONLY_CALLS, SIZE, create, dirs, external, item, methods, pod, requests_of)


def test_stage_publish_write_unpublish_unstage(plugin):
    plugin.start()
    create(plugin, "v1")
    staging, target, target2 = dirs(plugin, "v1", "pod-a", "pod-b")
    drv = external(plugin, controller="node")
    vol = item("v1", mount_options=("noatime",), pod_info_on_mount=True)
    att = drv.controller_publish(vol)
    # the test plugin's controller has no PUBLISH_UNPUBLISH_VOLUME: attached by the record alone
    assert att.by_record and att.publish_context == {} and att.node_id == os.uname().nodename
    assert drv.node_stage(vol, staging, att.publish_context).called
    assert plugin.mount_of(staging)["fstype"] == "ext4" and "noatime" in plugin.mount_of(staging)["options"]
    step = drv.node_publish(vol, target, staging, att.publish_context, pod("pod-a"))
    assert step.called and not step.readonly
    plugin.write(target + "/data.txt", "kept by the plugin")
    drv.node_unpublish(vol, target)
    assert plugin.mount_of(target) is None
    drv.node_unstage(vol, staging)
    assert plugin.mount_of(staging) is None and plugin.loops() == []
    # again, read-only for another pod: the data is on the volume
    drv.node_stage(vol, staging, {})
    assert drv.node_publish(vol, target2, staging, {}, pod("pod-b", read_only=True)).readonly
    assert plugin.read(target2 + "/data.txt") == "kept by the plugin"
    assert "ro" in plugin.mount_of(target2)["options"].split(",")
    drv.node_unpublish(vol, target2)
    drv.node_unstage(vol, staging)
    assert plugin.mounts_under_work() == [] and plugin.loops() == []
    assert "ControllerPublishVolume" not in methods(plugin)
    published = requests_of(plugin, "NodePublishVolume")
    assert published[0]["staging_target_path"] == staging and published[0]["volume_context"] == {
        "tier": "gold", "csi.storage.k8s.io/pod.name": "web-pod-a", "csi.storage.k8s.io/pod.namespace": "ns1",
        "csi.storage.k8s.io/pod.uid": "pod-a", "csi.storage.k8s.io/serviceAccount.name": "sa1",
        "csi.storage.k8s.io/ephemeral": "false"}
    assert published[0]["volume_capability"]["access_mode"]["mode"] == "SINGLE_NODE_WRITER"
    assert published[1]["readonly"] is True
    # staging gets the PV's attributes only (csi_attacher.go MountDevice)
    assert requests_of(plugin, "NodeStageVolume")[0]["volume_context"] == {"tier": "gold"}


def test_without_stage_unstage_publish_mounts_the_target(plugin):
    plugin.start(node_caps=["EXPAND_VOLUME"])
    create(plugin, "v2", SIZE)
    staging, target = dirs(plugin, "v2", "pod-a")
    drv = external(plugin)
    vol = item("v2", fs_type="xfs", capacity_bytes=SIZE)
    stage = drv.node_stage(vol, staging, {})
    assert not stage.called and "STAGE_UNSTAGE_VOLUME" in stage.skipped
    drv.node_publish(vol, target, staging, {}, pod())
    assert plugin.mount_of(target)["fstype"] == "xfs" and plugin.mount_of(staging) is None
    assert "staging_target_path" not in requests_of(plugin, "NodePublishVolume")[0]
    assert not drv.node_unstage(vol, staging).called
    drv.node_unpublish(vol, target)
    assert plugin.mounts_under_work() == [] and plugin.loops() == []
    assert "NodeStageVolume" not in methods(plugin) and "NodeUnstageVolume" not in methods(plugin)


def test_attach_mode_publish_context_reaches_the_node(plugin):
    plugin.start(controller_caps=ATTACH, node_id="csi-node-7")
    create(plugin, "v3")
    staging, target = dirs(plugin, "v3", "pod-a")
    drv = external(plugin, controller="node")
    vol = item("v3")
    att = drv.controller_publish(vol)
    assert att.attached and not att.by_record and att.node_id == "csi-node-7"
    device = att.publish_context["devicePath"]
    assert plugin.loops() == [device]
    drv.node_stage(vol, staging, att.publish_context)
    assert plugin.mount_of(staging)["source"] == device
    drv.node_publish(vol, target, staging, att.publish_context, pod())
    plugin.write(target + "/f", "attached")
    drv.node_unpublish(vol, target)
    drv.node_unstage(vol, staging)
    assert plugin.loops() == [device]  # NodeUnstage leaves the attachment to the controller
    assert drv.controller_unpublish(vol).called
    assert plugin.loops() == []
    assert methods(plugin).count("ControllerPublishVolume") == 1
    assert requests_of(plugin, "ControllerPublishVolume")[0]["node_id"] == "csi-node-7"
    assert requests_of(plugin, "NodeStageVolume")[0]["publish_context"] == {"devicePath": device}


def test_attach_needs_the_controller_option(plugin):
    plugin.start(controller_caps=ATTACH)
    create(plugin, "v4")
    drv = external(plugin)  # no "controller"
    with pytest.raises(CsiDriverRefused) as info:
        drv.controller_publish(item("v4"))
    text = str(info.value)
    assert "controller: node" in text and "pv-v4" in text and "node1" in text
    # a CSIDriver with attachRequired false has no attach at all
    assert drv.controller_publish(item("v4", attach_required=False)).skipped
    assert methods(plugin) == ["CreateVolume"]


@pytest.mark.parametrize("mount_group", [True, False])
def test_fs_group_goes_to_a_plugin_with_volume_mount_group_only(plugin, mount_group):
    plugin.start(node_caps=["STAGE_UNSTAGE_VOLUME"] + (["VOLUME_MOUNT_GROUP"] if mount_group else []))
    create(plugin, "g")
    staging, target = dirs(plugin, "g", "pod-a")
    drv = external(plugin)
    owner = pod("pod-a", fs_group=4242)
    vol = item("g", pods=(owner,))
    # without VOLUME_MOUNT_GROUP the test plugin refuses a volume_mount_group (INVALID_ARGUMENT), as the spec says
    assert drv.node_stage(vol, staging, {}).fs_group_delegated is mount_group
    step = drv.node_publish(vol, target, staging, {}, owner)
    assert step.fs_group_delegated is mount_group  # False: kubevol applies the fsGroup itself, as the kubelet does
    group = plugin.run("stat", "-c", "%g", target).stdout.strip()
    assert (group == "4242") is mount_group
    sent = [r["volume_capability"]["mount"].get("volume_mount_group")
            for r in requests_of(plugin, "NodeStageVolume") + requests_of(plugin, "NodePublishVolume")]
    assert sent == (["4242", "4242"] if mount_group else [None, None])
    drv.node_unpublish(vol, target)
    drv.node_unstage(vol, staging)
    assert plugin.loops() == []


def test_block_volume(plugin):
    plugin.start()
    create(plugin, "blk", 16 * MiB)
    staging = plugin.path("plugins", "kubernetes.io", "csi", "volumeDevices", "staging", "pv-blk")
    publish_dir = plugin.path("plugins", "kubernetes.io", "csi", "volumeDevices", "publish", "pv-blk")
    plugin.run("mkdir", "-p", staging, publish_dir)
    target = os.path.join(publish_dir, "pod-a")
    drv = external(plugin)
    vol = item("blk", mode="Block")
    drv.node_stage(vol, staging, {})
    drv.node_publish(vol, target, staging, {}, pod())
    assert plugin.run("test", "-b", target).returncode == 0
    assert int(plugin.run("blockdev", "--getsize64", target).stdout) == 16 * MiB
    plugin.run("dd", "if=/dev/zero", "of=" + target, "bs=1M", "count=1", "conv=fsync", "status=none")
    drv.node_unpublish(vol, target)
    drv.node_unstage(vol, staging)
    assert plugin.loops() == [] and plugin.mounts_under_work() == []
    assert all("block" in r["volume_capability"] for r in requests_of(plugin, "NodeStageVolume"))


def test_controller_then_node_expansion(plugin):
    plugin.start()
    create(plugin, "x", SIZE)
    staging, target = dirs(plugin, "x", "pod-a")
    drv = external(plugin, controller="node", timeout=60)
    vol = item("x", fs_type="xfs", capacity_bytes=2 * SIZE, pv_capacity_bytes=SIZE)
    drv.node_stage(vol, staging, {})
    drv.node_publish(vol, target, staging, {}, pod())
    before = plugin.fs_size(target)
    exp = drv.controller_expand(vol)
    assert (exp.old_bytes, exp.new_bytes, exp.node_expansion_required, exp.called) == (SIZE, 2 * SIZE, True, True)
    assert drv.node_expand(vol, target, staging).capacity_bytes == 2 * SIZE
    assert plugin.fs_size(target) > before + SIZE // 2
    # the PV has the size now: no second ControllerExpandVolume (external-resizer)
    again = drv.controller_expand(item("x", capacity_bytes=2 * SIZE, pv_capacity_bytes=2 * SIZE))
    assert not again.called and not again.changed
    assert methods(plugin).count("ControllerExpandVolume") == 1
    request = requests_of(plugin, "NodeExpandVolume")[0]
    assert request["staging_target_path"] == staging and request["capacity_range"]["required_bytes"] == str(2 * SIZE)
    drv.node_unpublish(vol, target)
    drv.node_unstage(vol, staging)
    assert plugin.loops() == []


def test_node_only_expansion_when_the_controller_cannot(plugin):
    plugin.start(controller_caps=["CREATE_DELETE_VOLUME"])
    create(plugin, "y")
    drv = external(plugin, controller="node")
    exp = drv.controller_expand(item("y", capacity_bytes=128 * MiB, pv_capacity_bytes=64 * MiB))
    assert exp.node_expansion_required and not exp.called and exp.new_bytes == 128 * MiB
    plugin.configure(node_caps=["STAGE_UNSTAGE_VOLUME"])
    with pytest.raises(CsiDriverRefused, match="supports no expansion"):
        drv.controller_expand(item("y", capacity_bytes=128 * MiB, pv_capacity_bytes=64 * MiB))
    assert "ControllerExpandVolume" not in methods(plugin)


def test_check_mode_makes_only_read_only_calls(plugin):
    plugin.start(controller_caps=ATTACH)
    create(plugin, "v9", SIZE)
    staging, target = dirs(plugin, "v9", "pod-a")
    before = len(plugin.calls())
    drv = external(plugin, controller="node")
    vol = item("v9", capacity_bytes=2 * SIZE, pv_capacity_bytes=SIZE)
    assert drv.controller_publish(vol, check_mode=True).device is None
    assert drv.node_stage(vol, staging, {}, check_mode=True).called
    assert drv.node_publish(vol, target, staging, {}, pod(), check_mode=True).called
    assert drv.controller_expand(vol, check_mode=True).new_bytes == 2 * SIZE
    drv.node_expand(vol, target, staging, check_mode=True)
    drv.node_unpublish(vol, target, check_mode=True)
    drv.node_unstage(vol, staging, check_mode=True)
    drv.controller_unpublish(vol, check_mode=True)
    called = set(methods(plugin)[before:])
    assert called and called <= READ_ONLY_CALLS, called
    assert plugin.mounts_under_work() == [] and plugin.loops() == []


@pytest.fixture
def plugin(driver):
    """conftest's ``driver`` fixture (the test plugin in a private mount namespace), named for what it is here."""
    return driver
