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
        """Block volumes are not staged (kubevol maps the device straight into each pod: node_publish)."""
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import mount, stage as node_stage

        if item.block:
            return None
        device = (publish_context or {}).get(DEVICE_PATH) or self.find_device(item)
        runner = self.runner
        mounts = mount.list_mounts(runner) if mounts is None else mounts
        return node_stage.stage(ctx, runner, self, item, device, staging_path, mounts, force, res)

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

        return node_expand.expand(ctx, self.runner, self, item, staging_path, res)
