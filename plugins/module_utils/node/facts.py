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
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import DRIVERS, get_driver
from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import load
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError, UnsafePath
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, external_records, layout, mount
from ansible_collections.kubevol.volumes.plugins.module_utils.node.ephemeral_facts import ephemeral_facts
from ansible_collections.kubevol.volumes.plugins.module_utils.node import plugin_facts
from ansible_collections.kubevol.volumes.plugins.module_utils.node.csi_registration import csi_nodes
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import get_filesystem
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting


def _unique_from(data):
    if data and data.get("driverName") and data.get("volumeHandle"):
        return names.unique_volume_name(data["driverName"], data["volumeHandle"])
    return None


def _driver_of(data):
    value = (data or {}).get("driverName")
    return value if isinstance(value, str) and value else None


def is_foreign(driver, known=None):
    """A driver this node has no kubevol backend for (its own CSI node plugin owns the volume). ``known``: the
    drivers the node serves (NodeContext.driver_names: kubevol's own and the configured external ones)."""
    return bool(driver) and driver not in (DRIVERS if known is None else known)


def devices(ctx):
    found = []
    for driver in ctx.all_drivers():
        if ctx.is_external(driver.NAME):
            # published by ControllerPublishVolume: the node's own record (node/external_records.py); the device
            # is the plugin's business
            for att in external_records.published_volumes(ctx, driver.NAME):
                found.append({"unique_volume_name": att.unique_volume_name, "driver": att.driver,
                              "volume_handle": att.volume_handle, "device": att.device or None,
                              "size_bytes": None, "read_only": False})
            continue
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


def _global_identity(path, data, problem, devs):
    """(unique name, volume handle, uncertain reason) of a global mount directory.

    vol_data.json names the volume when it is readable, complete and agrees with the path
    (``<driver>/<sha256(handle)>/globalmount``). Otherwise the identity is derived, when it can be,
    from an attached device of the same driver whose handle hashes to the directory name.
    """
    hash_dir = os.path.dirname(path)
    dir_hash = os.path.basename(hash_dir)
    dir_driver = os.path.basename(os.path.dirname(hash_dir))
    problem = layout.global_vol_data_problem(hash_dir, data, problem)
    if problem is None:
        return _unique_from(data), data["volumeHandle"], None
    for dev in devs:
        if dev["driver"] == dir_driver and names.handle_hash(dev["volume_handle"]) == dir_hash:
            return dev["unique_volume_name"], dev["volume_handle"], problem
    return None, None, problem


def _externally_staged(ctx, unique, path):
    return external_records.is_staged(ctx, unique, path)


def _unsafe(ctx, path):
    """Why ``path`` cannot be trusted (a symlink or a file on the way inside the kubelet directory), else None."""
    try:
        layout.check_dir(ctx.kubelet_dir, path, ctx.node_name)
    except UnsafePath as err:
        return err.msg
    return None


def attached_numbers(devs):
    """{unique name: (device, "MAJ:MIN" or None)} of the devices attached now for the node's volumes (``devices``):
    one stat each, no command."""
    found = {}
    for dev in devs:
        number = None
        if dev.get("device"):
            try:
                number = blockdev.device_number(dev["device"])
            except OSError:
                number = None
        found[dev["unique_volume_name"]] = (dev.get("device"), number)
    return found


def device_identity(ctx, driver, unique, number, attached, missing_is_mismatch):
    """{device_number, attached_device, device_mismatch} of a mounted global mount or a Block pod map: whether what
    is mounted or bound there (``number``, "MAJ:MIN") is the device attached for the volume now (``attached``: the
    attached_numbers map). Compared only for kubevol's own device drivers (an external driver's device is its node
    plugin's business). A kernel that lost a device gives its number to the next one it attaches, so a number
    kept from before is another volume's data (docs/contracts.md section 2). ``missing_is_mismatch``: no device
    attached for the volume at all counts as a mismatch (a Block map: the number it holds is nobody's or another's)."""
    device, expected = attached.get(unique, (None, None))
    out = {"device_number": number, "attached_device": device, "device_mismatch": False}
    if number is None or not unique or driver not in DRIVERS or ctx.is_external(driver):
        return out
    if expected is None:
        out["device_mismatch"] = bool(missing_is_mismatch and device is None)
    else:
        out["device_mismatch"] = expected != number
    return out


def global_mounts(ctx, mounts, devs=(), fs_sizes=True, attached=None):
    base = os.path.join(ctx.kubelet_dir, "plugins", names.CSI_PLUGIN_NAME)
    attached = attached_numbers(devs) if attached is None else attached
    found = []
    for path in sorted(glob.glob(os.path.join(glob.escape(base), "*", "*", "globalmount"))):
        if not os.path.isdir(path) or os.path.basename(os.path.dirname(os.path.dirname(path))) == "volumeDevices":
            continue
        unsafe = _unsafe(ctx, path)
        # never read through a planted symlink: such a directory is reported, not identified
        data, problem = (None, unsafe) if unsafe else layout.load_vol_data(os.path.dirname(path))
        unique, handle, uncertain = (None, None, unsafe) if unsafe else _global_identity(path, data, problem, devs)
        driver = _driver_of(data) or os.path.basename(os.path.dirname(os.path.dirname(path)))
        foreign = is_foreign(driver, ctx.driver_names())
        current = mounts.at(path)
        device = current.source_device if current else None
        fs_type = current.fstype if current else None
        pv_name = (data or {}).get("specVolID")
        # an external driver's staging path holds no mount when its NodeStageVolume mounts nothing: staged is what
        # this node recorded (external_ops.mark_staged), as the kubelet's actual state of world records it
        staged = bool(unique and not current and ctx.is_external(driver) and _externally_staged(ctx, unique, path))
        found.append({
            "plugin": names.CSI_PLUGIN_NAME,
            "unique_volume_name": unique,
            "driver": driver,
            "volume_handle": handle,
            "pv_name": pv_name if isinstance(pv_name, str) and pv_name else None,
            "path": path,
            "mounted": current is not None or staged,
            "device": device,
            "fs_type": fs_type,
            # hands off a foreign volume: no tool runs on its device
            "fs_size_bytes": _fs_size(ctx, fs_type, device, path) if current and fs_sizes and not foreign else None,
            "read_only": bool(current and current.read_only),
            "foreign": foreign and not unsafe,
            "uncertain": uncertain,
            "unsafe": bool(unsafe),
        })
        # the filesystem's device, as the mount table gives it (no command): the volume's device now, or not
        found[-1].update(device_identity(ctx, driver, None if unsafe or foreign else unique,
                                         current.majmin or None if current else None, attached, False))
    return found


def pod_mounts(ctx, mounts, devs=(), attached=None):
    pods = glob.escape(os.path.join(ctx.kubelet_dir, "pods"))
    by_device = dict((d["device"], d) for d in devs)
    attached = attached_numbers(devs) if attached is None else attached
    found = []
    for vol_dir in glob.glob(os.path.join(pods, "*", "volumes", names.CSI_PLUGIN_DIR, "*")):
        if not os.path.isdir(vol_dir):
            continue
        path = os.path.join(vol_dir, "mount")
        current = mounts.at(path)
        unsafe = _unsafe(ctx, path)
        entry = _pod_entry(vol_dir, "Filesystem", path, current, current.source_device if current else None,
                           (None, unsafe) if unsafe else layout.load_vol_data(vol_dir), by_device, ctx.driver_names())
        if unsafe:
            entry.update(unique_volume_name=None, foreign=False, unsafe=True)
        found.append(entry)
    for path in glob.glob(os.path.join(pods, "*", "volumeDevices", names.CSI_PLUGIN_DIR, "*")):
        current = mounts.at(path)
        device = number = None
        if current:
            try:
                number = blockdev.device_number(path)  # the device node bound there: its st_rdev
                device = blockdev.device_for_number(number)
            except OSError:
                device = None
        pv_name = os.path.basename(path)
        try:
            loaded = layout.load_vol_data(layout.block_data_dir(ctx.kubelet_dir, pv_name))
        except KubevolError as err:
            loaded = (None, "no vol_data.json for %s: %s" % (path, err.msg))
        entry = _pod_entry(path, "Block", path, current, device, loaded, by_device, ctx.driver_names())
        entry.update(device_identity(ctx, entry["driver"], None if entry["foreign"] else entry["unique_volume_name"],
                                     number, attached, True))
        found.append(entry)
    return sorted(found, key=lambda m: m["path"])


def _pod_entry(vol_path, mode, path, current, device, loaded, by_device, known=None):
    """One pod_mounts entry. Identity from vol_data.json; without one, from the attached kubevol device
    it is mounted from (else null, and ``uncertain`` says why)."""
    data, problem = loaded
    parts = vol_path.split(os.sep)
    root = None
    if current is not None and mode == "Filesystem":
        try:
            st = os.lstat(path)
            root = (st.st_gid, "%04o" % stat.S_IMODE(st.st_mode))
        except OSError:
            root = None
    unique, driver = (_unique_from(data), _driver_of(data)) if problem is None else (None, _driver_of(data))
    dev = by_device.get(device) if current is not None else None
    if unique is None and dev is not None and driver in (None, dev["driver"]):
        unique, driver = dev["unique_volume_name"], dev["driver"]
    return {
        "plugin": names.CSI_PLUGIN_NAME,
        "pod_uid": parts[-4],
        "pv_name": parts[-1],
        "mode": mode,
        "path": path,
        "mounted": current is not None,
        "read_only": bool(current and current.read_only),
        "device": device,
        "unique_volume_name": unique,
        "driver": driver,
        "foreign": is_foreign(driver, known),
        "uncertain": problem,
        "unsafe": False,
        # the volume root's group and mode, for fsGroup (the kubelet's OnRootMismatch check)
        "root_gid": root[0] if root else None,
        "root_mode": root[1] if root else None,
        # a Block volume's mapped device size, so an expansion is seen on the pod's side too
        "size_bytes": _block_size(device) if mode == "Block" and current is not None and device else None,
        # an inline ephemeral CSI volume (vol_data.json volumeLifecycleMode): also in ephemeral_volumes
        "ephemeral": (data or {}).get("volumeLifecycleMode") == layout.EPHEMERAL_MODE and problem is None,
        # compared with the volume's device now for a Block map only (pod_mounts): a Filesystem bind shows its
        # global mount's filesystem, whose own entry is compared
        "device_number": None,
        "attached_device": None,
        "device_mismatch": False,
    }


def _block_size(device):
    sectors = blockdev.sysfs_attribute(device, "size")
    return sectors * 512 if sectors is not None else None


def check_kubelet_dir(ctx):
    """Raise unless the kubelet directory is a directory (it may be a symlink to one). Facts of a missing,
    mistyped one would read as a node with nothing mounted, and every mount would be planned again."""
    if not os.path.isdir(ctx.kubelet_dir):
        reason = "is not a directory" if os.path.lexists(ctx.kubelet_dir) else "does not exist"
        msg = "%s %s %s on node %s: give the kubelet's root directory (its --root-dir, /var/lib/kubelet by default)" % (
            setting("kubelet_dir"), ctx.kubelet_dir, reason, ctx.node_name)
        raise KubevolError(msg, kubelet_dir=ctx.kubelet_dir, node=ctx.node_name)


def node_facts(ctx, fs_sizes=True):
    """The node's actual state (docs/contracts.md section 2). Device sizes and flags come from sysfs and the
    mounts from /proc/self/mountinfo; fs_sizes=False leaves out the one filesystem tool run per mounted volume."""
    check_kubelet_dir(ctx)
    mounts = mount.list_mounts(ctx.runner)
    devs = devices(ctx)
    attached = attached_numbers(devs)
    # the in-tree plugins' entries (local, hostPath) beside CSI's (node/plugin_facts.py)
    pods = sorted(pod_mounts(ctx, mounts, devs, attached) + plugin_facts.pod_mounts(ctx, mounts),
                  key=lambda m: m["path"])
    return {
        "node_name": ctx.node_name,
        "reachable": True,
        "error": None,
        "kubelet_dir": ctx.kubelet_dir,
        "devices": devs,
        "global_mounts": sorted(global_mounts(ctx, mounts, devs, fs_sizes, attached)
                                + plugin_facts.global_mounts(ctx, mounts, fs_sizes), key=lambda m: m["path"]),
        "pod_mounts": pods,
        "ephemeral_volumes": ephemeral_facts(ctx, mounts, pods),
        "csi_node_ids": csi_node_ids(ctx),
        "csi_nodes": csi_nodes(ctx),  # the external CSI plugins' registration (NodeGetInfo): CSINode, limits
    }


class _NodeInfoItem(object):
    """What a driver's errors name when no volume is concerned: asking the node plugin for its node id."""
    pv_name = "(node info)"


def csi_node_ids(ctx):
    """{driver: NodeGetInfo's node id} of each external CSI driver whose Controller service runs on a host of the
    inventory: that host's ControllerPublish/UnpublishVolume name the node by it, as the external-attacher reads it
    from the CSINode the kubelet registered (csi_plugin.go). Read-only. A plugin that does not answer gives None
    (with a warning): the controller calls needing it then fail, naming the node and the driver. A node with no
    socket of the driver at all runs no node plugin of it (its CSINode would list no such driver, as on a host that
    runs only the controller plugin): None, and nothing to warn about."""
    ids = {}
    for name in ctx.driver_names():
        if not ctx.is_external(name) or not (ctx.options_for(name) or {}).get("controller_socket"):
            continue
        # loaded only for an external driver (common/registry.py ON_DEMAND): the gRPC client's code is not compiled
        # otherwise
        conventional_socket = load("drivers.external.endpoint.conventional_socket")
        registration_socket = load("drivers.external.endpoint.registration_socket")

        sockets = (registration_socket(ctx.kubelet_dir, name), conventional_socket(ctx.kubelet_dir, name))
        if not (ctx.options_for(name) or {}).get("socket") and not any(os.path.lexists(s) for s in sockets):
            ids[name] = None
            continue
        driver = get_driver(name, driver_options=ctx.driver_options)(ctx.runner, ctx.kubelet_dir, ctx.node_name,
                                                                     ctx.driver_settings(name))
        try:
            ids[name] = driver.node_info(_NodeInfoItem())
        except KubevolError as err:
            ids[name] = None
            ctx.warn("driver %s's node plugin on node %s gave no node id (NodeGetInfo): %s" % (name, ctx.node_name,
                                                                                               err.msg))
    return ids
