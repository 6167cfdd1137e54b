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
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor, plan_record, run_report

from ansible_collections.kubevol.volumes.plugins.module_utils.records import record_task
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import CLUSTER_STORE_REQUIRED_IF

TASKS = list(phases.NODE_TASKS) + [phases.CONTROLLER_TASK, "provision", "delete"]
REQUIRED_IF = CLUSTER_STORE_REQUIRED_IF + [("after", task, ["state", "results"]) for task in TASKS]
RUN_KEYS = ("tasks", "failures", "blocked", "errors")


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
    state = params.get("state")
    if params["after"] != "plan" and any(key not in state for key in RUN_KEYS):
        raise KubevolError("reconcile_run: state is not a run state (it needs %s): pass the result this module "
                           "returned for the step before" % ", ".join(RUN_KEYS))


def run(params, check_mode=False, diff=False, keep_alive=None):
    """The step's result. ``keep_alive``: a list that keeps the plan read back, for a caller in a process that exits
    right after (the action plugin's worker): the cyclic GC stays paused while the plan is read and used (at 5,000
    nodes it is millions of acyclic objects, which every collection would walk), and they are not freed one by
    one (cluster.gc_paused's freeze, as volume_reconcile_plan does)."""
    if keep_alive is None:
        return _run(params, check_mode, diff, None)
    with gc_paused(freeze=True):
        return _run(params, check_mode, diff, keep_alive)


def _run(params, check_mode, diff, keep_alive):
    # the role passes the plan task's output=record result: the plan is read here, by handle, not templated
    handle = params["plan"].get("record") if isinstance(params["plan"], dict) else None
    # (a record in the Kubernetes API is read with this task's own store options: never carried in the handle)
    params = dict(params, plan=plan_record.plan_of(params["plan"], params))
    if keep_alive is not None:
        keep_alive.append(params["plan"])
    _check_input(params)
    state = None if params["after"] == "plan" else dict((key, params["state"][key]) for key in RUN_KEYS)
    if state is not None:
        state["pending"] = list(params["state"].get("pending") or ())  # the grows pending so far (outcome.py)
    try:
        state, records, upcoming = executor.run_step(params["plan"], state, params["after"], params.get("results"),
                                                     check_mode, carried=params.get("carried"))
    except (KeyError, TypeError, ValueError) as err:
        raise KubevolError("reconcile_run: cannot advance the run after %s: %s (a malformed plan, state or node "
                           "results). Nothing was written: pass this run's volume_reconcile_plan result, the result "
                           "reconcile_run returned for the step before, and node_results over the node task's "
                           "results, as the reconcile role does" % (params["after"], err))
    result = dict(state, changed=False, changes=[], count=0)  # after provision: with its ``carried``
    if records:
        written = record_task.run(dict(params, records=records), check_mode=check_mode, diff=diff)
        result.update(changed=written["changed"], changes=written["changes"], count=written["count"])
        if diff:
            result["diff"] = written["diff"]
    if not upcoming:
        # the run has no node task left: what it did, per node of the run (run/run_report.py)
        result["summary"] = run_report.run_summary(params["plan"], state["errors"], state["blocked"], check_mode,
                                                   params["plan_shown"], pending=state.get("pending"))
        plan_record.finish(handle, params)  # the run is done with its plan: the record may be pruned from now on
    return result
