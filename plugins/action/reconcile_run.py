# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""reconcile_run, in the controller's own process (plugin_utils/in_process.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible import constants as C

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases, words
from ansible_collections.kubevol.volumes.plugins.module_utils.run.reconcile_run_task import REQUIRED_IF, argspec, run
from ansible_collections.kubevol.volumes.plugins.plugin_utils import payloads
from ansible_collections.kubevol.volumes.plugins.plugin_utils.in_process import InProcessAction

# The plan each step reads back, never freed: the worker process running this action exits right after the task
# (Ansible forks one per task), and freeing millions of objects one by one only delays that.
_KEEP_ALIVE = []


class ActionModule(InProcessAction):
    NAME = "kubevol.volumes.reconcile_run"
    WORDS = words.ROLE  # the reconcile role's own step: its report names the role's variables

    def argspec_kwargs(self):
        return dict(argument_spec=argspec(), required_if=REQUIRED_IF)

    def run_task(self, params, check_mode, diff):
        # node_phases kept each node's phase results in Ansible's local temporary directory (run/node_results.py)
        result = run(params, check_mode=check_mode, diff=diff, keep_alive=_KEEP_ALIVE, local_tmp=C.DEFAULT_LOCAL_TMP)
        if params["after"] == "plan":
            # the node modules of the run's node tasks: their payloads are built while the run goes on to them
            payloads.build_ahead(self, [module for task in result.get("tasks") or () if task.get("name") in
                                        phases.NODE_TASKS for module in phases.task_modules(task.get("phases") or ())],
                                 self.task_vars)
        return result
