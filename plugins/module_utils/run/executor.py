# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side execution of a plan: the run's node tasks, in order, and the records each step writes.

The planner (plan/planner.py) decides; the reconcile role runs its steps one node task at a time
(common/phases.py NODE_TASKS), each node's share cut from the plan (run/plan_view.py) and run by the node_phases
action; what the nodes report becomes the records the cluster store writes (run/outcome.py). It is pure: the role
calls it through reconcile_run (run/reconcile_run_task.py) and the filters (plugins/filter/reconcile.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.actual_state import facts_errors  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.kubevol.volumes.plugins.module_utils.run.outcome import (  # noqa: F401  # pylint: disable=unused-import
    advance, task_outcome, timed_out)
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_view import (  # noqa: F401  # pylint: disable=unused-import
    PlanView, node_slice, phase_items, phase_nodes, phase_stale_paths, phase_steps, phase_work)
from ansible_collections.kubevol.volumes.plugins.module_utils.run import controller_outcome, plan_view
from ansible_collections.kubevol.volumes.plugins.module_utils.run import provision_outcome

EXPAND_CONTROLLER, EXPAND_NODE = ("expand", "controller"), ("expand", "node")


def run_tasks(plan):
    """The role's node tasks for this plan (its steps): {teardown: bool, setup: [phases], expand_node_after: bool,
    sequence: [{name, phases}]}, ``sequence`` being the node tasks to run, in order (the role loops over it, so a
    task without work costs nothing, not a skipped task per host).

    Teardown is its own task so that every detach is done and recorded before any node attaches (an
    RWO volume follows its pod: reconciler.go detaches before it attaches). Attach, mount and expansion
    are one task: on one node they follow each other in order. Only a filesystem whose backing volume
    another node grows in this plan waits for a task of its own.

    Only when the plan has controller calls of a driver whose Controller service runs on a host of the inventory
    (plan/remote_controller.py), the ``controller`` task (its ``hosts``) comes between the teardown and the
    setup: ControllerUnpublishVolume after the nodes are done, ControllerPublishVolume before they stage and
    publish, ControllerExpandVolume before they grow (the external-attacher and -resizer act between the kubelet's
    teardown and its setup). A plan without such calls runs the tasks it always ran."""
    # one pass over the plan (128,400 steps at the envelope: the run's start reads them all)
    kinds, grown_on, controllers, grown_by_node = set(), {}, set(), []
    for step in plan or ():
        kind = (step.get("action"), step.get("target"))
        host = step.get("controller_host")
        if host:
            controllers.add(host)
        if kind == EXPAND_CONTROLLER:
            if host:
                continue  # the controller host's: no node phase
            grown_on[step["unique_volume_name"]] = step["node"]
        elif kind == EXPAND_NODE:
            grown_by_node.append(step)
        kinds.add(kind)
    controllers = sorted(controllers)
    after = any(grown_on.get(step["unique_volume_name"], step["node"]) != step["node"] for step in grown_by_node)
    setup = [phase.name for phase in phases.PHASES if not phase.teardown and kinds & set(phase.step_kinds)
             and not (after and phase.name == "expand_node")]
    teardown = any(kinds & set(phase.step_kinds) for phase in phases.PHASES if phase.teardown)
    sequence = ([{"name": "teardown", "phases": ["teardown"]}] if teardown else []) + \
        ([{"name": phases.CONTROLLER_TASK, "phases": [], "hosts": controllers}] if controllers else []) + \
        ([{"name": "setup", "phases": setup}] if setup else []) + \
        ([{"name": "expand_node", "phases": ["expand_node"]}] if after else [])
    return {"teardown": teardown, "setup": setup, "expand_node_after": after, "sequence": sequence}


def initial_run_state(plan_result, carried=None, tasks=None):
    """The run's state before its first node task, the role's one variable for the run: {tasks, failures, blocked,
    errors, pending, records} (``pending``: the node-side grows the nodes reported pending, outcome.task_outcome).
    ``tasks`` are the node tasks the plan needs, in order (run_tasks' sequence, with the provisioner's:
    run/provision_outcome.py). Nothing has failed yet but the nodes whose state could not be gathered (the plan's
    ``node_errors``): they fail the run at its end, and the planner already blocked what needs them.
    ``carried``: the errors and blocked entries of this run's provisioning, when it starts again on the plan made
    after it. ``tasks``: the run's node tasks when the caller has them already (a check-mode run's replay: the plan is
    not walked again for them)."""
    plan_result = plan_result or {}
    carried = carried or {}
    sequence = tasks if tasks is not None else provision_outcome.with_storage_tasks(
        plan_result, run_tasks(plan_result.get("plan"))["sequence"])
    return {"tasks": sequence, "failures": {"nodes": {}, "volumes": {}},
            "blocked": list(carried.get("blocked") or ()),
            "errors": list(carried.get("errors") or ()) + list(plan_result.get("node_errors") or ()), "pending": [],
            "records": []}


def run_step(plan_result, state=None, task=None, results=None, check_mode=False, carried=None, tasks=None):
    """One step of a reconcile run on the controller: the run's state after it and the records it writes, at once.

    The first step (``state`` None) starts the run (initial_run_state) and writes when the planner saw blocked
    detaches first requested and the volumes in use that node status lacks (detach_request_records). Every later
    step follows the node task named ``task``, whose ``results`` are node_results' {node: task result}: the state
    after it (run_state_after) and the records of what its nodes did. When the next node task is the setup, its
    attach and resize intents (attach_intents, with the failures so far) join the same write, after the teardown's
    records: every detach and every intent is in the store before any node attaches, and the stores apply them in
    this order (the API store writes the releases, answered, before it creates the intents: k8s_writes.py), so
    an RWO volume is never recorded attached to two nodes.

    Returns (state, records, the node tasks still to run). In check mode the node tasks run in the node modules'
    check mode (they verify and act on nothing) and nothing is written: no records. ``tasks``: a check's node tasks
    when the caller has them already (kept in its outline record: run/plan_record.py start_of), so that the first
    step does not walk the plan for them."""
    if state is None:
        # in check mode the node tasks (and the controller's), checked in the node modules' check mode; nothing is
        # provisioned or deleted in check mode: the plan's table shows those calls
        if check_mode and tasks is None:
            tasks = run_tasks(plan_result.get("plan"))["sequence"]
        state = initial_run_state(plan_result, carried, tasks=tasks if check_mode else None)
        del state["records"]
        records = detach_request_records(plan_result)
        upcoming = state["tasks"]
    else:
        names = [each["name"] for each in state["tasks"]]
        if task not in names:
            raise ValueError("node task %r is not one of this run's node tasks (%s)" % (task, ", ".join(names)))
        position = names.index(task)
        if task == phases.CONTROLLER_TASK:
            state = controller_outcome.controller_state_after(plan_result, results, state)
        elif task in provision_outcome.KEYS:
            state = provision_outcome.storage_state_after(plan_result, task, results, state)
        else:
            state = run_state_after(plan_result, state["tasks"][position]["phases"], results, state)
        records = state.pop("records")
        upcoming = state["tasks"][position + 1:]
    if check_mode:
        return state, [], upcoming
    # the intents before the first task that attaches or grows (the controller task, else the setup), once
    first = next((each["name"] for each in state["tasks"] if each["name"] in (phases.CONTROLLER_TASK, "setup")), None)
    if upcoming and upcoming[0]["name"] == first:
        records = list(records) + attach_intents(plan_result, state["failures"])
    return state, records, upcoming


def run_state_after(plan_result, phases, results, state):
    """The run's state after one node task (task_outcome): the failures the later tasks must not attempt, the
    steps blocked and the node errors so far, and this task's ``records`` to write."""
    outcome = task_outcome(plan_result, phases, results, state["failures"])
    return {"tasks": state["tasks"], "failures": outcome["failures"],
            "blocked": list(state["blocked"]) + outcome["blocked"], "errors": list(state["errors"]) + outcome["errors"],
            "pending": list(state.get("pending") or ()) + outcome["pending"], "records": outcome["records"]}


def attach_intents(plan_result, failures=None):
    """``attach_intent`` records for the attachments the setup task is about to make, written before it runs:
    the A/D controller creates the VolumeAttachment (attached: false) before the attacher acts, so a run killed
    between a node's attach and its record never leaves an attachment the cluster does not know of."""
    plan = plan_view.as_view(plan_result)
    records = []
    run_nodes = plan_result.get("run_nodes") if isinstance(plan_result, dict) else None
    run_nodes = None if run_nodes is None else frozenset(run_nodes)  # one lookup per step, whatever the fleet's size
    for step in plan.steps("attach", None, failures):
        if run_nodes is not None and step["node"] not in run_nodes and not step.get("csi_node_id"):
            # a node outside this run (not in the play, --limit): no task of this run attaches it, so no intent is
            # written for it (a controller host that publishes to it knows its CSI node id, and gets one)
            continue
        item = plan.item(step)
        records.append({"type": "attach_intent", "node": step["node"], "pv_name": item["pv_name"],
                        "driver": item["driver"], "volume_handle": item["volume_handle"]})
    # RecoverVolumeExpansionFailure: the claim says an expansion is under way before it starts. A claim the
    # controller grows first goes ControllerResizeInProgress -> NodeResizePending (its record) -> done.
    growing = set()
    remote = [step for host in sorted(plan.by_controller) for step in plan.controller_steps(host, failures)
              if phases.step_kind(step) == ("expand", "controller")]
    for steps, stage in ((remote + plan.steps("expand_controller", None, failures), "controller"),
                         (plan.steps("expand_node", None, failures), "node")):
        for step in steps:
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
    # the kubelet's CSI registration of the nodes' external plugins (plan/registration.py): CSINode, labels; then
    # the claims let go, the PVs Released and the provisioning intents (plan/storage_plan.py)
    records.extend(plan_result.get("registrations") or ())
    records.extend(plan_result.get("storage_records") or ())
    return records
