# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NodeExpandVolume for a driver that provides a block device (node/driver_device.py).

As the kubelet's NodeExpand (pkg/volume/util/resizefs, mount-utils ResizeFs): rescan the device so the node sees
the backing volume's new size, then grow the filesystem, online at its mount point or (ext, unmounted) offline
after a forced fsck. Block volumes and read-only volumes get the rescan only.

A grow that fails or cannot run yet is the volume's pending grow (``pending``), not the node's failure: the kubelet
marks the claim (resize_util.go MarkNodeExpansionFailedCondition), retries later with a backoff, and goes on with
the node's other work (operation_generator.go GenerateExpandInUseVolumeFunc, node_expander.go). The controller
records it on the claim and the planner decides when to try again (plan/rules_expand.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    CommandFailed, DeviceNotFound, GrowPending)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, mount, tools
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import get_filesystem
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import NOT_FOUND_RC

# Why a grow is pending: the reason of the claim's NodeResizeError condition, and what the planner reads back.
ONLINE_FAILED = "OnlineExpansionFailed"     # growing the mounted filesystem failed (offline: an ext one can grow
#                                             unmounted, at its next mount)
TOOL_MISSING = "ToolMissing"                # a grow tool is not installed on the node
NOT_MOUNTED = "VolumeNotMounted"            # the filesystem grows only while mounted, and it is not
NOT_ATTACHED = "VolumeNotAttached"          # no device for the volume on the node
DRIVER_FAILED = "NodeExpandVolumeFailed"    # an external CSI driver's NodeExpandVolume failed
FAILED = "ExpansionFailed"                  # anything else (an fsck before an offline grow, a rescan)
ONLINE_STEP = "grow filesystem online"


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
        raise GrowPending(volume=item.pv_name, node=ctx.node_name, reason=NOT_MOUNTED, step="grow filesystem",
                          detail="%s grows only while mounted, and it is not mounted on this node" % fs_type,
                          remedy="mount the volume (node_volume_mount), then grow it again")
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
        raise runner.fail(ONLINE_STEP if mountpoint else "grow filesystem offline", argv, rc, err or out)
    res["fs_size_bytes"]["new"] = fs.fs_size(runner, device, mountpoint)
    return res


def _one_line(text):
    """A tool's message on one line, without the version banner e2fsprogs prints first
    (``resize2fs 1.47.0 (5-Feb-2023)``): it is a claim condition's message and a line of the run's report."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    lines = [line for line in lines if not re.match(r"^\S+ \d+(\.\d+)+ \([^)]*\)$", line)]
    return "; ".join(lines) or "no message"


def _why(err):
    """(reason, what failed, whether an offline grow can do it) of the error a grow raised."""
    kwargs = err.kwargs
    if isinstance(err, GrowPending):
        return kwargs.get("reason") or FAILED, kwargs.get("detail") or err.msg, False
    if isinstance(err, DeviceNotFound):
        return NOT_ATTACHED, kwargs.get("reason") or err.msg, False
    if isinstance(err, tools.ToolMissing):
        return TOOL_MISSING, kwargs.get("needs") or err.msg, False
    if isinstance(err, CommandFailed):
        what = "`%s` exited %s: %s" % (kwargs.get("cmd"), kwargs.get("rc"), _one_line(kwargs.get("stderr")))
        if kwargs.get("rc") == NOT_FOUND_RC:
            return TOOL_MISSING, what, False
        if kwargs.get("step") == ONLINE_STEP:
            # mount-utils ResizeFs runs resize2fs on the device of a mounted ext filesystem: refused without
            # CAP_SYS_RESOURCE; the same grow works unmounted (stage.grow_offline at the next mount)
            return ONLINE_FAILED, what, (kwargs.get("cmd") or "").startswith("resize2fs ")
        return FAILED, what, False
    if kwargs.get("driver"):
        return DRIVER_FAILED, kwargs.get("detail") or err.msg, False
    return FAILED, err.msg, False


def _remedy(reason, offline, err):
    if offline:
        return ("it grows offline at the volume's next mount: unmount it from its pods and the node (volume_detach), "
                "then mount it again (node_volume_mount)")
    if reason == TOOL_MISSING:
        if err.kwargs.get("package"):
            return "install the %s package on the node, then grow it again" % err.kwargs["package"]
        return "install %s on the node, then grow it again" % (err.kwargs.get("cmd") or "the tool").split()[0]
    if reason == NOT_ATTACHED:
        return "attach the volume (k8s_volume_attach), then grow it again"
    if reason == DRIVER_FAILED:
        return "fix what the driver reports, then grow it again"
    return "check the message and the node's kernel log, then grow it again"


def pending(ctx, item, res, err):
    """``item``'s expansion result (``res``, what the grow found before it stopped) with its grow pending: the
    volume is done for this call and the node's other volumes go on (the kubelet keeps serving a volume whose grow
    failed). ``pending`` holds the reason (the claim condition's), the message and whether an offline grow can do
    it; the node's ``failures`` never list it."""
    reason, what, offline = _why(err)
    remedy = err.kwargs.get("remedy") if isinstance(err, GrowPending) else None
    message = GrowPending(volume=item.pv_name, node=ctx.node_name, detail=what,
                          remedy=remedy or _remedy(reason, offline, err)).msg
    for key, value in (("pv_name", item.pv_name), ("unique_volume_name", item.unique_name), ("stage", "node"),
                       ("changed", False), ("device", None), ("fs_type", None), ("mount_path", None),
                       ("skipped", None), ("device_size_bytes", {"old": None, "new": None}),
                       ("fs_size_bytes", {"old": None, "new": None})):
        res.setdefault(key, value)
    res["pending"] = {"reason": reason, "msg": message, "detail": what, "offline": offline,
                      "step": err.kwargs.get("step") or ctx.step or "grow filesystem", "code": GrowPending.code}
    ctx.warn(message)
    return res
