# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volume_audit: the node's share per host (node_volume_audit over the host's own connection, judged against the
cluster store read in the controller's process), or the cluster's share once (run_once) from the hosts' results.
The decisions are module_utils/audit.py's; the calls module_utils/audit_task.py's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.kubevol.volumes.plugins.module_utils import audit_task, run_lock
from ansible_collections.kubevol.volumes.plugins.module_utils.errors import KubevolError


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        validated = ArgumentSpecValidator(audit_task.argspec(), required_if=audit_task.REQUIRED_IF).validate(
            self._task.args)
        if validated.error_messages:
            result.update(failed=True, msg="kubevol.volumes.volume_audit: %s" % "; ".join(validated.error_messages))
            return result
        params = validated.validated_parameters
        task_vars = task_vars or {}
        check_mode = bool(self._play_context.check_mode)
        try:
            if params["scope"] == "cluster":
                result.update(audit_task.cluster_scope(params, check_mode, owner=run_lock.owner(os.getppid())))
            else:
                node = params["node_name"] or task_vars.get("kubevol_node_name") or task_vars.get("inventory_hostname")
                result.update(audit_task.node_scope(params, node, lambda args: self._node_module(args, task_vars)))
        except KubevolError as err:
            result.update(err.to_result())
            result.update(failed=True, msg=err.msg)
        return result

    def _node_module(self, module_args, task_vars):
        try:
            return self._execute_module(module_name="kubevol.volumes.node_volume_audit", module_args=module_args,
                                        task_vars=task_vars)
        except AnsibleConnectionFailure as err:
            return {"unreachable": True, "msg": str(err)}
