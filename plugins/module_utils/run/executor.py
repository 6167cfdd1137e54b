# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side execution of a plan, phase by phase, across nodes.

The planner (planner.py) decides; this module turns its ordered steps into one
node-module call per node per phase, and turns what the nodes report back into
the records the cluster store writes (record.py). It is pure: the reconcile role
calls these functions through filters (plugins/filter/reconcile.py).

Like the attach/detach controller's reconciler, a step whose precondition failed
is not attempted: a failure on a volume blocks every later step of that volume
(a failed detach on node A must not let node B attach an RWO volume), and an
unreachable node blocks every later step on that node.

A ``record_only`` detach (a node that is out of service or gone, and that this run
cannot reach) runs nothing on the node: it is recorded as the controller's release.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name

# (phase, the plan step kinds it runs), in order; the role runs each with one node module
# (volume_detach, k8s_volume_attach, node_volume_mount, fs_expand stage=controller, stage=node).
PHASES = (
    ("teardown", (("unmount", "pod"), ("unmount", "device"), ("cleanup", "directory"), ("detach", "device"))),
    ("attach", (("attach", "device"),)),
    ("mount", (("mount", "device"), ("mount", "pod"))),
    ("expand_controller", (("expand", "controller"),)),
    ("expand_node", (("expand", "node"),)),
)
PHASE_KINDS = dict(PHASES)
# The role's node tasks, in the order run_tasks sequences them (a run has those its plan needs).
NODE_TASKS = ("teardown", "setup", "expand_node")
PHASE_ORDER = dict((name, position) for position, (name, _kinds) in enumerate(PHASES))


def _step_kind(step):
    return (step.get("action"), step.get("target"))


KIND_PHASE = dict((kind, name) for name, kinds in PHASES for kind in kinds)


class PlanView:
    """A plan indexed once by (phase, node): every lookup after that costs the size of its answer.

    plan_result: a volume_reconcile_plan result or a node's slice of it (node_slice): ``plan``, the steps
    in order, and ``volume_items``, {node: {unique volume name: volume item}}, each (node, volume) item once."""

    def __init__(self, plan_result):
        self.plan = (plan_result or {}).get("plan") or []
        self.items = (plan_result or {}).get("volume_items") or {}
        self.by_phase_node = {}
        self.nodes_by_phase = dict((name, []) for name, _kinds in PHASES)
        for step in self.plan:
            phase = KIND_PHASE.get(_step_kind(step))
            if phase is None:
                continue
            key = (phase, step.get("node"))
            if key not in self.by_phase_node:
                self.by_phase_node[key] = []
                self.nodes_by_phase[phase].append(step.get("node"))
            self.by_phase_node[key].append(step)

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
        return [step for name in nodes for step in self.by_phase_node.get((phase, name), ())
                if bool(step.get("record_only")) == record_only and name not in failed_nodes
                and step.get("unique_volume_name") not in failed_volumes]


def _view(plan_result):
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
    return _view(plan_result).steps(phase, node, failures, record_only)


def phase_items(plan_result, phase, node, failures=None):
    """Merge one node's steps of a phase into the `volumes` list of its node module call.

    One item per volume (contracts.md section 1); pod-level steps add their pod to
    the item's `pods`; teardown items say whether the device is unmounted and detached;
    expansion items carry the target size.
    """
    view = _view(plan_result)
    items = {}
    order = []
    for step in view.steps(phase, node, failures):
        key = step.get("unique_volume_name")
        if key is None:
            continue  # cleanup/directory: see phase_stale_paths
        if key not in items:
            item = view.item(step)
            if item is None:
                raise KeyError("no volume item for node %s, volume %s in the plan's volume_items" % (node, key))
            item["pods"] = []
            if phase == "teardown":
                item["unmount_device"] = False
                item["detach"] = False
            items[key] = item
            order.append(key)
        item = items[key]
        kind = _step_kind(step)
        if step.get("pod_uid"):
            pod = {"uid": step["pod_uid"], "name": step.get("pod") or step["pod_uid"],
                   "read_only": bool(step.get("pod_read_only"))}
            if step.get("pod_fs_group") is not None:
                pod["fs_group"] = step["pod_fs_group"]
                pod["fs_group_change_policy"] = step.get("pod_fs_group_change_policy")
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
            if _step_kind(step) == ("cleanup", "directory")]


def phase_nodes(plan_result, phase, failures=None):
    """Node names that have work in this phase."""
    view = _view(plan_result)
    return [node for node in view.nodes_by_phase[phase] if view.steps(phase, node, failures)]


def _volume_outcomes(result):
    """Map unique volume name -> True for each volume a node module result says it completed, or the
    reason of its own failure.

    A node module that fails lists in `volumes` only the volumes it completed and, in `failures`, one
    entry per volume that failed (node/context.py run_each); a successful one lists them all.

    A volume result that says it was ``skipped`` (what an older node module returned for a driver it has no
    backend for) is not done: it is that volume's failure, and the node's, never an applied step or an
    attachment to record. Only a node-side expansion's ``skipped`` (a Block or read-only volume: nothing to grow,
    its result has a ``stage``) is a volume done.
    """
    failed_msg = result.get("msg") if result.get("failed") or result.get("unreachable") else None
    outcomes = {}
    skipped = []
    for vol in result.get("volumes") or ():
        key = vol.get("unique_volume_name") or _unique_name(vol)
        if not key:
            continue
        if vol.get("skipped") and not vol.get("stage"):
            outcomes[key] = "the node did not act on volume %s: %s" % (vol.get("pv_name") or key, vol["skipped"])
            skipped.append(outcomes[key])
        else:
            outcomes[key] = True
    if skipped and not failed_msg:
        failed_msg = "; ".join(skipped)
    for entry in result.get("failures") or ():
        if isinstance(entry, dict) and entry.get("unique_volume_name"):
            outcomes[entry["unique_volume_name"]] = entry.get("msg") or failed_msg or "failed"
    return outcomes, failed_msg


def _unique_name(item):
    if item.get("driver") and item.get("volume_handle") is not None:
        return unique_volume_name(item["driver"], item["volume_handle"])
    return None


def phase_outcome(plan_result, phase, results, failures=None):
    """Turn the node results of one phase into records and updated failures.

    results: {node name: registered module result, or None when the node had no work}.
    Returns {records, failures, blocked, errors}: records for cluster_volume_record,
    the failures to carry into the next phase, and the steps reported as blocked.
    """
    view = _view(plan_result)
    failures = _copy_failures(failures)
    records, errors = _record_only(view, phase, failures), []
    for node in phase_nodes(view, phase, failures):
        node_records, node_errors = _node_phase(view, phase, node, (results or {}).get(node), failures)
        records.extend(node_records)
        errors.extend(node_errors)
    blocked = _not_attempted(view.plan, lambda step: _later_than(step, phase), failures)
    return {"records": records, "failures": failures, "blocked": blocked, "errors": errors}


def _copy_failures(failures):
    return {"nodes": dict((failures or {}).get("nodes", {})), "volumes": dict((failures or {}).get("volumes", {}))}


def _record_only(view, phase, failures):
    """Records of the steps the controller records without the node (record_only detaches)."""
    return [record for step in view.steps(phase, None, failures, record_only=True)
            for record in _records_for(phase, step["node"], dict(view.item(step), detach=True), {}, [step])]


def _node_phase(view, phase, node, result, failures):
    """One node's result of one phase -> (records, errors); adds what failed to ``failures`` in place."""
    steps = view.steps(phase, node, failures)
    items = phase_items(view, phase, node, failures)
    if result is None or result.get("skipped"):
        msg = ("node %s has work in phase %s but did not run it: is it in this play's inventory "
               "(or limited out)? Add it, or run again without --limit" % (node, phase))
        result = {"failed": True, "msg": msg}
    if result.get("unreachable"):
        failures["nodes"][node] = "node unreachable: %s" % (result.get("msg") or "")
    outcomes, failed_msg = _volume_outcomes(result)
    for step in steps:
        key = step["unique_volume_name"]
        if key is None:
            continue  # a stale directory: nothing later depends on it
        done = outcomes.get(key, None if failed_msg else True)
        if done is True:
            continue
        reason = done or failed_msg or "failed"
        failures["volumes"].setdefault(key, "%s on node %s failed: %s" % (phase, node, reason))
    records = []
    failed_volumes = []
    for item in items:
        key = _unique_name(item)
        if outcomes.get(key, None if failed_msg else True) is not True:
            failed_volumes.append(item["pv_name"])
            continue
        records.extend(_records_for(phase, node, item, _result_volume(result, key), steps))
    if not failed_msg:
        return records, []
    # the volumes named, also when the module died without saying (killed, a lost connection)
    msg = failed_msg
    missing = [v for v in failed_volumes if v not in msg]
    if missing:
        msg = "%s (volumes not done: %s)" % (msg, ", ".join(missing))
    return records, [{"node": node, "phase": phase, "msg": msg, "volumes": failed_volumes}]


def _not_attempted(steps, selected, failures, before=None):
    """The steps ``selected(step)`` picks that ``failures`` (minus those already in ``before``) stop."""
    before = before or {"nodes": {}, "volumes": {}}
    blocked = []
    for step in steps or ():
        if not selected(step):
            continue
        node, key = step.get("node"), step.get("unique_volume_name")
        reason = None
        if node in failures["nodes"] and node not in before["nodes"]:
            reason = failures["nodes"][node]
        elif key in failures["volumes"] and key not in before["volumes"]:
            reason = failures["volumes"][key]
        if reason:
            blocked.append({"node": node, "volume": step.get("volume"), "pod": step.get("pod"),
                            "action": step.get("action"), "reason": "not attempted: " + reason})
    return blocked


def phase_work(plan_result, phase, node, failures=None):
    """(items, stale paths, forced) of one node's phase: what its node module call gets.

    The action plugin node_phases asks for each phase in turn, passing the failures ``advance``
    returned after the previous phase, so a volume whose attach failed on this node is not mounted."""
    view = _view(plan_result)
    items = phase_items(view, phase, node, failures)
    stale = phase_stale_paths(view, phase, node, failures) if phase == "teardown" else []
    forced = any(step.get("forced") for step in view.steps(phase, node, failures))
    return items, stale, forced


def advance(plan_result, phase, node, result, failures):
    """Failures after ``node`` ran ``phase`` with ``result`` (a new dict; ``failures`` is not changed)."""
    failures = _copy_failures(failures)
    _node_phase(_view(plan_result), phase, node, result, failures)
    return failures


def run_tasks(plan):
    """The role's node tasks for this plan (its steps): {teardown: bool, setup: [phases], expand_node_after: bool,
    sequence: [{name, phases}]}, ``sequence`` being the node tasks to run, in order (the role loops over it, so a
    task without work costs nothing, not a skipped task per host).

    Teardown is its own task so that every detach is done and recorded before any node attaches (an
    RWO volume follows its pod: reconciler.go detaches before it attaches). Attach, mount and expansion
    are one task: on one node they follow each other in order. Only a filesystem whose backing volume
    another node grows in this plan waits for a task of its own."""
    kinds = set(_step_kind(step) for step in plan or ())
    grown_on = dict((step["unique_volume_name"], step["node"]) for step in plan or ()
                    if _step_kind(step) == ("expand", "controller"))
    after = any(_step_kind(step) == ("expand", "node") and grown_on.get(step["unique_volume_name"], step["node"])
                != step["node"] for step in plan or ())
    setup = [name for name, phase_kinds in PHASES[1:] if kinds & set(phase_kinds)
             and not (after and name == "expand_node")]
    teardown = bool(kinds & set(PHASE_KINDS["teardown"]))
    sequence = ([{"name": "teardown", "phases": ["teardown"]}] if teardown else []) + \
        ([{"name": "setup", "phases": setup}] if setup else []) + \
        ([{"name": "expand_node", "phases": ["expand_node"]}] if after else [])
    return {"teardown": teardown, "setup": setup, "expand_node_after": after, "sequence": sequence}


def initial_run_state(plan_result):
    """The run's state before its first node task, the role's one variable for the run: {tasks, failures, blocked,
    errors, records}. ``tasks`` are the node tasks the plan needs, in order (run_tasks' sequence). Nothing has
    failed yet but the nodes whose state could not be gathered (the plan's ``node_errors``): they fail the run at
    its end, and the planner already blocked what needs them."""
    plan_result = plan_result or {}
    return {"tasks": run_tasks(plan_result.get("plan"))["sequence"], "failures": {"nodes": {}, "volumes": {}},
            "blocked": [], "errors": list(plan_result.get("node_errors") or ()), "records": []}


def run_step(plan_result, state=None, task=None, results=None, check_mode=False):
    """One step of a reconcile run on the controller: the run's state after it and the records it writes, at once.

    The first step (``state`` None) starts the run (initial_run_state) and writes when the planner saw blocked
    detaches first requested and the volumes in use that node status lacks (detach_request_records). Every later
    step follows the node task named ``task``, whose ``results`` are node_results' {node: task result}: the state
    after it (run_state_after) and the records of what its nodes did. When the next node task is the setup, its
    attach and resize intents (attach_intents, with the failures so far) join the same write, after the teardown's
    records: every detach and every intent is in the store before any node attaches, and the stores apply them in
    this order (the API store writes the releases, answered, before it creates the intents: k8s_writes.py), so
    an RWO volume is never recorded attached to two nodes.

    Returns (state, records, the node tasks still to run). In check mode nothing runs on the nodes and nothing
    is written: no records, no tasks to run."""
    if state is None:
        state = initial_run_state(plan_result)
        del state["records"]
        records = detach_request_records(plan_result)
        upcoming = state["tasks"]
    else:
        names = [each["name"] for each in state["tasks"]]
        if task not in names:
            raise ValueError("node task %r is not one of this run's node tasks (%s)" % (task, ", ".join(names)))
        position = names.index(task)
        state = run_state_after(plan_result, state["tasks"][position]["phases"], results, state)
        records = state.pop("records")
        upcoming = state["tasks"][position + 1:]
    if check_mode:
        return state, [], []
    if upcoming and upcoming[0]["name"] == "setup":
        records = list(records) + attach_intents(plan_result, state["failures"])
    return state, records, upcoming


def run_state_after(plan_result, phases, results, state):
    """The run's state after one node task (task_outcome): the failures the later tasks must not attempt, the
    steps blocked and the node errors so far, and this task's ``records`` to write."""
    outcome = task_outcome(plan_result, phases, results, state["failures"])
    return {"tasks": state["tasks"], "failures": outcome["failures"],
            "blocked": list(state["blocked"]) + outcome["blocked"], "errors": list(state["errors"]) + outcome["errors"],
            "records": outcome["records"]}


def task_outcome(plan_result, phases, results, failures=None):
    """The outcome of one role task in which every node ran ``phases`` in order (plugins/action/node_phases.py).

    results: {node name: the task's result on that host (its ``phase_results``: {phase: module result}),
    or None when the host did not run it}. Each node's phases ran on that node alone, one after the
    other, so failures are carried node by node, as the node itself carried them; the union is returned
    for the later tasks (a failed detach on node A stops node B's attach of that volume). Linear in the
    plan: each node's steps are looked up in one index. Returns {records, failures, blocked, errors}."""
    view = _view(plan_result)
    start = _copy_failures(failures)
    merged = _copy_failures(failures)
    records, errors = [], []
    for phase in phases:
        records.extend(_record_only(view, phase, start))
    blocked = []
    nodes = sorted(set(node for phase in phases for node in phase_nodes(view, phase, start)))
    for node in nodes:
        host = (results or {}).get(node)
        node_failures = _copy_failures(start)
        for phase in phases:
            # this node's steps of this phase that its failures in an earlier phase of the task stopped
            blocked.extend(_not_attempted(view.by_phase_node.get((phase, node), ()), lambda s: True,
                                          node_failures, start))
            if node in node_failures["nodes"] or not view.steps(phase, node, node_failures):
                continue
            node_records, node_errors = _node_phase(view, phase, node, _phase_result(host, phase, node),
                                                    node_failures)
            records.extend(node_records)
            errors.extend(node_errors)
        merged["nodes"].update(node_failures["nodes"])
        for key, reason in node_failures["volumes"].items():
            merged["volumes"].setdefault(key, reason)
    last = max(PHASE_ORDER[phase] for phase in phases)
    blocked.extend(_not_attempted(view.plan, lambda s: _phase_order_of(_step_kind(s)) > last, merged, start))
    return {"records": records, "failures": merged, "blocked": blocked, "errors": errors}


def _phase_order_of(kind):
    for name, kinds in PHASES:
        if kind in kinds:
            return PHASE_ORDER[name]
    return -1


def timed_out(result, node):
    """The error of a node task that Ansible stopped at its time limit (the task keyword ``timeout``, the role's
    kubevol_node_timeout), or None. Such a node counts as unreachable for the rest of the run: whatever it was
    doing may still be going on there, and nothing more is sent to it (the A/D controller never waits on a node)."""
    info = result.get("timedout") if isinstance(result, dict) else None
    if not info:
        return None
    period = info.get("period") if isinstance(info, dict) else None
    return ("node %s did not answer within %ss (kubevol_node_timeout) and was given up for this run: it may be hung "
            "(a stuck disk, a frozen kernel) or its work slow (mkfs of a large device); check the node, raise "
            "kubevol_node_timeout if it was only slow, and run again" % (node, period if period is not None else "?"))


def _phase_result(host, phase, node):
    """A node's module result for one phase from its node_phases task result (None: the host did not run it)."""
    if host is None or host.get("skipped"):
        return None
    late = timed_out(host, node)
    if late is not None:
        return {"unreachable": True, "failed": True, "msg": late}
    if host.get("unreachable") or "phase_results" not in host:
        return {"unreachable": bool(host.get("unreachable")), "failed": True,
                "msg": host.get("msg") or "the node_phases task failed on node %s" % node}
    result = (host.get("phase_results") or {}).get(phase)
    if result is None:  # the node found no work where the controller sees some: never count it as done
        return {"failed": True, "msg": "node %s did not run phase %s although the plan has work for it there; "
                                       "run again" % (node, phase)}
    return result


def _later_than(step, phase):
    return _phase_order_of(_step_kind(step)) > PHASE_ORDER[phase]


def _result_volume(result, key):
    for vol in result.get("volumes") or ():
        if (vol.get("unique_volume_name") or _unique_name(vol)) == key:
            return vol
    return {}


def _records_for(phase, node, item, outcome, steps):
    """The cluster records Kubernetes would write after this phase succeeded for one volume."""
    if item.get("ephemeral"):
        # an inline ephemeral volume: no VolumeAttachment, no volumesAttached, and no volumesInUse entry (the
        # kubelet reports only attachable volumes in use: kubelet_node_status.go, volume_manager.go)
        return []
    base = {"node": node, "pv_name": item["pv_name"], "driver": item["driver"],
            "volume_handle": item["volume_handle"]}
    key = unique_volume_name(item["driver"], item["volume_handle"])
    if phase == "teardown":
        if item.get("detach"):
            return [dict(base, type="detached")]
        if item.get("unmount_device"):
            return [{"type": "in_use", "node": node, "unique_volume_names": [key], "in_use": False}]
        return []
    if phase == "attach":
        device = outcome.get("device_path") or outcome.get("device")
        return [dict(base, type="attached", device_path=device)]
    if phase == "mount":
        return [{"type": "in_use", "node": node, "unique_volume_names": [key], "in_use": True}]
    records = []
    for step in steps:
        # size_to is bytes; the store writes it back as a canonical quantity (2147483648 -> 2Gi).
        capacity = step.get("capacity", step.get("size_to"))
        if step["unique_volume_name"] != key or capacity is None:
            continue
        if phase == "expand_controller":
            record = {"type": "controller_expanded", "pv_name": item["pv_name"], "capacity": capacity}
            if step.get("pvc"):
                record["pvc"] = step["pvc"]  # the claim's allocatedResources and NodeResizePending
            records.append(record)
        elif phase == "expand_node" and step.get("pvc"):
            records.append({"type": "node_expanded", "pvc": step["pvc"], "capacity": capacity})
    return records


def facts_errors(node_facts, out_of_service=None):
    """Errors for the nodes whose actual state could not be gathered (unreachable, or the facts module failed).

    node_facts: the planner's {node name: facts}. The planner blocks what needs such a node; this makes
    the run fail at the end as well (a node failed), like a failure in any later phase does. A node with
    the out-of-service taint (out_of_service: names) is expected to be down: not an error.
    """
    errors = []
    down = frozenset(out_of_service or ())
    for node in sorted(node_facts or {}):
        facts = node_facts[node] or {}
        if not facts.get("reachable", True) and node not in down:
            errors.append({"node": node, "phase": "facts", "msg": facts.get("error") or "node facts were not gathered"})
    return errors


def attach_intents(plan_result, failures=None):
    """``attach_intent`` records for the attachments the setup task is about to make, written before it runs:
    the A/D controller creates the VolumeAttachment (attached: false) before the attacher acts, so a run killed
    between a node's attach and its record never leaves an attachment the cluster does not know of."""
    view = _view(plan_result)
    records = []
    for step in view.steps("attach", None, failures):
        item = view.item(step)
        records.append({"type": "attach_intent", "node": step["node"], "pv_name": item["pv_name"],
                        "driver": item["driver"], "volume_handle": item["volume_handle"]})
    # RecoverVolumeExpansionFailure: the claim says an expansion is under way before it starts. A claim the
    # controller grows first goes ControllerResizeInProgress -> NodeResizePending (its record) -> done.
    growing = set()
    for phase, stage in (("expand_controller", "controller"), ("expand_node", "node")):
        for step in view.steps(phase, None, failures):
            if step.get("pvc") and step.get("size_to") is not None and step["pvc"] not in growing:
                growing.add(step["pvc"])
                records.append({"type": "resize_intent", "pvc": step["pvc"], "stage": stage,
                                "capacity": step["size_to"]})
    return records


def detach_request_records(plan_result):
    """Records that keep the first time a blocked detach was requested (and clear stale ones)."""
    records = []
    for req in plan_result.get("detach_requests") or ():
        records.append(dict(req, type="detach_requested"))
    for req in plan_result.get("detach_requests_to_clear") or ():
        records.append(dict(req, type="detach_request_cleared"))
    for repair in plan_result.get("in_use_repairs") or ():
        records.append(dict(repair, type="in_use", in_use=repair.get("in_use", True)))
    return records
