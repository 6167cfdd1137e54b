# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only callback: every task result per host, and the play recap, as one JSON file.

Enabled by the end-to-end tests (tests/e2e/conftest.py) next to the default stdout callback:
ANSIBLE_CALLBACK_PLUGINS=tests/e2e/callback_plugins ANSIBLE_CALLBACKS_ENABLED=kubevol_e2e_json
KUBEVOL_E2E_RESULTS=/path/results.json. The file is written once, at the recap (a run that was
killed leaves none).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: kubevol_e2e_json
type: aggregate
short_description: Dump per-task per-host results to a JSON file (kubevol end-to-end tests)
description:
  - Writes C({tasks, stats}) to the file named by the environment variable E(KUBEVOL_E2E_RESULTS).
requirements:
  - enable in configuration
"""

import json
import os
import tempfile

from ansible.plugins.callback import CallbackBase

from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record


def _jsonable(value):
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return str(value)


def _part(result, name):
    # ansible-core 2.19+: public properties; older: the underscore attributes.
    value = getattr(result, name, None)
    return value if value is not None else getattr(result, "_" + name)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "kubevol_e2e_json"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._path = os.environ.get("KUBEVOL_E2E_RESULTS")
        self._tasks = []
        self._by_uuid = {}
        self._stats = {}

    # -- collecting ---------------------------------------------------------------------------
    def _task_entry(self, task):
        uuid = task._uuid
        entry = self._by_uuid.get(uuid)
        if entry is None:
            entry = {"name": task.get_name(), "action": task.action, "hosts": {}}
            self._by_uuid[uuid] = entry
            self._tasks.append(entry)
        return entry

    def _record(self, result, status):
        task = _part(result, "task")
        host = _part(result, "host").get_name()
        data = dict(_part(result, "result"))
        record = data.get("record")
        if isinstance(record, dict) and "plan" not in data and isinstance(record.get("path"), str):
            # the plan task's output=record: the tests read the plan it recorded (plan, blocked, desired, ...), read
            # here while the record is there (in check mode it lives in Ansible's local temp, gone at exit, and keeps
            # the nodes outside the play in outline: read as the run's own steps read it)
            keys = sorted(data)
            data = dict(plan_record.read_plan(record, outline=True), **data)  # by its handle
            data["_e2e_result_keys"] = keys  # what the task itself returned
        entry = self._task_entry(task)
        changed = bool(data.get("changed")) and status == "ok"
        item = {"status": "changed" if changed else status, "result": _jsonable(data)}
        # include_tasks runs the same task several times: keep every execution
        entry["hosts"].setdefault(host, []).append(item)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._task_entry(task)

    def v2_runner_on_ok(self, result, **kwargs):
        self._record(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False, **kwargs):
        self._record(result, "ignored" if ignore_errors else "failed")

    def v2_runner_on_skipped(self, result, **kwargs):
        self._record(result, "skipped")

    def v2_runner_on_unreachable(self, result, **kwargs):
        self._record(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        self._stats = dict((host, stats.summarize(host)) for host in sorted(stats.processed))
        self._write()

    # -- writing ------------------------------------------------------------------------------
    def _write(self):
        if not self._path:
            return
        data = {"complete": True, "tasks": self._tasks, "stats": self._stats}
        directory = os.path.dirname(os.path.abspath(self._path))
        fd, tmp = tempfile.mkstemp(prefix=".results.", dir=directory)
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=1, default=str)
        os.replace(tmp, self._path)
