# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node facts (docs/contracts.md section 2), rebuilt from the node as the kubelet reconstructs them.

Sources: the drivers' attachment records checked against the kernel, ``findmnt -J``,
``blockdev``/``lsblk``, the filesystem tools, and the kubelet directory layout with its
``vol_data.json`` files. Read-only: nothing here changes the node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

from ansible_collections.kubevol.volumes.plugins.module_utils import names
from ansible_collections.kubevol.volumes.plugins.module_utils.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, layout, mount
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import get_filesystem


def _unique_from(data):
    if data and data.get("driverName") and data.get("volumeHandle"):
        return names.unique_volume_name(data["driverName"], data["volumeHandle"])
    return None


def devices(ctx):
    found = []
    for driver in ctx.all_drivers():
        for att in driver.attached_volumes():
            found.append({
                "unique_volume_name": att.unique_volume_name,
                "driver": att.driver,
                "volume_handle": att.volume_handle,
                "device": att.device,
                "size_bytes": blockdev.device_size(ctx.runner, att.device),
                "read_only": blockdev.device_read_only(ctx.runner, att.device),
            })
    return sorted(found, key=lambda d: d["unique_volume_name"])


def _fs_size(ctx, fs_type, device, path):
    fs = get_filesystem(fs_type)
    if fs is None:
        return None
    try:
        return fs.fs_size(ctx.runner, device, path)
    except KubevolError:
        return None


def global_mounts(ctx, mounts):
    base = os.path.join(ctx.kubelet_dir, "plugins", names.CSI_PLUGIN_NAME)
    found = []
    for path in sorted(glob.glob(os.path.join(glob.escape(base), "*", "*", "globalmount"))):
        if not os.path.isdir(path) or os.path.basename(os.path.dirname(os.path.dirname(path))) == "volumeDevices":
            continue
        data = layout.read_vol_data(os.path.dirname(path)) or {}
        current = mounts.at(path)
        device = current.source_device if current else None
        fs_type = current.fstype if current else None
        found.append({
            "unique_volume_name": _unique_from(data),
            "driver": data.get("driverName") or os.path.basename(os.path.dirname(os.path.dirname(path))),
            "volume_handle": data.get("volumeHandle"),
            "pv_name": data.get("specVolID"),
            "path": path,
            "mounted": current is not None,
            "device": device,
            "fs_type": fs_type,
            "fs_size_bytes": _fs_size(ctx, fs_type, device, path) if current else None,
            "read_only": bool(current and current.read_only),
        })
    return found


def pod_mounts(ctx, mounts):
    pods = glob.escape(os.path.join(ctx.kubelet_dir, "pods"))
    found = []
    for vol_dir in glob.glob(os.path.join(pods, "*", "volumes", names.CSI_PLUGIN_DIR, "*")):
        if not os.path.isdir(vol_dir):
            continue
        path = os.path.join(vol_dir, "mount")
        current = mounts.at(path)
        found.append(_pod_entry(vol_dir, "Filesystem", path, current,
                                current.source_device if current else None, layout.read_vol_data(vol_dir)))
    for path in glob.glob(os.path.join(pods, "*", "volumeDevices", names.CSI_PLUGIN_DIR, "*")):
        current = mounts.at(path)
        device = None
        if current:
            try:
                device = blockdev.device_for_number(blockdev.device_number(path))
            except OSError:
                device = None
        pv_name = os.path.basename(path)
        try:
            data = layout.read_vol_data(layout.block_data_dir(ctx.kubelet_dir, pv_name))
        except KubevolError:
            data = None
        found.append(_pod_entry(path, "Block", path, current, device, data))
    return sorted(found, key=lambda m: m["path"])


def _pod_entry(vol_path, mode, path, current, device, data):
    parts = vol_path.split(os.sep)
    return {
        "pod_uid": parts[-4],
        "pv_name": parts[-1],
        "mode": mode,
        "path": path,
        "mounted": current is not None,
        "read_only": bool(current and current.read_only),
        "device": device,
        "unique_volume_name": _unique_from(data),
    }


def node_facts(ctx):
    mounts = mount.list_mounts(ctx.runner)
    return {
        "node_name": ctx.node_name,
        "reachable": True,
        "error": None,
        "kubelet_dir": ctx.kubelet_dir,
        "devices": devices(ctx),
        "global_mounts": global_mounts(ctx, mounts),
        "pod_mounts": pod_mounts(ctx, mounts),
    }
