# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner: desired + actual state -> ordered plan steps (docs/contracts.md section 3).

A pure function, no I/O; ``now`` comes in through the options. One small function per
rule, called in the order of the plan: the kubelet tears down before it sets up
(pkg/kubelet/volumemanager/reconciler/reconciler_common.go: unmountVolumes,
unmountDetachDevices, mountOrAttachVolumes), and the A/D controller detaches before it
attaches so a rescheduled RWO volume can follow its pod
(pkg/controller/volume/attachdetach/reconciler/reconciler.go reconcile). Every rule walks
its input once, so planning is linear in the cluster size. docs/planner.md explains each rule.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import operator

from ansible_collections.kubevol.volumes.plugins.module_utils.plan.actual_state import build_actual_state, summarize_actual
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import gc_paused
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import build_desired_state, summarize_desired
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import SettingRefused
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.common.phases import STEP_KINDS, TEARDOWN_KINDS
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.step_refusals import refuse_unsafe_steps
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.validation import check_loop_pools
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.plan_state import (  # noqa: F401  # pylint: disable=unused-import
    DEFAULT_MAX_TEARDOWN_COUNT, DEFAULT_MAX_TEARDOWN_FRACTION, PlanOptions, _Plan, _item,
    _item_from_actual, _step, _volume_item)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.guards import (  # noqa: F401  # pylint: disable=unused-import
    TeardownRefused, in_use_repairs, teardown_guard)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_teardown import (  # noqa: F401  # pylint: disable=unused-import
    STALE_PATH, detach, uncertain_mounts, unmount_devices, unmount_pods, unpublish_inline)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_setup import (  # noqa: F401  # pylint: disable=unused-import
    _multi_attach_error, attach, fs_group_to_apply, mount_devices, mount_pods, read_write_once_pod)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_inline import publish_inline
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_identity import stale_global_mounts
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_expand import (  # noqa: F401  # pylint: disable=unused-import
    expand_controller, expand_node, expansion_refused, offline_grow_window)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan import stages
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_limits import volume_limits
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.storage_plan import add_storage, storage_plan


def lean_plan(steps, in_place=False):
    """{plan, volume_items, by_node} from ordered steps that each carry their volume item (``item``).

    Each (node, volume) item is kept once in ``volume_items`` ({node: {unique name: item}}, without the per-step
    ``pods`` and ``detach``); a step names it by node and unique_volume_name, and a pod-level step keeps its
    pod's read-only flag (``pod_read_only``). ``by_node`` holds the positions of each node's steps, so each
    host's slice is cut in its own size. The result grows with steps + volumes, not steps x item size.
    in_place: the steps and their items are the caller's own (the planner's), changed instead of copied; an item
    without ``pods`` and ``detach`` is kept as it is."""
    plan = list(steps) if in_place else [dict(step) for step in steps]
    items, by_node = {}, {}
    node = node_items = positions = None  # the last step's node: the steps of a phase come node by node
    for position, step in enumerate(plan):
        if step["node"] != node or positions is None:
            node = step["node"]
            node_items = items.get(node)
            positions = by_node.get(node)
            if positions is None:
                positions = by_node[node] = []
        positions.append(position)
        item = step.pop("item", None)
        if item is None:
            continue
        if node_items is None:
            node_items = items[node] = {}
        unique = step["unique_volume_name"]
        if unique not in node_items:
            if in_place and "pods" not in item and "detach" not in item:
                node_items[unique] = item
            else:
                kept = node_items[unique] = dict(item)
                kept.pop("pods", None)
                kept.pop("detach", None)
        if "pod_read_only" not in step and step.get("pod_uid") is not None and item.get("pods"):
            step["pod_read_only"] = bool(item["pods"][0].get("read_only"))
    return {"plan": plan, "volume_items": items, "by_node": by_node}


def _sort_key(step):
    return (step["node"] or "", step["volume"] or "", step["pod"] or "", step["pod_uid"] or "")


# a node's steps by _sort_key's last three fields, the key read in C; a None among strings (which _sort_key counts
# as "") makes the comparison raise, and that group is sorted again by _sort_key: the same order either way
_REST_KEY = operator.itemgetter("volume", "pod", "pod_uid")


def _in_order(steps):
    """The steps stably sorted by _sort_key. They are grouped by node first and each node's few steps sorted
    alone: the same order as one sort, with far fewer comparisons (about a dozen steps per node at 5,000 nodes)."""
    by_node = {}
    for step in steps:
        node = step["node"] or ""
        group = by_node.get(node)
        if group is None:
            by_node[node] = [step]
        else:
            group.append(step)
    ordered = []
    for node in sorted(by_node):
        group = by_node[node]
        if len(group) > 1:
            try:
                group = sorted(group, key=_REST_KEY)
            except TypeError:
                group = sorted(group, key=_sort_key)
        ordered.extend(group)
    return ordered


def _stage_pending(p, nodes):
    """The pending node-side grows (rules_expand.grow_waits) of this plan's stage, sorted: a node-side step's, so
    none in the attach/detach stage, and in the node stage only its slice's nodes (stages.keep_stage)."""
    if p.options.stage == stages.ATTACH_DETACH:
        return []
    pending = [e for e in p.pending if p.options.stage != stages.NODE or nodes is None or e["node"] in nodes]
    return sorted(pending, key=lambda e: (e["node"] or "", e["volume"] or ""))


def plan(desired, actual, index, options=None, storage=None):
    """The ordered plan. Returns {plan, volume_items, by_node, blocked, pending, detach_requests,
    detach_requests_to_clear, summary, teardown_guard, in_use_repairs, nodes_out_of_service} and the storage side's
    keys (plan/storage_plan.py: provisioning, deletions, deletion_guard, storage_records, registrations): ``plan`` is
    the steps in order, each naming its node and volume; ``volume_items`` holds the volume item of each (node, volume)
    once; ``by_node`` the positions of each node's steps; ``pending`` the node-side grows not tried in this plan,
    shaped as blocked entries (action ``expand``, and the claim as ``pvc``). ``storage``: a StoragePlan (default: the
    cluster's own, no node facts)."""
    options = options or PlanOptions()
    storage = storage if storage is not None else storage_plan(index, None, options, None)
    if not isinstance(options.max_wait_for_unmount, int) or options.max_wait_for_unmount < 0:
        raise SettingRefused(field=setting("max_wait_for_unmount"), value=options.max_wait_for_unmount,
                             reason="must be a non-negative number of seconds")
    if not isinstance(options.max_teardown_fraction, (int, float)) or not 0 <= options.max_teardown_fraction <= 1:
        raise SettingRefused(field=setting("max_teardown_fraction"), value=options.max_teardown_fraction,
                             reason="must be a number from 0 to 1 (0.5: at most half of the mounted volumes)")
    if not isinstance(options.max_teardown_count, int) or options.max_teardown_count < 0:
        raise SettingRefused(field=setting("max_teardown_count"), value=options.max_teardown_count,
                             reason="must be a non-negative number of volumes")
    check_loop_pools(options.loop_pools)
    if options.stage not in stages.STAGES:
        raise SettingRefused(field=setting("stage"), value=options.stage,
                             reason="must be one of %s" % ", ".join(stages.STAGES))
    p = _Plan(desired, actual, index, options)
    for node, reason in sorted(p.no_picture.items()):
        p.block(node, None, None, reason)
    uncertain_mounts(p)     # kubelet: what reconstruction could not identify, per volume
    unmount_pods(p)         # kubelet: pods first, so their devices become free
    unpublish_inline(p)     # kubelet: inline ephemeral volumes of gone pods; the driver deletes them
    offline_grow_window(p)  # kubelet: a pending offline grow's volume, free of pods now, is staged again
    unmount_devices(p)      # kubelet: then the global mounts no pod needs
    detach(p)               # controller: detach before attach so an RWO volume can follow its pod
    stages.hold_detaches(p)  # stage attach_detach: a detach waits for its node's own unmount (volumesInUse)
    attach(p)               # controller: attach, refusing a second node for RWO/RWOP volumes
    stale_global_mounts(p)  # kubelet: a global mount on another device than the volume's now is not set up
    volume_limits(p, storage.view)  # scheduler: never past a node's CSI volume limit (CSINode allocatable.count)
    mount_devices(p)        # kubelet: stage the device once per node
    read_write_once_pod(p)  # kubelet: one pod per ReadWriteOncePod volume
    mount_pods(p)           # kubelet: then publish it to each pod
    publish_inline(p)       # kubelet: inline ephemeral volumes, published straight into their pod
    expand_controller(p)    # resizer: grow the backing volume and the PV
    expand_node(p)          # kubelet: then grow the filesystem on the node using it
    refuse_unsafe_steps(p, STEP_KINDS, options.loop_pools, options.driver_options)  # what a node would refuse
    stages.keep_stage(p, frozenset(actual.node_facts) if actual.node_facts else None)  # one stage's steps
    steps = []
    teardown = []  # the teardown guard's steps: the plan's other steps are none of its business
    summary = {}
    for phase in STEP_KINDS:
        phase_steps = _in_order(p.phases[phase])
        steps.extend(phase_steps)
        if phase in TEARDOWN_KINDS:
            teardown.extend(phase_steps)
        summary[phase[0]] = summary.get(phase[0], 0) + len(phase_steps)
    lean = lean_plan(steps, in_place=True)
    result = {}
    p.blocked.extend(add_storage(p, storage, result))  # provisioning, deletion, registration: plan/storage_plan.py
    blocked = dict(((b["node"], b["volume"], b["pod"], b["reason"]), b) for b in p.blocked)  # each entry once
    summary["blocked"] = len(blocked)
    pending = _stage_pending(p, frozenset(actual.node_facts) if actual.node_facts else None)
    summary["pending"] = len(pending)
    summary["skipped"] = desired.skipped
    return stages.stage_records(p, dict(result, **{
        "plan": lean["plan"], "volume_items": lean["volume_items"], "by_node": lean["by_node"],
        "blocked": [blocked[key] for key in sorted(blocked, key=lambda k: tuple(x or "" for x in k))],
        "pending": pending,
        "detach_requests": p.detach_requests, "detach_requests_to_clear": p.detach_requests_to_clear,
        "teardown_guard": teardown_guard(p, teardown), "summary": summary, "in_use_repairs": in_use_repairs(p, steps),
        "nodes_out_of_service": sorted(p.out_of_service)}))


def plan_cluster(index, node_facts=None, options=None, scope=None):
    """Desired state, actual state and plan in one call: what volume_reconcile_plan returns."""
    options = options or PlanOptions()
    with gc_paused():  # the states and the plan are acyclic; see cluster.gc_paused
        storage = storage_plan(index, node_facts, options, scope)  # registration, provisioning: plan/storage_plan.py
        desired = build_desired_state(index, options.known_drivers, scope, options.loop_pools, options.driver_options,
                                      storage.provisioning.claims)
        actual = build_actual_state(index, node_facts, options.known_drivers)
        result = plan(desired, actual, index, options, storage)
        result["desired"] = summarize_desired(desired)
        result["actual"] = summarize_actual(actual)
    return result


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)
