"""A driver for unit tests (never shipped): CSI's verbs in memory, each call journaled.

``FakeDriver.backend`` is the storage and the node's mounts both, shared by every instance (the node context makes
one driver instance per call, as it does for a real driver). Every verb honours check_mode: in check mode it reports
what it would do in ``res`` and changes nothing, so a test can prove a check run left the backend as it was.
"""
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import (
    ATTACHABLE, BLOCK, CONTROLLER_EXPAND, NODE_EXPAND, STAGE_UNSTAGE, Attachment, Driver, Expansion)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import mount

NAME = "fake.kubevol.io"
NO_STAGE_NAME = "nostage.fake.kubevol.io"
MAJOR = 250


class Backend:
    def __init__(self):
        self.calls = []  # (verb, path or None, check_mode)
        self.attached = {}  # volume handle -> device
        self.mounts = {}  # target -> device
        self.sizes = {}  # volume handle -> backing size
        self.fs_sizes = {}  # volume handle -> filesystem size
        self.next_device = 0

    def snapshot(self):
        return (dict(self.attached), dict(self.mounts), dict(self.sizes), dict(self.fs_sizes))

    def mount_table(self):
        return mount.MountTable([mount.Mount(target=target, source=device, fstype="ext4", options=("rw",),
                                             majmin=device_number(device)) for target, device in self.mounts.items()])


def device_number(path):
    return "%d:%s" % (MAJOR, path.rsplit("fake", 1)[-1])


def _act(res, check_mode, action, before, after, target):
    res["actions"].append(action)
    res["changed"] = True
    res["diff"]["before"][target] = before
    res["diff"]["after"][target] = after
    return not check_mode


class FakeDriver(Driver):
    NAME = NAME
    CAPABILITIES = frozenset((ATTACHABLE, STAGE_UNSTAGE, CONTROLLER_EXPAND, NODE_EXPAND, BLOCK))
    OPTIONS = {"zone": {"type": "str", "default": "a"}}
    backend = None  # set by each test (fake_backend fixture)

    def _call(self, verb, path, check_mode):
        self.backend.calls.append((verb, path, check_mode))

    def find_device(self, item):
        return self.backend.attached.get(item.volume_handle)

    def controller_publish(self, item, node_id, check_mode=False, provision=False):
        self._call("controller_publish", None, check_mode)
        device = self.backend.attached.get(item.volume_handle)
        if device:
            return Attachment(device=device, publish_context={"devicePath": device})
        if check_mode:
            return Attachment(device=None, attached=True)
        self.backend.next_device += 1
        device = self.backend.attached[item.volume_handle] = "/dev/fake%d" % self.backend.next_device
        self.backend.sizes.setdefault(item.volume_handle, item.capacity_bytes or 0)
        return Attachment(device=device, attached=True, publish_context={"devicePath": device})

    def controller_unpublish(self, item, node_id, check_mode=False):
        self._call("controller_unpublish", None, check_mode)
        device = self.backend.attached.get(item.volume_handle)
        if device in self.backend.mounts.values() and not check_mode:
            raise AssertionError("ControllerUnpublish of %s while %s is still mounted" % (item.pv_name, device))
        if not check_mode:
            self.backend.attached.pop(item.volume_handle, None)
        return device

    def node_stage(self, item, staging_path, publish_context, check_mode=False, ctx=None, res=None, mounts=None,
                   force=False):
        self._call("node_stage", staging_path, check_mode)
        device = publish_context["devicePath"]
        res["global_mount_path"] = staging_path
        if self.backend.mounts.get(staging_path) != device:
            if _act(res, check_mode, "stage", None, device, staging_path):
                self.backend.mounts[staging_path] = device
        return staging_path

    def node_unstage(self, item, staging_path, check_mode=False, ctx=None, res=None, mounts=None):
        self._call("node_unstage", staging_path, check_mode)
        if staging_path in self.backend.mounts:
            res["unmounted"].append(staging_path)
            if _act(res, check_mode, "unstage", self.backend.mounts[staging_path], None, staging_path):
                del self.backend.mounts[staging_path]

    def node_publish(self, item, target_path, staging_path, publish_context, pod, check_mode=False, ctx=None,
                     res=None, mounts=None):
        self._call("node_publish", target_path, check_mode)
        device = publish_context["devicePath"]
        if self.can(STAGE_UNSTAGE) and not item.block and self.backend.mounts.get(staging_path) != device:
            assert check_mode, "NodePublish of %s before its NodeStage" % item.pv_name
        if self.backend.mounts.get(target_path) != device:
            res["published"].append(pod.uid)
            if _act(res, check_mode, "publish %s" % target_path, None, device, target_path):
                self.backend.mounts[target_path] = device

    def node_unpublish(self, item, target_path, check_mode=False, ctx=None, res=None, mounts=None):
        self._call("node_unpublish", target_path, check_mode)
        if target_path in self.backend.mounts:
            res["unmounted"].append(target_path)
            if _act(res, check_mode, "unmount %s" % target_path, self.backend.mounts[target_path], None, target_path):
                del self.backend.mounts[target_path]

    def controller_expand(self, item, check_mode=False):
        self._call("controller_expand", None, check_mode)
        old = self.backend.sizes.get(item.volume_handle, 0)
        new = max(old, item.capacity_bytes or 0)
        if not check_mode:
            self.backend.sizes[item.volume_handle] = new
        return Expansion(old_bytes=old, new_bytes=new, node_expansion_required=not item.block)

    def node_expand(self, item, volume_path, staging_path, check_mode=False, ctx=None, res=None):
        self._call("node_expand", staging_path, check_mode)
        size = self.backend.sizes.get(item.volume_handle, 0)
        old = self.backend.fs_sizes.get(item.volume_handle, 0)
        res["fs_size_bytes"] = {"old": old, "new": size}
        res["changed"] = size != old
        if not check_mode:
            self.backend.fs_sizes[item.volume_handle] = size


class NoStageDriver(FakeDriver):
    """A driver without STAGE_UNSTAGE_VOLUME: the kubelet publishes straight from the attached volume."""
    NAME = NO_STAGE_NAME
    CAPABILITIES = frozenset((ATTACHABLE, CONTROLLER_EXPAND, NODE_EXPAND, BLOCK))
