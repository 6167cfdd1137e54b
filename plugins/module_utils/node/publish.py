# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NodePublishVolume / NodeUnpublishVolume of one pod for a driver that provides a block device (node/driver_device.py).

Filesystem: the global (staging) mount bind-mounted at the pod's ``volumes/kubernetes.io~csi/<pv>/mount``,
read-only per pod, with the pod's fsGroup applied as csi_mounter.go SetUpAt does. Block: the device node
bind-mounted onto a file at the pod's ``volumeDevices/kubernetes.io~csi/<pv>`` (csi_block.go MapPodDevice).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import ForeignMount, UnsafePath
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, layout, mount, ownership
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act as _act
from ansible_collections.kubevol.volumes.plugins.module_utils.node.stage import note_mount, repair_vol_data


def publish_filesystem(ctx, runner, item, device, source, target, pod, mounts, res):
    """Bind ``source`` (the global mount) at the pod's ``target``, or bring an existing bind to the pod's flags."""
    read_only = pod.read_only or item.read_only
    current = mounts.at(target)
    if current:
        if not mount.same_device(current, device):
            raise ForeignMount(what="pod mount of volume %s" % item.pv_name, target=target, volume=item.pv_name,
                               node=ctx.node_name, source=current.source, expected="its device %s" % device,
                               step="publish")
        repair_vol_data(ctx, res, os.path.dirname(target), layout.pod_vol_data(item, ctx.node_name))
        # The per-mount flag decides: a bind of a read-only superblock is read-only whatever its own flag,
        # and turns writable once the global mount is remounted read-write (see stage).
        if read_only and not current.mount_read_only:
            _act(ctx, res, "remount read-only %s" % target, mount.remount_read_only, runner, target)
            res["published"].append(pod.uid)
            note_mount(res, target, "%s (read-write)" % current.source, "%s (read-only)" % current.source)
        elif not read_only and current.mount_read_only:
            _act(ctx, res, "remount read-write %s" % target, mount.remount_bind_read_write, runner, target)
            res["published"].append(pod.uid)
            note_mount(res, target, "%s (read-only)" % current.source, "%s (read-write)" % current.source)
        else:
            note_mount(res, target, current.source, current.source)
        ownership.apply_fs_group(ctx, res, item, pod, target, read_only, mounted=True)
        return
    layout.prepare_dir(ctx.kubelet_dir, target, ctx.node_name, ctx.check_mode)
    if not ctx.check_mode:
        layout.write_vol_data(ctx.kubelet_dir, os.path.dirname(target), layout.pod_vol_data(item, ctx.node_name),
                              ctx.node_name)
    _act(ctx, res, "publish %s" % target, mount.bind, runner, source, target, read_only)
    res["published"].append(pod.uid)
    note_mount(res, target, None, device)
    ownership.apply_fs_group(ctx, res, item, pod, target, read_only, mounted=not ctx.check_mode)


REMAPPED = "KV-BLOCK-REMAPPED"  # docs/errors.md


def block_target(ctx, runner, item, device, path, pod, mounts, res, kind="volume"):
    """The file a Block volume's device node is bind-mounted onto at a pod's volumeDevices ``path`` (the kubelet's
    block mapper, csi_block.go / local.go MapPodDevice): True when ``device`` is bound there already; else the file
    is made (its directory checked in check mode) and False. A path that holds another device (the volume's device
    went away and the kernel gave its number to another: node facts ``device_mismatch``) is unbound first (remap):
    the caller binds ``device`` again. A path that is not a plain file is refused. ``kind``: how messages name the
    volume ("volume", "local volume")."""
    if mounts.mounted(path):
        bound = blockdev.device_number(path)
        if bound == blockdev.device_number(device):
            return True
        _unmap_stale(ctx, runner, item, device, path, bound, pod, res, kind)
    if ctx.check_mode:
        layout.check_dir(ctx.kubelet_dir, os.path.dirname(path), ctx.node_name)
        return False
    layout.ensure_dir(ctx.kubelet_dir, os.path.dirname(path), ctx.node_name)
    if not os.path.lexists(path):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o640))
    elif os.path.islink(path) or not os.path.isfile(path):
        raise UnsafePath(path=path, node=ctx.node_name, volume=item.pv_name, step="publish",
                         reason="the block volume's publish path is there and is not a plain file")
    return False


def _unmap_stale(ctx, runner, item, device, path, bound, pod, res, kind):
    """Unbind the device node of another number from a pod's map ``path`` (never the device itself: unmounting a bind
    of a device node closes nothing), so that the volume's ``device`` is bound there again; the pod is named to be
    restarted, since a running container keeps the device node its runtime made when it started. A busy bind fails
    here with its holders named (mount.unmount), and nothing is bound."""
    old = blockdev.device_for_number(bound)
    _act(ctx, res, "unmap %s (device %s, not %s's %s)" % (path, bound, item.pv_name, device), mount.unmount, runner,
         path)
    res.setdefault("remapped", []).append({"pod_uid": pod.uid, "pod": pod.name or None, "path": path,
                                           "old_device_number": bound, "old_device": old, "device": device})
    ctx.warn("%s %s on node %s: pod %s's block device was %s, not the volume's device %s, and is mapped again; "
             "restart the pod, its containers keep the device they started with [%s]"
             % (kind, item.pv_name, ctx.node_name, pod.name or pod.uid, "%s (%s)" % (old, bound) if old else bound,
                device, REMAPPED))


def publish_block(ctx, runner, item, device, path, pod, mounts, res):
    """Block mode: bind-mount the device node onto a file at the pod's volumeDevices ``path``."""
    read_only = pod.read_only or item.read_only
    if block_target(ctx, runner, item, device, path, pod, mounts, res):
        note_mount(res, path, device, device)
        return
    if not ctx.check_mode:
        layout.write_vol_data(ctx.kubelet_dir, layout.block_data_dir(ctx.kubelet_dir, item.pv_name),
                              layout.pod_vol_data(item, ctx.node_name), ctx.node_name)
    _act(ctx, res, "publish %s" % path, mount.bind, runner, device, path, read_only)
    res["published"].append(pod.uid)
    note_mount(res, path, unmapped(res, path), device)


def unmapped(res, path):
    """What block_target unbound from ``path`` in this result (its diff's "before"), or None."""
    for entry in reversed(res.get("remapped") or ()):
        if entry["path"] == path:
            return entry["old_device"] or entry["old_device_number"]
    return None


def unpublish(ctx, runner, path, mounts, res):
    """NodeUnpublishVolume: unmount one pod's path (its directories and vol_data.json go afterwards)."""
    _act(ctx, res, "unmount %s" % path, mount.unmount, runner, path)
    res["unmounted"].append(path)
    note_mount(res, path, mounts.at(path).source, None)
