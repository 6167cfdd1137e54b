# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The driver interface: one class per CSI driver (as os-brick's connectors), speaking CSI's verbs.

The verbs are the CSI spec's RPCs as the kubelet (pkg/volume/csi: csi_attacher.go, csi_mounter.go,
expander.go), the external-attacher and the external-resizer call them: ControllerPublishVolume /
ControllerUnpublishVolume (attach, detach), NodeStageVolume / NodeUnstageVolume (the device's global mount),
NodePublishVolume / NodeUnpublishVolume (one pod's mount), ControllerExpandVolume and NodeExpandVolume. What a
driver can do is class data (``CAPABILITIES``, read without an instance by the planner through the registry), and
so is the spec of its ``driver_options`` (``OPTIONS``).

kubevol's additions to CSI's requests: ``check_mode`` (a check run makes no mutating call), and for the node
verbs ``ctx`` (the node's context: warnings, the step in progress, the kubelet directory) and ``res`` (the
volume's result dict the verb reports its actions, diff and findings into, as the node modules return them) and
``mounts`` (the node's mount table read once per volume). A driver that provides a block device (loop) derives
from drivers/device.py ``DeviceDriver``.

A driver's class here is what it is: its data (NAME, CAPABILITIES, OPTIONS, HANDLE_IS_FILE_NAME), its refusals, and
what it reads of the node's state (its attachments, for reconstruction). The verbs that act on a node and run node
code are a node/ subclass the class names by dotted path (``NODE_OPERATIONS``), as a volume plugin's are
(volume/base.py): constructing a driver builds that subclass, loaded through common/registry.py on first use, so
that reading the class (the planner, the options check) imports no node code. drivers/ imports common/ and csi/ only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    HandleRefused, InvalidInput, UnsafeName)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.handles import show_handle
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import check_component
from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import load
from ansible_collections.kubevol.volumes.plugins.module_utils.common.value import REQUIRED, Value

# CAPABILITIES (CSI: ControllerServiceCapability, NodeServiceCapability, CSIDriver spec)
ATTACHABLE = "attachable"  # PUBLISH_UNPUBLISH_VOLUME: ControllerPublishVolume makes the volume reachable
STAGE_UNSTAGE = "stage_unstage"  # STAGE_UNSTAGE_VOLUME: NodeStageVolume mounts it once per node (global mount)
NODE_EXPAND = "node_expand"  # EXPAND_VOLUME (node): the filesystem is grown on the node after the backing volume
CONTROLLER_EXPAND = "controller_expand"  # EXPAND_VOLUME (controller)
BLOCK = "block"  # supports volumeMode Block
# creates a volume per pod for an inline CSI volume (volumeLifecycleMode Ephemeral) and deletes it with the pod
EPHEMERAL = "ephemeral"
# kubevol's own: a multi-attach volume is staged (probed, fsck'd, formatted if blank, mounted) on one node at a time,
# under a lock on the storage side every node sees (the loop driver's holder lock); without it the planner sets up
# a multi-attach volume that no node has mounted on one node first (plan/rules_setup.py _first_setup_node)
STAGE_LOCKED = "stage_locked"
ALL_CAPABILITIES = frozenset((ATTACHABLE, STAGE_UNSTAGE, NODE_EXPAND, CONTROLLER_EXPAND, BLOCK, EPHEMERAL,
                              STAGE_LOCKED))

# publish_context key of the device ControllerPublishVolume attached (the VolumeAttachment's attachmentMetadata, as
# the in-tree attachers' devicePath)
DEVICE_PATH = "devicePath"
# in an inline volume's vol_data.json: what the driver created for it (loop: the image), deleted with the pod
EPHEMERAL_IMAGE_KEY = "kubevol.io/image"


class Attachment(Value):
    """What ControllerPublishVolume did: ``device`` is None only in check mode when it would attach (or for a driver
    whose node plugin finds the device itself). ``publish_context``: the ControllerPublishVolumeResponse's, handed
    to NodeStage and NodePublish (the VolumeAttachment's status.attachmentMetadata)."""
    FIELDS = (
        ("device", REQUIRED),  # Optional[str]
        ("attached", False),  # bool: a device was attached now
        ("provisioned", False),  # bool: the backing volume was created now
        ("adopted", False),  # bool: an existing attachment was found and recorded for this node
        ("released", None),  # Optional[Dict[str, str]]: other nodes' holds the operator released ({node: since})
        ("publish_context", None),  # Optional[Dict[str, str]]
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
    """ControllerExpandVolumeResponse: the sizes, and whether NodeExpandVolume must follow (node_expansion_required)."""
    FIELDS = (
        ("old_bytes", REQUIRED),  # int
        ("new_bytes", REQUIRED),  # int
        ("node_expansion_required", True),  # bool
    )

    @property
    def changed(self):
        return self.new_bytes != self.old_bytes


class Driver:
    """Base class: subclasses set NAME, CAPABILITIES and OPTIONS and implement the verbs they declare."""

    NAME = None
    CAPABILITIES = frozenset()
    # the spec of this driver's entry in driver_options (common/driver_options.py validates against it), in
    # Ansible's argument spec words: {option: {"type": ..., "elements": ..., "default": ...}}
    OPTIONS = {}
    # True for a driver that keeps each volume in a file named after its handle (loop: <pool>/<handle>): its handles
    # must then be one safe path component (handle_refusal). Any other driver takes every handle the API accepts, as
    # the kubelet does: an opaque string, hashed wherever it names a file (common/handles.py).
    HANDLE_IS_FILE_NAME = False
    # the dotted path (relative to module_utils, as common/registry.py's) of the node/ subclass with this driver's
    # verbs that act on a node (loop: node/driver_loop.py), or None when the class has them itself (an external CSI
    # driver's are gRPC calls: drivers/external/); node/operations.py's import lines name each one for Ansible's finder
    NODE_OPERATIONS = None
    # the dotted path of the node handler whose phase verbs the node operations call for this driver's volumes:
    # kubevol's own drivers share one, over their CSI verbs (an external driver's is drivers/external/'s)
    NODE_HANDLER = "node.driver_ops.DriverHandler"

    def __new__(cls, *args, **kwargs):
        """A driver instance acts on a node: it is built from the subclass ``NODE_OPERATIONS`` names (loaded through
        the registry on first use, as os-brick's factory builds a connector from its dotted path). ``reader`` builds
        the class itself, for code that only reads the node's state."""
        node = load(cls.NODE_OPERATIONS) if cls.NODE_OPERATIONS else cls
        return super(Driver, cls).__new__(node if issubclass(node, cls) else cls)

    @classmethod
    def reader(cls, runner, kubelet_dir, node_name, options=None):
        """An instance of this class itself, without the node verbs: what the facts, the audit and the provisioning
        calls use to read a driver's attachments, records and pools, so that their modules ship no node verbs."""
        driver = super(Driver, cls).__new__(cls)
        driver.__init__(runner, kubelet_dir, node_name, options)
        return driver

    def __init__(self, runner, kubelet_dir, node_name, options=None):
        self.runner = runner
        self.kubelet_dir = kubelet_dir
        self.node_name = node_name
        self.options = options or {}  # the node's configuration for this driver (driver_options), never the PV's

    @classmethod
    def can(cls, capability):
        return capability in cls.CAPABILITIES

    @classmethod
    def handle_refusal(cls, volume_handle):
        """Why this driver cannot take ``volume_handle`` (one clause), or None. Asked by the planner (volume/csi.py
        handle_refusal) and by ``validate`` on the node, of a handle that already passed the API's rule."""
        if not cls.HANDLE_IS_FILE_NAME:
            return None
        try:
            check_component("volume handle", volume_handle)
        except UnsafeName as err:
            return ("driver %s names a file after each volume handle, so it refuses a handle that is not one safe path "
                    "component (no '/', '\\', '.' or '..', NUL or control characters, at most 255 bytes): %s"
                    % (cls.NAME, err.kwargs.get("reason")))
        return None

    def validate(self, item):
        """Raise UnsafeName/InvalidInput for an item this driver must refuse. Runs before anything acts (node
        context items()). Here: a handle the driver cannot take (handle_refusal), and a Block volume or an inline
        ephemeral one of a driver that declares no such capability (the planner blocks them; the node refuses them
        too, never half-serves them)."""
        refusal = self.handle_refusal(item.volume_handle)
        if refusal is not None:
            raise HandleRefused(volume=item.pv_name, node=self.node_name, driver=item.driver, reason=refusal,
                                field="volume handle", value=show_handle(item.volume_handle))
        for wanted, capability, what in ((item.block, BLOCK, "volumeMode Block"),
                                         (item.ephemeral, EPHEMERAL, "inline ephemeral volumes")):
            if wanted and not self.can(capability):
                raise InvalidInput(
                    field="volume %s" % item.pv_name, value=item.driver,
                    reason="driver %s on node %s does not support %s (its capabilities: %s); nothing was done: "
                           "use a volume of another mode or driver" % (
                               item.driver, self.node_name, what, ", ".join(sorted(self.CAPABILITIES)) or "none"))

    # -- CSI's verbs -------------------------------------------------------------------------------
    def controller_publish(self, item, node_id, check_mode=False, provision=False):
        """ControllerPublishVolume of ``item`` to node ``node_id`` (idempotent); return an Attachment.
        ``provision``: create the backing volume first when it is missing (kubevol's, no CSI equivalent)."""
        raise NotImplementedError

    def controller_unpublish(self, item, node_id, check_mode=False):
        """ControllerUnpublishVolume; return the device detached (or that would be), or None. Called after the node
        is done (no stage, no publish left); also when nothing is attached, to drop a stale record."""
        raise NotImplementedError

    def find_device(self, item):
        """The device of ``item`` if it is published to this node, else None (the kubelet's WaitForAttach reads it
        from the VolumeAttachment's devicePath). Never attaches."""
        return None

    def node_stage(self, item, staging_path, publish_context, check_mode=False, ctx=None, res=None, mounts=None):
        """NodeStageVolume at ``staging_path`` (the kubelet's global mount path); return the path the pods' mounts
        are made from (None: none, e.g. Block)."""
        raise NotImplementedError

    def node_unstage(self, item, staging_path, check_mode=False, ctx=None, res=None, mounts=None):
        """NodeUnstageVolume: unmount ``staging_path`` (after every pod's unpublish)."""
        raise NotImplementedError

    def node_publish(self, item, target_path, staging_path, publish_context, pod, check_mode=False, ctx=None,
                     res=None, mounts=None):
        """NodePublishVolume of ``item`` for ``pod`` at ``target_path`` (read-only per pod)."""
        raise NotImplementedError

    def node_unpublish(self, item, target_path, check_mode=False, ctx=None, res=None, mounts=None):
        """NodeUnpublishVolume: unmount ``target_path`` (kubevol removes the directories it created afterwards)."""
        raise NotImplementedError

    def controller_expand(self, item, check_mode=False):
        """ControllerExpandVolume to ``item.capacity_bytes`` (never shrink); return an Expansion."""
        raise NotImplementedError

    def node_expand(self, item, volume_path, staging_path, check_mode=False, ctx=None, res=None):
        """NodeExpandVolume: make the node see the new size and grow the filesystem."""
        raise NotImplementedError

    # -- reconstruction and inline volumes ---------------------------------------------------------
    def backing(self, item):
        """What backs ``item`` (loop: its image file), named in results and vol_data.json; None when unknown."""
        return None

    def attached_volumes(self):
        """AttachedDevice for every persistent volume of this driver attached to this node (reconstruction);
        never the per-pod volumes of inline ephemeral CSI volumes (ephemeral_volumes)."""
        return []

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
