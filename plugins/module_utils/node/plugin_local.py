# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local volume plugin's node verbs (pkg/volume/local/local.go MountDevice, SetUp, TearDown, NodeExpand): what
volume/local.py LocalVolumePlugin is stays there, as data and pure rules; this subclass adds what runs on the node, and
the plugin names it by its dotted path (NODE_OPERATIONS), so that planning a local volume imports no node code."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError, UnsafeToFormat
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, layout, mount, paths, pod_binds, tools
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act
from ansible_collections.kubevol.volumes.plugins.module_utils.node.expand import grow_filesystem, not_grown
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import FILESYSTEMS, get_filesystem
from ansible_collections.kubevol.volumes.plugins.module_utils.node.stage import (
    check_global_device, check_mismatch, filesystem_for_format, fsck, grow_offline, note_mount)
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.local import LocalFilesystemMismatch, LocalVolumePlugin


class LocalVolumeNode(LocalVolumePlugin):
    """kubernetes.io/local-volume on the node."""

    @classmethod
    def node_setup(cls, ctx, item):
        """MountDevice then SetUp of every pod in ``item.pods``; idempotent."""
        runner = ctx.runner_for(item)
        real = paths.resolve(ctx, item)
        kind = cls.kind(ctx, item, real)
        res = pod_binds.result(item, path=real, device=real if kind == "block" else None, formatted=False,
                               fs_type=None, global_mount_path=None, published=[])
        mounts = mount.list_mounts(runner)
        if item.block:
            if kind != "block":
                raise KubevolError("local volume %s on node %s: %s is a directory and volumeMode Block needs a block "
                                   "device; use volumeMode Filesystem or a device path"
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
                                     reason="the volume is read-only and %s, so it cannot be formatted; give it a "
                                            "device that holds its filesystem" % found.describe())
            fs = filesystem_for_format(ctx, runner, item)
            act(ctx, res, "format %s as %s" % (device, fs.NAME), runner.check, fs.mkfs_argv(device), "format",
                "the device may be in use or too small for %s" % item.fs_type)
            res["formatted"] = True
        else:
            if found.fs_type not in FILESYSTEMS:
                raise UnsafeToFormat(device=device, volume=item.pv_name, node=ctx.node_name,
                                     reason="%s, which kubevol cannot mount; give the local PV a blank device or one "
                                            "holding its fsType" % found.describe())
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
        return pod_binds.teardown(ctx, cls, item, force)

    @classmethod
    def node_expand(cls, ctx, item):
        """NodeExpand: grow a block-backed local volume's filesystem to its device's size (a local disk's size is
        what it is: no attach, no rescan); a directory has none of its own (no-op)."""
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
