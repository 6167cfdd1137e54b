# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A local PV on a block device: format only if blank, fsck, mount at the global path, grow.

pkg/volume/local/local.go deviceMounter.MountDevice -> mountLocalBlockDevice: SafeFormatAndMount.FormatAndMount of
spec.local.path at ``<kubelet>/plugins/kubernetes.io/local-volume/mounts/<pv>`` with spec.local.fsType (ext4 when
unset), ``ro`` for a read-only PV. kubevol uses its own fail-closed probe (blockdev.probe): a device any probe finds
anything on is never formatted; a device holding another filesystem than the PV's fsType is kept and the volume
fails naming both types. Expansion (local.go NodeExpand -> util.GenericResizeFS) grows the filesystem: xfs online
at its mount, ext4 offline before the mount (online ext4 grow needs CAP_SYS_RESOURCE, which nodes here lack).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    FilesystemMismatch, KubevolError, UnsafeToFormat)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, layout, mount
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act
from ansible_collections.kubevol.volumes.plugins.module_utils.node.expand import grow_filesystem
from ansible_collections.kubevol.volumes.plugins.module_utils.node.stage import fsck, grow_offline
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import (
    FILESYSTEMS, filesystem_to_create, get_filesystem)

PLUGIN = "kubernetes.io/local-volume"


class LocalFilesystemMismatch(FilesystemMismatch):
    message = ("mount of local volume {volume} on node {node} refused: failed to mount the volume as \"{expected}\", "
               "it already contains {found} ({device}). Nothing was mounted or formatted; the data is kept. If {found} "
               "is right, set the PV's spec.local.fsType to {found}; otherwise give the PV a blank device")


def global_path(ctx, item):
    """local.go GetDeviceMountPath: <kubelet>/plugins/kubernetes.io/local-volume/mounts/<pv>."""
    return os.path.join(ctx.kubelet_dir, "plugins", PLUGIN, "mounts", item.pv_name)


def note(res, target, before, after):
    res["diff"]["before"][target] = before
    res["diff"]["after"][target] = after


def stage(ctx, runner, item, device, mounts, res):
    """Mount ``device`` (the PV's own path) at the global path, formatting it only when every probe says blank."""
    gpath = global_path(ctx, item)
    res["global_mount_path"] = gpath
    current = mounts.at(gpath)
    if current:
        if not mount.same_device(current, device):
            raise KubevolError("global mount path %s of local volume %s on node %s is mounted from %s, not from its "
                               "device %s; unmount it by hand after checking what it is"
                               % (gpath, item.pv_name, ctx.node_name, current.source, device),
                               node=ctx.node_name, volume=item.pv_name, step="mount device")
        res["fs_type"] = current.fstype
        _mismatch(ctx, item, device, current.fstype, res)
        note(res, gpath, current.source, current.source)
        return gpath
    layout.check_dir(ctx.kubelet_dir, gpath, ctx.node_name)  # a symlink on the way is refused before the device
    found = blockdev.probe(runner, device)  # UnsafeToFormat when a probe is inconclusive
    if found.blank:
        if item.read_only:
            raise UnsafeToFormat(device=device, volume=item.pv_name, node=ctx.node_name,
                                 reason="the volume is read-only and %s (UnformattedReadOnly: cannot format in "
                                        "read-only mode)" % found.describe())
        fs = filesystem_to_create(item.fs_type, item.pv_name, ctx.node_name)
        act(ctx, res, "format %s as %s" % (device, fs.NAME), runner.check, fs.mkfs_argv(device), "format",
            "the device may be in use or too small for %s" % item.fs_type)
        res["formatted"] = True
    else:
        if found.fs_type not in FILESYSTEMS:
            raise UnsafeToFormat(device=device, volume=item.pv_name, node=ctx.node_name,
                                 reason="%s, which kubevol cannot mount; it never formats such a device: give the "
                                        "local PV a blank device or one holding its fsType" % found.describe())
        _mismatch(ctx, item, device, found.fs_type, res)
        fs = get_filesystem(found.fs_type)
        if not item.read_only:
            fsck(ctx, runner, item, device, res)
            grow_offline(ctx, runner, fs, device, res)
    res["fs_type"] = fs.NAME
    if not ctx.check_mode:
        layout.ensure_dir(ctx.kubelet_dir, gpath, ctx.node_name)
    act(ctx, res, "mount %s at %s" % (device, gpath), mount.mount_device, runner, device, gpath, fs.NAME,
        item.mount_options, item.read_only)
    note(res, gpath, None, device)
    return gpath


def _mismatch(ctx, item, device, existing, res):
    if existing and existing != item.fs_type:
        res["fs_type_mismatch"] = {"expected": item.fs_type, "found": existing}
        raise LocalFilesystemMismatch(volume=item.pv_name, node=ctx.node_name, expected=item.fs_type, found=existing,
                                      device=device, step="mount device (FilesystemMismatch)")


def expand(ctx, runner, item, device, res):
    """Grow the filesystem on ``device`` to the device's size (operations._expand_node, without attach or rescan:
    a local disk's size is what it is)."""
    size = blockdev.device_size(runner, device)
    res.update(device=device, device_size_bytes={"old": size, "new": size})
    if item.block:
        res["skipped"] = "Block volume: no filesystem to grow"
        return res
    if item.read_only:
        res["skipped"] = "read-only volume: its filesystem is not grown"
        return res
    return grow_filesystem(ctx, runner, item, device, global_path(ctx, item), size, res)
