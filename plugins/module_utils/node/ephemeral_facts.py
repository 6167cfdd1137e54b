# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``ephemeral_volumes`` of the node facts: the inline ephemeral volumes of kubevol's drivers on this node.

Read-only, and apart from node/ephemeral.py (their publish and unpublish) so that the facts module, which runs on
every node in every run, imports and compiles none of the code that changes them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import EPHEMERAL_IMAGE_KEY
from ansible_collections.kubevol.volumes.plugins.module_utils.node import layout


def ephemeral_facts(ctx, mounts, pod_mounts):
    """``ephemeral_volumes`` of node facts: every inline ephemeral volume of a kubevol driver on this node, from
    the pod directories whose vol_data.json says Ephemeral (``pod_mounts`` entries) and from the drivers' own
    records (an image whose pod directory is gone: a run killed mid-way). Sorted by path."""
    found = {}
    for pm in pod_mounts:
        if not pm.get("ephemeral") or pm.get("foreign") or not pm.get("unique_volume_name"):
            continue
        data, _problem = layout.load_vol_data(os.path.dirname(pm["path"]))
        driver, handle = names.split_unique_volume_name(pm["unique_volume_name"])
        found[(pm["pod_uid"], pm["pv_name"])] = {
            "pod_uid": pm["pod_uid"], "volume_name": pm["pv_name"], "driver": driver, "volume_handle": handle,
            "unique_volume_name": pm["unique_volume_name"],
            "kubernetes_volume_name": names.inline_volume_name(pm["pod_uid"], pm["pv_name"]),
            "path": pm["path"], "mounted": pm["mounted"], "read_only": pm["read_only"], "device": pm["device"],
            "image": (data or {}).get(EPHEMERAL_IMAGE_KEY),
            "root_gid": pm.get("root_gid"), "root_mode": pm.get("root_mode")}
    for driver in ctx.all_drivers():
        for vol in driver.ephemeral_volumes():
            try:
                path = names.pod_mount_path(ctx.kubelet_dir, vol.pod_uid, vol.volume_name)
            except KubevolError:
                continue  # a record naming an unsafe pod uid or volume name: never a path
            entry = found.get((vol.pod_uid, vol.volume_name))
            if entry is None:
                current = mounts.at(path)
                entry = found[(vol.pod_uid, vol.volume_name)] = {
                    "pod_uid": vol.pod_uid, "volume_name": vol.volume_name, "driver": vol.driver,
                    "volume_handle": vol.volume_handle, "unique_volume_name": vol.unique_volume_name,
                    "kubernetes_volume_name": names.inline_volume_name(vol.pod_uid, vol.volume_name),
                    "path": path, "mounted": current is not None, "read_only": bool(current and current.read_only),
                    "device": current.source_device if current else None, "image": None,
                    "root_gid": None, "root_mode": None}
            entry["image"] = vol.image or entry["image"]
            entry["device"] = entry["device"] or vol.device
    for entry in found.values():
        entry["size_bytes"] = _size(entry["image"])
    return sorted(found.values(), key=lambda e: e["path"])


def _size(image):
    try:
        return os.stat(image).st_size if image else None
    except OSError:
        return None
