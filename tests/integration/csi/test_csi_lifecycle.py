"""The CSI client drives the test plugin through a volume's life: real loop devices, filesystems and mounts.

The call sequences are the kubelet's (pkg/volume/csi: csi_attacher.go MountDevice -> NodeStageVolume,
csi_mounter.go SetUpAt -> NodePublishVolume, TearDownAt -> NodeUnpublishVolume, UnmountDevice ->
NodeUnstageVolume, expander.go -> NodeExpandVolume) and the external-attacher's/-resizer's (ControllerPublish/
Unpublish/ExpandVolume).
"""
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.client import CsiClient

MiB = 1024 * 1024
SIZE = 320 * MiB


def mount_cap(fs_type="ext4", mode="SINGLE_NODE_WRITER", **mount):
    return {"mount": dict(fs_type=fs_type, **mount), "access_mode": {"mode": mode}}


def block_cap(mode="SINGLE_NODE_WRITER"):
    return {"block": {}, "access_mode": {"mode": mode}}


def make_dirs(driver, *names):
    paths = []
    for name in names:
        path = driver.path(name)
        driver.run("mkdir", "-p", path)
        paths.append(path)
    return paths


def caps(csi):
    node = csi.to_dict(csi.call("NodeGetCapabilities")).get("capabilities", [])
    ctrl = csi.to_dict(csi.call("ControllerGetCapabilities")).get("capabilities", [])
    return sorted(c["rpc"]["type"] for c in node), sorted(c["rpc"]["type"] for c in ctrl)


def test_identity_and_capabilities(driver):
    driver.start(node_id="node7", max_volumes_per_node=16,
                 node_caps=["STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME", "GET_VOLUME_STATS", "VOLUME_MOUNT_GROUP"],
                 controller_caps=["PUBLISH_UNPUBLISH_VOLUME", "EXPAND_VOLUME"])
    with CsiClient(driver.socket, timeout=10) as csi:
        info = csi.call("GetPluginInfo")
        assert (info.name, info.vendor_version) == ("csi.kubevol.test", "0.1.0")
        assert dict(info.manifest) == {"backend": "loop"}
        probe = csi.call("Probe")
        assert probe.HasField("ready") and probe.ready.value is True
        plugin = csi.to_dict(csi.call("GetPluginCapabilities"))["capabilities"]
        assert {"service": {"type": "CONTROLLER_SERVICE"}} in plugin
        assert {"volume_expansion": {"type": "ONLINE"}} in plugin
        assert caps(csi) == (["EXPAND_VOLUME", "GET_VOLUME_STATS", "STAGE_UNSTAGE_VOLUME", "VOLUME_MOUNT_GROUP"],
                             ["EXPAND_VOLUME", "PUBLISH_UNPUBLISH_VOLUME"])
        info = csi.call("NodeGetInfo")
        assert (info.node_id, info.max_volumes_per_node) == ("node7", 16)
        # switched off, as a driver without staging or attaching says it
        driver.configure(node_caps=["GET_VOLUME_STATS"], controller_caps=[], ready=False)
        assert caps(csi) == (["GET_VOLUME_STATS"], [])
        assert csi.call("Probe").ready.value is False
    assert [c["method"] for c in driver.calls()][:3] == ["GetPluginInfo", "Probe", "GetPluginCapabilities"]


def test_stage_publish_unpublish_unstage_keeps_data(driver):
    driver.start()
    staging = make_dirs(driver, "staging/vol1", "pods")[0]
    target, target2 = driver.path("pods", "a", "mount"), driver.path("pods", "b", "mount")
    make_dirs(driver, "pods/a", "pods/b")
    with CsiClient(driver.socket, timeout=30) as csi:
        vol = csi.call("CreateVolume", {"name": "vol1", "capacity_range": {"required_bytes": 64 * MiB},
                                        "volume_capabilities": [mount_cap()]}).volume
        assert (vol.volume_id, vol.capacity_bytes) == ("vol1", 64 * MiB)
        stage = {"volume_id": "vol1", "staging_target_path": staging,
                 "volume_capability": mount_cap(mount_flags=["noatime"]), "volume_context": dict(vol.volume_context)}
        csi.call("NodeStageVolume", stage)
        csi.call("NodeStageVolume", stage)  # idempotent: still one mount
        staged = driver.mount_of(staging)
        assert staged["fstype"] == "ext4" and "noatime" in staged["options"]
        assert staged["source"].startswith("/dev/loop")
        publish = {"volume_id": "vol1", "staging_target_path": staging, "target_path": target,
                   "volume_capability": mount_cap()}
        csi.call("NodePublishVolume", publish)
        csi.call("NodePublishVolume", publish)
        assert driver.mount_of(target)["fstype"] == "ext4"
        driver.write(target + "/data.txt", "written through the target")
        stats = csi.to_dict(csi.call("NodeGetVolumeStats", {"volume_id": "vol1", "volume_path": target}))
        assert {u["unit"] for u in stats["usage"]} == {"BYTES", "INODES"}
        csi.call("NodeUnpublishVolume", {"volume_id": "vol1", "target_path": target})
        csi.call("NodeUnpublishVolume", {"volume_id": "vol1", "target_path": target})  # idempotent
        assert driver.mount_of(target) is None
        assert driver.run("test", "-e", target, check=False).returncode == 1  # the plugin removed it
        csi.call("NodeUnstageVolume", {"volume_id": "vol1", "staging_target_path": staging})
        assert driver.mount_of(staging) is None and driver.loops() == []
        # again, read-only: the data is on the device, not in a directory
        csi.call("NodeStageVolume", stage)
        csi.call("NodePublishVolume", dict(publish, target_path=target2, readonly=True))
        assert driver.read(target2 + "/data.txt") == "written through the target"
        assert "ro" in driver.mount_of(target2)["options"].split(",")
        assert driver.run("touch", target2 + "/x", check=False).returncode != 0
        csi.call("NodeUnpublishVolume", {"volume_id": "vol1", "target_path": target2})
        csi.call("NodeUnstageVolume", {"volume_id": "vol1", "staging_target_path": staging})
        csi.call("DeleteVolume", {"volume_id": "vol1"})
    assert driver.mounts_under_work() == [] and driver.loops() == []
    methods = [c["method"] for c in driver.calls()]
    assert methods.count("NodeStageVolume") == 3 and all(c["code"] == "OK" for c in driver.calls())


def test_attach_mode_controller_publish_carries_the_device(driver):
    driver.start(controller_caps=["CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME", "EXPAND_VOLUME"])
    staging = make_dirs(driver, "staging/vol2", "pods/p")[0]
    target = driver.path("pods", "p", "mount")
    with CsiClient(driver.socket, timeout=30) as csi:
        csi.call("CreateVolume", {"name": "vol2", "capacity_range": {"required_bytes": 64 * MiB}})
        stage = {"volume_id": "vol2", "staging_target_path": staging, "volume_capability": mount_cap()}
        # NodeStageVolume before ControllerPublishVolume: a final refusal, nothing mounted
        err = _final(csi, "NodeStageVolume", stage)
        assert err.code == "FAILED_PRECONDITION" and driver.mount_of(staging) is None
        published = csi.call("ControllerPublishVolume", {"volume_id": "vol2", "node_id": "node1",
                                                         "volume_capability": mount_cap()})
        device = published.publish_context["devicePath"]
        assert driver.loops() == [device]
        stage["publish_context"] = dict(published.publish_context)
        csi.call("NodeStageVolume", stage)
        assert driver.mount_of(staging)["source"] == device
        csi.call("NodePublishVolume", {"volume_id": "vol2", "staging_target_path": staging, "target_path": target,
                                       "publish_context": dict(published.publish_context),
                                       "volume_capability": mount_cap()})
        driver.write(target + "/f", "attached")
        # the controller does not detach what a node still mounts
        err = _final(csi, "ControllerUnpublishVolume", {"volume_id": "vol2", "node_id": "node1"})
        assert err.code == "FAILED_PRECONDITION" and driver.loops() == [device]
        csi.call("NodeUnpublishVolume", {"volume_id": "vol2", "target_path": target})
        csi.call("NodeUnstageVolume", {"volume_id": "vol2", "staging_target_path": staging})
        assert driver.loops() == [device]  # NodeUnstage leaves the attachment to the controller
        csi.call("ControllerUnpublishVolume", {"volume_id": "vol2", "node_id": "node1"})
        csi.call("ControllerUnpublishVolume", {"volume_id": "vol2", "node_id": "node1"})
        assert driver.loops() == []


def test_block_volume_is_the_device_bound_onto_a_file(driver):
    driver.start()
    staging = make_dirs(driver, "staging/blk", "pods/p")[0]
    target = driver.path("pods", "p", "dev")
    with CsiClient(driver.socket, timeout=30) as csi:
        csi.call("CreateVolume", {"name": "blk", "capacity_range": {"required_bytes": 16 * MiB}})
        csi.call("NodeStageVolume", {"volume_id": "blk", "staging_target_path": staging,
                                     "volume_capability": block_cap()})
        csi.call("NodePublishVolume", {"volume_id": "blk", "staging_target_path": staging, "target_path": target,
                                       "volume_capability": block_cap()})
        assert driver.run("test", "-b", target).returncode == 0
        size = int(driver.run("blockdev", "--getsize64", target).stdout)
        assert size == 16 * MiB
        driver.run("dd", "if=/dev/zero", "of=" + target, "bs=1M", "count=1", "conv=fsync", "status=none")
        csi.call("NodeUnpublishVolume", {"volume_id": "blk", "target_path": target})
        assert driver.run("test", "-e", target, check=False).returncode == 1
        csi.call("NodeUnstageVolume", {"volume_id": "blk", "staging_target_path": staging})
    assert driver.loops() == [] and driver.mounts_under_work() == []


def test_without_staging_publish_formats_and_mounts_the_target(driver):
    driver.start(node_caps=["EXPAND_VOLUME"])
    make_dirs(driver, "pods/p")
    target = driver.path("pods", "p", "mount")
    with CsiClient(driver.socket, timeout=30) as csi:
        csi.call("CreateVolume", {"name": "v3"})
        # switched-off capabilities are refused as a driver without them refuses
        err = _final(csi, "NodePublishVolume", {"volume_id": "v3", "target_path": target,
                                                "volume_capability": mount_cap("xfs", volume_mount_group="5")})
        assert err.code == "INVALID_ARGUMENT" and driver.mount_of(target) is None and driver.loops() == []
        driver.configure(controller_caps=["CREATE_DELETE_VOLUME"])
        err = _final(csi, "ControllerExpandVolume", {"volume_id": "v3", "capacity_range": {"required_bytes": 1}})
        assert err.code == "UNIMPLEMENTED"
        csi.call("NodePublishVolume", {"volume_id": "v3", "target_path": target,
                                       "volume_capability": mount_cap("xfs")})
        assert driver.mount_of(target)["fstype"] == "xfs"
        err = _final(csi, "NodeStageVolume", {"volume_id": "v3", "staging_target_path": target,
                                              "volume_capability": mount_cap()})
        assert err.code == "UNIMPLEMENTED"
        csi.call("NodeUnpublishVolume", {"volume_id": "v3", "target_path": target})
    assert driver.loops() == [] and driver.mounts_under_work() == []


def test_expansion_xfs_online(driver):
    driver.start()
    staging = make_dirs(driver, "staging/x", "pods/p")[0]
    target = driver.path("pods", "p", "mount")
    with CsiClient(driver.socket, timeout=60) as csi:
        csi.call("CreateVolume", {"name": "x", "capacity_range": {"required_bytes": SIZE}})
        cap = mount_cap("xfs", volume_mount_group="4242")
        csi.call("NodeStageVolume", {"volume_id": "x", "staging_target_path": staging, "volume_capability": cap})
        csi.call("NodePublishVolume", {"volume_id": "x", "staging_target_path": staging, "target_path": target,
                                       "volume_capability": cap})
        assert driver.run("stat", "-c", "%g", target).stdout.strip() == "4242"
        before = driver.fs_size(target)
        grown = csi.call("ControllerExpandVolume", {"volume_id": "x", "capacity_range": {"required_bytes": 2 * SIZE},
                                                    "volume_capability": cap})
        assert (grown.capacity_bytes, grown.node_expansion_required) == (2 * SIZE, True)
        node = csi.call("NodeExpandVolume", {"volume_id": "x", "volume_path": target, "staging_target_path": staging,
                                             "capacity_range": {"required_bytes": 2 * SIZE}, "volume_capability": cap})
        assert node.capacity_bytes == 2 * SIZE
        assert driver.fs_size(target) > before + SIZE // 2
        csi.call("NodeUnpublishVolume", {"volume_id": "x", "target_path": target})
        csi.call("NodeUnstageVolume", {"volume_id": "x", "staging_target_path": staging})
    assert driver.loops() == [] and driver.mounts_under_work() == []


def test_expansion_ext4_offline_in_attach_mode(driver):
    """ext4 grows offline (online resize2fs needs CAP_SYS_RESOURCE here): attached, not mounted."""
    driver.start(controller_caps=["CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME", "EXPAND_VOLUME"],
                 expansion="OFFLINE")
    staging = make_dirs(driver, "staging/e")[0]
    with CsiClient(driver.socket, timeout=60) as csi:
        csi.call("CreateVolume", {"name": "e", "capacity_range": {"required_bytes": 64 * MiB}})
        ctx = dict(csi.call("ControllerPublishVolume", {"volume_id": "e", "node_id": "n"}).publish_context)
        stage = {"volume_id": "e", "staging_target_path": staging, "volume_capability": mount_cap(),
                 "publish_context": ctx}
        csi.call("NodeStageVolume", stage)
        before = driver.fs_size(staging)
        csi.call("NodeUnstageVolume", {"volume_id": "e", "staging_target_path": staging})
        csi.call("ControllerExpandVolume", {"volume_id": "e", "capacity_range": {"required_bytes": 128 * MiB}})
        assert csi.call("NodeExpandVolume", {"volume_id": "e", "volume_path": staging,
                                             "volume_capability": mount_cap()}).capacity_bytes == 128 * MiB
        csi.call("NodeStageVolume", stage)
        assert driver.fs_size(staging) > before + 48 * MiB
        csi.call("NodeUnstageVolume", {"volume_id": "e", "staging_target_path": staging})
        csi.call("ControllerUnpublishVolume", {"volume_id": "e", "node_id": "n"})
    assert driver.loops() == []


def _final(csi, method, request):
    from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import CsiFinalError
    try:
        csi.call(method, request)
    except CsiFinalError as exc:
        return exc
    raise AssertionError("%s did not fail" % method)


def test_controller_and_node_plugins_share_a_pool(driver):
    """As deployed: a controller plugin (external-attacher's side) and a node plugin (kubelet's side), each its own
    socket and state, one storage pool."""
    pool = driver.path("pool")
    driver.run("mkdir", "-p", pool)
    attach = ["CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME", "EXPAND_VOLUME"]
    controller = driver.another("controller", pool).start(controller_caps=attach)
    node = driver.another("node", pool).start(controller_caps=attach)
    staging = make_dirs(driver, "staging/shared")[0]
    with CsiClient(controller.socket, timeout=30) as ctrl, CsiClient(node.socket, timeout=30) as csi:
        ctrl.call("CreateVolume", {"name": "shared", "capacity_range": {"required_bytes": 32 * MiB}})
        ctx = dict(ctrl.call("ControllerPublishVolume", {"volume_id": "shared", "node_id": "n1"}).publish_context)
        csi.call("NodeStageVolume", {"volume_id": "shared", "staging_target_path": staging,
                                     "volume_capability": mount_cap(), "publish_context": ctx})
        assert driver.mount_of(staging)["source"] == ctx["devicePath"]
        csi.call("NodeUnstageVolume", {"volume_id": "shared", "staging_target_path": staging})
        ctrl.call("ControllerUnpublishVolume", {"volume_id": "shared", "node_id": "n1"})
        ctrl.call("DeleteVolume", {"volume_id": "shared"})
    assert controller.loops() == [] and driver.run("ls", pool).stdout == ""
    assert [c["method"] for c in node.calls()] == ["NodeStageVolume", "NodeUnstageVolume"]
    assert [c["method"] for c in controller.calls()] == ["CreateVolume", "ControllerPublishVolume",
                                                         "ControllerUnpublishVolume", "DeleteVolume"]
