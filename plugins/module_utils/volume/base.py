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
import posixpath

from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options as options_mod
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import check_component  # noqa: F401 (one rule)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting

DEFAULT_KUBELET_DIR = "/var/lib/kubelet"
# the filesystem types kubevol formats and mounts (node/filesystems.py FILESYSTEMS has one class for each; a unit
# test keeps the two equal): the planner refuses any other fsType without importing node code
FS_TYPES = frozenset(("btrfs", "ext3", "ext4", "xfs"))
DEFAULT_FS_TYPE = "ext4"
FILESYSTEM, BLOCK_MODE = "Filesystem", "Block"


def escape_qualified_name(name):
    """utilstrings.EscapeQualifiedName: kubernetes.io/csi -> kubernetes.io~csi."""
    return name.replace("/", "~")


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
    # CanSupport (plugins.go FindPluginBySpec): the PV spec field the plugin serves (spec.<SPEC_KEY>)
    SPEC_KEY = None
    KIND = None  # the word messages name its volumes by ("local", "hostPath")
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
    # A pod's fsGroup: applied always (True: local.go SetVolumeOwnership), never (False: hostPath), or as the
    # CSIDriver's fsGroupPolicy says (None: CSI; plan/rules_setup.py fs_group_to_apply)
    FS_GROUP = None
    MARKER = False  # a pod's "mount" is an empty marker directory (hostPath): its facts say whether it is there

    @classmethod
    def plans_device_mount(cls):
        """Whether the planner plans a mount/device step for a Filesystem volume of this plugin."""
        return cls.DEVICE_MOUNTABLE and cls.DEVICE_MOUNT_STEP

    # its entry in driver_options (common/driver_options.py): the options spec, and their defaults
    OPTIONS = {}
    DEFAULT_OPTIONS = {}
    NAME_FIELDS = ("pv_name",)  # the item fields volume_name() is made of
    # the values a volume item's host_path_type may take (docs/contracts.md section 1): "" only, but for hostPath
    ITEM_TYPES = ("",)
    # a Block PV the plugin cannot serve (BLOCK False): why, and what to do instead (plan time, plan/plugin_specs.py)
    NO_BLOCK_WHY = "the kubelet has no block mapper for it"
    NO_BLOCK_FIX = "Use volumeMode Filesystem"

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

    @classmethod
    def global_mount_dir(cls, kubelet_dir):
        """The directory that holds the plugin's device mounts, one per volume (the node facts list it), or None."""
        return None

    # -- an in-tree plugin other than CSI: its PV source, plan-time rules and node operations ----------------------
    # The cluster model keeps the parsed source as PersistentVolume.source (cluster/pv.py asks the registry for the
    # plugin of spec.<SPEC_KEY>); the planner asks refusals() and spec_fields(); the node modules call the node_*
    # methods through node/plugin_ops.py. Node code is imported inside the node_* methods only: planning imports none.

    @classmethod
    def parse_source(cls, raw):
        """spec.<SPEC_KEY> of a PV object -> the plugin's source (a namedtuple); TypeError/ValueError naming the
        field (cluster/objects.py names the PV)."""
        raise NotImplementedError(cls.NAME)

    @classmethod
    def refusals(cls, pv, driver_options):
        """What Kubernetes or the operator refuses of a PV of this plugin whatever the node (texts; NODE stands
        for the node), besides the Block refusal plan/plugin_specs.py makes of every plugin whose BLOCK is False."""
        return []

    @classmethod
    def spec_fields(cls, source):
        """(path, host_path_type, fs_type) of the volume item a PV of this plugin becomes (contracts section 1)."""
        raise NotImplementedError(cls.NAME)

    # The dotted path (under module_utils) of the subclass that adds the plugin's node verbs below, loaded by the node
    # operations when they run one (node/plugin_ops.py); None: this class has them itself
    NODE_OPERATIONS = None
    # The dotted path of the node handler whose phase verbs the node operations call for this plugin's volumes
    # (node/plugin_ops.py: the node verbs above, no attach); None: the handler its CSI driver's class names
    NODE_HANDLER = "node.plugin_ops.PluginHandler"

    @classmethod
    def node_setup(cls, ctx, item):
        """MountDevice (when it applies) and SetUp of every pod in ``item.pods`` on the node: the phase result."""
        raise NotImplementedError(cls.NAME)

    @classmethod
    def node_teardown(cls, ctx, item, force=False):
        """TearDown of the named pods (and UnmountDevice when ``item.unmount_device``): the phase result."""
        raise NotImplementedError(cls.NAME)

    @classmethod
    def node_expand(cls, ctx, item):
        """NodeExpand, for a NODE_EXPANDABLE plugin: the phase result."""
        raise NotImplementedError(cls.NAME)

    @classmethod
    def node_pod_fact(cls, ctx, entry):
        """Add the plugin's own fields to a pod_mounts fact (node/plugin_facts.py): nothing by default."""
        return entry

    # -- what a pod waits for (run/pod_wait.py, the kubelet's WaitForAttachAndMount) --------------------------------
    @classmethod
    def not_served(cls, pv_name, driver, known_drivers):
        """Why kubevol leaves a volume of this plugin to someone else (a driver of the plugin it does not drive), or
        None when kubevol sets it up on the node: an in-tree plugin's volumes are always kubevol's (it is their
        kubelet)."""
        return None

    @classmethod
    def pod_published(cls, current, mode):
        """Whether a pod's entry of the node facts (plan/actual_state.py MountedPod, or None) shows the volume published
        at the pod's path for ``mode``: mounted there (bound, or its device mapped for Block), from the device
        attached for the volume now (facts ``device_mismatch``: docs/contracts.md section 2)."""
        return current is not None and current.mounted and current.mode == mode and not current.device_mismatch


# -- plan-time path rules of the in-tree plugins that name a node path (local, hostPath) -------------------------
NODE = "\x00node\x00"  # a refusal's placeholder for "node <name>", filled per pod (plan/plugin_specs.py node_text)


def _option_hint(plugin, roots):
    return ("the paths of %s (now: %s)"
            % (setting("driver_options", key=plugin), ", ".join(roots) if roots else "none, nothing is allowed"))


def path_refusal(pv_name, field_name, path, plugin, driver_options):
    """Why ``path`` (spec.local.path / spec.hostPath.path) is refused, or None: absolute, normalized, under one of the
    operator's directories for ``plugin`` (driver_options[plugin].paths; the node checks again with realpath:
    node/paths.py). Kubernetes: validation.go validatePathNoBacksteps."""
    roots = options_mod.options_for(driver_options, plugin).get("paths") or []
    where = "PV %s cannot be set up on %s: %s %r" % (pv_name, NODE, field_name, path)
    if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
        return "%s is not an absolute path: write the PV's path as one" % where
    if ".." in path.split("/"):
        # Kubernetes: validatePathNoBacksteps
        return "%s must not contain '..': write the PV's path without it" % where
    if path.startswith("//") or posixpath.normpath(path) != path:
        return "%s is not a normalized path (no '.', '//' or trailing '/'): write it as %r" % (
            where, posixpath.normpath(path))
    if not options_mod.allowed(path, roots):
        return ("%s is outside the directories allowed for %s: move the volume under one, or add its directory to %s"
                % (where, plugin, _option_hint(plugin, roots)))
    return None
