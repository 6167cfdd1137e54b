# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The volume plugin interface: what a plugin can do, as data, and where it lives in the kubelet's layout.

Kubernetes: pkg/volume/plugins.go VolumePlugin (GetPluginName, GetVolumeName, CanSupport), AttachableVolumePlugin,
DeviceMountableVolumePlugin, ExpandableVolumePlugin (controller side: RequiresFSResize/ExpandVolumeDevice),
NodeExpandableVolumePlugin, BlockVolumePlugin; pkg/volume/util/util.go GetUniqueVolumeNameFromSpec (plugin name +
"/" + volume name); pkg/kubelet/kubelet_getters.go getPodVolumeDir (pods/<uid>/volumes/<escaped plugin>/<name>) and
pkg/volume/util/util.go GetPluginMountDir. Pure code, no I/O: the planner and the node modules import it alike.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import UnsafeName

DEFAULT_KUBELET_DIR = "/var/lib/kubelet"
# the filesystem types kubevol formats and mounts (node/filesystems.py FILESYSTEMS has one class for each; a unit
# test keeps the two equal): the planner refuses any other fsType without importing node code
FS_TYPES = frozenset(("btrfs", "ext3", "ext4", "xfs"))
DEFAULT_FS_TYPE = "ext4"
FILESYSTEM, BLOCK_MODE = "Filesystem", "Block"


def escape_qualified_name(name):
    """utilstrings.EscapeQualifiedName: kubernetes.io/csi -> kubernetes.io~csi."""
    return name.replace("/", "~")


def check_component(field, value):
    """Refuse anything that is not one safe path component; return value. (common/names.py re-exports it: one
    rule for every name that becomes a path component.)"""
    if not isinstance(value, str) or value == "":
        raise UnsafeName(field=field, value=value, reason="must be a non-empty string")
    if value in (".", "..") or "/" in value or "\\" in value:
        raise UnsafeName(field=field, value=value, reason="it would escape its directory")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise UnsafeName(field=field, value=value, reason="it contains NUL or control characters")
    if len(value.encode("utf-8")) > 255:
        raise UnsafeName(field=field, value=value, reason="it is longer than 255 bytes")
    return value


def field(item_like, name, default=None):
    """A field of a volume item (a dict), a VolumeSpec or any object with that attribute."""
    if isinstance(item_like, dict):
        return item_like.get(name, default)
    return getattr(item_like, name, default)


class VolumePlugin:
    """One volume plugin. The capability flags say what the plugin may do at all; where it depends on the volume
    (CSI: the CSIDriver's attachRequired, the driver's capabilities; local: whether the path is a block device) the
    planner or the node decides per volume. Every method is a classmethod: a plugin is data plus rules."""

    NAME = None
    DIR = None  # escape_qualified_name(NAME): the directory under pods/<uid>/volumes and volumeDevices
    ATTACHABLE = False  # AttachableVolumePlugin: the A/D controller attaches it to a node
    DEVICE_MOUNTABLE = False  # DeviceMountableVolumePlugin: one global mount per node, bind-mounted into pods
    CONTROLLER_EXPANDABLE = False  # ExpandableVolumePlugin: the backing volume is grown by the controller
    NODE_EXPANDABLE = False  # NodeExpandableVolumePlugin: the filesystem (or device) is grown on the node
    BLOCK = False  # BlockVolumePlugin: volumeMode Block
    EPHEMERAL = False  # inline ephemeral volumes (volumeLifecycleMode Ephemeral)
    # The planner plans the device mount as a step of its own (mount/device) only when it can know it applies;
    # where the node decides (a local PV: is its path a block device?), the node's pod mount step mounts the device
    # first (local.go MountDevice then SetUp).
    DEVICE_MOUNT_STEP = False

    @classmethod
    def plans_device_mount(cls):
        """Whether the planner plans a mount/device step for a Filesystem volume of this plugin."""
        return cls.DEVICE_MOUNTABLE and cls.DEVICE_MOUNT_STEP

    NAME_FIELDS = ("pv_name",)  # the item fields volume_name() is made of

    @classmethod
    def volume_name(cls, item_like):
        """GetVolumeName: the in-tree plugins use the PV name."""
        return field(item_like, "pv_name")

    @classmethod
    def unique_name(cls, item_like):
        """GetUniqueVolumeNameFromSpec: <plugin name>/<volume name>."""
        return "%s/%s" % (cls.NAME, cls.volume_name(item_like))

    @classmethod
    def pod_volume_dir(cls, kubelet_dir, pod_uid, pv_name):
        """<kubelet>/pods/<uid>/volumes/<escaped plugin name>/<pv>."""
        check_component("pod uid", pod_uid)
        check_component("PV name", pv_name)
        return os.path.join(kubelet_dir, "pods", pod_uid, "volumes", cls.DIR, pv_name)

    @classmethod
    def pod_mount_path(cls, kubelet_dir, pod_uid, pv_name):
        """The pod's mount point: the volume directory itself for an in-tree plugin (local.go GetPath)."""
        return cls.pod_volume_dir(kubelet_dir, pod_uid, pv_name)

    @classmethod
    def pod_device_path(cls, kubelet_dir, pod_uid, pv_name):
        """Block mode: <kubelet>/pods/<uid>/volumeDevices/<escaped plugin name>/<pv> (a file)."""
        check_component("pod uid", pod_uid)
        check_component("PV name", pv_name)
        return os.path.join(kubelet_dir, "pods", pod_uid, "volumeDevices", cls.DIR, pv_name)

    @classmethod
    def global_mount_path(cls, kubelet_dir, *args):
        """The device's one mount on the node (DeviceMounter GetDeviceMountPath), or None: not device-mountable."""
        return None

    @classmethod
    def attach_applies(cls, item_like):
        """Whether an attach/detach applies to this volume (the plugin's ATTACHABLE, refined per volume)."""
        return cls.ATTACHABLE
