# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local volume plugin (pkg/volume/local/local.go): kubernetes.io/local-volume, the whole plugin.

A directory-backed local PV is bind-mounted straight into pods/<uid>/volumes/kubernetes.io~local-volume/<pv>; a
block-device-backed one is mounted once at plugins/kubernetes.io/local-volume/mounts/<pv> (local.go
GetDeviceMountPath, deviceMounter.MountDevice -> mountLocalBlockDevice: SafeFormatAndMount, formatted only if blank,
spec.local.fsType or ext4, ``ro`` for a read-only PV) and bind-mounted into each pod; Block mode bind-mounts the
device onto pods/<uid>/volumeDevices/kubernetes.io~local-volume/<pv>; anything else is refused as local.go refuses
it ("only directory and block device are supported"). Never attached (local.go NewAttacher returns a no-op
attacher: the volume is already on the node). Expansion: local.go NodeExpand (util.GenericResizeFS) grows a
block-backed filesystem, xfs online at its mount, ext4 offline before the mount (online ext4 grow needs
CAP_SYS_RESOURCE, which nodes here lack); there is no backing volume for a controller to grow.

kubevol's own rules on top: the path is used only under the operator's allowed directories (node/paths.py resolve,
after the plan-time string check); its own fail-closed probe (node/blockdev.py probe): a device any probe finds
anything on is never formatted, and one holding another filesystem than the PV's fsType is kept and the volume fails
naming both types. Teardown (node/pod_binds.py) removes nothing under the PV's path. This class is what the plugin
is; its node verbs (MountDevice, SetUp, TearDown, NodeExpand) are node/plugin_local.py's, named by NODE_OPERATIONS.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat
from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.common.fields import optional_str, require_str
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    FilesystemMismatch, KubevolError)
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import (
    BLOCK_MODE, DEFAULT_FS_TYPE, FS_TYPES, NODE, VolumePlugin, check_component, path_refusal)

LocalSource = namedtuple("LocalSource", "path fs_type")
LocalSource.__doc__ = """spec.local: path as written; fs_type: spec.local.fsType or "" (used for a block device)."""


class LocalFilesystemMismatch(FilesystemMismatch):
    # nothing was mounted or formatted: the data is kept
    message = ("mount of local volume {volume} on node {node} refused: failed to mount the volume as \"{expected}\", "
               "it already contains {found} ({device}); set the PV's spec.local.fsType to {found} if that is right, "
               "or give the PV a blank device")


class LocalPathUnusable(KubevolError):
    """A local PV's path (allowed, symlinks resolved) is missing or neither a directory nor a block device: nothing
    was created, formatted or mounted."""
    code = "KV-LOCAL-PATH"
    message = ("local volume {volume} on node {node}: path {path} is {what}: only directory and block device are "
               "supported; {fix}")


class LocalVolumePlugin(VolumePlugin):
    NAME = "kubernetes.io/local-volume"
    DIR = "kubernetes.io~local-volume"
    SPEC_KEY = "local"
    KIND = "local"
    ATTACHABLE = False
    DEVICE_MOUNTABLE = True  # only when the path is a block device: the node decides (it sees the path)
    CONTROLLER_EXPANDABLE = False  # the controller step only records the PV's capacity
    NODE_EXPANDABLE = True  # a block-backed filesystem grows; a directory has nothing to grow
    BLOCK = True
    EPHEMERAL = False
    FS_GROUP = True  # local.go SetUpAt: SetVolumeOwnership unless read-only
    # the directories local PVs may name (node/paths.py); default: local-static-provisioner's discovery directory
    OPTIONS = {"paths": "normalized_paths"}
    DEFAULT_OPTIONS = {"paths": ["/mnt/disks"]}

    @classmethod
    def global_mount_dir(cls, kubelet_dir):
        return os.path.join(kubelet_dir, "plugins", cls.NAME, "mounts")

    @classmethod
    def global_mount_path(cls, kubelet_dir, pv_name):
        """<kubelet>/plugins/kubernetes.io/local-volume/mounts/<pv> (local.go GetDeviceMountPath)."""
        check_component("PV name", pv_name)
        return os.path.join(cls.global_mount_dir(kubelet_dir), pv_name)

    # -- the PV and the plan -----------------------------------------------------------------------------------
    @classmethod
    def parse_source(cls, raw):
        if not isinstance(raw, dict):
            raise TypeError("spec.local must be a mapping")
        return LocalSource(require_str(raw.get("path"), "path"), optional_str(raw.get("fsType"), "fsType") or "")

    @classmethod
    def refusals(cls, pv, driver_options):
        """validation.go: "Local volume requires node affinity", validatePathNoBacksteps; the operator's directories;
        an fsType kubevol cannot format or mount."""
        refusals = []
        if pv.node_affinity is None:
            # Kubernetes refuses a local PV without it: the volume exists on one node only
            refusals.append("PV %s cannot be set up on %s: spec.nodeAffinity: Required value: Local volume requires "
                            "node affinity: add spec.nodeAffinity naming the node that has %s"
                            % (pv.name, NODE, pv.source.path))
        problem = path_refusal(pv.name, "spec.local.path", pv.source.path, cls.NAME, driver_options)
        if problem is not None:
            refusals.append(problem)
        if pv.volume_mode != BLOCK_MODE and (pv.source.fs_type or DEFAULT_FS_TYPE) not in FS_TYPES:
            refusals.append("PV %s: spec.local.fsType %r is not one kubevol formats or mounts: set it to one of %s"
                            % (pv.name, pv.source.fs_type, ", ".join(sorted(FS_TYPES))))
        return refusals

    @classmethod
    def spec_fields(cls, source):
        return source.path, "", source.fs_type or DEFAULT_FS_TYPE

    NODE_OPERATIONS = "node.plugin_local.LocalVolumeNode"

    # -- the node ----------------------------------------------------------------------------------------------
    @classmethod
    def kind(cls, ctx, item, real):
        """'directory' or 'block' for the resolved PV path; anything else refused with local.go's words."""
        try:
            st = os.stat(real)
        except OSError as err:
            what = "missing" if not os.path.lexists(real) else "unreadable (%s)" % err.strerror
        else:
            if stat.S_ISDIR(st.st_mode):
                return "directory"
            if stat.S_ISBLK(st.st_mode):
                return "block"
            what = "a regular file" if stat.S_ISREG(st.st_mode) else "neither a directory nor a block device"
        fix = ("create that directory (or attach the disk) on node %s and run again" % ctx.node_name if what == "missing"
               else "point the PV's spec.local.path at a directory or a disk's device")
        raise LocalPathUnusable(volume=item.pv_name, node=ctx.node_name, path=item.path, what=what, fix=fix,
                                step="check local path")
