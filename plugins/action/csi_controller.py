# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""csi_controller: one controller host's share of a plan's controller calls (run/controller_outcome.py), run there
by module csi_controller_calls.

The reconcile role delegates this task to each controller host (delegate_to): the module runs over that host's own
connection, as Ansible runs any module. Here, on the Ansible controller: the host's operations cut from the plan
minus the run's failures, and the Secrets the PVs name read from the cluster store (run/csi_secrets.py), passed to
the module's no_log option. An unreachable host fails its operations, named, in the result."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.node.node_args import (
    CSI_CONTROLLER_LEGACY, csi_controller_argspec, task_settings)
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record
from ansible_collections.kubevol.volumes.plugins.module_utils.run.controller_outcome import controller_work
from ansible_collections.kubevol.volumes.plugins.module_utils.run.csi_secrets import secrets_by_volume
from ansible_collections.kubevol.volumes.plugins.module_utils.run.run_lock_task import kept_renewed
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import with_group_defaults
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import unique_name_of
from ansible_collections.kubevol.volumes.plugins.plugin_utils import task_args

ARGSPEC = csi_controller_argspec()


def _refused_operations(ops, refused, host):
    """(the operations to run, a failure entry for each operation of a volume refused for its Secret)."""
    reasons = dict((unique_name_of(item), err.msg) for item, err in refused)
    kept = [op for op in ops if op["unique_volume_name"] not in reasons]
    return kept, [{"op": op["op"], "node": op["node"], "unique_volume_name": op["unique_volume_name"],
                   "pv_name": op["volume"].get("pv_name"),
                   "msg": "controller host %s did not call the %s of volume %s for node %s: %s"
                          % (host, op["op"], op["volume"].get("pv_name"), op["node"], reasons[op["unique_volume_name"]])}
                  for op in ops if op["unique_volume_name"] in reasons]


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        params = task_args.validated(self._task.args, ARGSPEC, "kubevol.volumes.csi_controller")
        host = params["controller_host"]
        # as node_phases: the play's module_defaults for the cluster_store group, then cluster_store over them
        params["cluster_store"] = with_group_defaults(params["cluster_store"], self._task.module_defaults,
                                                      self._templar.template)
        try:
            # the node's settings group, checked once here, handed whole to the module on the controller host
            settings = task_settings(params, CSI_CONTROLLER_LEGACY)
            # (a check-mode run's outline keeps whole every node a controller host acts for)
            ops = controller_work(plan_record.plan_of(params["plan"], params["cluster_store"], outline=True), host,
                                  params["failures"])
        except KubevolError as err:
            result.update(failed=True, msg=words.say("kubevol.volumes.csi_controller on %s: %s" % (host, err.msg),
                                                     words.ROLE))
            return result
        # a volume whose Secret cannot be had fails its operations alone (its reference named, never a value); the
        # host's other operations run (no_log in the module)
        volumes, refused = secrets_by_volume([op["volume"] for op in ops], params["cluster_store"])
        ops, refusals = _refused_operations(ops, refused, host)
        running = set(op["unique_volume_name"] for op in ops)
        volumes = [volume for volume in volumes if unique_name_of(volume) in running]  # one per operation, in order
        if not ops:
            result.update(changed=False, operations=[], failures=refusals, controller_host=host)
            if refusals:
                result.update(failed=True, msg="; ".join(entry["msg"] for entry in refusals))
            return result
        args = dict(settings, controller_host=host, volumes=volumes,
                    operations=[{"op": op["op"], "node": op["node"], "node_id": op["node_id"]} for op in ops])
        renewal_warnings = []
        try:
            # the run's lock renewed while the calls run, as during a node task (run_lock_task.kept_renewed)
            with kept_renewed(params["cluster_store"], params["run_lock"], renewal_warnings):
                outcome = self._execute_module(module_name="kubevol.volumes.__internal.csi_controller_calls", module_args=args,
                                               task_vars=task_vars)
        except AnsibleConnectionFailure as err:
            outcome = {"unreachable": True, "failed": True, "msg": "controller host %s is unreachable: %s" % (host, err)}
        result.update(outcome)
        if refusals:
            result.update(failed=True, failures=list(outcome.get("failures") or ()) + refusals,
                          msg="; ".join(([outcome["msg"]] if outcome.get("failed") and outcome.get("msg") else [])
                                        + [entry["msg"] for entry in refusals]))
        if renewal_warnings:
            result["warnings"] = ["controller host %s: %s" % (host, w) for w in renewal_warnings]
        result["controller_host"] = host
        return result
