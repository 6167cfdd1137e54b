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
naming both types. Teardown (node/pod_binds.py) removes nothing under the PV's path. Node code is imported inside
the node methods only: planning imports none.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat
from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.common.fields import optional_str, require_str
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    FilesystemMismatch, KubevolError, UnsafeToFormat)
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import (
    BLOCK_MODE, DEFAULT_FS_TYPE, FS_TYPES, NODE, VolumePlugin, check_component, path_refusal)

LocalSource = namedtuple("LocalSource", "path fs_type")
LocalSource.__doc__ = """spec.local: path as written; fs_type: spec.local.fsType or "" (used for a block device)."""


class LocalFilesystemMismatch(FilesystemMismatch):
    message = ("mount of local volume {volume} on node {node} refused: failed to mount the volume as \"{expected}\", "
               "it already contains {found} ({device}). Nothing was mounted or formatted; the data is kept. If {found} "
               "is right, set the PV's spec.local.fsType to {found}; otherwise give the PV a blank device")


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
            refusals.append("PV %s: spec.nodeAffinity: Required value: Local volume requires node affinity "
                            "(Kubernetes refuses a local PV without it: the volume exists on one node only); nothing "
                            "is mounted on %s. Add spec.nodeAffinity naming the node that has %s"
                            % (pv.name, NODE, pv.source.path))
        problem = path_refusal(pv.name, "spec.local.path", pv.source.path, cls.NAME, driver_options)
        if problem is not None:
            refusals.append(problem)
        if pv.volume_mode != BLOCK_MODE and (pv.source.fs_type or DEFAULT_FS_TYPE) not in FS_TYPES:
            refusals.append("PV %s: spec.local.fsType %r is not one kubevol formats or mounts (%s); fix the PV"
                            % (pv.name, pv.source.fs_type, ", ".join(sorted(FS_TYPES))))
        return refusals

    @classmethod
    def spec_fields(cls, source):
        return source.path, "", source.fs_type or DEFAULT_FS_TYPE

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

    @classmethod
    def node_setup(cls, ctx, item):
        """MountDevice then SetUp of every pod in ``item.pods``; idempotent."""
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import mount, paths, pod_binds
        runner = ctx.runner_for(item)
        real = paths.resolve(ctx, item)
        kind = cls.kind(ctx, item, real)
        res = pod_binds.result(item, path=real, device=real if kind == "block" else None, formatted=False,
                               fs_type=None, global_mount_path=None, published=[])
        mounts = mount.list_mounts(runner)
        if item.block:
            if kind != "block":
                raise KubevolError("local volume %s on node %s: volumeMode Block needs a block device, and %s is a "
                                   "directory; use volumeMode Filesystem or a device path"
                                   % (item.pv_name, ctx.node_name, item.path),
                                   node=ctx.node_name, volume=item.pv_name, path=item.path, step="check local path")
            pod_binds.publish_block(ctx, cls, runner, item, real, mounts, res)
            return res
        source = real if kind == "directory" else cls._mount_device(ctx, runner, item, real, mounts, res)
        pod_binds.publish(ctx, cls, runner, item, source, mounts, res)
        return res

    @classmethod
    def _mount_device(cls, ctx, runner, item, device, mounts, res):
        """MountDevice: ``device`` (the PV's own path) at the global path, formatted only when every probe says
        blank."""
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, layout, mount, tools
        from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act
        from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import FILESYSTEMS, get_filesystem
        from ansible_collections.kubevol.volumes.plugins.module_utils.node.stage import (
            check_global_device, check_mismatch, filesystem_for_format, fsck, grow_offline, note_mount)
        gpath = res["global_mount_path"] = cls.global_mount_path(ctx.kubelet_dir, item.pv_name)
        current = mounts.at(gpath)
        if current:
            check_global_device(ctx, item, device, gpath, current, kind="local volume")
            res["fs_type"] = current.fstype
            check_mismatch(ctx, item, device, current.fstype, res, error=LocalFilesystemMismatch)
            note_mount(res, gpath, current.source, current.source)
            return gpath
        layout.check_dir(ctx.kubelet_dir, gpath, ctx.node_name)  # a symlink on the way is refused before the device
        found = blockdev.probe(runner, device)  # UnsafeToFormat when a probe is inconclusive
        if found.blank:
            if item.read_only:
                raise UnsafeToFormat(device=device, volume=item.pv_name, node=ctx.node_name,
                                     reason="the volume is read-only and %s (UnformattedReadOnly: cannot format in "
                                            "read-only mode)" % found.describe())
            fs = filesystem_for_format(ctx, runner, item)
            act(ctx, res, "format %s as %s" % (device, fs.NAME), runner.check, fs.mkfs_argv(device), "format",
                "the device may be in use or too small for %s" % item.fs_type)
            res["formatted"] = True
        else:
            if found.fs_type not in FILESYSTEMS:
                raise UnsafeToFormat(device=device, volume=item.pv_name, node=ctx.node_name,
                                     reason="%s, which kubevol cannot mount; it never formats such a device: give "
                                            "the local PV a blank device or one holding its fsType" % found.describe())
            check_mismatch(ctx, item, device, found.fs_type, res, error=LocalFilesystemMismatch)
            fs = get_filesystem(found.fs_type)
            if not item.read_only:
                fsck(ctx, runner, item, device, res)
                grow_offline(ctx, runner, fs, device, res)
        res["fs_type"] = fs.NAME
        tools.require(runner, "mounting it", "mount")
        if not ctx.check_mode:
            layout.ensure_dir(ctx.kubelet_dir, gpath, ctx.node_name)
        act(ctx, res, "mount %s at %s" % (device, gpath), mount.mount_device, runner, device, gpath, fs.NAME,
            item.mount_options, item.read_only)
        note_mount(res, gpath, None, device)
        return gpath

    @classmethod
    def node_teardown(cls, ctx, item, force=False):
        """TearDownAt, UnmountDevice (node/pod_binds.py)."""
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import pod_binds
        return pod_binds.teardown(ctx, cls, item, force)

    @classmethod
    def node_expand(cls, ctx, item):
        """NodeExpand: grow a block-backed local volume's filesystem to its device's size (a local disk's size is
        what it is: no attach, no rescan); a directory has none of its own (no-op)."""
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, paths
        from ansible_collections.kubevol.volumes.plugins.module_utils.node.expand import grow_filesystem, not_grown
        res = {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "plugin": item.plugin,
               "stage": "node", "changed": False, "device": None, "fs_type": None, "mount_path": None,
               "skipped": None, "device_size_bytes": {"old": None, "new": None},
               "fs_size_bytes": {"old": None, "new": None}}
        try:
            real = paths.resolve(ctx, item)
            if cls.kind(ctx, item, real) == "directory":
                res["skipped"] = "directory-backed local volume: no filesystem of its own to grow"
                return res
            runner = ctx.runner_for(item)
            size = blockdev.device_size(runner, real)
            res.update(device=real, device_size_bytes={"old": size, "new": size})
            if not_grown(item):
                res["skipped"] = not_grown(item)
                return res
            return grow_filesystem(ctx, runner, item, real,
                                   cls.global_mount_path(ctx.kubelet_dir, item.pv_name), size, res)
        finally:
            dev, fs = res["device_size_bytes"], res["fs_size_bytes"]
            res["diff"] = {"before": {item.pv_name: {"device_size_bytes": dev["old"], "fs_size_bytes": fs["old"]}},
                           "after": {item.pv_name: {"device_size_bytes": dev["new"], "fs_size_bytes": fs["new"]}}}
