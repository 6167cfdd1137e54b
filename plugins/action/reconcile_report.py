# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""reconcile_report: print lines as text and return the run's report (the reconcile role's kubevol_report).

Ansible's stdout callbacks print a debug task's list of strings as a JSON list, one quoted string per line. A table
is read as text: its lines go to Ansible's display, as Ansible's own messages do (the default callback prints them
under the task's banner; ansible-runner and AWX show them as the task's output lines), and the task's result keeps
them as ``lines``. A callback that writes JSON on stdout gets no text in it: it has the lines in the result.

With ``summary`` (reconcile_run's last summary), or ``summary_of`` (the name of the variable holding that
reconcile_run result, whose summary is read from the task's variables), the result is the run's report: the per-node
counts, the blocked and pending items, and the failures by whose they are (run/run_verdict.py): the play's hosts
that failed or could not be reached, and what failed outside them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible import constants as C
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.kubevol.volumes.plugins.module_utils.run import run_report, run_verdict
from ansible_collections.kubevol.volumes.plugins.plugin_utils import task_args

display = Display()

ARGSPEC = dict(
    lines=dict(type="list", elements="str", default=[]),
    summary=dict(type="dict"),
    summary_of=dict(type="str"),
    stopped=dict(type="str"),
    quiet=dict(type="bool", default=False),
)
# what a summary read by summary_of leaves out: every error is said by its owner (failed_nodes, failed_elsewhere),
# and the lines are the report's own
NOT_REPORTED = ("errors", "lines")
REPORT_KEYS = ("nodes", "blocked", "errors", "outside", "check_mode")


def _text_callback():
    """False when the stdout callback writes JSON (text on its stdout would break what reads it)."""
    try:
        name = str(C.config.get_config_value("DEFAULT_STDOUT_CALLBACK") or "")
    except Exception:  # pylint: disable=broad-except  # an unknown setting: print, as for the default callback
        return True
    return not name.rsplit(".", maxsplit=1)[-1].startswith("json")


def _summary_of(run):
    """The summary of a reconcile_run result read from the task's variables (summary_of), without what the report
    does not read (NOT_REPORTED); None when that result has none (the run stopped before its last step, or it was
    skipped). It is read here, not templated into the task: at fleet scale the summary names every node outside the
    run, and Ansible templating it into the task's arguments took most of this step's time (docs/performance.md)."""
    summary = run.get("summary") if isinstance(run, dict) else None
    if not isinstance(summary, dict):
        return None
    return dict((key, value) for key, value in summary.items() if key not in NOT_REPORTED)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        params = task_args.validated(self._task.args, ARGSPEC, "kubevol.volumes.reconcile_report")
        lines = list(params["lines"])
        summary, stopped = params.get("summary"), params.get("stopped")
        if params.get("summary_of"):
            if summary is not None:
                raise AnsibleActionFail("kubevol.volumes.reconcile_report: summary and summary_of are mutually "
                                        "exclusive: give the summary, or the name of the variable holding it")
            summary = _summary_of(task_vars.get(params["summary_of"]))
        result["changed"] = False
        if summary is not None or stopped:
            report = self._report(summary, stopped, task_vars)
            if summary is not None:
                lines.extend(summary.get("body_lines") or ())
                shown = summary.get("shown")
                lines.extend(run_report.failure_lines(
                    dict((node, phases) for node, phases in (summary.get("failed_nodes") or {}).items()),
                    [error for error in report["failed_elsewhere"] if error.get("phase") != "controller step"],
                    None if shown is None else set(shown), report.get("check_mode")))
            if stopped:
                lines.extend(["The run stopped at its task %r on the controller (its message is above); no node "
                              "task ran after it." % stopped])
            result.update(report)
        if lines and not params["quiet"] and _text_callback():
            for line in lines:
                display.display(line)
        result["lines"] = lines
        return result

    def _report(self, summary, stopped, task_vars):
        summary = summary or {}
        hostvars = task_vars.get("hostvars") or {}
        hosts = list(task_vars.get("ansible_play_hosts_all") or ())

        def node_of(host):
            # only asked when something failed: each host's variables are built for it
            return (hostvars[host].get("kubevol_node_name") if host in hostvars else None) or host

        def facts_of(host):
            return hostvars[host].get("kubevol_node_facts_result") if host in hostvars else None

        inventory = (task_vars.get("groups") or {}).get("all") or ()
        owners = run_verdict.host_failures(summary, hosts, node_of, facts_of, stopped, inventory)
        report = dict((key, summary.get(key)) for key in REPORT_KEYS if key in summary)
        report.update(owners, pending=list(summary.get("pending") or ()),
                      run_failed=bool(owners["failed_hosts"] or owners["unreachable_hosts"] or owners["failed_elsewhere"]),
                      stopped=stopped)
        report.setdefault("check_mode", bool(self._play_context.check_mode))
        return report
