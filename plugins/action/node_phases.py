# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_phases: run one node's share of one or more phases of a plan, over that host's own connection.

The reconcile role calls this once per host per task instead of one task per phase: the host's
slice of the plan is cut here (module_utils/run/executor.py), each phase with work is one execution
of its public node module, and a volume that failed in an earlier phase on this node is not
carried into the next one. Nothing runs when the host has no work. What the nodes did is turned
into cluster records once, on the controller, by executor.task_outcome over all hosts' results.

Each node module runs as Ansible runs any module an action plugin calls (ActionBase._execute_module): the
module and what it imports travel in an AnsiballZ payload, so pipelining, become, no_log, no_target_syslog,
check mode and diff behave as Ansible defines them, and any strategy (linear, free, Mitogen's) can run it.
What makes a run fast is Ansible's own settings: pipelining and an SSH ControlPersist (docs/performance.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible import constants as C
from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases, words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor, node_results, plan_record
from ansible_collections.kubevol.volumes.plugins.module_utils.run.csi_secrets import secrets_by_volume, with_refused
from ansible_collections.kubevol.volumes.plugins.module_utils.run.controller_outcome import with_published
from ansible_collections.kubevol.volumes.plugins.module_utils.node.node_args import (
    NODE_PHASES_LEGACY, node_phases_argspec, task_settings)
from ansible_collections.kubevol.volumes.plugins.module_utils.run.run_lock_task import kept_renewed
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import with_group_defaults
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import unique_name_of
from ansible_collections.kubevol.volumes.plugins.plugin_utils import task_args


def module_args(phase, node_name, items, stale, forced, params):
    """The arguments of one phase's node module call: the node's settings group whole, the phase's own."""
    args = dict(params["settings"], volumes=items, node_name=node_name, words=words.ROLE)
    args.update(phases.BY_NAME[phase].module_args)
    if phase == "attach":
        args["provision"] = params["provision"]
    if phase == "teardown":
        args["stale_paths"] = stale
        args["force"] = forced
    return args


def _settings(params):
    """The node's settings group, checked once here on the controller (node_args.task_settings: driver_options with the
    deprecated loop_pools folded in) and handed whole to every node module this task runs; returns the deprecations
    to report."""
    try:
        params["settings"] = task_settings(params, NODE_PHASES_LEGACY)
    except KubevolError as err:
        raise AnsibleActionFail(words.say("kubevol.volumes.node_phases: %s" % err.msg, words.ROLE))
    if params.get("loop_pools") is None and (params.get("node_settings") or {}).get("loop_pools") is None:
        return []
    return [{"msg": "node_phases: loop_pools is deprecated: use driver_options' loop.kubevol.io pools",
             "version": "2.0.0", "collection_name": "kubevol.volumes"}]


def _named(outcome, items):
    """A failed module result that names no volume (the module died: killed, a lost connection) with the volumes it
    had, so that the node's message says what was not done."""
    if not (outcome.get("failed") or outcome.get("unreachable")) or outcome.get("failures") or not items:
        return outcome
    names = []
    for item in items:
        if item.get("pv_name") not in names:
            names.append(item.get("pv_name"))
    return dict(outcome, msg="%s (volumes not done: %s)" % (outcome.get("msg") or "failed", ", ".join(map(str, names))))


def _failed_here(outcome):
    """A phase result that failed on the node. A grow the node left pending (the claim keeps FileSystemResizePending
    and is retried: rules_expand.py) is not a failure of the node: a result whose every failure is ``pending``."""
    if not (outcome.get("failed") or outcome.get("unreachable")):
        return False
    entries = outcome.get("failures") or ()
    return outcome.get("unreachable") or not entries or not all(
        isinstance(entry, dict) and entry.get("pending") for entry in entries)


def phase_status(phase_results):
    """{phase: ok, failed or unreachable}: what each phase with work came to on the node."""
    return dict((phase, "unreachable" if outcome.get("unreachable") else "failed" if _failed_here(outcome) else "ok")
                for phase, outcome in phase_results.items())


def node_verdict(phase_results):
    """What this host's task says of the node: {} when every phase with work succeeded; else ``failed`` (or
    ``unreachable``, when the node could not be reached) with the node's own message, each phase's once."""
    failed = [(phase, outcome) for phase, outcome in phase_results.items() if _failed_here(outcome)]
    if not failed:
        return {}
    msgs = []
    for _phase, outcome in failed:
        msg = outcome.get("msg") or "failed"
        if msg not in msgs:
            msgs.append(msg)
    if any(outcome.get("unreachable") for _phase, outcome in failed):
        return {"unreachable": True, "msg": "; ".join(msgs)}
    return {"failed": True, "msg": "; ".join(msgs)}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        # the reconcile role's own engine: what it says names the role's variables (common/words.py)
        try:
            return words.say_all(self._run(tmp, task_vars), words.ROLE, skip=("node_facts",))
        except AnsibleActionFail as err:
            raise AnsibleActionFail(words.say(str(err.message), words.ROLE))

    def _run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        params = task_args.validated(self._task.args, node_phases_argspec(), "kubevol.volumes.node_phases")
        node = params["node_name"]
        # the play's module_defaults for the cluster_store group apply to the store options here too: the plan
        # record's share, the run lock's renewal and CSI secrets are read with what the store modules were given
        params["cluster_store"] = with_group_defaults(params["cluster_store"], self._task.module_defaults,
                                                      self._templar.template)
        deprecations = _settings(params)
        if "facts" in params["phases"]:
            return self._facts(result, params, task_vars)
        if params["plan"] is None:
            raise AnsibleActionFail("kubevol.volumes.node_phases: plan is required for the phases %s (only facts "
                                    "runs without one)" % ", ".join(params["phases"]))
        # a whole plan result is cut here, a record result (output=record, what the role passes) read from this node's
        # own part of the record only (a file, or its ConfigMaps, read with the store options of cluster_store)
        try:
            plan = executor.PlanView(plan_record.node_plan_of(params["plan"], node, params["cluster_store"]))
        except KubevolError as err:
            raise AnsibleActionFail("kubevol.volumes.node_phases: node %s: %s" % (node, err.msg))
        failures = params["failures"]
        # A long node task renews the run's lock as it goes (run_lock_task.kept_renewed): no second run takes it
        # over as expired while this one still works on the nodes.
        renewal_warnings = []
        with kept_renewed(params["cluster_store"], params["run_lock"], renewal_warnings):
            phase_results, executed = self._run_phases(plan, params["phases"], node, failures, params, task_vars)
        result.update(changed=any(r.get("changed") for r in phase_results.values()), module_runs=executed,
                      node_name=node, phase_status=phase_status(phase_results))
        run_id = ((params["plan"].get("record") or {}).get("run_id")
                  if isinstance(params["plan"].get("record"), dict) else None)
        if run_id is not None and phase_results:
            # each volume's results are the record step's (run/node_results.py); this host's result is what Ansible
            # prints for it: the node's own message, once
            node_results.save(C.DEFAULT_LOCAL_TMP, run_id, params["phases"], node, phase_results)
            result["phase_results_kept"] = True
        else:
            result["phase_results"] = phase_results
        if renewal_warnings:
            result["warnings"] = ["node %s: %s" % (node, warning) for warning in renewal_warnings]
        if deprecations:
            result["deprecations"] = deprecations
        # What failed on the node fails this host's task, with the node's own message; the role keeps the host in
        # the play (ignore_errors, ignore_unreachable) so that its other volumes' results are recorded, and its last
        # step fails it again for the play's recap (roles/reconcile/tasks/main.yml).
        verdict = node_verdict(phase_results)
        if verdict:
            result.update(verdict)
        return result

    def _facts(self, result, params, task_vars):
        """The node's actual state, as node_volume_info returns it (fs_sizes off: the planner does not read them).
        An unreachable host raises, as the module task would: the role reads it as a failed node."""
        if params["phases"] != ["facts"]:
            raise AnsibleActionFail("kubevol.volumes.node_phases: facts runs alone, not with %s"
                                    % ", ".join(p for p in params["phases"] if p != "facts"))
        outcome = self._execute(task_vars, "kubevol.volumes.node_volume_info",
                                dict(params["settings"], node_name=params["node_name"], fs_sizes=False, words=words.ROLE))
        result.update(outcome)
        result["module_runs"] = ["kubevol.volumes.node_volume_info"]
        return result

    def _execute(self, task_vars, module, args):
        """Node module ``module``'s result for ``args`` on this host, run as Ansible runs a module. A connection
        failure raises (AnsibleConnectionFailure), as it does for a module task."""
        return self._execute_module(module_name=module, module_args=args, task_vars=task_vars)

    def _run_phases(self, plan, names, node, failures, params, task_vars):
        """Run the node's share of the phases ``names`` over the host's connection, in the phase table's order:
        ({phase: module result}, modules run). A volume that failed in a phase is not carried into the next
        (executor.advance), and nothing more runs on a node found unreachable."""
        phase_results = {}
        executed = []
        setup = dict((phase, executor.phase_work(plan, phase, node, failures)[0]) for phase in names
                     if phase in phases.SETUP_PHASES)
        setup = dict((phase, items) for phase, items in setup.items() if items)
        if len(setup) > 1:
            # one execution for the node's attach, mount and expansion: fewer round trips; it runs the same loop
            phase_results, ran = self._setup(setup, node, params, task_vars)
            executed.extend(ran)
            names = [phase for phase in names if phase not in phases.SETUP_PHASES]
        carried = {"failures": failures}

        def work(phase):
            items, stale, forced = executor.phase_work(plan, phase, node, carried["failures"])
            return (items, stale, forced) if items or stale else None

        def run(phase, todo):
            module = phases.BY_NAME[phase].module
            # a volume whose Secret cannot be had fails alone (no value named); the node's others run
            items, refused = secrets_by_volume(todo[0], params["cluster_store"])  # no_log on the node modules
            outcome = {"changed": False, "volumes": []}
            try:
                if items or todo[1]:
                    executed.append(module)
                    if phase == "attach":
                        items = with_published(items, params["controller_published"], node)
                    outcome = self._execute(task_vars, module,
                                            module_args(phase, node, items, todo[1], todo[2], params))
            except KubevolError as err:
                outcome = {"failed": True, "msg": "%s: %s" % (module, err.msg)}
            except AnsibleConnectionFailure as err:
                # keep what the earlier phases did: it is recorded; this phase and the rest are not
                outcome = {"unreachable": True, "failed": True, "msg": "%s: %s" % (module, err)}
            outcome = with_refused(_named(outcome, items), module, node, refused)
            carried["failures"] = executor.advance(plan, phase, node, outcome, carried["failures"])
            return outcome

        phase_results.update(phases.run_in_order(names, work, run,
                                                 stop=lambda phase, outcome: node in carried["failures"]["nodes"]))
        return phase_results, executed

    def _setup(self, setup, node, params, task_vars):
        """The setup phases ({phase: items}) in one node_volume_setup execution: ({phase: result}, modules run)."""
        args = dict(params["settings"], node_name=node, words=words.ROLE)
        module = phases.SETUP_MODULE
        refused, ready = {}, {}
        for phase, items in setup.items():
            ready[phase], refused[phase] = secrets_by_volume(items, params["cluster_store"])  # no_log on the node
        # a volume refused in one phase (its Secret cannot be had) runs in none: mounting what was not attached
        # would fail on the node, and a phase that does not list it would count it as done
        gone = dict((unique_name_of(item), err) for found in refused.values() for item, err in found)
        for phase, items in ready.items():
            kept = [item for item in items if unique_name_of(item) not in gone]
            refused[phase].extend((item, gone[unique_name_of(item)]) for item in items if unique_name_of(item) in gone)
            if kept:
                args[phase] = {"volumes": kept}
                if phase == "attach":
                    args[phase]["volumes"] = with_published(kept, params["controller_published"], node)
        if not any(phase in args for phase in setup):  # every volume refused: nothing to run on the node
            return dict((phase, with_refused({"changed": False, "volumes": []}, module, node, refused[phase]))
                        for phase in setup), []
        if "attach" in args:
            args["attach"]["provision"] = params["provision"]
        try:
            outcome = self._execute(task_vars, module, args)
        except AnsibleConnectionFailure as err:
            outcome = {"unreachable": True, "failed": True, "msg": "%s: %s" % (module, err)}
        if outcome.get("failed") or "phase_results" not in outcome:
            # the execution as a whole failed (unreachable, a crash): every phase it had failed with it
            outcome = _named(outcome, [item for phase in setup if phase in args for item in args[phase]["volumes"]])
            return dict((phase, with_refused(dict(outcome, volumes=[]), module, node, refused[phase]))
                        for phase in setup), [module]
        results = outcome["phase_results"]
        return dict((phase, with_refused(results.get(phase) or {"changed": False, "volumes": []}, module, node,
                                         refused[phase])) for phase in setup), [module]
