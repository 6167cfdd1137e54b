# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volume_reconcile_plan, planned inside the controller's own process (plugin_utils/in_process.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import json

from ansible import constants as C

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_task import (
    REQUIRED_IF, argspec, run)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import utc_now
from ansible_collections.kubevol.volumes.plugins.plugin_utils import payloads
from ansible_collections.kubevol.volumes.plugins.plugin_utils.in_process import InProcessAction


# The parsed cluster and the full plan of each run, never freed: the worker process running this action exits right
# after the task (Ansible forks one per task), and freeing millions of objects one by one only delays that.
_KEEP_ALIVE = []


def native(value):
    """Objects given inline (``cluster``) as the plain types JSON gives: through Ansible's templating they come as its
    own tagged types (a ``str`` subclass, ...), which the model's field checks refuse (they test the exact type, for
    speed), and a date YAML left unquoted as a ``datetime``, in ISO 8601 as Ansible passes it to a module."""
    return json.loads(json.dumps(value, default=_iso))


def _iso(value):
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    raise InvalidInput(field="cluster", value=value, reason="is not a value a Kubernetes object holds (objects as "
                                                            "kubectl get -o yaml prints them)")


class ActionModule(InProcessAction):
    NAME = "kubevol.volumes.volume_reconcile_plan"

    def argspec_kwargs(self):
        return dict(argument_spec=argspec(), required_if=REQUIRED_IF)

    def run_task(self, params, check_mode, diff):
        if params.get("cluster") is not None:
            params = dict(params, cluster=native(params["cluster"]))
        # A reconcile run's plan (output=record with the nodes' facts: the reconcile role's) is followed by its node
        # tasks, whose setup runs node_volume_setup on each node that attaches and mounts: its payload is built while
        # this plans, on what the controller leaves of its CPUs, and dropped when the plan has nothing to do.
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
        if not (result.get("counts") or {}).get("steps"):
            payloads.cancel(ahead)
        return result
