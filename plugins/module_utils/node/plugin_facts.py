# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node facts of the local and hostPath plugins (docs/contracts.md section 2), read from the kubelet layout.

Reconstructed as the kubelet's reconstructVolumes does: the plugin and the PV name come from the path
(``pods/<uid>/volumes/kubernetes.io~local-volume/<pv>``, ``.../volumeDevices/...``, the hostPath markers
``pods/<uid>/volumes/kubernetes.io~host-path/<pv>``, ``plugins/kubernetes.io/local-volume/mounts/<pv>``); neither
plugin writes a vol_data.json. Read-only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError, UnsafePath
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, host_path, layout, local
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import get_filesystem
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import HOST_PATH, LOCAL


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
    }


def pod_mounts(ctx, mounts):
    pods = glob.escape(os.path.join(ctx.kubelet_dir, "pods"))
    found = []
    for sub, mode in (("volumes", "Filesystem"), ("volumeDevices", "Block")):
        for path in glob.glob(os.path.join(pods, "*", sub, local.DIR, "*")):
            # a Filesystem mount point is a directory itself; a Block one is a file in one
            unsafe = _unsafe(ctx, path if mode == "Filesystem" else os.path.dirname(path))
            current = mounts.at(path)
            entry = _entry(LOCAL, path, mode, current, unsafe)
            if mode == "Block" and current is not None:
                try:
                    entry["device"] = blockdev.device_for_number(blockdev.device_number(path))
                    entry["size_bytes"] = blockdev.sysfs_attribute(path, "size") * 512
                except (OSError, TypeError):
                    pass
            found.append(entry)
    for path in glob.glob(os.path.join(pods, "*", "volumes", host_path.DIR, "*")):
        unsafe = _unsafe(ctx, path)
        entry = _entry(HOST_PATH, path, "Filesystem", mounts.at(path), unsafe)
        entry["published"] = not unsafe and os.path.isdir(path) and not os.path.islink(path)
        found.append(entry)
    return found


def global_mounts(ctx, mounts, fs_sizes=True):
    base = os.path.join(ctx.kubelet_dir, "plugins", LOCAL, "mounts")
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
            "plugin": LOCAL, "unique_volume_name": None if unsafe else "%s/%s" % (LOCAL, pv), "pv_name": pv,
            "driver": None, "volume_handle": pv, "path": path, "mounted": current is not None, "device": device,
            "fs_type": fs_type, "fs_size_bytes": size, "read_only": bool(current and current.read_only),
            "foreign": False, "uncertain": None, "unsafe": bool(unsafe),
        })
    return found
