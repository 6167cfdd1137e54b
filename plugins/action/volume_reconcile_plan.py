# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volume_reconcile_plan, planned inside the controller's own process (plugin_utils/in_process.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible import constants as C

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_task import (
    REQUIRED_IF, argspec, run)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import utc_now
from ansible_collections.kubevol.volumes.plugins.plugin_utils import payloads
from ansible_collections.kubevol.volumes.plugins.plugin_utils.in_process import InProcessAction, native


# The parsed cluster and the full plan of each run, never freed: the worker process running this action exits right
# after the task (Ansible forks one per task), and freeing millions of objects one by one only delays that.
_KEEP_ALIVE = []


class ActionModule(InProcessAction):
    NAME = "kubevol.volumes.volume_reconcile_plan"

    def argspec_kwargs(self):
        return dict(argument_spec=argspec(), required_if=REQUIRED_IF)

    def run_task(self, params, check_mode, diff):
        if params.get("cluster") is not None:  # objects given inline: plain data, as a module gets them
            params = dict(params, cluster=native(params["cluster"], "cluster"))
        # A reconcile run's plan (output=record with the nodes' facts: the reconcile role's) is followed by its node
        # tasks, whose setup runs node_volume_setup on each node that attaches and mounts: its payload is built while
        # this plans, on what the controller leaves of its CPUs, and dropped when no node of the plan will run it.
        ahead = payloads.build_ahead(self, [phases.SETUP_MODULE], self.task_vars) if (
            params.get("output") == "record" and params.get("node_facts") is not None) else None
        try:
            # it only reads the cluster; output=record writes the plan, in check mode into Ansible's local temporary
            # directory on the controller (removed when ansible-playbook exits), never beside the cluster's state
            result = run(params, utc_now(), keep_alive=_KEEP_ALIVE, check_mode=check_mode,
                         local_tmp=C.DEFAULT_LOCAL_TMP)
        except BaseException:
            payloads.cancel(ahead)
            raise
        if not (result.get("counts") or {}).get("steps") or not phases.setup_module_wanted(result.get("summary")):
            payloads.cancel(ahead)
        return result
