# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node facts of the in-tree plugins other than CSI (local, hostPath, ...; docs/contracts.md section 2), read from
the kubelet layout.

Reconstructed as the kubelet's reconstructVolumes does: the plugin and the PV name come from the path
(``pods/<uid>/volumes/<plugin dir>/<pv>``, ``.../volumeDevices/...`` for a plugin with Block mode, the device
mounts under the plugin's ``global_mount_dir``: ``plugins/kubernetes.io/local-volume/mounts/<pv>``); none of these
plugins writes a vol_data.json. Each plugin found through the registry (volume/), its own fields added by its
``node_pod_fact`` (hostPath: whether its marker is there). Read-only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError, UnsafePath
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, layout
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import get_filesystem
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import in_tree_plugins


def _unsafe(ctx, path):
    try:
        layout.check_dir(ctx.kubelet_dir, path, ctx.node_name)
    except UnsafePath as err:
        return err.msg
    return None


def _entry(plugin, path, mode, current, unsafe):
    parts = path.split(os.sep)
    root = None
    if current is not None and mode == "Filesystem":
        try:
            st = os.lstat(path)
            root = (st.st_gid, "%04o" % stat.S_IMODE(st.st_mode))
        except OSError:
            root = None
    return {
        "plugin": plugin,
        "pod_uid": parts[-4],
        "pv_name": parts[-1],
        "unique_volume_name": None if unsafe else "%s/%s" % (plugin, parts[-1]),
        "driver": None,
        "foreign": False,
        "mode": mode,
        "path": path,
        "mounted": current is not None,
        "read_only": bool(current and current.read_only),
        "device": current.source if current else None,
        "uncertain": None,
        "unsafe": bool(unsafe),
        "ephemeral": False,
        "root_gid": root[0] if root else None,
        "root_mode": root[1] if root else None,
        "size_bytes": None,
        # what is mounted or bound there, "MAJ:MIN"; nothing on the node names the device a local PV's path gives
        # (no vol_data.json, no attachment), so it is not compared (docs/contracts.md section 2)
        "device_number": None,
        "attached_device": None,
        "device_mismatch": False,
    }


def pod_mounts(ctx, mounts):
    pods = glob.escape(os.path.join(ctx.kubelet_dir, "pods"))
    found = []
    for plugin in in_tree_plugins():
        for sub, mode in (("volumes", "Filesystem"), ("volumeDevices", "Block"))[:2 if plugin.BLOCK else 1]:
            for path in glob.glob(os.path.join(pods, "*", sub, plugin.DIR, "*")):
                # a Filesystem mount point is a directory itself; a Block one is a file in one
                unsafe = _unsafe(ctx, path if mode == "Filesystem" else os.path.dirname(path))
                current = mounts.at(path)
                entry = _entry(plugin.NAME, path, mode, current, unsafe)
                if mode == "Block" and current is not None:
                    try:
                        entry["device_number"] = blockdev.device_number(path)
                        entry["device"] = blockdev.device_for_number(entry["device_number"])
                        entry["size_bytes"] = blockdev.sysfs_attribute(path, "size") * 512
                    except (OSError, TypeError):
                        pass
                found.append(plugin.node_pod_fact(ctx, entry))
    return found


def global_mounts(ctx, mounts, fs_sizes=True):
    found = []
    for plugin in in_tree_plugins():
        base = plugin.global_mount_dir(ctx.kubelet_dir)
        if base is not None:
            found += _global_mounts(ctx, plugin.NAME, base, mounts, fs_sizes)
    return found


def _global_mounts(ctx, name, base, mounts, fs_sizes):
    found = []
    for path in sorted(glob.glob(os.path.join(glob.escape(base), "*"))):
        unsafe = _unsafe(ctx, path)
        current = mounts.at(path)
        device = current.source_device if current else None
        fs_type = current.fstype if current else None
        size = None
        fs = get_filesystem(fs_type)
        if current and fs_sizes and fs is not None and not unsafe:
            try:
                size = fs.fs_size(ctx.runner, device, path)
            except KubevolError:
                size = None
        pv = os.path.basename(path)
        found.append({
            "plugin": name, "unique_volume_name": None if unsafe else "%s/%s" % (name, pv), "pv_name": pv,
            "driver": None, "volume_handle": pv, "path": path, "mounted": current is not None, "device": device,
            "fs_type": fs_type, "fs_size_bytes": size, "read_only": bool(current and current.read_only),
            "foreign": False, "uncertain": None, "unsafe": bool(unsafe),
            "device_number": (current.majmin or None) if current else None, "attached_device": None,
            "device_mismatch": False,
        })
    return found
