"""What a person reads from the reconcile role, on 3 real SSH nodes: the plan table, the end-of-run summary,
warnings, the exit status.

Chained: converge (summary per node lists each volume) -> the cluster moves web-0 and the logs volume to
node1 and node3 dies -> --check exits non-zero, each blocked line once with its action, a summary that
changes nothing -> --check --limit node2,node3: a warning for node1's steps -> a real run with node3 still
dead: applied / blocked per node.
"""
import os

import pytest

TEARDOWN_OR_SETUP = ("Teardown", "Set up")


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("output", 3)
    cluster.load_example()
    cluster.shared = {}
    return cluster


def summary_of(run, node):
    return run.summary()["nodes"][node]


def test_converge_reports_each_node_and_its_volumes(kv):
    run = kv.reconcile()
    lines = run.summary_lines()
    assert lines[0] == "Per node: steps applied, failed, blocked:", run.describe()
    assert "node1: 5 applied, 0 failed, 0 blocked" in lines, lines
    assert "  pv-db-data: attach/device, mount/device, mount/pod shop/db-0" in lines, lines
    # node3: attach, global mount, the two logs pod mounts, log-writer's inline spool volume
    assert summary_of(run, "node3")["applied"] == 5 and run.report() == {}
    kv.shared["converged"] = True


def test_the_plan_is_a_record_beside_the_state_file_not_a_variable(kv):
    """Issue 30: the plan task returns the record's handle, counts and table, never the plan; a real run's record is
    beside the state file (the two newest kept), a check's in Ansible's local temp (gone with the run)."""
    assert kv.shared.get("converged")
    plans = kv.state + ".plans"
    before = sorted(os.listdir(plans))
    assert before, "the converge run left no plan record in %s" % plans
    state = kv.state_bytes()
    check = kv.reconcile(check=True)
    planned = check.result("Plan the operations")
    assert "plan" not in planned["_e2e_result_keys"] and "volume_items" not in planned["_e2e_result_keys"], planned
    assert sorted(planned["record"]) == ["digest", "path", "run_id"] and planned["counts"]["steps"] == 0
    assert not planned["record"]["path"].startswith(plans) and not os.path.exists(planned["record"]["path"])
    assert sorted(os.listdir(plans)) == before and kv.state_bytes() == state  # --check wrote nothing beside it
    runs = [kv.reconcile(), kv.reconcile()]
    records = [run.result("Plan the operations")["record"] for run in runs]
    assert sorted(os.listdir(plans)) == sorted(r["run_id"] for r in records), os.listdir(plans)
    # a no-op: no node has a share, so no node file; the plan file holds the (empty) plan
    assert os.listdir(os.path.join(records[1]["path"], "nodes")) == []
    assert runs[1].plan() == [] and runs[1].node_module_runs() == {}


def test_check_mode_with_an_unreachable_node(kv):
    assert kv.shared.get("converged")
    assert kv.edit("move-pod", "shop/web-0", "node1") == "changed"
    assert kv.edit("delete-pod", "tools/log-reader") == "changed"
    assert kv.edit("move-pod", "tools/log-writer", "node1") == "changed"
    kv.kill_node("node3")
    before = kv.state_bytes()

    run = kv.reconcile(check=True, expect_rc=4)  # an unreachable host: Ansible's exit code for it

    # the node tasks ran in check mode on the nodes that answered, and changed nothing
    assert kv.state_bytes() == before and "node3" not in run.node_module_runs()
    # each blocked line once, with the action it holds back
    table = run.plan_lines()
    rows = [line.split(None, 4) for line in table if line.startswith("!")]
    expected = [("attach", "node1", "pv-shared-logs"), ("detach", "node3", "pv-shared-logs")]
    assert sorted((r[1], r[2], r[3]) for r in rows) == expected, table
    assert len(set(tuple(r) for r in rows)) == len(rows)
    assert table[table.index("Blocked:") + 1].split()[:2] == ["ACTION", "NODE"]
    # the summary says nothing was changed, per node, and does not print the plan's blocked lines again
    lines = run.summary_lines()
    assert lines[0].startswith("Check mode, nothing was changed"), lines
    assert "node2: 3 would run, 0 would fail, 0 blocked" in lines and "node3: 0 would run, 0 would fail, 1 blocked" \
        in lines, lines
    assert not [line for line in lines if line.startswith("!")], lines
    # the exit status: the last step says node3 is unreachable, on node3 alone
    verdicts = run.verdicts()
    assert verdicts["node3"][0] == "unreachable" and "node3" in verdicts["node3"][1], verdicts
    assert [host for host, (status, _msg) in verdicts.items() if status != "ok"] == ["node3"], verdicts
    assert run.stats["node3"]["unreachable"] == 1 and not run.stats["node2"]["failures"], run.stats
    assert "[WARNING]: the plan has" not in run.stdout  # every node with steps is in the play
    # kubevol_plan_table_rows cuts the printed table, not the plan: the same Plan line, and how to see the rest
    capped = kv.reconcile(check=True, extra=["-e", "kubevol_plan_table_rows=1"], expect_rc="nonzero").plan_lines()
    assert capped[-1] == table[-1] and len([line for line in capped if line.startswith("!")]) == 1, capped
    hint = "not shown (set kubevol_plan_table_rows higher, or to 0 for all)"
    assert [line for line in capped if line.startswith("... and ")] == [
        "... and %d more steps %s" % (len(run.plan()) - 1, hint), "... and 1 more blocked %s" % hint], capped
    kv.shared["checked"] = True


def test_check_mode_warns_about_steps_on_hosts_outside_the_play(kv):
    assert kv.shared.get("checked")
    run = kv.reconcile(check=True, extra=["--limit", "node2,node3"], expect_rc="nonzero")
    text = " ".join(run.stdout.split())  # the warning is wrapped to the terminal width
    # node1 has no node facts in this run: its mounts are planned again, none of it runs
    # (the 7th: log-writer's inline spool volume, published on node1 with the pod)
    assert "[WARNING]: the plan has 7 step(s) on node node1 (attach/device, mount/device, mount/pod)" in text, \
        run.describe()
    assert text.count("step(s) on node") == 1


def test_a_run_with_the_node_down_reports_applied_and_blocked(kv):
    assert kv.shared.get("checked")
    run = kv.reconcile(expect_rc="nonzero")
    node1, node2 = summary_of(run, "node1"), summary_of(run, "node2")
    assert (node2["applied"], node2["failed"], node2["blocked"]) == (3, 0, 0), run.summary()
    assert (node1["applied"], node1["blocked"]) == (4, 1), run.summary()  # web-0's three, log-writer's spool
    blocked = run.report()["blocked"]
    assert sorted((b["action"], b["node"]) for b in blocked) == [("attach", "node1"), ("detach", "node3")]
    assert [e["node"] for e in run.report()["errors"]] == ["node3"]
    lines = run.summary_lines()
    # node3's message is its facts task's: the report names it, once
    assert "node3 (facts)" in lines[-1] and not [line for line in lines if line.startswith("!")], lines
