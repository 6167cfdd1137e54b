# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The volume backend interface (one class per driver, as os-brick's connectors).

A driver attaches a volume to this node and returns its device, finds the device of an attached
volume (only looks, never creates), detaches, grows the backing volume (controller-side
expansion), rescans on the node, and declares what it can do in ``CAPABILITIES``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.value import REQUIRED, Value

ATTACHABLE = "attachable"
NODE_EXPAND = "node_expand"  # the filesystem must be grown on the node after the backing volume grows
CONTROLLER_EXPAND = "controller_expand"
BLOCK = "block"  # supports volumeMode Block
# creates a volume per pod for an inline CSI volume (volumeLifecycleMode Ephemeral) and deletes it with the pod
EPHEMERAL = "ephemeral"


class Attachment(Value):
    """What attach did: ``device`` is None only in check mode when it would attach."""
    FIELDS = (
        ("device", REQUIRED),  # Optional[str]
        ("attached", False),  # bool: a device was attached now
        ("provisioned", False),  # bool: the backing volume was created now
        ("adopted", False),  # bool: an existing attachment was found and recorded for this node
        ("released", None),  # Optional[Dict[str, str]]: other nodes' holds the operator released ({node: since})
    )


class AttachedDevice(Value):
    FIELDS = (
        ("unique_volume_name", REQUIRED),  # str
        ("driver", REQUIRED),  # str
        ("volume_handle", REQUIRED),  # str
        ("device", REQUIRED),  # str
    )


class EphemeralVolume(Value):
    """A volume the driver created for one pod's inline CSI volume, as its own record says (reconstruction)."""
    FIELDS = (
        ("unique_volume_name", REQUIRED),  # str
        ("driver", REQUIRED),  # str
        ("volume_handle", REQUIRED),  # str
        ("pod_uid", REQUIRED),  # str
        ("volume_name", REQUIRED),  # str
        ("image", REQUIRED),  # Optional[str]: what backs it (loop: the image file), named by the record
        ("device", REQUIRED),  # Optional[str]: attached now (None: the record's device is gone)
    )


class Expansion(Value):
    FIELDS = (
        ("old_bytes", REQUIRED),  # int
        ("new_bytes", REQUIRED),  # int
    )

    @property
    def changed(self):
        return self.new_bytes != self.old_bytes


class Driver:
    """Base class: subclasses set NAME and CAPABILITIES and implement the methods below."""

    NAME = None
    CAPABILITIES = frozenset()

    def __init__(self, runner, kubelet_dir, node_name, options=None):
        self.runner = runner
        self.kubelet_dir = kubelet_dir
        self.node_name = node_name
        self.options = options or {}  # the node's configuration for its drivers (node modules' options)

    def can(self, capability):
        return capability in self.CAPABILITIES

    def validate(self, item):
        """Raise UnsafeName/InvalidInput for an item this driver must refuse. Runs before anything acts."""

    def attach(self, item, provision=False, check_mode=False):
        """Attach ``item`` to this node (idempotent); return an Attachment."""
        raise NotImplementedError

    def find_device(self, item):
        """The device of ``item`` if it is attached to this node, else None. Never attaches."""
        raise NotImplementedError

    def detach(self, item, check_mode=False):
        """Detach ``item`` from this node; return the device detached (or that would be), or None."""
        raise NotImplementedError

    def reads_as_zeros(self, item, device):
        """True only when the storage side proves that every byte of ``device`` (``item``'s, attached here) is
        zero, as a disk API could of a disk created empty and never written; the node then need not run its
        three blank-device probes (blockdev.probe). False on any doubt, the default: the node probes."""
        return False

    def expand(self, item, check_mode=False):
        """Grow the backing volume to ``item.capacity_bytes`` (never shrink); return an Expansion."""
        raise NotImplementedError

    def rescan(self, item, device, check_mode=False):
        """Make the node see the backing volume's size; return the device size in bytes it will have."""
        raise NotImplementedError

    def attached_volumes(self):
        """AttachedDevice for every persistent volume of this driver attached to this node (reconstruction);
        never the per-pod volumes of inline ephemeral CSI volumes (ephemeral_volumes)."""
        raise NotImplementedError

    def ephemeral_volumes(self):
        """EphemeralVolume for every inline ephemeral volume this driver created on this node (EPHEMERAL)."""
        return []

    def ephemeral_record(self, item):
        """The driver's own record of the inline ``item`` when it says the volume is that pod's ephemeral one."""
        return None

    def delete_ephemeral(self, item, evidence, check_mode=False):
        """Delete the backing volume created for the inline ephemeral ``item`` once it is detached; return what was
        deleted (or would be), or None. ``evidence``: the driver's own record or the pod's vol_data.json, read before
        the detach; only what it names as ephemeral is ever deleted."""
        raise NotImplementedError
