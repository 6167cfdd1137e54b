# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CSI volume limit of a node: no attach past the number of volumes of a driver its node plugin says it can
take (NodeGetInfo max_volumes_per_node, registered as the CSINode's drivers[].allocatable.count).

Kubernetes enforces it when it schedules: the NodeVolumeLimits filter (pkg/scheduler/framework/plugins/
nodevolumelimits/csi.go) counts the unique CSI volumes of each driver the node's pods use, adds the new pod's, and
refuses a node where they would pass allocatable.count with "node(s) exceed max volume count". kubevol's pods are
scheduled already, so the same count decides at attach: a node keeps what it has attached (nothing is detached for
a lower limit), and the volumes it would attach past the limit wait, each pod told why, in the scheduler's words.
Volumes of a driver with no count (no limit, or no registration: the loop driver) are not counted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import split_unique_volume_name
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import VOLUME_LIMIT

MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"  # nodevolumelimits ErrReasonMaxVolumeCountExceeded


def _driver(unique):
    parts = split_unique_volume_name(unique)
    return parts[0] if parts else None


def volume_limits(p, view):
    """Drop this plan's attach steps that would take a node past its CSI volume limit (``view``: the StorageView,
    plan/registration.py); each waits, its pods blocked. Runs after attach(): a refused attach is in
    ``p.not_attached``, so the device mount and the pod mounts wait too."""
    steps = p.phases[("attach", "device")]
    limits = {}
    for step in steps:
        driver = _driver(step["unique_volume_name"])
        entry = (view.drivers.get(step["node"]) or {}).get(driver)
        if entry is not None and entry.count:
            limits[(step["node"], driver)] = entry.count
    if not limits:
        return
    counted = {}  # (node, driver) -> the unique names attached there after this plan's detaches
    for unique, node in p.actual.attached:
        key = (node, _driver(unique))
        if key in limits and (unique, node) not in p.detached:
            counted.setdefault(key, set()).add(unique)
    for node, facts in p.reachable_facts.items():
        for unique in facts.devices:
            key = (node, _driver(unique))
            if key in limits and (unique, node) not in p.detached:
                counted.setdefault(key, set()).add(unique)
    kept = []
    for step in sorted(steps, key=lambda s: (s["node"], s["volume"] or "")):
        key = (step["node"], _driver(step["unique_volume_name"]))
        have = counted.setdefault(key, set())
        if key not in limits or step["unique_volume_name"] in have or len(have) < limits[key]:
            have.add(step["unique_volume_name"])
            kept.append(step)
            continue
        _refuse(p, step, key[1], limits[key], len(have))
    kept_ids = set(id(step) for step in kept)
    steps[:] = [step for step in steps if id(step) in kept_ids]


def _refuse(p, step, driver, limit, have):
    node, unique = step["node"], step["unique_volume_name"]
    reason = ("%s: node %s takes at most %d volume(s) of driver %s and has %d attached, so volume %s waits: stop a "
              "pod that uses one of them on node %s, or move this pod to another node [%s]"
              % (MAX_VOLUME_COUNT_EXCEEDED, node, limit, driver, have, step["volume"], node, VOLUME_LIMIT))
    p.not_attached[(unique, node)] = reason
    held = p.attached_to.get(unique)
    if held is not None:
        held.discard(node)
    nv = p.desired.volumes.get((unique, node))
    for pod in (nv.pods if nv is not None else ()) or (None,):
        p.block(node, step["volume"], pod, reason)
