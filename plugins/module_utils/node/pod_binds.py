# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An in-tree plugin's pod mounts (local today): a source bind-mounted into each pod, and their teardown.

Shared node code, not one plugin's: the plugin (module_utils/volume/<plugin>.py) says where its pod paths and its
device mount are (volume/base.py pod_volume_dir, pod_device_path, global_mount_path) and calls these.
- SetUpAt (local.go): ``source`` (the PV's directory or the device's global mount) bind-mounted onto
  ``pods/<uid>/volumes/<plugin dir>/<pv>``, ro for a read-only pod, the pod's fsGroup applied;
- Block mode (local.go's block mapper): the device node bind-mounted onto the file
  ``pods/<uid>/volumeDevices/<plugin dir>/<pv>``;
- TearDownAt, UnmountDevice (mount-utils CleanupMountPoint): kubevol's own mounts in the kubelet directory
  unmounted and only the empty mount points it made removed: never recursive, never anything under the PV's path.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import ForeignMount, StillMounted
from ansible_collections.kubevol.volumes.plugins.module_utils.node import layout, mount, ownership
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act
from ansible_collections.kubevol.volumes.plugins.module_utils.node.publish import block_target, unmapped
from ansible_collections.kubevol.volumes.plugins.module_utils.node.stage import note_mount as note


def pod_path(ctx, plugin, item, uid):
    """The pod's mount point (Filesystem) or publish file (Block) of ``item``."""
    where = plugin.pod_device_path if item.block else plugin.pod_volume_dir
    return where(ctx.kubelet_dir, uid, item.pv_name)


def result(item, **extra):
    """A phase result of an in-tree plugin's item (docs/contracts.md section 3)."""
    res = {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "plugin": item.plugin, "mode": item.mode,
           "changed": False, "actions": [], "diff": {"before": {}, "after": {}}}
    res.update(extra)
    return res


def _same_root(target, source):
    """The bind at ``target`` shows ``source`` (same device and inode as its root)."""
    try:
        a, b = os.stat(target), os.stat(source)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def publish(ctx, plugin, runner, item, source, mounts, res):
    """SetUpAt: bind ``source`` (the directory or the global mount) into each pod; ro for a read-only pod."""
    for pod in item.pods:
        target = pod_path(ctx, plugin, item, pod.uid)
        read_only = pod.read_only or item.read_only
        current = mounts.at(target)
        if current:
            if not _same_root(target, source):
                raise ForeignMount(what="pod mount of %s volume %s" % (plugin.KIND, item.pv_name), target=target,
                                   volume=item.pv_name, node=ctx.node_name, source=current.source, expected=source,
                                   step="publish")
            if read_only != current.mount_read_only:
                fix = mount.remount_read_only if read_only else mount.remount_bind_read_write
                act(ctx, res, "remount %s %s" % ("read-only" if read_only else "read-write", target), fix, runner,
                    target)
                res["published"].append(pod.uid)
            note(res, target, source, source)
            ownership.apply_fs_group(ctx, res, item, pod, target, read_only, mounted=True)
            continue
        layout.prepare_dir(ctx.kubelet_dir, target, ctx.node_name, ctx.check_mode)
        act(ctx, res, "bind %s at %s" % (source, target), mount.bind, runner, source, target, read_only)
        res["published"].append(pod.uid)
        note(res, target, None, source)
        ownership.apply_fs_group(ctx, res, item, pod, target, read_only, mounted=not ctx.check_mode)


def publish_block(ctx, plugin, runner, item, device, mounts, res):
    """Block mode: the device node bind-mounted onto a file at the pod's volumeDevices path."""
    for pod in item.pods:
        path = pod_path(ctx, plugin, item, pod.uid)
        if block_target(ctx, runner, item, device, path, pod, mounts, res, "%s volume" % plugin.KIND):
            note(res, path, device, device)
            continue
        act(ctx, res, "bind %s at %s" % (device, path), mount.bind, runner, device, path,
            pod.read_only or item.read_only)
        res["published"].append(pod.uid)
        note(res, path, unmapped(res, path), device)


def _all_pod_paths(ctx, plugin, item):
    sub = "volumeDevices" if item.block else "volumes"
    pods = glob.escape(os.path.join(ctx.kubelet_dir, "pods"))
    return sorted(glob.glob(os.path.join(pods, "*", sub, plugin.DIR, glob.escape(item.pv_name))))


def teardown(ctx, plugin, item, force=False):
    """TearDownAt for the named pods (and, when the device mount goes too, every other pod: refused unless
    ``force``), then UnmountDevice of the global mount (a device-mountable plugin's) once no pod mount remains.
    Needs no path check: only kubevol's own mounts in the kubelet directory are touched."""
    runner = ctx.runner_for(item)
    mounts = mount.list_mounts(runner)
    named = [pod_path(ctx, plugin, item, pod.uid) for pod in item.pods]
    for path in named:
        layout.check_dir(ctx.kubelet_dir, os.path.dirname(path), ctx.node_name)
    gpath = plugin.global_mount_path(ctx.kubelet_dir, item.pv_name) if plugin.DEVICE_MOUNTABLE else None
    unmount = [p for p in named if mounts.mounted(p)]
    if item.unmount_device:
        others = [p for p in _all_pod_paths(ctx, plugin, item) if p not in named and mounts.mounted(p)]
        if others and not force:
            raise StillMounted(step="unmount", volume=item.pv_name, node=ctx.node_name, paths=", ".join(others))
        unmount += others
        named += others
    res = result(item, device=None, unmounted=[], removed=[], detached=None)
    for path in unmount:
        act(ctx, res, "unmount %s" % path, mount.unmount, runner, path)
        res["unmounted"].append(path)
        note(res, path, mounts.at(path).source, None)
    if item.unmount_device and gpath and mounts.mounted(gpath):
        res["device"] = mounts.at(gpath).source
        act(ctx, res, "unmount %s" % gpath, mount.unmount, runner, gpath)
        res["unmounted"].append(gpath)
        note(res, gpath, mounts.at(gpath).source, None)
    if not ctx.check_mode:
        res["removed"] = _cleanup(runner, item, named, gpath)
        res["changed"] = res["changed"] or bool(res["removed"])
    return res


def _cleanup(runner, item, named, gpath):
    """rmdir the empty mount points kubevol made (unlink the empty Block publish file): never recursive, never
    through a mount, never anything under the PV's own path."""
    mounts = mount.list_mounts(runner)
    removed = []
    for path in named:
        removed.append(layout.unlink_publish_file(path, mounts) if item.block else layout.rmdir_safe(path, mounts))
        plugin_dir = os.path.dirname(path)
        removed += [layout.rmdir_safe(plugin_dir, mounts), layout.rmdir_safe(os.path.dirname(plugin_dir), mounts)]
    if gpath and not mounts.mounted(gpath):
        removed.append(layout.rmdir_safe(gpath, mounts))
    return [p for p in removed if p]
