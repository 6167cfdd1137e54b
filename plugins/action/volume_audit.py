# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volume_audit: the node's share per host (node_volume_audit over the host's own connection, judged against the
cluster store read in the controller's process), or the cluster's share once (run_once) from the hosts' results.
The decisions are module_utils/audit/audit.py's; the calls module_utils/audit/audit_task.py's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.audit import audit_task

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
from ansible_collections.kubevol.volumes.plugins.plugin_utils.in_process import InProcessAction


class ActionModule(InProcessAction):
    NAME = "kubevol.volumes.volume_audit"

    def argspec_kwargs(self):
        return dict(argument_spec=audit_task.argspec(), required_if=audit_task.REQUIRED_IF)

    def run_task(self, params, check_mode, diff):
        if params["scope"] == "cluster":
            return audit_task.cluster_scope(params, check_mode, owner=run_lock.owner(os.getppid()))
        task_vars = self.task_vars
        node = params["node_name"] or task_vars.get("kubevol_node_name") or task_vars.get("inventory_hostname")
        return audit_task.node_scope(params, node,
                                     lambda args: self.node_module("kubevol.volumes.node_volume_audit", args))
