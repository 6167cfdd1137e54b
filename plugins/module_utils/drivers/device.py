# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``DeviceDriver``: a driver whose volumes reach the node as a block device (loop; a disk API would, too).

It is its own controller and node plugin, as a node-local driver is: ControllerPublishVolume attaches the volume
on this node and answers its device in ``publish_context`` (``devicePath``, as the VolumeAttachment's
status.attachmentMetadata carries it for the in-tree attachers); the node verbs are kubevol's shared code, the
same for every such driver (node/driver_device.py ``DeviceNode``): probe, format only if blank, fsck, grow offline
and mount at the staging path (node/stage.py), bind into the pod or map the Block device (node/publish.py), rescan
and grow the filesystem (node/expand.py). A subclass implements only its device part: ``attach``, ``find_device``,
``detach``, ``expand``, ``rescan`` (and its records, for reconstruction); what of it runs node code is in its node/
subclass, which derives from ``DeviceNode`` too, and which its class names by dotted path (``NODE_OPERATIONS``,
drivers/base.py). This file imports no node code: reading a driver's class data (the planner, through the
registry) imports none.
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

    def controller_expand(self, item, check_mode=False):
        return self.expand(item, check_mode=check_mode)
