# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the handlers of the CSI volume kinds share (node/driver_ops.py for kubevol's own drivers, node/external_ops.py
for an external CSI driver): a phase's result, the pods' publish paths, and the teardown's plan and clean-up, as the
kubelet's csi_attacher.go and csi_mounter.go share them between every CSI driver."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import StillMounted
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, layout, mount


def result(item, **extra):
    res = {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "mode": item.mode, "changed": False,
           "actions": [], "diff": {"before": {}, "after": {}}}
    res.update(extra)
    return res


def node_expand_result(item, res):
    """The fields of a CSI volume's NodeExpandVolume result, before the handler fills them in."""
    res.update({"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "stage": "node",
                "changed": False, "device": None, "fs_type": None, "mount_path": None, "skipped": None,
                "device_size_bytes": {"old": None, "new": None}, "fs_size_bytes": {"old": None, "new": None}})
    return res


def pod_paths(ctx, item):
    """Every pod's publish path for this PV on the node (all pods, not only the named ones)."""
    pods = os.path.join(ctx.kubelet_dir, "pods")
    if item.block:
        pattern = os.path.join(glob.escape(pods), "*", "volumeDevices", names.CSI_PLUGIN_DIR, glob.escape(item.pv_name))
    else:
        pattern = os.path.join(glob.escape(pods), "*", "volumes", names.CSI_PLUGIN_DIR, glob.escape(item.pv_name),
                               "mount")
    return sorted(glob.glob(pattern))


def named_path(ctx, item, uid):
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


def plan_teardown(ctx, item, find_device, force=False):
    """Decide everything for one volume before acting; raise StillMounted when blocked. ``find_device()``: the
    attached device, as the volume's handler finds it (None for a driver whose device is its plugin's business)."""
    mounts = mount.list_mounts(ctx.runner_for(item))
    device = find_device()
    named = [named_path(ctx, item, pod.uid) for pod in item.pods]
    _refuse_unsafe(ctx, named)
    plan = {"mounts": mounts, "device": device, "named": named,
            "unmount": [p for p in named if mounts.mounted(p)], "global": None, "detach": False}
    if not item.unmount_device:
        return plan
    others = [p for p in pod_paths(ctx, item) if p not in named and mounts.mounted(p) and not _names_another(p, item)]
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
            # outside kubevol's pod mounts: force does not unmount these
            raise StillMounted(step="detach", volume=item.pv_name, node=ctx.node_name, paths=", ".join(foreign),
                               remedy="those mounts are not kubevol's: check what they are and unmount them by hand")
    plan["global"] = gpath
    plan["detach"] = item.detach and device is not None
    return plan


def cleanup(ctx, runner, item, plan):
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
            others = [p for p in pod_paths(ctx, item) if mounts.mounted(p)]
            if not others:
                keep(layout.remove_vol_data(data_dir, item, mounts))
                keep(layout.rmdir_safe(data_dir, mounts))
                keep(layout.rmdir_safe(os.path.dirname(data_dir), mounts))
    return removed
