# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each node module's phase: attach, mount (stage + publish), expand, detach.

Every phase decides from the node's actual state first, then acts only where needed, so a second
run changes nothing. In check mode it decides and reports but runs no mutating command.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    CommandFailed, DeviceNotFound, FilesystemMismatch, KubevolError, StillMounted, UnsafeToFormat)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, ephemeral, layout, mount, ownership
from ansible_collections.kubevol.volumes.plugins.module_utils.node import plugin_ops
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act as _act
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import (
    FILESYSTEMS, filesystem_to_create, get_filesystem)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.volume_attachment import attached_volume_attachment

FSCK_CORRECTED = 1
FSCK_UNCORRECTED = 4
ONLINE_RESIZE_HINT = ("online resize of a mounted ext filesystem needs CAP_SYS_RESOURCE here; grow it offline: "
                      "unmount the volume from its pods and the node (volume_detach with detach=true), and "
                      "node_volume_mount grows it at its next mount (or run fs_expand while it is unmounted); "
                      "the filesystem and its data are unchanged")


# -- attach ----------------------------------------------------------------------------------------
def attach_volume(ctx, item, provision=False):
    if not item.csi:
        return plugin_ops.attach(ctx, item)  # local, hostPath: not attachable
    att = ctx.driver(item).attach(item, provision=provision, check_mode=ctx.check_mode)
    released = dict(att.released or {})
    if released:
        ctx.warn("volume %s: node %s %s the hold of node(s) %s on its image, forced by the operator "
                 "(force_release_holders), not by their own detach" % (
                     item.pv_name, ctx.node_name, "would release" if ctx.check_mode else "released",
                     ", ".join("%s (held since %s)" % (n, released[n]) for n in sorted(released))))
    return {
        "pv_name": item.pv_name,
        "unique_volume_name": item.unique_name,
        "device": att.device,
        "attached": att.attached,
        "provisioned": att.provisioned,
        "adopted": att.adopted,
        "released_holders": released,  # {node: since}: holds the operator released (force_release_holders)
        "changed": att.attached or att.provisioned or bool(released),  # adopting only records what the kernel already has
        "volume_attachment": attached_volume_attachment(item.driver, item.volume_handle, ctx.node_name, item.pv_name,
                                                        att.device),
        "volumes_attached": {"name": item.unique_name, "devicePath": att.device or ""},
        "diff": {"before": {item.unique_name: None if att.attached else att.device},
                 "after": {item.unique_name: att.device or "(attached in a real run)"}},
    }


# -- mount -----------------------------------------------------------------------------------------
def _result(item, **extra):
    res = {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "mode": item.mode, "changed": False,
           "actions": [], "diff": {"before": {}, "after": {}}}
    res.update(extra)
    return res


def mount_volume(ctx, item, force=False, device_timeout=30):
    if not item.csi:
        return plugin_ops.mount(ctx, item)  # local, hostPath (node/local.py, node/host_path.py)
    if item.ephemeral:
        return ephemeral.publish(ctx, item)  # an inline volume: no attach, no staging (csi_mounter.go SetUpAt)
    runner = ctx.runner_for(item)
    driver = ctx.driver(item)
    res = _result(item, device=None, formatted=False, fs_type=None, fs_type_mismatch=None, grown_offline=None,
                  global_mount_path=None, published=[])
    device = driver.find_device(item)
    if device is None and not ctx.check_mode:
        device = blockdev.wait_for_device(lambda: driver.find_device(item), device_timeout)
    if device is None:
        if ctx.check_mode:
            res.update(changed=True, pending="the volume is not attached to this node yet; it would be mounted "
                                             "after k8s_volume_attach")
            return res
        raise DeviceNotFound(step="mount", node=ctx.node_name, volume=item.pv_name,
                             reason="not attached to this node after waiting %ss; run k8s_volume_attach for it "
                                    "first" % device_timeout)
    res["device"] = device
    mounts = mount.list_mounts(runner)
    if item.block:
        _publish_block(ctx, runner, item, device, mounts, res)
    else:
        source = _stage(ctx, runner, item, device, mounts, force, res)
        _publish_filesystem(ctx, runner, item, device, source, mounts, res)
    return res


def _note_mount(res, target, before, after):
    res["diff"]["before"][target] = before
    res["diff"]["after"][target] = after


def _stage(ctx, runner, item, device, mounts, force, res):
    """Format (only if blank), fsck, grow offline, mount at the global path. Returns that path."""
    gpath = names.device_mount_path(ctx.kubelet_dir, item.driver, item.volume_handle)
    res["global_mount_path"] = gpath
    current = mounts.at(gpath)
    if current:
        if not mount.same_device(current, device):
            raise KubevolError("global mount path %s of volume %s on node %s is mounted from %s, not from its "
                               "device %s; unmount it by hand after checking what it is"
                               % (gpath, item.pv_name, ctx.node_name, current.source, device),
                               node=ctx.node_name, volume=item.pv_name, step="mount device")
        res["fs_type"] = current.fstype
        _check_mismatch(ctx, item, device, current.fstype, res)
        _repair_vol_data(ctx, res, os.path.dirname(gpath), layout.device_vol_data(item))
        writers = [pod.name or pod.uid for pod in item.pods if not pod.read_only]
        if current.read_only and not item.read_only and writers:
            # An older kubevol mounted it read-only because its first pod was a reader; a writer joins.
            if blockdev.device_read_only(runner, device):
                raise KubevolError("global mount %s of volume %s on node %s is read-only and its device %s is "
                                   "read-only too, but pod(s) %s write to it: detach the volume (volume_detach) "
                                   "and attach it again (k8s_volume_attach) read-write"
                                   % (gpath, item.pv_name, ctx.node_name, device, ", ".join(writers)),
                                   node=ctx.node_name, volume=item.pv_name, step="remount read-write")
            _act(ctx, res, "remount read-write %s" % gpath, mount.remount_read_write, runner, gpath)
            _note_mount(res, gpath, "%s (read-only)" % current.source, "%s (read-write)" % current.source)
        else:
            _note_mount(res, gpath, current.source, current.source)
        return gpath
    # a symlink or a file on the way to the global mount is refused before the device is touched
    layout.check_dir(ctx.kubelet_dir, gpath, ctx.node_name)
    # raises UnsafeToFormat when inconclusive
    found = blockdev.probe(runner, device, reads_as_zeros=ctx.driver(item).reads_as_zeros(item, device))
    existing = found.fs_type
    if found.blank or (force and existing != item.fs_type):
        if item.read_only:
            raise UnsafeToFormat(device=device, volume=item.pv_name, node=ctx.node_name,
                                 reason="the volume is read-only and %s (UnformattedReadOnly: cannot format in "
                                        "read-only mode)" % found.describe())
        fs = filesystem_to_create(item.fs_type, item.pv_name, ctx.node_name)
        if not found.blank:
            ctx.warn("force=true: erasing %s on %s (%s) for volume %s" % (found.describe(), device, existing or "no fs",
                                                                          item.pv_name))
            _act(ctx, res, "wipe", runner.check, ["wipefs", "-a", device], "wipe signatures (force)")
        _act(ctx, res, "format", runner.check, fs.mkfs_argv(device), "format",
             "the device may be in use or too small for %s" % item.fs_type)
        res["formatted"] = True
    else:
        if existing not in FILESYSTEMS:
            raise UnsafeToFormat(device=device, volume=item.pv_name, node=ctx.node_name,
                                 reason="%s, which kubevol cannot mount; it never formats such a device "
                                        "(force=true erases it)" % found.describe())
        _check_mismatch(ctx, item, device, existing, res)
        fs = get_filesystem(existing)
        if not item.read_only:
            _fsck(ctx, runner, item, device, res)
            _grow_offline(ctx, runner, fs, device, res)
    res["fs_type"] = fs.NAME
    vol_dir = os.path.dirname(gpath)
    if ctx.check_mode:
        res["actions"].append("mount device")
        res["changed"] = True
    else:
        layout.ensure_dir(ctx.kubelet_dir, gpath, ctx.node_name)
        layout.write_vol_data(ctx.kubelet_dir, vol_dir, layout.device_vol_data(item), ctx.node_name)
        _act(ctx, res, "mount device", mount.mount_device, runner, device, gpath, fs.NAME, item.mount_options,
             item.read_only)
    _note_mount(res, gpath, None, device)
    return gpath


def _repair_vol_data(ctx, res, directory, data):
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


def _check_mismatch(ctx, item, device, existing, res):
    """A device that holds a filesystem of another type than the volume's fs_type is not mounted: refused with both
    types named, and kept (never reformatted; only force=true erases it). mount-utils formatAndMountSensitive
    (mount_linux.go) answers FilesystemMismatch "failed to mount the volume as %q, it already contains %s" when
    the mount with the asked type fails; kubevol does not try the mount with the other type at all: mounting xfs
    for a PV that says ext4 would hand a pod a filesystem nobody asked for, silently."""
    if existing and existing != item.fs_type:
        res["fs_type_mismatch"] = {"expected": item.fs_type, "found": existing}
        raise FilesystemMismatch(volume=item.pv_name, node=ctx.node_name, expected=item.fs_type, found=existing,
                                 device=device, step="mount device (FilesystemMismatch)")


def _fsck(ctx, runner, item, device, res):
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
        ctx.warn("fsck -a %s exited %s (%s); continuing as Kubernetes does" % (device, rc, (err or out).strip()))


def _grow_offline(ctx, runner, fs, device, res):
    """expandVolumeDuringMount: grow an ext filesystem smaller than its device before mounting."""
    if not fs.EXT:
        return
    dev_size = blockdev.device_size(runner, device)
    fs_size = fs.fs_size(runner, device)
    if not fs.needs_grow(dev_size, fs_size):
        return
    _act(ctx, res, "check before offline grow", runner.check, ["e2fsck", "-f", "-p", device],
         "fsck before offline grow", "repair the filesystem by hand (e2fsck -f %s)" % device, (0, 1))
    _act(ctx, res, "grow offline", runner.check, fs.grow_argv(device), "grow filesystem offline")
    new = dev_size if ctx.check_mode else fs.fs_size(runner, device)
    res["grown_offline"] = {"old": fs_size, "new": new}


def _publish_filesystem(ctx, runner, item, device, source, mounts, res):
    for pod in item.pods:
        target = names.pod_mount_path(ctx.kubelet_dir, pod.uid, item.pv_name)
        read_only = pod.read_only or item.read_only
        current = mounts.at(target)
        if current:
            if not mount.same_device(current, device):
                raise KubevolError("pod mount %s is mounted from %s, not from volume %s's device %s on node %s; "
                                   "unmount it first" % (target, current.source, item.pv_name, device, ctx.node_name),
                                   node=ctx.node_name, volume=item.pv_name, step="publish")
            _repair_vol_data(ctx, res, os.path.dirname(target), layout.pod_vol_data(item, ctx.node_name))
            # The per-mount flag decides: a bind of a read-only superblock is read-only whatever its own flag,
            # and turns writable once the global mount is remounted read-write (see _stage).
            if read_only and not current.mount_read_only:
                _act(ctx, res, "remount read-only %s" % target, mount.remount_read_only, runner, target)
                res["published"].append(pod.uid)
                _note_mount(res, target, "%s (read-write)" % current.source, "%s (read-only)" % current.source)
            elif not read_only and current.mount_read_only:
                _act(ctx, res, "remount read-write %s" % target, mount.remount_bind_read_write, runner, target)
                res["published"].append(pod.uid)
                _note_mount(res, target, "%s (read-only)" % current.source, "%s (read-write)" % current.source)
            else:
                _note_mount(res, target, current.source, current.source)
            ownership.apply_fs_group(ctx, res, item, pod, target, read_only, mounted=True)
            continue
        if ctx.check_mode:
            layout.check_dir(ctx.kubelet_dir, target, ctx.node_name)  # refused in check mode too
        else:
            layout.ensure_dir(ctx.kubelet_dir, target, ctx.node_name)
            layout.write_vol_data(ctx.kubelet_dir, os.path.dirname(target), layout.pod_vol_data(item, ctx.node_name),
                                  ctx.node_name)
        _act(ctx, res, "publish %s" % target, mount.bind, runner, source, target, read_only)
        res["published"].append(pod.uid)
        _note_mount(res, target, None, device)
        ownership.apply_fs_group(ctx, res, item, pod, target, read_only, mounted=not ctx.check_mode)


def _publish_block(ctx, runner, item, device, mounts, res):
    """Block mode: bind-mount the device node onto a file at the pod's volumeDevices path."""
    for pod in item.pods:
        path = names.pod_device_path(ctx.kubelet_dir, pod.uid, item.pv_name)
        read_only = pod.read_only or item.read_only
        if mounts.mounted(path):
            if blockdev.device_number(path) != blockdev.device_number(device):
                raise KubevolError("block publish path %s holds another device than %s for volume %s on node %s"
                                   % (path, device, item.pv_name, ctx.node_name),
                                   node=ctx.node_name, volume=item.pv_name, step="publish")
            _note_mount(res, path, device, device)
            continue
        if ctx.check_mode:
            layout.check_dir(ctx.kubelet_dir, os.path.dirname(path), ctx.node_name)
        else:
            layout.ensure_dir(ctx.kubelet_dir, os.path.dirname(path), ctx.node_name)
            if not os.path.lexists(path):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o640))
            elif os.path.islink(path) or not os.path.isfile(path):
                raise KubevolError("block publish path %s exists and is not a plain file; remove it after checking"
                                   % path, node=ctx.node_name, volume=item.pv_name, step="publish")
            layout.write_vol_data(ctx.kubelet_dir, layout.block_data_dir(ctx.kubelet_dir, item.pv_name),
                                  layout.pod_vol_data(item, ctx.node_name), ctx.node_name)
        _act(ctx, res, "publish %s" % path, mount.bind, runner, device, path, read_only)
        res["published"].append(pod.uid)
        _note_mount(res, path, None, device)


# -- expand ----------------------------------------------------------------------------------------
def expand_controller(ctx, item):
    if not item.csi:
        return plugin_ops.expand_controller(ctx, item)
    exp = ctx.driver(item).expand(item, check_mode=ctx.check_mode)
    return {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "stage": "controller",
            "changed": exp.changed, "backing_size_bytes": {"old": exp.old_bytes, "new": exp.new_bytes},
            "skipped": None, "diff": {"before": {item.pv_name: {"backing_size_bytes": exp.old_bytes}},
                                      "after": {item.pv_name: {"backing_size_bytes": exp.new_bytes}}}}


def expand_node(ctx, item):
    if not item.csi:
        return plugin_ops.expand_node(ctx, item)
    res = {}
    try:
        return _expand_node(ctx, item, res)
    finally:
        dev, fs = res.get("device_size_bytes") or {}, res.get("fs_size_bytes") or {}
        res["diff"] = {"before": {item.pv_name: {"device_size_bytes": dev.get("old"), "fs_size_bytes": fs.get("old")}},
                       "after": {item.pv_name: {"device_size_bytes": dev.get("new"), "fs_size_bytes": fs.get("new")}}}


def _expand_node(ctx, item, res):
    runner = ctx.runner_for(item)
    driver = ctx.driver(item)
    res.update({"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "stage": "node",
                "changed": False, "device": None, "fs_type": None, "mount_path": None, "skipped": None,
                "device_size_bytes": {"old": None, "new": None}, "fs_size_bytes": {"old": None, "new": None}})
    device = driver.find_device(item)
    if device is None:
        raise DeviceNotFound(step="expand (node)", node=ctx.node_name, volume=item.pv_name,
                             reason="the volume is not attached to this node; attach it first")
    res["device"] = device
    old_dev = blockdev.device_size(runner, device)
    new_dev = driver.rescan(item, device, check_mode=ctx.check_mode)
    res["device_size_bytes"] = {"old": old_dev, "new": new_dev}
    res["changed"] = new_dev != old_dev
    if item.block:
        res["skipped"] = "Block volume: no filesystem to grow (device rescanned)"
        return res
    if item.read_only:
        res["skipped"] = "read-only volume: its filesystem is not grown (device rescanned)"
        return res
    fs_type = blockdev.filesystem_type(runner, device)
    fs = get_filesystem(fs_type)
    res["fs_type"] = fs_type or None
    if fs is None:
        res["skipped"] = "no filesystem kubevol can grow on %s (found %r)" % (device, fs_type or "nothing")
        return res
    gpath = names.device_mount_path(ctx.kubelet_dir, item.driver, item.volume_handle)
    mounts = mount.list_mounts(runner)
    current = list(mounts.of_device(blockdev.device_number(device)))
    mountpoint = gpath if mounts.mounted(gpath) else (current[0].target if current else None)
    res["mount_path"] = mountpoint
    old_fs = fs.fs_size(runner, device, mountpoint)
    res["fs_size_bytes"] = {"old": old_fs, "new": old_fs}
    if not fs.needs_grow(new_dev, old_fs):
        return res
    if fs.GROW_MOUNTPOINT_ONLY and not mountpoint:
        raise KubevolError("cannot grow %s of volume %s on node %s: %s grows only while mounted; mount the volume "
                           "(node_volume_mount) and run fs_expand again"
                           % (fs_type, item.pv_name, ctx.node_name, fs_type),
                           node=ctx.node_name, volume=item.pv_name, step="grow filesystem")
    res["changed"] = True
    if ctx.check_mode:
        res["fs_size_bytes"]["new"] = new_dev
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


# -- detach ----------------------------------------------------------------------------------------
def _pod_paths(ctx, item):
    """Every pod's publish path for this PV on the node (all pods, not only the named ones)."""
    pods = os.path.join(ctx.kubelet_dir, "pods")
    if item.block:
        pattern = os.path.join(glob.escape(pods), "*", "volumeDevices", names.CSI_PLUGIN_DIR, glob.escape(item.pv_name))
    else:
        pattern = os.path.join(glob.escape(pods), "*", "volumes", names.CSI_PLUGIN_DIR, glob.escape(item.pv_name),
                               "mount")
    return sorted(glob.glob(pattern))


def _named_path(ctx, item, uid):
    if item.block:
        return names.pod_device_path(ctx.kubelet_dir, uid, item.pv_name)
    return names.pod_mount_path(ctx.kubelet_dir, uid, item.pv_name)


def _refuse_unsafe(ctx, paths):
    """Teardown reads vol_data.json and removes directories beside each pod path: every directory on the way
    must be a real one inside the kubelet directory (UnsafePath for a symlink or a file), as for setup."""
    for path in paths:
        layout.check_dir(ctx.kubelet_dir, os.path.dirname(path), ctx.node_name)


def _names_another(path, item):
    """A pod's mount of the same PV name whose vol_data.json names another volume (a PV of that name created since
    this one's was deleted): not this volume's to count or unmount. Mounted from this volume's device, it is still
    refused below (a mount of the device outside the planned paths)."""
    if item.block:
        return False  # one vol_data.json per PV name (block_data_dir): no per-pod identity to tell them apart
    data, problem = layout.load_vol_data(os.path.dirname(path))
    return problem is None and not layout.is_ours(data, item)


def plan_detach(ctx, item, force=False):
    """Decide everything for one volume before acting; raise StillMounted when blocked."""
    if item.ephemeral:
        return ephemeral.plan_unpublish(ctx, item)
    runner = ctx.runner_for(item)
    mounts = mount.list_mounts(runner)
    device = ctx.driver(item).find_device(item)
    named = [_named_path(ctx, item, pod.uid) for pod in item.pods]
    _refuse_unsafe(ctx, named)
    plan = {"mounts": mounts, "device": device, "named": named,
            "unmount": [p for p in named if mounts.mounted(p)], "global": None, "detach": False}
    if not item.unmount_device:
        return plan
    others = [p for p in _pod_paths(ctx, item) if p not in named and mounts.mounted(p) and not _names_another(p, item)]
    if others and not force:
        raise StillMounted(step="detach", volume=item.pv_name, node=ctx.node_name, paths=", ".join(others))
    _refuse_unsafe(ctx, others)
    plan["unmount"] += others
    plan["named"] += others
    gpath = names.device_mount_path(ctx.kubelet_dir, item.driver, item.volume_handle)
    if device:
        planned = set(plan["unmount"]) | {gpath}
        foreign = [m.target for m in mounts.of_device(blockdev.device_number(device)) if m.target not in planned]
        if foreign:
            raise StillMounted(step="detach", volume=item.pv_name, node=ctx.node_name,
                               paths=", ".join(foreign) + " (outside kubevol's pod mounts; force does not unmount "
                                                          "these)")
    plan["global"] = gpath
    plan["detach"] = item.detach and device is not None
    return plan


def detach_volume(ctx, item, force=False):
    if not item.csi:
        return plugin_ops.unmount(ctx, item, force)  # unmount the pods (and a local disk's mount); nothing to detach
    if item.ephemeral:
        return ephemeral.unpublish(ctx, item)  # unmount, detach, delete the image created for the pod
    runner = ctx.runner_for(item)
    plan = plan_detach(ctx, item, force)
    mounts = plan["mounts"]
    res = _result(item, device=plan["device"], unmounted=[], removed=[], detached=None)
    for path in plan["unmount"]:
        _act(ctx, res, "unmount %s" % path, mount.unmount, runner, path)
        res["unmounted"].append(path)
        _note_mount(res, path, mounts.at(path).source, None)
    gpath = plan["global"]
    if gpath and mounts.mounted(gpath):
        _act(ctx, res, "unmount %s" % gpath, mount.unmount, runner, gpath)
        res["unmounted"].append(gpath)
        _note_mount(res, gpath, mounts.at(gpath).source, None)
    if plan["detach"]:
        _act(ctx, res, "detach %s" % plan["device"])
        res["detached"] = ctx.driver(item).detach(item, check_mode=ctx.check_mode)
    elif item.detach and not ctx.check_mode:
        ctx.driver(item).detach(item)  # drops a stale record, if any; runs no command
    if not ctx.check_mode:
        res["removed"] = _cleanup(ctx, runner, item, plan)
        res["changed"] = res["changed"] or bool(res["removed"])
    return res


def _cleanup(ctx, runner, item, plan):
    """Remove only the empty directories and vol_data.json files kubevol created, never through a mount."""
    mounts = mount.list_mounts(runner)  # after the unmounts
    removed = []

    def keep(path):
        if path:
            removed.append(path)

    for path in plan["named"]:
        if item.block:
            keep(layout.unlink_publish_file(path, mounts))
            keep(layout.rmdir_safe(os.path.dirname(path), mounts))
        else:
            removed.extend(layout.remove_pod_volume_dir(path, item, mounts))
        removed.extend(layout.remove_empty_pod_volumes_dir(ctx.kubelet_dir, path, mounts))  # a moved pod's
    if plan["global"] and not mounts.mounted(plan["global"]):
        gpath = plan["global"]
        keep(layout.rmdir_safe(gpath, mounts))
        if not os.path.exists(gpath):
            keep(layout.remove_vol_data(os.path.dirname(gpath), item, mounts))
            keep(layout.rmdir_safe(os.path.dirname(gpath), mounts))
        if item.block:
            data_dir = layout.block_data_dir(ctx.kubelet_dir, item.pv_name)
            others = [p for p in _pod_paths(ctx, item) if mounts.mounted(p)]
            if not others:
                keep(layout.remove_vol_data(data_dir, item, mounts))
                keep(layout.rmdir_safe(data_dir, mounts))
                keep(layout.rmdir_safe(os.path.dirname(data_dir), mounts))
    return removed
