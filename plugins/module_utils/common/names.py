# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes' names and the kubelet's on-disk layout, in one place.

Sources: pkg/volume/util/util.go GetUniqueVolumeNameFromSpec,
pkg/volume/csi/csi_attacher.go getAttachmentName and makeDeviceMountPath,
pkg/volume/csi/csi_mounter.go getTargetPath. The per-plugin layout rules live with each plugin (volume/);
the CSI functions here are thin wrappers over volume/csi.py CSIPlugin, read through the plugin registry
(common/registry.py) so that common/ imports nothing above it.
Every function that builds a path validates its components first, so a name
can never escape the kubelet directory or the pool; a volume handle is never a component: it is hashed
(common/handles.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, UnsafeName
from ansible_collections.kubevol.volumes.plugins.module_utils.common.handles import (  # noqa: F401 pylint: disable=unused-import
    handle_hash, handle_problem, show_handle, show_volume_name)  # one rule: common/handles.py
from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import PLUGIN_REGISTRY
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting

CSI_PLUGIN_NAME = "kubernetes.io/csi"  # volume/csi.py CSIPlugin.NAME
CSI_PLUGIN_DIR = "kubernetes.io~csi"  # CSIPlugin.DIR: utilstrings.EscapeQualifiedName(CSI_PLUGIN_NAME)
VOLUME_NAME_SEP = "^"
DEFAULT_KUBELET_DIR = "/var/lib/kubelet"

MANAGED_ATTACH_DETACH_ANNOTATION = "volumes.kubernetes.io/controller-managed-attach-detach"
OUT_OF_SERVICE_TAINT = "node.kubernetes.io/out-of-service"
DETACH_REQUESTED_AT_ANNOTATION = "kubevol.io/detach-requested-at"
# on a claim whose node-side grow is pending: when and under which conditions it failed (records/claim.py), so that
# the planner retries it when they change (plan/rules_expand.py): the kubelet keeps this in memory, kubevol has none
NODE_EXPANSION_PENDING_ANNOTATION = "kubevol.io/node-expansion-pending"
# the CSI node id a VolumeAttachment was published to (external-attacher csi_handler.go prepareVANodeID): read
# back to unpublish from a node whose CSINode and facts are gone
CSI_NODE_ID_ANNOTATION = "csi.alpha.kubernetes.io/node-id"

# a pod's securityContext as the API server validates it (the planner and the node modules check both alike)
FS_GROUP_CHANGE_POLICIES = ("Always", "OnRootMismatch")
MAX_GROUP_ID = 2 ** 31 - 1


def is_group_id(value):
    """Whether ``value`` is a securityContext.fsGroup the API server accepts: an integer from 0 to 2**31-1."""
    return not isinstance(value, bool) and isinstance(value, int) and 0 <= value <= MAX_GROUP_ID


def check_component(field, value):
    """Refuse anything that is not one safe path component; return value. (volume/base.py re-exports it: one rule
    for every name that becomes a path component.)"""
    if not isinstance(value, str) or value == "":
        raise UnsafeName(field=field, value=value, reason="must be a non-empty string")
    if value in (".", "..") or "/" in value or "\\" in value:
        raise UnsafeName(field=field, value=value, reason="it would escape its directory")
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise UnsafeName(field=field, value=value, reason="it contains NUL or control characters")
    if len(value.encode("utf-8")) > 255:
        raise UnsafeName(field=field, value=value, reason="it is longer than 255 bytes")
    return value


def _csi():
    """The CSI plugin's class (volume/csi.py), from the registry."""
    return PLUGIN_REGISTRY[CSI_PLUGIN_NAME]


def check_driver_name(value):
    """A CSI driver name is a DNS-1123 subdomain-like string; it becomes a directory."""
    check_component("driver", value)
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._")
    if any(c not in allowed for c in value):
        raise UnsafeName(field="driver", value=value, reason="it has characters outside [A-Za-z0-9-._]")
    return value


def unique_volume_name(driver, volume_handle):
    """kubernetes.io/csi/<driver>^<volumeHandle>, the key of both worlds (the CSI plugin's rule: volume/csi.py)."""
    return _csi().unique_name_of(driver, volume_handle)


def split_unique_volume_name(name):
    """Inverse of unique_volume_name; returns (driver, handle) or None for non-CSI names."""
    return _csi().split_unique_name(name)


def ephemeral_volume_handle(pod_uid, volume_name):
    """csi- + hex(sha256(podUID + volume name)): the handle of an inline ephemeral CSI volume (csi_mounter.go
    makeVolumeHandle), unique per pod and volume."""
    return "csi-" + hashlib.sha256((pod_uid + volume_name).encode("utf-8")).hexdigest()


def inline_volume_name(pod_uid, volume_name):
    """kubernetes.io/csi/<pod uid>-<volume name>: Kubernetes' own unique name of an inline volume
    (util.go GetUniqueVolumeNameFromSpecWithPod). kubevol keys the volume by
    unique_volume_name(driver, ephemeral_volume_handle(...)) like every other CSI volume and reports this
    name beside it."""
    return "%s/%s-%s" % (CSI_PLUGIN_NAME, pod_uid, volume_name)


def volume_attachment_name(volume_handle, driver, node_name):
    """csi- + hex(sha256(volumeHandle + driverName + nodeName)), as csi_attacher.go."""
    digest = hashlib.sha256((volume_handle + driver + node_name).encode("utf-8")).hexdigest()
    return "csi-" + digest


# The CSI layout is the CSI plugin's (volume/csi.py); these wrappers keep the callers' names.

def device_mount_path(kubelet_dir, driver, volume_handle):
    """<kubelet>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount."""
    return _csi().global_mount_path(kubelet_dir, driver, volume_handle)


def pod_volume_dir(kubelet_dir, pod_uid, pv_name):
    """<kubelet>/pods/<uid>/volumes/kubernetes.io~csi/<pv>; vol_data.json lives here."""
    return _csi().pod_volume_dir(kubelet_dir, pod_uid, pv_name)


def pod_mount_path(kubelet_dir, pod_uid, pv_name):
    """The CSI publish target: <pod volume dir>/mount."""
    return _csi().pod_mount_path(kubelet_dir, pod_uid, pv_name)


def pod_device_path(kubelet_dir, pod_uid, pv_name):
    """Block mode: <kubelet>/pods/<uid>/volumeDevices/kubernetes.io~csi/<pv>."""
    return _csi().pod_device_path(kubelet_dir, pod_uid, pv_name)


# -- pure checks the planner runs before any node sees a value (node/volume.py volume_item and the loop driver's
# pool check run the same rules on the node, with the node's own realpath as the last line) --------------------

LOOP_DRIVER = "loop.kubevol.io"  # drivers/loop.py LoopDriver.NAME: its PVs name a pool in volumeAttributes.pool
DEFAULT_LOOP_POOL = "/var/lib/kubevol/pool"  # drivers/loop.py DEFAULT_POOL
DEFAULT_LOOP_POOLS = (DEFAULT_LOOP_POOL,)
POOL_ATTRIBUTE = "pool"


def check_mount_option(value):
    """One mount option as node/volume.py volume_item accepts it: non-empty, no ',' (it would add options), no
    control characters."""
    if not isinstance(value, str) or not value:
        raise InvalidInput(field="mount_options", value=value, reason="each option must be a non-empty string")
    if "," in value or any(ord(c) < 32 for c in value):
        raise InvalidInput(field="mount_options", value=value,
                           reason="each option must be one option, without ',' or control characters")
    return value


def check_pool(pool, pools):
    """The loop pool a volume names, checked without touching any disk: an absolute, normalized path equal to one of
    the operator's pools (``pools``, the nodes' loop_pools). The node checks it again with realpath
    (drivers/loop.py LoopDriver.pool), so a symlink on the node can never widen what the operator allowed.
    A missing or empty pool is the default pool, as on the node. Returns the pool."""
    pool = pool or DEFAULT_LOOP_POOL
    if not isinstance(pool, str) or not pool.startswith("/") or "\x00" in pool:
        raise InvalidInput(field="volumeAttributes.pool", value=pool, reason="must be an absolute path")
    if pool.startswith("//") or os.path.normpath(pool) != pool:
        raise InvalidInput(field="volumeAttributes.pool", value=pool,
                           reason="must be a normalized path (no '.', '..', '//' or trailing '/'), as %s"
                                  % os.path.normpath(pool))
    allowed = [os.path.normpath(p) for p in pools if isinstance(p, str) and p.startswith("/") and "\x00" not in p]
    if pool not in allowed:
        raise InvalidInput(field="volumeAttributes.pool", value=pool,
                           reason="the operator keeps loop images only in %s; add this pool to the pools of %s if "
                                  "the node may keep images there"
                                  % (", ".join(allowed) or "no pool", setting("driver_options", key=LOOP_DRIVER)))
    return pool
