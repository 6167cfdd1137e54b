# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet directory as kubevol writes it: vol_data.json files and safe directory removal.

Removal is only ever ``rmdir`` of an empty directory that is not a mountpoint, or unlink of a
``vol_data.json`` kubevol wrote (it names this volume). Nothing is ever deleted recursively.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils import names

VOL_DATA = "vol_data.json"


def block_data_dir(kubelet_dir, pv_name):
    """<kubelet>/plugins/kubernetes.io/csi/volumeDevices/<pv>/data (csi_block.go)."""
    names.check_component("PV name", pv_name)
    return os.path.join(kubelet_dir, "plugins", names.CSI_PLUGIN_NAME, "volumeDevices", pv_name, "data")


def pod_vol_data(item, node_name):
    """The keys the kubelet's CSI mounter writes (csi_mounter.go)."""
    return {
        "specVolID": item.pv_name,
        "volumeHandle": item.volume_handle,
        "driverName": item.driver,
        "nodeName": node_name,
        "attachmentID": item.attachment_name(node_name),
        "volumeLifecycleMode": "Persistent",
    }


def device_vol_data(item):
    """Beside globalmount: driverName and volumeHandle as csi_attacher.go, plus specVolID."""
    return {"driverName": item.driver, "volumeHandle": item.volume_handle, "specVolID": item.pv_name}


def read_vol_data(directory):
    try:
        with open(os.path.join(directory, VOL_DATA)) as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else None
    except (IOError, OSError, ValueError):
        return None


def write_vol_data(directory, data):
    """Write vol_data.json atomically; return True when the file changed."""
    if read_vol_data(directory) == data:
        return False
    os.makedirs(directory, mode=0o750, exist_ok=True)
    path = os.path.join(directory, VOL_DATA)
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(data, handle, sort_keys=True)
    os.rename(tmp, path)
    return True


def is_ours(data, item):
    return bool(data) and data.get("driverName") == item.driver and data.get("volumeHandle") == item.volume_handle


def remove_vol_data(directory, item, mounts):
    """Unlink vol_data.json in ``directory`` only if it describes ``item`` and nothing is mounted there."""
    if mounts.mounted(directory) or os.path.ismount(directory):
        return None
    path = os.path.join(directory, VOL_DATA)
    if os.path.islink(path) or not is_ours(read_vol_data(directory), item):
        return None
    os.unlink(path)
    return path


def rmdir_safe(path, mounts):
    """rmdir ``path`` if it is an empty directory and not a mountpoint; return the path or None."""
    if os.path.islink(path) or not os.path.isdir(path):
        return None
    if mounts.mounted(path) or os.path.ismount(path):
        return None
    try:
        os.rmdir(path)
    except OSError:
        return None
    return path


def unlink_publish_file(path, mounts):
    """Remove the empty regular file a Block volume was bind-mounted on, once nothing is mounted there."""
    if mounts.mounted(path) or os.path.ismount(path) or os.path.islink(path):
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size != 0:
        return None
    os.unlink(path)
    return path
