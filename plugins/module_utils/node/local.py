# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes local PVs on the node (pkg/volume/local/local.go): never attached; the PV's path is the volume.

- a directory: bind-mounted straight into ``pods/<uid>/volumes/kubernetes.io~local-volume/<pv>`` (SetUpAt);
- a block device: formatted only if blank and mounted at ``plugins/kubernetes.io/local-volume/mounts/<pv>``
  (MountDevice, local_device.py), that mount bind-mounted into each pod;
- Block mode: the device bind-mounted onto ``pods/<uid>/volumeDevices/kubernetes.io~local-volume/<pv>``;
- anything else: refused as local.go refuses it ("only directory and block device are supported").

The path is used only under the operator's allowed directories (paths.resolve). Teardown (TearDownAt,
UnmountDevice: mount-utils CleanupMountPoint) unmounts kubevol's own mounts and removes only the empty mount-point
directories it made in the kubelet directory: nothing under the PV's path is ever removed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError, StillMounted
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, layout, local_device, mount, paths
from ansible_collections.kubevol.volumes.plugins.module_utils.node import ownership
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act

DIR = "kubernetes.io~local-volume"  # utilstrings.EscapeQualifiedName("kubernetes.io/local-volume")
note = local_device.note


def pod_path(ctx, item, uid):
    sub = "volumeDevices" if item.block else "volumes"
    return os.path.join(ctx.kubelet_dir, "pods", uid, sub, DIR, item.pv_name)


def _result(item, **extra):
    res = {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "plugin": item.plugin, "mode": item.mode,
           "changed": False, "actions": [], "diff": {"before": {}, "after": {}}}
    res.update(extra)
    return res


def _kind(ctx, item, real):
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
    raise KubevolError("local volume %s on node %s: path %s is %s: only directory and block device are supported "
                       "(local.go); create the directory or give the PV a disk's device path"
                       % (item.pv_name, ctx.node_name, item.path, what),
                       node=ctx.node_name, volume=item.pv_name, path=item.path, step="check local path")


def mount_local(ctx, item):
    """MountDevice then SetUp of every pod in ``item.pods``; idempotent."""
    runner = ctx.runner_for(item)
    real = paths.resolve(ctx, item)
    kind = _kind(ctx, item, real)
    res = _result(item, path=real, device=real if kind == "block" else None, formatted=False, fs_type=None,
                  global_mount_path=None, published=[])
    mounts = mount.list_mounts(runner)
    if item.block:
        if kind != "block":
            raise KubevolError("local volume %s on node %s: volumeMode Block needs a block device, and %s is a "
                               "directory; use volumeMode Filesystem or a device path" % (item.pv_name, ctx.node_name,
                                                                                          item.path),
                               node=ctx.node_name, volume=item.pv_name, path=item.path, step="check local path")
        _publish_block(ctx, runner, item, real, mounts, res)
        return res
    source = real if kind == "directory" else local_device.stage(ctx, runner, item, real, mounts, res)
    _publish(ctx, runner, item, source, mounts, res)
    return res


def _same_root(target, source):
    """The bind at ``target`` shows ``source`` (same device and inode as its root)."""
    try:
        a, b = os.stat(target), os.stat(source)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _publish(ctx, runner, item, source, mounts, res):
    """SetUpAt: bind ``source`` (the directory or the global mount) into each pod; ro for a read-only pod."""
    for pod in item.pods:
        target = pod_path(ctx, item, pod.uid)
        read_only = pod.read_only or item.read_only
        current = mounts.at(target)
        if current:
            if not _same_root(target, source):
                raise KubevolError("pod mount %s of local volume %s on node %s is mounted from %s, not from %s; "
                                   "unmount it first" % (target, item.pv_name, ctx.node_name, current.source, source),
                                   node=ctx.node_name, volume=item.pv_name, step="publish")
            if read_only != current.mount_read_only:
                fix = mount.remount_read_only if read_only else mount.remount_bind_read_write
                act(ctx, res, "remount %s %s" % ("read-only" if read_only else "read-write", target), fix, runner,
                    target)
                res["published"].append(pod.uid)
            note(res, target, source, source)
            ownership.apply_fs_group(ctx, res, item, pod, target, read_only, mounted=True)
            continue
        if ctx.check_mode:
            layout.check_dir(ctx.kubelet_dir, target, ctx.node_name)  # refused in check mode too
        else:
            layout.ensure_dir(ctx.kubelet_dir, target, ctx.node_name)
        act(ctx, res, "bind %s at %s" % (source, target), mount.bind, runner, source, target, read_only)
        res["published"].append(pod.uid)
        note(res, target, None, source)
        ownership.apply_fs_group(ctx, res, item, pod, target, read_only, mounted=not ctx.check_mode)


def _publish_block(ctx, runner, item, device, mounts, res):
    """Block mode: the device node bind-mounted onto a file at the pod's volumeDevices path."""
    for pod in item.pods:
        path = pod_path(ctx, item, pod.uid)
        if mounts.mounted(path):
            if blockdev.device_number(path) != blockdev.device_number(device):
                raise KubevolError("block publish path %s holds another device than %s for local volume %s on node %s"
                                   % (path, device, item.pv_name, ctx.node_name),
                                   node=ctx.node_name, volume=item.pv_name, step="publish")
            note(res, path, device, device)
            continue
        if ctx.check_mode:
            layout.check_dir(ctx.kubelet_dir, os.path.dirname(path), ctx.node_name)
        else:
            layout.ensure_dir(ctx.kubelet_dir, os.path.dirname(path), ctx.node_name)
            if not os.path.lexists(path):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o640))
            elif os.path.islink(path) or not os.path.isfile(path):
                raise KubevolError("block publish path %s exists and is not a plain file; remove it after checking"
                                   % path, node=ctx.node_name, volume=item.pv_name, step="publish")
        act(ctx, res, "bind %s at %s" % (device, path), mount.bind, runner, device, path,
            pod.read_only or item.read_only)
        res["published"].append(pod.uid)
        note(res, path, None, device)


# -- teardown --------------------------------------------------------------------------------------
def _all_pod_paths(ctx, item):
    sub = "volumeDevices" if item.block else "volumes"
    pods = glob.escape(os.path.join(ctx.kubelet_dir, "pods"))
    return sorted(glob.glob(os.path.join(pods, "*", sub, DIR, glob.escape(item.pv_name))))


def unmount_local(ctx, item, force=False):
    """TearDownAt for the named pods (and, when the device mount goes too, every other pod: refused unless
    ``force``), then UnmountDevice of the global mount once no pod mount remains. Needs no path check: only
    kubevol's own mounts in the kubelet directory are touched."""
    runner = ctx.runner_for(item)
    mounts = mount.list_mounts(runner)
    named = [pod_path(ctx, item, pod.uid) for pod in item.pods]
    for path in named:
        layout.check_dir(ctx.kubelet_dir, os.path.dirname(path), ctx.node_name)
    gpath = local_device.global_path(ctx, item)
    unmount = [p for p in named if mounts.mounted(p)]
    if item.unmount_device:
        others = [p for p in _all_pod_paths(ctx, item) if p not in named and mounts.mounted(p)]
        if others and not force:
            raise StillMounted(step="unmount", volume=item.pv_name, node=ctx.node_name, paths=", ".join(others))
        unmount += others
        named += others
    res = _result(item, device=None, unmounted=[], removed=[], detached=None)
    for path in unmount:
        act(ctx, res, "unmount %s" % path, mount.unmount, runner, path)
        res["unmounted"].append(path)
        note(res, path, mounts.at(path).source, None)
    if item.unmount_device and mounts.mounted(gpath):
        res["device"] = mounts.at(gpath).source
        act(ctx, res, "unmount %s" % gpath, mount.unmount, runner, gpath)
        res["unmounted"].append(gpath)
        note(res, gpath, mounts.at(gpath).source, None)
    if not ctx.check_mode:
        res["removed"] = _cleanup(ctx, runner, item, named, gpath)
        res["changed"] = res["changed"] or bool(res["removed"])
    return res


def _cleanup(ctx, runner, item, named, gpath):
    """rmdir the empty mount points kubevol made (unlink the empty Block publish file): never recursive, never
    through a mount, never anything under the PV's own path."""
    mounts = mount.list_mounts(runner)
    removed = []
    for path in named:
        removed.append(layout.unlink_publish_file(path, mounts) if item.block else layout.rmdir_safe(path, mounts))
        plugin_dir = os.path.dirname(path)
        removed += [layout.rmdir_safe(plugin_dir, mounts), layout.rmdir_safe(os.path.dirname(plugin_dir), mounts)]
    if not mounts.mounted(gpath):
        removed.append(layout.rmdir_safe(gpath, mounts))
    return [p for p in removed if p]


# -- expand ----------------------------------------------------------------------------------------
def expand_local(ctx, item):
    """NodeExpand: grow a block-backed local volume's filesystem; a directory has none of its own (no-op)."""
    res = {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "plugin": item.plugin, "stage": "node",
           "changed": False, "device": None, "fs_type": None, "mount_path": None, "skipped": None,
           "device_size_bytes": {"old": None, "new": None}, "fs_size_bytes": {"old": None, "new": None}}
    try:
        real = paths.resolve(ctx, item)
        if _kind(ctx, item, real) == "directory":
            res["skipped"] = "directory-backed local volume: no filesystem of its own to grow"
            return res
        return local_device.expand(ctx, ctx.runner_for(item), item, real, res)
    finally:
        dev, fs = res["device_size_bytes"], res["fs_size_bytes"]
        res["diff"] = {"before": {item.pv_name: {"device_size_bytes": dev["old"], "fs_size_bytes": fs["old"]}},
                       "after": {item.pv_name: {"device_size_bytes": dev["new"], "fs_size_bytes": fs["new"]}}}
