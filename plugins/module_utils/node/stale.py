# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stale kubelet directories: volume directories nothing identifies and nothing mounts.

Reconstruction is per volume (the kubelet's reconstruct_common.go): a global mount or pod volume
directory whose ``vol_data.json`` is missing or unreadable is reported ``uncertain`` by the facts, and
when the planner finds it unmounted it asks ``volume_detach`` (option ``stale_paths``) to clean it up.
Only these two shapes are accepted, every component below the kubelet directory must be a real
directory (never a symlink), and removal is ``rmdir`` of empty directories plus the unlink of a
``vol_data.json`` that names no volume. A mountpoint, a non-empty directory, a directory that
``vol_data.json`` does identify, or one of a driver kubevol has no backend for is kept and reported.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, StalePathRefused, UnsafeName
from ansible_collections.kubevol.volumes.plugins.module_utils.node import layout, mount

DEVICE = "device"
POD = "pod"
SHA256_HEX = re.compile(r"\A[0-9a-f]{64}\Z")
SHAPES = ("<kubelet_dir>/plugins/kubernetes.io/csi/<driver>/<sha256 hex>/globalmount or "
          "<kubelet_dir>/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount")


def _refuse(path, reason):
    return InvalidInput(field="stale_paths", value=path, reason=reason)


def stale_kind(kubelet_dir, path):
    """DEVICE or POD for a path of one of the two accepted shapes, else raise InvalidInput (pure)."""
    if not isinstance(path, str) or not os.path.isabs(path) or "\x00" in path:
        raise _refuse(path, "must be an absolute path")
    if os.path.normpath(path) != path:
        raise _refuse(path, "must be a normalized path (no '.', '..', '//' or trailing '/')")
    prefix = kubelet_dir.rstrip(os.sep) + os.sep
    if not path.startswith(prefix):
        raise _refuse(path, "is not inside kubelet_dir %s" % kubelet_dir)
    parts = path[len(prefix):].split(os.sep)
    csi = names.CSI_PLUGIN_NAME.split("/")
    try:
        if (len(parts) == 6 and parts[:2] == ["plugins"] + csi[:1] and parts[2] == csi[1]
                and parts[5] == "globalmount" and SHA256_HEX.match(parts[4]) and parts[3] != "volumeDevices"):
            names.check_driver_name(parts[3])
            return DEVICE
        if (len(parts) == 6 and parts[0] == "pods" and parts[2] == "volumes" and parts[3] == names.CSI_PLUGIN_DIR
                and parts[5] == "mount"):
            names.check_component("pod uid", parts[1])
            names.check_component("PV name", parts[4])
            return POD
    except UnsafeName as err:
        raise _refuse(path, err.msg)
    raise _refuse(path, "it is not a stale volume directory kubevol removes (only %s)" % SHAPES)


def check_no_symlink(kubelet_dir, path):
    """Raise InvalidInput when a component of ``path`` below ``kubelet_dir`` is a symlink (never followed)."""
    current = kubelet_dir.rstrip(os.sep)
    for part in path[len(current) + 1:].split(os.sep):
        current = os.path.join(current, part)
        try:
            st = os.lstat(current)
        except OSError:
            return  # missing: nothing below it exists either
        if stat.S_ISLNK(st.st_mode):
            raise _refuse(path, "%s is a symlink" % current)


def check_paths(ctx, paths):
    """Validate every stale path before anything runs; returns [(path, kind)]. A refused path fails the whole call,
    naming the node and what to do, with nothing removed."""
    checked = []
    for path in paths or ():
        try:
            kind = stale_kind(ctx.kubelet_dir, path)
            check_no_symlink(ctx.kubelet_dir, path)
        except InvalidInput as err:
            raise StalePathRefused(field="stale_paths", value=path, node=ctx.node_name, reason=err.kwargs["reason"])
        checked.append((path, kind))
    return checked


def _foreign_reason(driver, node_name):
    return "driver %s has no kubevol backend on node %s: left to its own CSI node plugin" % (driver, node_name)


def _listing(path):
    try:
        return set(os.listdir(path))
    except OSError:
        return None


def _mounted(mounts, path):
    return mounts.mounted(path) or os.path.ismount(path)


def plan_removal(ctx, path, kind, mounts):
    """``(steps, kept reason)``: the ordered ("rmdir"|"unlink", path) steps for one stale path, or why
    it is kept. Decided from the node before anything is removed."""
    parent = os.path.dirname(path)
    vol_data = os.path.join(parent, layout.VOL_DATA)
    if kind == DEVICE:
        dir_driver = os.path.basename(os.path.dirname(parent))
        if not ctx.knows(dir_driver):
            return [], _foreign_reason(dir_driver, ctx.node_name)
    data, problem = layout.load_vol_data(parent)
    if kind == DEVICE:
        problem = layout.global_vol_data_problem(parent, data, problem)
    driver = (data or {}).get("driverName")
    if isinstance(driver, str) and driver and not ctx.knows(driver):
        return [], _foreign_reason(driver, ctx.node_name)
    if problem is None:
        return [], ("%s identifies volume %s: not stale (tear it down as that volume)"
                    % (vol_data, names.unique_volume_name(data["driverName"], data["volumeHandle"])))
    for directory in (path, parent):
        if _mounted(mounts, directory):
            at = mounts.at(directory)
            return [], "%s is a mountpoint%s" % (directory, " (mounted from %s)" % at.source if at else "")
    steps = []
    if os.path.lexists(path):
        if not os.path.isdir(path):
            return [], "%s is not a directory" % path
        if _listing(path):
            return [], "%s is not empty" % path
        steps.append(("rmdir", path))
    if os.path.lexists(vol_data):
        if not stat.S_ISREG(os.lstat(vol_data).st_mode):
            return [], "%s is not a regular file (%s)" % (vol_data, problem)
        steps.append(("unlink", vol_data))
    gone = set(os.path.basename(p) for _op, p in steps)
    left = _listing(parent)
    if left is not None and left <= gone:
        steps.append(("rmdir", parent))
        if kind == POD:
            csi_dir = os.path.dirname(parent)
            if _listing(csi_dir) == {os.path.basename(parent)} and not _mounted(mounts, csi_dir):
                steps.append(("rmdir", csi_dir))
                # and the pod's volumes directory, empty now (kubelet_volumes.go removeOrphanedPodVolumeDirs)
                volumes_dir = os.path.dirname(csi_dir)
                if _listing(volumes_dir) == {names.CSI_PLUGIN_DIR} and not _mounted(mounts, volumes_dir):
                    steps.append(("rmdir", volumes_dir))
    return steps, None


def _run_step(op, path):
    if op == "rmdir":
        os.rmdir(path)
    else:
        _data, problem = layout.load_vol_data(os.path.dirname(path))
        if problem is None:  # someone wrote a valid one since the decision: keep it
            raise OSError("%s identifies a volume now" % path)
        os.unlink(path)


def remove_stale(ctx, checked):
    """Remove each stale path (see plan_removal). Returns {stale_removed, stale_kept, changed}."""
    removed, kept = [], []
    if not checked:
        return {"stale_removed": removed, "stale_kept": kept, "changed": False}
    mounts = mount.list_mounts(ctx.runner)
    for path, kind in checked:
        steps, reason = plan_removal(ctx, path, kind, mounts)
        if reason:
            kept.append({"path": path, "reason": reason})
            continue
        if ctx.check_mode:
            removed.extend(p for _op, p in steps)
            continue
        for index, (op, target) in enumerate(steps):
            try:
                _run_step(op, target)
            except OSError as exc:
                if index == 0:  # nothing of this path was removed
                    kept.append({"path": path, "reason": "%s %s failed: %s" % (op, target, exc)})
                elif op == "unlink":
                    ctx.warn("stale path %s: removed the directory but kept %s: %s" % (path, target, exc))
                break
            removed.append(target)
    return {"stale_removed": removed, "stale_kept": kept, "changed": bool(removed)}
