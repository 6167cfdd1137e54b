"""scripts/kvworkflow/events.py: a job's outcome read from its ansible-runner events and artifacts, never from its
console text (the workflow itself runs in tests/e2e/test_storm_sliced.py)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts"))

from kvworkflow import events  # noqa: E402

STATS = ("ok", "changed", "failures", "dark", "ignored", "rescued", "skipped")


def stats(**per_host):
    """A playbook_on_stats event: per_host = {host: {count: n}}."""
    data = dict((count, {}) for count in STATS)
    for host, counts in per_host.items():
        for count, number in counts.items():
            data[count][host] = number
    return {"event": "playbook_on_stats", "event_data": data}


def on(kind, host, task="a task", action="ansible.builtin.debug", res=None, **extra):
    data = dict({"host": host, "task": task, "task_action": action, "resolved_action": action, "res": res or {}},
                **extra)
    return {"event": kind, "event_data": data}


def plan_ok(steps, blocked, record=None):
    return on("runner_on_ok", "node1", "Plan the operations", events.PLAN_ACTION,
              {"counts": {"steps": steps, "blocked": blocked, "nodes": 1}, "record": record, "table": ["..."]})


def report_ok(blocked):
    return on("runner_on_ok", "node1", "Start the run", events.RUN_ACTION, {"summary": {"blocked": blocked}})


def outcome(event_list, status="successful"):
    return events.read_events(event_list, events.JobOutcome("job", status))


def test_hosts_answer_for_themselves_from_the_stats():
    out = outcome([
        on("runner_on_failed", "node2", "Set up", res={"msg": "mkfs failed"}),
        on("runner_on_failed", "node1", "Gather", res={"msg": "ignored"}, ignore_errors=True),
        on("runner_on_unreachable", "node3", "Gather", res={"msg": "ssh: connect refused"}),
        stats(node1={"ok": 5, "changed": 2, "ignored": 1}, node2={"ok": 3, "failures": 1},
              node3={"dark": 1}, localhost={"ok": 4}),
    ], status="failed")
    assert out.complete and not out.ok
    assert out.changed == 2
    assert out.failed == {"node2": "Set up: mkfs failed"}  # node1's failure was ignored: it is not a failed host
    assert out.unreachable == {"node3": "Gather: ssh: connect refused"}


def test_a_host_the_stats_count_failed_is_named_even_without_its_event():
    out = outcome([stats(node1={"ok": 1}, node2={"failures": 1})], status="failed")
    assert list(out.failed) == ["node2"] and "see the job's events" in out.failed["node2"]


def test_a_failure_event_the_stats_do_not_count_is_not_a_failed_host():
    # a task that failed and was rescued: the stats count it rescued, not failed
    out = outcome([on("runner_on_failed", "node1", res={"msg": "x"}), stats(node1={"ok": 2, "rescued": 1})])
    assert out.ok and out.failed == {}


def test_the_plan_and_what_its_run_left_blocked():
    blocked = [{"node": "node2", "volume": "pv-a", "pod": None, "action": "mount",
                "reason": "waiting for the attach/detach stage: volume pv-a is not attached to node node2 yet"}]
    out = outcome([plan_ok(3, 1, {"path": "/x", "run_id": "r", "digest": "d"}),
                   on("runner_on_ok", "node1", "Start", events.RUN_ACTION, {"tasks": []}),  # no summary yet
                   report_ok(blocked), stats(node1={"ok": 6})])
    assert out.ok
    assert (out.plan.steps, out.plan.blocked, out.plan.record["run_id"]) == (3, 1, "r")
    assert out.plan.blocked_items == blocked


def test_a_job_killed_before_its_end_is_not_complete_and_says_its_last_words():
    out = outcome([plan_ok(0, 2), {"event": "verbose", "stdout": "ERROR! the worker went away"}], status="error")
    assert not out.complete and not out.ok
    assert out.plan.blocked == 2 and out.plan.blocked_items is None  # counted, never listed
    assert "the worker went away" in out.explanation


def test_read_job_from_artifacts_on_disk(tmp_path):
    folder = tmp_path / "artifacts" / "r01-node-1-slice1"
    (folder / "job_events").mkdir(parents=True)
    (folder / "status").write_text("failed\n")
    (folder / "rc").write_text("2\n")
    written = [plan_ok(1, 0), on("runner_on_failed", "node4", res={"msg": "boom"}),
               stats(node1={"ok": 3, "changed": 1}, node4={"failures": 1})]
    for counter, event in enumerate(written, start=1):
        (folder / "job_events" / ("%d-uuid%d.json" % (counter, counter))).write_text(json.dumps(event))
    (folder / "job_events" / "uuid9-partial.json").write_text("{not json")  # ansible-runner's partial data
    out = events.read_job("slice 1", str(folder))
    assert (out.status, out.rc, out.changed, list(out.failed)) == ("failed", 2, 1, ["node4"])
    assert out.plan.steps == 1


def test_a_lost_stream_keeps_the_callers_status_and_reason(tmp_path):
    folder = tmp_path / "artifacts" / "job"
    (folder / "job_events").mkdir(parents=True)  # events came, the artifacts never did
    (folder / "job_events" / "1-a.json").write_text(json.dumps(plan_ok(0, 0)))
    out = events.read_job("slice 1", str(folder), "error", "the stream from execution node node1 ended [KV-WORKER-LOST]")
    assert out.status == "error" and not out.ok and "KV-WORKER-LOST" in out.explanation
