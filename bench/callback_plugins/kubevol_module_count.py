# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Count module executions per host for bench/bench_reconcile.py, and time each task (wall and controller CPU)."""

from __future__ import annotations

DOCUMENTATION = r"""
name: kubevol_module_count
type: aggregate
short_description: Count module executions per host (kubevol benchmark)
description:
  - Counts the task results that ran a module, per host, and writes them as JSON when the run ends.
  - A loop counts one execution per item that was not skipped. Skipped results and the controller-only
    actions (set_fact, debug, meta, include/import, assert, fail, add_host, group_by, validate_argument_spec)
    do not count.
  - A result of a task delegated to localhost counts under C(controller), not under its host.
  - Also writes each task's wall time (from its start to the next task's) and the CPU the controller used in it
    (this process and the workers it reaped), in the order the tasks ran, and the whole run's controller CPU.
requirements:
  - enable it in callbacks_enabled (and with ANSIBLE_LOAD_CALLBACK_PLUGINS=1 for ad-hoc commands)
options:
  output:
    description: File to write the counts to (JSON); nothing is written when unset.
    type: path
    env:
      - name: KUBEVOL_MODULE_COUNT_FILE
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase

NOT_MODULES = frozenset((
    "set_fact", "debug", "meta", "include_tasks", "include_role", "import_tasks", "import_role",
    "include_vars", "assert", "fail", "add_host", "group_by", "include", "import_playbook",
    "validate_argument_spec",  # the role's argument check: an action plugin, no module on the node
))
LOCAL = frozenset(("localhost", "127.0.0.1", "::1"))


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "kubevol_module_count"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self.counts = {}
        self.by_action = {}
        self.started = time.monotonic()
        self.tasks = []  # [name, wall seconds, controller CPU seconds], in the order they ran
        self.current = None

    @staticmethod
    def _cpu():
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def _close_task(self):
        if self.current is not None:
            name, wall, cpu = self.current
            self.tasks.append([name, round(time.monotonic() - wall, 3), round(self._cpu() - cpu, 3)])
            self.current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close_task()
        self.current = (task.get_name(), time.monotonic(), self._cpu())

    def _action(self, task):
        action = getattr(task, "resolved_action", None) or task.action or ""
        return action.rsplit(".", 1)[-1]

    def _count(self, result):
        task = result._task
        action = self._action(task)
        if action in NOT_MODULES:
            return
        # result._result is a transformed copy of the whole result, made for each callback that reads it: read only
        # when the count needs it (a loop's items, node_phases' executions, a delegation not named by the task)
        local = task.delegate_to in LOCAL
        if task.loop is None and action != "node_phases" and local:
            n, res = 1, None
        else:
            res = result._result
            items = res.get("results") if isinstance(res.get("results"), list) and task.loop is not None else None
            n = 1 if items is None else sum(1 for r in items if not (isinstance(r, dict) and r.get("skipped")))
            if action == "node_phases":  # the role's engine: the node module executions it ran
                n = len(res.get("module_runs") or ())
        if n == 0:
            return
        delegated = (res.get("_ansible_delegated_vars") if res is not None else None) or {}
        target = result._host.get_name()
        if local or delegated.get("ansible_delegated_host") in LOCAL \
                or delegated.get("ansible_connection") == "local":
            target = "controller"
        self.counts[target] = self.counts.get(target, 0) + n
        key = "%s:%s" % (target, action)
        self.by_action[key] = self.by_action.get(key, 0) + n

    def v2_runner_on_ok(self, result):
        self._count(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._count(result)

    def v2_playbook_on_stats(self, stats):
        self._close_task()
        self._write()

    def _write(self):
        path = self.get_option("output")
        if not path:
            return
        with open(path, "w") as fh:
            json.dump({"per_host": self.counts, "per_host_action": self.by_action,
                       "seconds": round(time.monotonic() - self.started, 3), "tasks": self.tasks,
                       "controller_cpu": round(self._cpu(), 3)}, fh, indent=1, sort_keys=True)
