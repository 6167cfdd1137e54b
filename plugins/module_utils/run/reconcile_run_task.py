# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""reconcile_run's arguments and its one call: advance the run's state one step and write that step's records.

The reconcile role runs it once after the plan and once after each node task (executor.run_step), in the
controller's own process (plugins/action/reconcile_run.py). One task per step: the state, the records of what
the nodes did, the next setup's intents and, at the run's end, its summary were four role tasks before. The
records go to the store in run_step's order, the teardown's before the intents; the Kubernetes API store keeps
that order across its requests (stores/k8s_writes.py write_stages).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import gc_paused
from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor, node_results, plan_record, run_report

from ansible_collections.kubevol.volumes.plugins.module_utils.run import record_task
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import CLUSTER_STORE_REQUIRED_IF

TASKS = list(phases.NODE_TASKS) + [phases.CONTROLLER_TASK, "provision", "delete"]
REQUIRED_IF = CLUSTER_STORE_REQUIRED_IF + [("after", task, ["state", "results"]) for task in TASKS]
RUN_KEYS = ("tasks", "failures", "blocked", "errors")
# a controller task's publish_context for the setup; in check mode, the results of the node tasks checked so far
OPTIONAL_KEYS = ("published", "checked", "stopped", "summary", "pending")


def argspec():
    spec = record_task.argspec()
    del spec["records"]
    spec.update(
        plan=dict(type="dict", required=True),
        after=dict(type="str", choices=["plan"] + TASKS, default="plan"),
        state=dict(type="dict"),
        results=dict(type="dict"),
        plan_shown=dict(type="bool", default=True),
        # after=plan on the plan made again after this run's provisioning: the provisioning's errors and blocked
        # entries (the provision step's ``carried``), kept in the run's state
        carried=dict(type="dict"),
    )
    return spec


def _check_input(params):
    plan = params["plan"]
    if "plan" not in plan or "volume_items" not in plan:
        raise KubevolError("reconcile_run: plan is not a kubevol.volumes.volume_reconcile_plan result (with "
                           "output=full, or output=record: its record is read back by handle)")


def run(params, check_mode=False, diff=False, keep_alive=None, local_tmp=None):
    """The step's result. ``keep_alive``: a list that keeps the plan read back, for a caller in a process that exits
    right after (the action plugin's worker): the cyclic GC stays paused while the plan is read and used (at 5,000
    nodes it is millions of acyclic objects, which every collection would walk), and they are not freed one by
    one (cluster.gc_paused's freeze, as volume_reconcile_plan does). ``local_tmp``: Ansible's local temporary
    directory, where node_phases kept each node's phase results (run/node_results.py)."""
    if keep_alive is None:
        return _run(params, check_mode, diff, None, local_tmp)
    with gc_paused(freeze=True):
        return _run(params, check_mode, diff, keep_alive, local_tmp)


def _task_phases(state, task):
    for each in (state or {}).get("tasks") or ():
        if each.get("name") == task:
            return each.get("phases") or []
    return []


def _results(params, state, task, results):
    """The node task's {node: result}, each node's phase results read back from where node_phases kept them."""
    run_id = params.get("_run_id")
    if task not in phases.NODE_TASKS:  # the controller's, the provisioner's: their results are in their task's
        return results
    return node_results.with_kept(results, params.get("_local_tmp"), run_id, _task_phases(state, task))


def _unreachable(results):
    """{node: reason} of the nodes a node task could not reach (or gave up on): nothing more is sent to them."""
    found = {}
    for node, result in (results or {}).items():
        if isinstance(result, dict) and (result.get("unreachable") or result.get("timedout")):
            found[node] = "node unreachable: %s" % (result.get("msg") or "timed out")
    return found


def _checked(params, state):
    """A check-mode step after a node task that is not the run's last: nothing is written, so the plan is not read
    (at 5,000 nodes each read is seconds); the task's results are kept for the last step, which reads the plan once
    and turns every task's results into the report, in order. Only the nodes found unreachable are carried at once:
    nothing more is sent to them."""
    state = dict(state)
    state["checked"] = list(state.get("checked") or ()) + [{"task": params["after"], "results": params.get("results")}]
    failures = dict(state["failures"], nodes=dict(state["failures"].get("nodes") or {}))
    if params["after"] in phases.NODE_TASKS:
        failures["nodes"].update(_unreachable(params.get("results")))
    state["failures"] = failures
    return dict(state, changed=False, changes=[], count=0)


def _replay(plan, params, state, check_mode):
    """The run's state after every node task a check-mode run checked: its steps' outcomes, in order, from the start."""
    replayed = executor.initial_run_state(plan, tasks=state["tasks"])
    del replayed["records"]
    for each in list(state.get("checked") or ()) + [{"task": params["after"], "results": params.get("results")}]:
        replayed, _records, _upcoming = executor.run_step(plan, replayed, each["task"],
                                                          _results(params, replayed, each["task"], each["results"]),
                                                          check_mode)
    return replayed


def _started_from_outline(params):
    """A check-mode run's start from its outline record's rest alone (plan_record.start_of): the node tasks the plan
    needs were kept there when it was written, and a check writes no record, so no step is read. None when the
    record has none kept or the plan needs no node task (the summary is given now: the whole plan is read)."""
    start = plan_record.start_of(params["plan"])
    if start is None or not start["tasks"]:
        return None
    state, _records, _upcoming = executor.run_step(start["rest"], check_mode=True, carried=params.get("carried"),
                                                   tasks=start["tasks"])
    return dict(state, changed=False, changes=[], count=0)


def _run(params, check_mode, diff, keep_alive, local_tmp):
    # the role passes the plan task's output=record result: the plan is read here, by handle, not templated
    handle = params["plan"].get("record") if isinstance(params["plan"], dict) else None
    state = None if params["after"] == "plan" else params["state"]
    if state is not None and any(key not in state for key in RUN_KEYS):
        raise KubevolError("reconcile_run: state is not a run state (it needs %s): pass the result this module "
                           "returned for the step before" % ", ".join(RUN_KEYS))
    if state is not None:
        state = dict((key, state[key]) for key in RUN_KEYS + OPTIONAL_KEYS if key in state)
    params = dict(params, _local_tmp=local_tmp, _run_id=handle.get("run_id") if isinstance(handle, dict) else None)
    if state is not None and state.get("stopped"):
        # the run stopped (its records could not be written): the later steps pass its state on, writing nothing
        return dict(state, changed=False, changes=[], count=0)
    names = [each.get("name") for each in (state or {}).get("tasks") or ()]
    if check_mode and state is not None and params["after"] in names and params["after"] != names[-1]:
        return _checked(params, state)
    if check_mode and state is None:
        started = _started_from_outline(params)
        if started is not None:
            return started
    # (a record in the Kubernetes API is read with this task's own store options: never carried in the handle; a
    # check-mode run's record is an outline of the nodes outside its hosts, all that this run's steps read of them)
    params = dict(params, plan=plan_record.plan_of(params["plan"], params, outline=True))
    if keep_alive is not None:
        keep_alive.append(params["plan"])
    _check_input(params)
    try:
        if check_mode and state is not None and params["after"] in names:
            state, records, upcoming = _replay(params["plan"], params, state, check_mode), [], []
        else:
            results = _results(params, state, params["after"], params.get("results"))
            state, records, upcoming = executor.run_step(params["plan"], state, params["after"], results, check_mode,
                                                         carried=params.get("carried"))
    except (KeyError, TypeError, ValueError) as err:
        raise KubevolError("reconcile_run: cannot advance the run after %s: %s (a malformed plan, state or node "
                           "results); pass this run's volume_reconcile_plan result, the result reconcile_run returned "
                           "for the step before, and node_results over the node task's results, as the reconcile role "
                           "does" % (params["after"], err))
    result = dict(state, changed=False, changes=[], count=0)  # after provision: with its ``carried``
    if records:
        try:
            written = record_task.run(dict(params, records=records), check_mode=check_mode, diff=diff)
        except KubevolError as err:
            # No host failed: the run's record could not be written (the store, the run lock). Nothing more runs on
            # the nodes, whose later steps would build on what is not recorded; the report says it once and the run
            # fails where no host is blamed (roles/reconcile/tasks/main.yml).
            result["stopped"] = True
            result["errors"] = list(result["errors"]) + [{
                "node": None, "phase": "record", "volumes": [],
                "msg": "the records %s could not be written, so the run stopped before its next node task: %s"
                       % ("of the plan" if params["after"] == "plan" else "after the %s task" % params["after"],
                          err.msg)}]
            upcoming = []
            if isinstance(result.get("carried"), dict):  # after provision: the run goes on with the plan made again
                result["carried"] = dict(result["carried"], errors=list(result["carried"].get("errors") or ())
                                         + result["errors"][-1:])
        else:
            result.update(changed=written["changed"], changes=written["changes"], count=written["count"])
            if diff:
                result["diff"] = written["diff"]
    if not upcoming:
        # the run has no node task left: what it did, per node of the run (run/run_report.py)
        result.pop("checked", None)
        result["summary"] = run_report.run_summary(params["plan"], result["errors"], result["blocked"], check_mode,
                                                   params["plan_shown"], pending=result.get("pending"))
        if not result.get("stopped"):
            # What stopped later steps (``failures``) has no later step to stop, and every error is in the
            # summary: with many nodes outside the run the two are most of the result, which Ansible's register walks
            # value by value and each callback copies (docs/performance.md, the envelope). A stopped run's result is
            # passed on as a state, whole.
            result.pop("failures", None)
            result.pop("errors", None)
        plan_record.finish(handle, params)  # the run is done with its plan: the record may be pruned from now on
    return result
