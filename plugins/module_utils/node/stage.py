# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NodeStageVolume / NodeUnstageVolume for a driver that provides a block device (node/driver_device.py).

As mount-utils formatAndMountSensitive (mount_linux.go) and the kubelet's csi_attacher.go MountDevice do it:
probe the device, format it only when every probe says blank, fsck it, grow an ext filesystem offline when its
device grew, and mount it at the volume's global (staging) path with vol_data.json beside it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    CommandFailed, DeviceChanged, DeviceNotFound, FilesystemMismatch, KubevolError, UnsafeToFormat)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, layout, mount, tools
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act as _act
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import (
    FILESYSTEMS, filesystem_to_create, get_filesystem)

FSCK_CORRECTED = 1
FSCK_UNCORRECTED = 4


def note_mount(res, target, before, after):
    res["diff"]["before"][target] = before
    res["diff"]["after"][target] = after


def stage(ctx, runner, driver, item, device, gpath, mounts, force, res):
    """Format (only if blank), fsck, grow offline, mount at the global path ``gpath``. Returns that path.

    In check mode before the attach, ``device`` is the volume's backing (the loop image, probed read only as the
    device it becomes), or None when the attach creates it blank (provision): every check below runs on it as the
    real run runs it on the attached device."""
    res["global_mount_path"] = gpath
    current = mounts.at(gpath)
    if current:
        return _staged(ctx, runner, item, device or "(the device its attach makes)", gpath, current, res)
    # a symlink or a file on the way to the global mount is refused before the device is touched
    layout.check_dir(ctx.kubelet_dir, gpath, ctx.node_name)
    found = probe(ctx, runner, driver, item, device)  # UnsafeToFormat when a probe is inconclusive
    existing = found.fs_type
    if found.blank or (force and existing != item.fs_type):
        if item.read_only:
            raise UnsafeToFormat(device=device, volume=item.pv_name, node=ctx.node_name,
                                 reason="the volume is read-only and %s, so it cannot be formatted; give it a device "
                                        "that holds its filesystem" % found.describe())
        fs = filesystem_for_format(ctx, runner, item)
        if not found.blank:
            tools.require(runner, "erasing it (force)", "wipefs")
            ctx.warn("force=true: erasing %s on %s (%s) for volume %s" % (found.describe(), device, existing or "no fs",
                                                                          item.pv_name))
            _act(ctx, res, "wipe", runner.check, ["wipefs", "-a", device], "wipe signatures (force)")
        _act(ctx, res, "format", runner.check, fs.mkfs_argv(device), "format",
             "the device may be in use or too small for %s" % item.fs_type)
        res["formatted"] = True
    else:
        if existing not in FILESYSTEMS:
            raise UnsafeToFormat(device=device, volume=item.pv_name, node=ctx.node_name,
                                 reason="%s, which kubevol cannot mount; check what the device holds"
                                        % found.describe())
        check_mismatch(ctx, item, device, existing, res)
        fs = get_filesystem(existing)
        if not item.read_only:
            fsck(ctx, runner, item, device, res)
            grow_offline(ctx, runner, fs, device, res)
    res["fs_type"] = fs.NAME
    vol_dir = os.path.dirname(gpath)
    tools.require(runner, "mounting it", "mount")
    if ctx.check_mode:
        res["actions"].append("mount device")
        res["changed"] = True
    else:
        layout.ensure_dir(ctx.kubelet_dir, gpath, ctx.node_name)
        layout.write_vol_data(ctx.kubelet_dir, vol_dir, layout.device_vol_data(item), ctx.node_name)
        _act(ctx, res, "mount device", mount.mount_device, runner, device, gpath, fs.NAME, item.mount_options,
             item.read_only)
    note_mount(res, gpath, None, device)
    return gpath


def probe(ctx, runner, driver, item, device):
    """blockdev.probe of ``device`` with the driver's proof of zeros; in check mode before the attach, of the backing
    (a file) or of nothing: a backing the attach creates is blank (the loop driver's new image is all holes)."""
    if device is None:
        if not ctx.check_mode:
            raise DeviceNotFound(step="mount device", node=ctx.node_name, volume=item.pv_name,
                                 reason="no device to probe; attach it first")
        return blockdev.Probe(device="(created by the attach)")
    return blockdev.probe(runner, device, reads_as_zeros=driver.reads_as_zeros(item, device), backing=ctx.check_mode)


def filesystem_for_format(ctx, runner, item):
    """The filesystem ``item`` is formatted with, once its mkfs is known to be on the node (real and check runs
    alike): a type kubevol does not create, or a missing mkfs, fails the volume before the device is touched."""
    fs = filesystem_to_create(item.fs_type, item.pv_name, ctx.node_name)
    tools.require(runner, "formatting it as %s" % fs.NAME, fs.MKFS)
    return fs


def _staged(ctx, runner, item, device, gpath, current, res):
    """The global path is mounted already: it must be this device's; a writer joining a read-only mount remounts it
    read-write (an older kubevol mounted it read-only because its first pod was a reader)."""
    check_global_device(ctx, item, device, gpath, current)
    res["fs_type"] = current.fstype
    check_mismatch(ctx, item, device, current.fstype, res)
    repair_vol_data(ctx, res, os.path.dirname(gpath), layout.device_vol_data(item))
    writers = [pod.name or pod.uid for pod in item.pods if not pod.read_only]
    if current.read_only and not item.read_only and writers:
        if blockdev.device_read_only(runner, device):
            raise KubevolError("global mount %s of volume %s on node %s and its device %s are read-only but pod(s) "
                               "%s write to it; stop the volume's pods on node %s so that it is detached, then start "
                               "them again to attach it read-write"
                               % (gpath, item.pv_name, ctx.node_name, device, ", ".join(writers), ctx.node_name),
                               node=ctx.node_name, volume=item.pv_name, step="remount read-write")
        tools.require(runner, "remounting it read-write", "mount")
        _act(ctx, res, "remount read-write %s" % gpath, mount.remount_read_write, runner, gpath)
        note_mount(res, gpath, "%s (read-only)" % current.source, "%s (read-write)" % current.source)
    else:
        note_mount(res, gpath, current.source, current.source)
    return gpath


def unstage(ctx, runner, gpath, mounts, res):
    """NodeUnstageVolume: unmount the global path when it is mounted (the directories go afterwards)."""
    if gpath and mounts.mounted(gpath):
        _act(ctx, res, "unmount %s" % gpath, mount.unmount, runner, gpath)
        res["unmounted"].append(gpath)
        note_mount(res, gpath, mounts.at(gpath).source, None)


def repair_vol_data(ctx, res, directory, data):
    """A mount kubevol just verified (its own path, its own device) whose vol_data.json is missing or
    unreadable: write it again, so the next facts identify the volume from it (reconstruction)."""
    _old, problem = layout.load_vol_data(directory)
    if problem is None:
        return
    path = os.path.join(directory, layout.VOL_DATA)
    res["actions"].append("write %s" % path)
    res["changed"] = True
    if ctx.check_mode:
        return
    try:
        layout.write_vol_data(ctx.kubelet_dir, directory, data, ctx.node_name)
    except (IOError, OSError) as exc:
        ctx.warn("volume %s: could not rewrite %s (%s): %s" % (res["pv_name"], path, problem, exc))


def check_global_device(ctx, item, device, gpath, current, kind="volume"):
    """A global mount path mounted already must be mounted from the volume's own device: anything else is refused,
    never unmounted or mounted over (for a CSI volume and a local one alike)."""
    if not mount.same_device(current, device):
        raise DeviceChanged(path=gpath, kind=kind, volume=item.pv_name, node=ctx.node_name, source=current.source,
                            device=device, step="mount device")


def check_mismatch(ctx, item, device, existing, res, error=FilesystemMismatch):
    """A device that holds a filesystem of another type than the volume's fs_type is not mounted: refused with both
    types named, and kept (never reformatted; only force=true erases it). mount-utils formatAndMountSensitive
    (mount_linux.go) answers FilesystemMismatch "failed to mount the volume as %q, it already contains %s" when
    the mount with the asked type fails; kubevol does not try the mount with the other type at all: mounting xfs
    for a PV that says ext4 would hand a pod a filesystem nobody asked for, silently."""
    if existing and existing != item.fs_type:
        res["fs_type_mismatch"] = {"expected": item.fs_type, "found": existing}
        raise error(volume=item.pv_name, node=ctx.node_name, expected=item.fs_type, found=existing, device=device,
                    step="mount device (FilesystemMismatch)")


def fsck(ctx, runner, item, device, res):
    """As mount-utils checkAndRepairFilesystem: 1 corrected, 4 uncorrected (error), >4 logged."""
    if ctx.check_mode:
        return
    argv = ["fsck", "-a", device]
    rc, out, err = runner(argv)
    res["fsck"] = rc
    if rc == FSCK_UNCORRECTED:
        raise CommandFailed(step="fsck (HasFilesystemErrors)", node=ctx.node_name, volume=item.pv_name,
                            cmd=" ".join(argv), rc=rc, stderr=(err or out).strip(),
                            hint="the filesystem has errors fsck -a cannot fix; repair it by hand (fsck -y %s) "
                                 "and run again" % device)
    if rc > FSCK_UNCORRECTED:
        # mount-utils checkAndRepairFilesystem goes on after any other fsck exit: so does kubevol
        ctx.warn("volume %s on node %s: fsck -a %s exited %s (%s) and the volume is mounted anyway; check its "
                 "filesystem when it is free" % (item.pv_name, ctx.node_name, device, rc, (err or out).strip()))


def grow_offline(ctx, runner, fs, device, res):
    """expandVolumeDuringMount: grow an ext filesystem smaller than its device before mounting."""
    if not fs.EXT:
        return
    dev_size = blockdev.device_size(runner, device)
    fs_size = fs.fs_size(runner, device)
    if not fs.needs_grow(dev_size, fs_size):
        return
    tools.require_grow(runner, fs, None)
    _act(ctx, res, "check before offline grow", runner.check, ["e2fsck", "-f", "-p", device],
         "fsck before offline grow", "repair the filesystem by hand (e2fsck -f %s)" % device, (0, 1))
    _act(ctx, res, "grow offline", runner.check, fs.grow_argv(device), "grow filesystem offline")
    new = dev_size if ctx.check_mode else fs.fs_size(runner, device)
    res["grown_offline"] = {"old": fs_size, "new": new}
