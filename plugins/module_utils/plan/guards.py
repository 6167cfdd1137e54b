# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's last checks over its steps: the volumesInUse repairs and the teardown guard (a plan that would
unmount or detach too much of what is mounted is refused). Split from planner.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import split_unique_volume_name
from ansible_collections.kubevol.volumes.plugins.module_utils.common.phases import TEARDOWN_KINDS
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting

TEARDOWN_ACTIONS = frozenset(kind[0] for kind in TEARDOWN_KINDS)  # unmount, detach


class TeardownRefused(KubevolError):
    """The teardown guard tripped: carries the whole plan result so that the caller can show it."""
    code = "KV-MASS-TEARDOWN"

    def __init__(self, result):
        guard = result["teardown_guard"]
        listing = "; ".join("%s %s (%s)" % (v["node"], v["volume"], ", ".join(v["steps"])) for v in guard["volumes"])
        msg = ("refusing a mass teardown, so no node was changed: this plan would unmount or detach %d of the %d "
               "volumes mounted now (the teardown guard allows at most %d volumes and, from two on, at most %g%% of "
               "them): %s; fix the cluster snapshot if it is wrong (a truncated or empty kubectl output, pods "
               "missing), or allow this teardown for one run with %s, or raise %s / %s"
               % (guard["teardown"], guard["mounted"], guard["max_teardown_count"],
                  guard["max_teardown_fraction"] * 100, listing, setting("allow_mass_teardown", True),
                  setting("max_teardown_fraction"), setting("max_teardown_count")))
        fields = dict((k, result[k]) for k in ("plan", "blocked", "teardown_guard", "summary", "desired", "actual",
                                               "table") if k in result)
        super(TeardownRefused, self).__init__(msg, step="plan", **fields)


def in_use_repairs(p, steps):
    """node.status.volumesInUse set right from what each reachable node has mounted, as the kubelet reports its
    mounted volumes in volumesInUse on every status update (kubelet_node_status.go): ``{node,
    unique_volume_names, in_use: true}`` for mounted volumes the list lacks (a record lost with a killed run, an
    API gone after the mount) and ``in_use: false`` for listed volumes of a kubevol driver the node no longer
    has mounted. Pairs this plan mounts or tears down are left to their own records; other drivers' entries
    belong to their own node plugins and are never touched."""
    pictured = [(node, facts) for node, facts in p.teardown_facts() if node in p.index.node_by_name]
    if not pictured:
        return []  # no node facts (a plan from the cluster alone): nothing mounted is known to repair from
    # only the pictured nodes' pairs are looked up: a plan of 5,000 nodes run on three has no tuple to build for
    # the other nodes' steps
    nodes = frozenset(node for node, _facts in pictured)
    planned = set((s["unique_volume_name"], s["node"]) for s in steps
                  if s["node"] in nodes and (s["action"], s["target"]) in (
                      ("unmount", "device"), ("detach", "device"), ("mount", "device"), ("mount", "pod")))
    listed = {}
    for unique, node in p.actual.in_use:
        listed.setdefault(node, set()).add(unique)
    still_mounted = {}
    for unique, node in p.still_mounted:  # grouped once: a scan per node would be nodes x mounts
        still_mounted.setdefault(node, []).append(unique)
    known = frozenset(p.options.known_drivers or ())
    missing, stale = {}, {}
    for node, facts in pictured:
        mounted = set(u for u, gm in facts.global_mounts.items() if gm.get("mounted"))
        mounted.update(pm.unique_name for pm in facts.pod_mounts.values() if pm.mounted and pm.mode == "Block")
        mounted.update(still_mounted.get(node, ()))
        for unique in mounted - listed.get(node, set()):
            # volumesInUse lists attachable volumes only (volume_manager.go GetVolumesInUse): no local one
            if (unique, node) not in planned and split_unique_volume_name(unique) is not None:
                missing.setdefault(node, []).append(unique)
        for unique in listed.get(node, set()) - mounted:
            parts = split_unique_volume_name(unique)
            if parts and parts[0] in known and (unique, node) not in planned:
                stale.setdefault(node, []).append(unique)
    repairs = [{"node": node, "unique_volume_names": sorted(names), "in_use": True}
               for node, names in sorted(missing.items())]
    repairs.extend({"node": node, "unique_volume_names": sorted(names), "in_use": False}
                   for node, names in sorted(stale.items()))
    return repairs


def _mounted_now(p):
    """(unique name, node) pairs mounted now: node facts where known, else node.status.volumesInUse."""
    mounted = set()
    for node, facts in p.reachable_facts.items():
        mounted.update((unique, node) for unique, gm in facts.global_mounts.items() if gm.get("mounted"))
        mounted.update((pm.unique_name, node) for pm in facts.pod_mounts.values() if pm.mounted)
        mounted.update((em.unique_name, node) for em in facts.ephemeral.values() if em.mounted)
    with_facts = p.reachable_facts
    if with_facts:
        mounted.update(pair for pair in p.actual.in_use if pair[1] not in with_facts)
    else:
        mounted.update(p.actual.in_use)  # no node facts (a plan from the cluster alone): volumesInUse says it all
    return mounted


def teardown_guard(p, steps):
    """terraform's prevent_destroy, linux-system-roles storage's safe_mode: a plan that would unmount or
    detach more than max_teardown_count of the volumes mounted now, or (two or more) more than
    max_teardown_fraction of them, is refused unless allow_mass_teardown. A snapshot that lost its pods
    looks exactly like a cluster that wants every volume gone; this guard is the last line before the nodes."""
    opts = p.options
    mounted = _mounted_now(p)
    torn = {}
    for step in steps:
        # the action first: most steps of a big plan set up, and building their (action, target) costs more
        if step["action"] not in TEARDOWN_ACTIONS or (step["action"], step["target"]) not in TEARDOWN_KINDS:
            continue
        pair = (step["unique_volume_name"], step["node"])
        if pair in mounted:
            torn.setdefault(pair, []).append("%s/%s" % (step["action"], step["target"]))
    count = len(torn)
    over = count > opts.max_teardown_count or (count > 1 and count > opts.max_teardown_fraction * len(mounted))
    return {"mounted": len(mounted), "teardown": count, "max_teardown_fraction": opts.max_teardown_fraction,
            "max_teardown_count": opts.max_teardown_count, "allow_mass_teardown": bool(opts.allow_mass_teardown),
            "tripped": bool(over and not opts.allow_mass_teardown),
            "volumes": [{"node": node, "volume": p.pv_name_for(unique, split_unique_volume_name(unique)[1]
                                                               if split_unique_volume_name(unique) else unique),
                         "steps": torn[(unique, node)]} for unique, node in sorted(torn, key=lambda u: (u[1], u[0]))]}
