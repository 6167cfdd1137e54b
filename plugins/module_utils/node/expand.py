# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NodeExpandVolume for a driver that provides a block device (drivers/device.py).

As the kubelet's NodeExpand (pkg/volume/util/resizefs, mount-utils ResizeFs): rescan the device so the node sees
the backing volume's new size, then grow the filesystem, online at its mount point or (ext, unmounted) offline
after a forced fsck. Block volumes and read-only volumes get the rescan only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import DeviceNotFound, KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, mount, tools
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import get_filesystem

ONLINE_RESIZE_HINT = ("online resize of a mounted ext filesystem needs CAP_SYS_RESOURCE here; grow it offline: "
                      "unmount the volume from its pods and the node (volume_detach with detach=true), and "
                      "node_volume_mount grows it at its next mount (or run fs_expand while it is unmounted); "
                      "the filesystem and its data are unchanged")


def not_grown(item):
    """Why ``item``'s filesystem is not grown (a Block volume has none, a read-only one is left as it is), or None."""
    if item.block:
        return "Block volume: no filesystem to grow"
    if item.read_only:
        return "read-only volume: its filesystem is not grown"
    return None


def expand(ctx, runner, driver, item, gpath, res):
    """Rescan ``item``'s device and grow its filesystem (mounted at ``gpath``, the global path, or elsewhere)."""
    device = driver.find_device(item)
    if device is None:
        raise DeviceNotFound(step="expand (node)", node=ctx.node_name, volume=item.pv_name,
                             reason="the volume is not attached to this node; attach it first")
    res["device"] = device
    old_dev = blockdev.device_size(runner, device)
    new_dev = driver.rescan(item, device, check_mode=ctx.check_mode)
    res["device_size_bytes"] = {"old": old_dev, "new": new_dev}
    res["changed"] = new_dev != old_dev
    if not_grown(item):
        res["skipped"] = not_grown(item) + " (device rescanned)"
        return res
    return grow_filesystem(ctx, runner, item, device, gpath, new_dev, res)


def grow_filesystem(ctx, runner, item, device, gpath, new_size, res):
    """Grow the filesystem on ``device`` to ``new_size`` bytes: at its mount point (``gpath`` when mounted there,
    else wherever the device is mounted) online, or (ext, unmounted) offline after a forced fsck. Shared by the
    device drivers' NodeExpandVolume and the local plugin's NodeExpand (local.go: a block-backed filesystem)."""
    fs_type = blockdev.filesystem_type(runner, device)
    fs = get_filesystem(fs_type)
    res["fs_type"] = fs_type or None
    if fs is None:
        res["skipped"] = "no filesystem kubevol can grow on %s (found %r)" % (device, fs_type or "nothing")
        return res
    mounts = mount.list_mounts(runner)
    current = list(mounts.of_device(blockdev.device_number(device)))
    mountpoint = gpath if mounts.mounted(gpath) else (current[0].target if current else None)
    res["mount_path"] = mountpoint
    old_fs = fs.fs_size(runner, device, mountpoint)
    res["fs_size_bytes"] = {"old": old_fs, "new": old_fs}
    if not fs.needs_grow(new_size, old_fs):
        return res
    if fs.GROW_MOUNTPOINT_ONLY and not mountpoint:
        raise KubevolError("cannot grow %s of %svolume %s on node %s: %s grows only while mounted; mount the volume "
                           "(node_volume_mount) and run fs_expand again"
                           % (fs_type, "" if item.csi else "local ", item.pv_name, ctx.node_name, fs_type),
                           node=ctx.node_name, volume=item.pv_name, step="grow filesystem")
    tools.require_grow(runner, fs, mountpoint)  # in a check run too: it fails where the real run would
    res["changed"] = True
    if ctx.check_mode:
        res["fs_size_bytes"]["new"] = new_size
        return res
    if fs.EXT and not mountpoint:
        runner.check(["e2fsck", "-f", "-p", device], step="fsck before offline grow", ok=(0, 1),
                     hint="repair the filesystem by hand (e2fsck -f %s), then run fs_expand again" % device)
    argv = fs.grow_argv(device, mountpoint)
    rc, out, err = runner(argv)
    if rc != 0:
        hint = "the filesystem was not changed; check the tool's message and the kernel log"
        if fs.EXT and mountpoint:
            hint = ONLINE_RESIZE_HINT
        raise runner.fail("grow filesystem %s" % ("online" if mountpoint else "offline"), argv, rc, err or out, hint)
    res["fs_size_bytes"]["new"] = fs.fs_size(runner, device, mountpoint)
    return res
