# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A plan cut by (phase, node): the steps and volume items of one node's phase, what its node module call gets.

The planner's plan is one ordered list of steps (common/phases.py STEP_KINDS) with the volume items by node; the
controller runs it one phase and one node at a time (run/executor.py), so it is indexed here once and cut
per phase and node, minus what earlier failures stop (run/outcome.py carries those).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases


class PlanView:
    """A plan indexed once by (phase, node): every lookup after that costs the size of its answer.

    plan_result: a volume_reconcile_plan result or a node's slice of it (node_slice): ``plan``, the steps
    in order, and ``volume_items``, {node: {unique volume name: volume item}}, each (node, volume) item once."""

    def __init__(self, plan_result):
        self.plan = (plan_result or {}).get("plan") or []
        self.items = (plan_result or {}).get("volume_items") or {}
        self.by_phase_node = {}
        self.nodes_by_phase = dict((name, []) for name in phases.NAMES)
        # the steps a controller host carries out (plan/remote_controller.py), in plan order, by host
        self.by_controller = {}
        # the (phase, node) cuts holding a record_only step: the controller's own records are found without walking
        # every node's steps of the phase
        self._record_only = set()
        kind_phase = phases.KIND_PHASE  # (phase_of(step_kind(step)) inlined: this loop is per step of the plan)
        for step in self.plan:
            phase = kind_phase.get((step.get("action"), step.get("target")))
            if phase is None:
                continue
            if step.get("controller_host"):
                self.by_controller.setdefault(step["controller_host"], []).append(step)
                if phase == "expand_controller":
                    continue  # all of it is the controller host's: no node part
            key = (phase, step.get("node"))
            if key not in self.by_phase_node:
                self.by_phase_node[key] = []
                self.nodes_by_phase[phase].append(step.get("node"))
            self.by_phase_node[key].append(step)
            if step.get("record_only"):
                self._record_only.add(key)

    def controller_steps(self, host, failures=None):
        """The steps controller host ``host`` carries out, minus those blocked by earlier failures (a detach
        whose node teardown failed: the node is not done)."""
        failures = failures or {}
        return [step for step in self.by_controller.get(host, ())
                if step.get("node") not in failures.get("nodes", {})
                and step.get("unique_volume_name") not in failures.get("volumes", {})]

    def item(self, step):
        """A copy of the step's volume item (None for a stale directory)."""
        item = self.items.get(step.get("node"), {}).get(step.get("unique_volume_name"))
        return dict(item) if item is not None else None

    def steps(self, phase, node=None, failures=None, record_only=False):
        """The steps of one phase (optionally of one node), minus those blocked by earlier failures.

        record_only: the steps the controller records without the node (else: the node's work)."""
        failures = failures or {}
        failed_nodes = failures.get("nodes", {})
        failed_volumes = failures.get("volumes", {})
        nodes = [node] if node is not None else self.nodes_by_phase[phase]
        if record_only:
            nodes = [name for name in nodes if (phase, name) in self._record_only]
        return [step for name in nodes for step in self.by_phase_node.get((phase, name), ())
                if bool(step.get("record_only")) == record_only and name not in failed_nodes
                and step.get("unique_volume_name") not in failed_volumes]


def as_view(plan_result):
    return plan_result if isinstance(plan_result, PlanView) else PlanView(plan_result)


def node_slice(plan_result, node):
    """One node's share of a plan result, in the same shape (``plan``, ``volume_items``): what node_phases takes.

    Uses the planner's ``by_node`` index (positions in ``plan``) so that cutting every host's slice is
    linear in the plan, not hosts x steps."""
    plan = plan_result.get("plan") or []
    positions = (plan_result.get("by_node") or {}).get(node)
    steps = [plan[i] for i in positions] if positions is not None else [s for s in plan if s.get("node") == node]
    items = (plan_result.get("volume_items") or {}).get(node)
    return {"plan": steps, "volume_items": {node: items} if items else {}}


def phase_steps(plan_result, phase, node=None, failures=None, record_only=False):
    """The steps of one phase (optionally for one node), minus those blocked by earlier failures."""
    return as_view(plan_result).steps(phase, node, failures, record_only)


def phase_items(plan_result, phase, node, failures=None):
    """Merge one node's steps of a phase into the `volumes` list of its node module call.

    One item per volume (contracts.md section 1); pod-level steps add their pod to
    the item's `pods`; teardown items say whether the device is unmounted and detached;
    expansion items carry the target size.
    """
    plan = as_view(plan_result)
    items = {}
    order = []
    for step in plan.steps(phase, node, failures):
        key = step.get("unique_volume_name")
        if key is None:
            continue  # cleanup/directory: see phase_stale_paths
        if key not in items:
            item = plan.item(step)
            if item is None:
                raise KeyError("no volume item for node %s, volume %s in the plan's volume_items" % (node, key))
            item["pods"] = []
            if phase == "teardown":
                item["unmount_device"] = False
                item["detach"] = False
            items[key] = item
            order.append(key)
        item = items[key]
        kind = phases.step_kind(step)
        if step.get("pod_uid"):
            pod = {"uid": step["pod_uid"], "name": step.get("pod") or step["pod_uid"],
                   "read_only": bool(step.get("pod_read_only"))}
            if step.get("pod_fs_group") is not None:
                pod["fs_group"] = step["pod_fs_group"]
                pod["fs_group_change_policy"] = step.get("pod_fs_group_change_policy")
            if step.get("pod_service_account"):
                pod["service_account"] = step["pod_service_account"]
            if pod not in item["pods"]:
                item["pods"].append(pod)
        if kind == ("unmount", "device"):
            item["unmount_device"] = True
        elif kind == ("detach", "device"):
            item["unmount_device"] = True
            item["detach"] = True
        elif phase in ("expand_controller", "expand_node") and step.get("size_to") is not None:
            item["capacity_bytes"] = step["size_to"]
    return [items[key] for key in order]


def phase_stale_paths(plan_result, phase, node, failures=None):
    """The stale directories (cleanup/directory steps) volume_detach removes on one node."""
    return [step["path"] for step in phase_steps(plan_result, phase, node, failures)
            if phases.step_kind(step) == ("cleanup", "directory")]


def phase_nodes(plan_result, phase, failures=None):
    """Node names that have work in this phase."""
    plan = as_view(plan_result)
    return [node for node in plan.nodes_by_phase[phase] if plan.steps(phase, node, failures)]


def phase_work(plan_result, phase, node, failures=None):
    """(items, stale paths, forced) of one node's phase: what its node module call gets.

    The action plugin node_phases asks for each phase in turn, passing the failures ``advance``
    returned after the previous phase, so a volume whose attach failed on this node is not mounted."""
    plan = as_view(plan_result)
    items = phase_items(plan, phase, node, failures)
    stale = phase_stale_paths(plan, phase, node, failures) if phase == "teardown" else []
    forced = any(step.get("forced") for step in plan.steps(phase, node, failures))
    return items, stale, forced
