# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``DeviceDriver``: a driver whose volumes reach the node as a block device (loop; a disk API would, too).

It is its own controller and node plugin, as a node-local driver is: ControllerPublishVolume attaches the volume
on this node and answers its device in ``publish_context`` (``devicePath``, as the VolumeAttachment's
status.attachmentMetadata carries it for the in-tree attachers); the node verbs are kubevol's shared code, the
same for every such driver: probe, format only if blank, fsck, grow offline and mount at the staging path
(node/stage.py), bind into the pod or map the Block device (node/publish.py), rescan and grow the filesystem
(node/expand.py). A subclass implements only its device part: ``attach``, ``find_device``, ``detach``,
``expand``, ``rescan`` (and its records, for reconstruction).

The node code a driver runs is imported inside the methods that run it (here and in the loop driver's files):
importing a driver's module to read its class data (CAPABILITIES, OPTIONS: the planner, through the registry)
imports no node code, while Ansible's payload finder, which reads every import statement, still ships it with the
node modules.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import DEVICE_PATH, Attachment, Driver


class DeviceDriver(Driver):
    """Subclasses implement the device part below; the CSI verbs are implemented here."""

    # -- the device part (the subclass's) ----------------------------------------------------------
    def attach(self, item, provision=False, check_mode=False):
        """Attach ``item`` to this node (idempotent); return an Attachment."""
        raise NotImplementedError

    def find_device(self, item):
        """The device of ``item`` if it is attached to this node, else None. Never attaches."""
        raise NotImplementedError

    def detach(self, item, check_mode=False):
        """Detach ``item`` from this node; return the device detached (or that would be), or None."""
        raise NotImplementedError

    def expand(self, item, check_mode=False):
        """Grow the backing volume to ``item.capacity_bytes`` (never shrink); return an Expansion."""
        raise NotImplementedError

    def rescan(self, item, device, check_mode=False):
        """Make the node see the backing volume's size; return the device size in bytes it will have."""
        raise NotImplementedError

    def check_backing(self, item):
        """A check run before the attach: what the attach would give the node, to be probed read only in its place (a
        device already there, or a file holding the same bytes), or None when the attach creates the backing volume
        (blank). Every check a real run makes on the attached device runs on it (node/operations.py mount_volume)."""
        raise NotImplementedError

    def reads_as_zeros(self, item, device):
        """True only when the storage side proves that every byte of ``device`` (``item``'s, attached here) is
        zero, as a disk API could of a disk created empty and never written; the node then need not run its
        three blank-device probes (blockdev.probe). False on any doubt, the default: the node probes."""
        return False

    # -- CSI's verbs -------------------------------------------------------------------------------
    def controller_publish(self, item, node_id, check_mode=False, provision=False):
        att = self.attach(item, provision=provision, check_mode=check_mode)
        values = dict((field, getattr(att, field)) for field, _default in att.FIELDS)
        values["publish_context"] = {DEVICE_PATH: att.device} if att.device else {}
        return Attachment(**values)

    def controller_unpublish(self, item, node_id, check_mode=False):
        return self.detach(item, check_mode=check_mode)

    def node_stage(self, item, staging_path, publish_context, check_mode=False, ctx=None, res=None, mounts=None,
                   force=False):
        """Block volumes are not staged (kubevol maps the device straight into each pod: node_publish); a filesystem
        smaller than its device is grown, as the block drivers' NodeStageVolume ends (node/expand_stage.py)."""
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import expand_stage, mount
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import stage as node_stage

        if item.block:
            return None
        device = (publish_context or {}).get(DEVICE_PATH) or self.find_device(item)
        runner = self.runner
        mounts = mount.list_mounts(runner) if mounts is None else mounts
        path = node_stage.stage(ctx, runner, self, item, device, staging_path, mounts, force, res)
        return expand_stage.resize_staged(ctx, runner, item, device, path, mounts, res)  # a restore into a larger claim

    def node_unstage(self, item, staging_path, check_mode=False, ctx=None, res=None, mounts=None):
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import mount, stage as node_stage

        mounts = mount.list_mounts(self.runner) if mounts is None else mounts
        node_stage.unstage(ctx, self.runner, staging_path, mounts, res)

    def node_publish(self, item, target_path, staging_path, publish_context, pod, check_mode=False, ctx=None,
                     res=None, mounts=None):
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import mount, publish as node_publish

        device = (publish_context or {}).get(DEVICE_PATH) or self.find_device(item)
        mounts = mount.list_mounts(self.runner) if mounts is None else mounts
        if item.block:
            node_publish.publish_block(ctx, self.runner, item, device, target_path, pod, mounts, res)
        else:
            node_publish.publish_filesystem(ctx, self.runner, item, device, staging_path, target_path, pod, mounts,
                                            res)

    def node_unpublish(self, item, target_path, check_mode=False, ctx=None, res=None, mounts=None):
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import mount, publish as node_publish

        mounts = mount.list_mounts(self.runner) if mounts is None else mounts
        node_publish.unpublish(ctx, self.runner, target_path, mounts, res)

    def controller_expand(self, item, check_mode=False):
        return self.expand(item, check_mode=check_mode)

    def node_expand(self, item, volume_path, staging_path, check_mode=False, ctx=None, res=None):
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import expand as node_expand

        if check_mode and self.find_device(item) is None:
            return self._check_expand(item, res)
        return node_expand.expand(ctx, self.runner, self, item, staging_path, res)

    def _check_expand(self, item, res):
        """A check run before the attach (the same run attaches, mounts and grows it): the filesystem the real run
        grows is the one on the backing (or the one its mount makes on a new one), grown to the larger of the
        backing's size and the item's; the tools that growth runs must be on the node (node/tools.py)."""
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, tools
        from ansible_collections.kubevol.volumes.plugins.module_utils.node.expand import not_grown
        from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import get_filesystem

        backing = self.check_backing(item)
        size = blockdev.device_size(self.runner, backing) if backing else (item.capacity_bytes or 0)
        new = max(size, item.capacity_bytes or 0)
        res.update(device_size_bytes={"old": size, "new": new}, changed=new != size)
        if not_grown(item):
            res["skipped"] = not_grown(item) + " (device rescanned)"
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
