# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's records of an external CSI driver's volumes (drivers/external/): what ControllerPublishVolume answered
(``<run_dir>/csi-published/``, the node's evidence the volume is published here, as the kubelet reads the
VolumeAttachment's attachmentMetadata back) and which volumes NodeStageVolume staged (``<run_dir>/csi-staged/``).
Written by the phases (node/external_ops.py), read by them and by the node facts, which import this file alone and
so carry none of the phases' code.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import hashlib
import json
import os

from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import DEVICE_PATH, AttachedDevice

PUBLISHED_DIR = "csi-published"
STAGED_DIR = "csi-staged"  # NodeStageVolume records (mark_staged)


# -- the node's record of ControllerPublishVolume ---------------------------------------------------------
def _record_path(ctx, unique):
    return os.path.join(ctx.run_dir, PUBLISHED_DIR, hashlib.sha256(unique.encode("utf-8")).hexdigest() + ".json")


def save_published(ctx, item, publish_context, node_id):
    directory = os.path.join(ctx.run_dir, PUBLISHED_DIR)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = _record_path(ctx, item.unique_name)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump({"unique_volume_name": item.unique_name, "driver": item.driver, "volume_handle": item.volume_handle,
                   "pv_name": item.pv_name, "node_id": node_id, "publish_context": publish_context}, handle,
                  sort_keys=True)
    os.rename(tmp, path)


def load_published(ctx, unique):
    try:
        with open(_record_path(ctx, unique)) as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("unique_volume_name") == unique else None


def drop_published(ctx, item):
    try:
        os.unlink(_record_path(ctx, item.unique_name))
        return True
    except FileNotFoundError:
        return False


# -- the node's record of NodeStageVolume -----------------------------------------------------------------
# A plugin's NodeStageVolume need not mount anything at the staging path (csi-driver-host-path only records it),
# so the mount table cannot tell that a volume is staged. The kubelet keeps that in its actual state of world;
# kubevol keeps it here, under the run directory (a tmpfs: a reboot forgets it, as it forgets the kubelet's
# memory, and the volume is staged again), written after NodeStageVolume succeeded, removed after NodeUnstageVolume.
def _staged_path(ctx, unique):
    return os.path.join(ctx.run_dir, STAGED_DIR, hashlib.sha256(unique.encode("utf-8")).hexdigest())


def mark_staged(ctx, item, staging):
    directory = os.path.join(ctx.run_dir, STAGED_DIR)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    path = _staged_path(ctx, item.unique_name)
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(staging)
    os.rename(path + ".tmp", path)


def is_staged(ctx, unique, staging):
    """Whether this node recorded a NodeStageVolume of ``unique`` at ``staging`` that no NodeUnstageVolume undid."""
    try:
        with open(_staged_path(ctx, unique)) as handle:
            return handle.read() == staging
    except (OSError, ValueError):
        return False


def drop_staged(ctx, item):
    try:
        os.unlink(_staged_path(ctx, item.unique_name))
    except FileNotFoundError:
        pass


def published_volumes(ctx, driver_name):
    """AttachedDevice for every volume of ``driver_name`` this node recorded as published (node facts)."""
    found = []
    for path in sorted(glob.glob(os.path.join(glob.escape(ctx.run_dir), PUBLISHED_DIR, "*.json"))):
        try:
            with open(path) as handle:
                data = json.load(handle)
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or data.get("driver") != driver_name:
            continue
        context = data.get("publish_context") or {}
        found.append(AttachedDevice(unique_volume_name=data["unique_volume_name"], driver=driver_name,
                                    volume_handle=data["volume_handle"], device=context.get(DEVICE_PATH) or ""))
    return found
