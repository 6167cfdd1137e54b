# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node verbs of a driver whose volumes reach the node as a block device (drivers/device.py ``DeviceDriver``):
NodeStage, NodeUnstage, NodePublish, NodeUnpublish and NodeExpand, the same for every such driver, over the node
primitives: probe, format only if blank, fsck, grow offline and mount at the staging path (node/stage.py), bind into
the pod or map the Block device (node/publish.py), rescan and grow the filesystem (node/expand.py).

A driver's node/ subclass derives from ``DeviceNode`` and from its drivers/ class (node/driver_loop.py), and the
class names it by dotted path (``NODE_OPERATIONS``): the driver's data stays in drivers/, importing no node code.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import DEVICE_PATH
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.device import DeviceDriver
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, expand, expand_stage, mount, publish
from ansible_collections.kubevol.volumes.plugins.module_utils.node import stage, tools
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import get_filesystem


class DeviceNode(DeviceDriver):
    """CSI's node verbs of a DeviceDriver; the device part (attach, find_device, ...) is the driver's."""

    def node_stage(self, item, staging_path, publish_context, check_mode=False, ctx=None, res=None, mounts=None,
                   force=False):
        """Block volumes are not staged (kubevol maps the device straight into each pod: node_publish); a filesystem
        smaller than its device is grown, as the block drivers' NodeStageVolume ends (node/expand_stage.py)."""
        if item.block:
            return None
        device = (publish_context or {}).get(DEVICE_PATH) or self.find_device(item)
        runner = self.runner
        mounts = mount.list_mounts(runner) if mounts is None else mounts
        path = stage.stage(ctx, runner, self, item, device, staging_path, mounts, force, res)
        return expand_stage.resize_staged(ctx, runner, item, device, path, mounts, res)  # a restore into a larger claim

    def node_unstage(self, item, staging_path, check_mode=False, ctx=None, res=None, mounts=None):
        mounts = mount.list_mounts(self.runner) if mounts is None else mounts
        stage.unstage(ctx, self.runner, staging_path, mounts, res)

    def node_publish(self, item, target_path, staging_path, publish_context, pod, check_mode=False, ctx=None,
                     res=None, mounts=None):
        device = (publish_context or {}).get(DEVICE_PATH) or self.find_device(item)
        mounts = mount.list_mounts(self.runner) if mounts is None else mounts
        if item.block:
            publish.publish_block(ctx, self.runner, item, device, target_path, pod, mounts, res)
        else:
            publish.publish_filesystem(ctx, self.runner, item, device, staging_path, target_path, pod, mounts, res)

    def node_unpublish(self, item, target_path, check_mode=False, ctx=None, res=None, mounts=None):
        mounts = mount.list_mounts(self.runner) if mounts is None else mounts
        publish.unpublish(ctx, self.runner, target_path, mounts, res)

    def node_expand(self, item, volume_path, staging_path, check_mode=False, ctx=None, res=None):
        if check_mode and self.find_device(item) is None:
            return self._check_expand(item, res)
        return expand.expand(ctx, self.runner, self, item, staging_path, res)

    def _check_expand(self, item, res):
        """A check run before the attach (the same run attaches, mounts and grows it): the filesystem the real run
        grows is the one on the backing (or the one its mount makes on a new one), grown to the larger of the
        backing's size and the item's; the tools that growth runs must be on the node (node/tools.py)."""
        backing = self.check_backing(item)
        size = blockdev.device_size(self.runner, backing) if backing else (item.capacity_bytes or 0)
        new = max(size, item.capacity_bytes or 0)
        res.update(device_size_bytes={"old": size, "new": new}, changed=new != size)
        if expand.not_grown(item):
            res["skipped"] = expand.not_grown(item) + " (device rescanned)"
            return res
        fs_type = blockdev.filesystem_type(self.runner, backing) if backing else ""
        fs = get_filesystem(fs_type or item.fs_type)  # nothing on it yet: its mount makes the item's
        res["fs_type"] = fs.NAME if fs else fs_type
        if fs is None:
            res["skipped"] = "no filesystem kubevol can grow on %s (found %r)" % (backing, fs_type)
            return res
        old_fs = fs.fs_size(self.runner, backing) if fs_type else size
        res["fs_size_bytes"] = {"old": old_fs, "new": old_fs}
        if fs.needs_grow(new, old_fs):
            tools.require_grow(self.runner, fs, "(its mount)")  # mounted by then: grown online
            res.update(changed=True, fs_size_bytes={"old": old_fs, "new": new})
        return res
