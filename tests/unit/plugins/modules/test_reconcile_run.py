# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""reconcile_run on a real cluster state file: the run's steps, each one write (module_utils/run/reconcile_run_task.py,
what the action plugin calls), and the module file's clean failure on bad input."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import yaml

from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_task

from ansible_collections.kubevol.volumes.plugins.module_utils.run import reconcile_run_task
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import utc_now

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
EXAMPLE = os.path.join(REPO, "examples", "cluster.yaml")


def plan_of(path):
    return plan_task.run(dict(cluster_source="file", cluster_state=str(path), cluster=None, node_facts=None, force_detach=True,
                              max_wait_for_unmount=360, known_drivers=None, scope=None, max_teardown_fraction=0.5,
                              max_teardown_count=20, allow_mass_teardown=False, output="full", table_rows=100),
                         utc_now())


def params(path, plan, **extra):
    base = dict((key, spec.get("default")) for key, spec in reconcile_run_task.argspec().items())
    base.update(cluster_state=str(path), plan=plan)
    base.update(extra)
    return base


def attachments(path):
    with open(str(path)) as handle:
        items = yaml.safe_load(handle)["items"]
    return sorted((va["spec"]["nodeName"], va["spec"]["source"]["persistentVolumeName"],
                   (va.get("status") or {}).get("attached", False))
                  for va in items if va["kind"] == "VolumeAttachment")


def succeeded(plan, phases):
    """Each planned node's node_phases result: every phase succeeded, each attach on /dev/loop<n>."""
    results, n = {}, 0
    for node, items in sorted(plan["volume_items"].items()):
        host = results[node] = {"changed": True, "phase_results": dict((phase, {"changed": True, "volumes": []})
                                                                       for phase in phases)}
        for key in sorted(items):
            n += 1
            for phase in phases:
                volume = {"unique_volume_name": key, "device_path": "/dev/loop%d" % n}
                host["phase_results"][phase]["volumes"].append(volume)
    return results


def test_a_cold_run_writes_the_intents_before_the_setup_then_its_outcome(tmp_path):
    path = tmp_path / "cluster.yaml"
    shutil.copy(EXAMPLE, str(path))
    plan = plan_of(path)
    planned = sorted((s["node"], s["volume"], False) for s in plan["plan"] if s["action"] == "attach")
    assert planned and attachments(path) == []

    start = reconcile_run_task.run(params(path, plan))
    assert [t["name"] for t in start["tasks"]] == ["setup"] and "summary" not in start
    assert start["changed"] and start["count"] == len(planned)
    assert attachments(path) == planned  # VolumeAttachments, attached: false, before any node acts
    again = reconcile_run_task.run(params(path, plan))
    assert not again["changed"] and again["count"] == 0  # the same intents again change nothing

    phases = start["tasks"][0]["phases"]
    done = reconcile_run_task.run(params(path, plan, after="setup", state=start, results=succeeded(plan, phases)))
    assert done["changed"] and done["summary"]["errors"] == [] and done["blocked"] == []
    assert attachments(path) == [(node, pv, True) for node, pv, _intent in planned]
    assert any("applied" in line for line in done["summary"]["lines"])
    # the run is over: no state for a later step, every node's error in the summary alone
    assert "failures" not in done and "errors" not in done


def test_a_failed_node_is_carried_and_its_volumes_are_not_recorded(tmp_path):
    path = tmp_path / "cluster.yaml"
    shutil.copy(EXAMPLE, str(path))
    plan = plan_of(path)
    start = reconcile_run_task.run(params(path, plan))
    results = succeeded(plan, start["tasks"][0]["phases"])
    failed = sorted(results)[0]
    results[failed] = {"unreachable": True, "msg": "ssh: connect to host %s: Connection refused" % failed}
    done = reconcile_run_task.run(params(path, plan, after="setup", state=start, results=results))
    errors = done["summary"]["errors"]
    assert [e["node"] for e in errors] == [failed] and "Connection refused" in errors[0]["msg"]
    assert "failures" not in done and "errors" not in done
    assert all(attached == (node != failed) for node, _pv, attached in attachments(path)), attachments(path)
    assert failed in " ".join(done["summary"]["lines"])


def test_check_mode_writes_nothing_and_summarizes_the_plan(tmp_path):
    path = tmp_path / "cluster.yaml"
    shutil.copy(EXAMPLE, str(path))
    before = path.read_bytes()
    plan = plan_of(path)
    out = reconcile_run_task.run(params(path, plan), check_mode=True)
    # the node tasks run in check mode too: the run goes on to them, writing nothing
    assert not out["changed"] and out["count"] == 0 and path.read_bytes() == before
    assert [task["name"] for task in out["tasks"]] and "summary" not in out
    state = out
    for task in out["tasks"]:
        state = reconcile_run_task.run(dict(params(path, plan), after=task["name"], state=state, results={}),
                                       check_mode=True)
        assert not state["changed"] and path.read_bytes() == before
    assert state["summary"]["lines"][0].startswith("Check mode, nothing was changed")
    assert state["summary"]["check_mode"] and state["summary"]["failed_nodes"]  # no node answered: each would fail


def test_bad_input_fails_with_a_message_not_a_traceback(tmp_path):
    path = tmp_path / "cluster.yaml"
    shutil.copy(EXAMPLE, str(path))
    cases = [
        ({"cluster_state": str(path), "plan": {"plan": []}}, "plan is not a kubevol.volumes.volume_reconcile_plan"),
        ({"cluster_state": str(path), "plan": {"plan": [], "volume_items": {}}, "after": "setup"},
         "after is setup but all of the following are missing: state, results"),
        ({"cluster_state": str(path), "plan": {"plan": [], "volume_items": {}}, "after": "setup", "state": {"tasks": []},
          "results": {}}, "state is not a run state"),
        ({"cluster_state": str(path), "plan": {"plan": [], "volume_items": {}}, "after": "setup",
          "state": {"tasks": [], "failures": {}, "blocked": [], "errors": []}, "results": {}},
         "cannot advance the run after setup: node task 'setup' is not one of this run's node tasks"),
    ]
    for args, text in cases:
        out = run_action(args)  # raises nothing: a failed result with a message
        assert out.get("failed") and text in out["msg"], (text, out)


def run_action(args):
    """reconcile_run as the role runs it: its action plugin (internal to the role, it has no module file), its own
    argument check and work, with Ansible's per-task setup (ActionBase.run) left out."""
    from unittest import mock

    from ansible.plugins.action import ActionBase

    from ansible_collections.kubevol.volumes.plugins.action.reconcile_run import ActionModule

    action = ActionModule.__new__(ActionModule)
    action._task = mock.Mock(args=args)
    action._play_context = mock.Mock(check_mode=False, diff=False)
    with mock.patch.object(ActionBase, "run", lambda self, tmp=None, task_vars=None: {}):
        return action.run(task_vars={})


def test_records_that_cannot_be_written_stop_the_run_without_blaming_a_host(tmp_path, monkeypatch):
    """The store refuses the step's write: the run stops before its next node task (no node task may build on records
    that are not there), its own failure is in the report, no node's, and the later steps pass the state on."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
    from ansible_collections.kubevol.volumes.plugins.module_utils.run import record_task

    path = tmp_path / "cluster.yaml"
    shutil.copy(EXAMPLE, str(path))
    plan = plan_of(path)
    first = reconcile_run_task.run(params(path, plan))
    assert first["tasks"] and "stopped" not in first
    setup = [task for task in first["tasks"] if task["name"] == "setup"][0]

    def refused(*_args, **_kwargs):
        raise KubevolError("the run lock was taken over by another run")

    monkeypatch.setattr(record_task, "run", refused)
    after = reconcile_run_task.run(params(path, plan, after="setup", state=first,
                                          results=succeeded(plan, setup["phases"])))
    assert after["stopped"] is True and after["summary"]["failed_nodes"] == {}
    assert [(e["node"], e["phase"]) for e in after["summary"]["failed_elsewhere"]] == [(None, "record")]
    assert "could not be written" in after["summary"]["failed_elsewhere"][0]["msg"]
    assert reconcile_run_task.run(params(path, plan, after="setup", state=after, results={}))["stopped"] is True


def test_check_mode_reads_the_plan_once_at_its_last_step(tmp_path, monkeypatch):
    """In check mode a step after a node task that is not the last keeps its results and reads no plan; the last one
    replays every task's outcome in order, as a real run would have them."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record

    path = tmp_path / "cluster.yaml"
    shutil.copy(EXAMPLE, str(path))
    plan = plan_of(path)
    start = reconcile_run_task.run(params(path, plan), check_mode=True)
    names = [task["name"] for task in start["tasks"]]
    reads = []
    real = plan_record.plan_of
    monkeypatch.setattr(plan_record, "plan_of", lambda *a, **k: reads.append(1) or real(*a, **k))
    state = start
    for task in start["tasks"]:
        state = reconcile_run_task.run(params(path, plan, after=task["name"], state=state,
                                              results=succeeded(plan, task["phases"])), check_mode=True)
    assert len(reads) == 1 and "checked" not in state, (names, reads)
    assert state["summary"]["check_mode"] and state["summary"]["errors"] == []
    assert all(row["failed"] == 0 and row["planned"] for row in state["summary"]["nodes"].values())
