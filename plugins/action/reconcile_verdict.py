# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""reconcile_verdict: the reconcile role's last step, on each host: fails the hosts whose node failed (unreachable,
those that could not be reached), so that the play's recap and retry file count exactly them.

The node tasks keep a failed host in the play (ignore_errors, ignore_unreachable) for its other volumes and the
run's records; this step gives the play's recap the truth at the end. It needs no connection. What failed outside
the play's hosts is returned as the fact ``kubevol_run_failed_elsewhere``, for the play on localhost that fails the
run (playbooks/reconcile.yml); when no such play follows (or a --limit leaves localhost out), the play's first host
carries that failure, saying it is not its own (run/run_verdict.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.kubevol.volumes.plugins.module_utils.run import run_verdict
from ansible_collections.kubevol.volumes.plugins.plugin_utils import task_args

ARGSPEC = dict(
    report=dict(type="dict", required=True),
    node_name=dict(type="str"),
    fail_run_on_localhost=dict(type="bool", default=False),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        params = task_args.validated(self._task.args, ARGSPEC, "kubevol.volumes.reconcile_verdict")
        report = params["report"]
        host = task_vars.get("inventory_hostname")
        # what failed outside the play's hosts: the report's entries, or only their messages (what the role passes)
        elsewhere = [error.get("msg") if isinstance(error, dict) else error
                     for error in report.get("failed_elsewhere") or ()]
        localhost_fails_it = params["fail_run_on_localhost"] and run_verdict.localhost_in_run(
            task_vars.get("ansible_limit"))
        first = (list(task_vars.get("ansible_play_hosts_all") or ()) or [host])[0]
        result.update(changed=False, ansible_facts={
            "kubevol_run_failed_elsewhere": elsewhere if localhost_fails_it else []})
        result.update(run_verdict.verdict(report, host, params.get("node_name") or host,
                                          pin_here=bool(elsewhere) and not localhost_fails_it and host == first))
        return result
