# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.kubevol.volumes.plugins.filter.plan_table import plan_table
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_task
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import utc_now

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
EXAMPLE = os.path.join(REPO, "examples", "cluster.yaml")
MODULE = os.path.join(REPO, "plugins", "modules", "volume_reconcile_plan.py")


def params(**kw):
    base = dict(cluster_source="file", cluster_state=None, cluster=None, node_facts=None, force_detach=True, max_wait_for_unmount=360,
                known_drivers=["loop.kubevol.io"], scope=None, max_teardown_fraction=0.5, max_teardown_count=20,
                allow_mass_teardown=False, output="full", table_rows=100)
    base.update(kw)
    return base


def test_run_on_example():
    result = plan_task.run(params(cluster_state=EXAMPLE), utc_now())
    assert result["changed"] is False
    assert result["summary"]["attach"] == 4 and result["summary"]["mount"] == 9 and result["blocked"] == []  # 9: with the inline spool
    table = plan_table(result)
    assert table.splitlines()[-1] == "Plan: 0 to unmount, 0 to detach, 4 to attach, 9 to mount, 0 to expand; 0 blocked"


def test_run_with_scope():
    result = plan_task.run(params(cluster_state=EXAMPLE, scope="[?metadata.namespace=='tools']"), utc_now())
    assert set(s["volume"] for s in result["plan"]) == {"pv-shared-logs", "tools/log-writer/spool"}


def _invoke(args):
    env = dict(os.environ, ANSIBLE_MODULE_ARGS=json.dumps(args))
    proc = subprocess.run([sys.executable, MODULE], input=json.dumps({"ANSIBLE_MODULE_ARGS": args}),
                          capture_output=True, text=True, env=env, cwd=REPO, check=False)
    return json.loads(proc.stdout)


@pytest.mark.parametrize("args,text", [
    ({"cluster_state": "/nonexistent.yaml"}, "cannot read the cluster state file"),
    ({"cluster": {"kind": "List", "items": [{"kind": "PersistentVolume", "metadata": {"name": "pv-x"},
                                             "spec": {"capacity": {"storage": "1GB"}}}]}}, "pv-x"),
    ({}, "cluster_source is file but any of the following are missing: cluster_state, cluster"),
    ({"cluster_state": "cluster.yaml", "host": "https://127.0.0.1:1"}, "invalid host: 'https://127.0.0.1:1': does not apply to cluster_source=file"),
    ({"cluster_source": "kubernetes", "host": "https://127.0.0.1:1", "api_key": "kubevol-test-token", "validate_certs": False},
     "cannot reach the API server at https://127.0.0.1:1"),
    ({"cluster": {"kind": "List", "items": []}, "scope": "[?"}, "scope '[?' is refused: it must be a JMESPath expression (Invalid jmespath expression"),
])
def test_bad_input_fails_cleanly(args, text):
    out = _invoke(args)
    assert out.get("failed") and text in out["msg"] and "Traceback" not in json.dumps(out)


def test_table_lists_blocked():
    result = {"plan": [], "blocked": [{"node": "n", "volume": "v", "pod": None, "reason": "why"}]}
    lines = plan_table(result).splitlines()
    # "No changes." never stands above a table of blocked items
    assert lines[0] == "Nothing to do; 1 blocked:" and "No changes" not in "\n".join(lines)
    assert lines[-1].endswith("; 1 blocked")
    assert plan_table({"plan": [], "blocked": []}).splitlines()[0] == "No changes: volumes match the desired state."


def test_known_drivers_unset_means_the_driver_registry():
    from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import DEFAULT_KNOWN_DRIVERS
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import DRIVERS
    assert "default" not in plan_task.argspec()["known_drivers"]
    assert DEFAULT_KNOWN_DRIVERS == tuple(sorted(DRIVERS))
    unset = plan_task.run(params(cluster_state=EXAMPLE, known_drivers=None), utc_now())
    assert unset["summary"] == plan_task.run(params(cluster_state=EXAMPLE), utc_now())["summary"]
    none_known = plan_task.run(params(cluster_state=EXAMPLE, known_drivers=[]), utc_now())
    assert none_known["plan"] == [] and none_known["desired"]["foreign_volumes"] > 0


def test_output_table_and_summary_return_only_lines_and_counts():
    full = plan_task.run(params(cluster_state=EXAMPLE), utc_now())
    table = plan_task.run(params(cluster_state=EXAMPLE, output="table"), utc_now())
    assert sorted(table) == ["changed", "summary", "table"]
    assert table["table"] == plan_table(full).splitlines() and table["summary"] == full["summary"]
    capped = plan_task.run(params(cluster_state=EXAMPLE, output="table", table_rows=3), utc_now())["table"]
    assert len([line for line in capped if line.startswith("+")]) == 3 and "10 more steps not shown" in "\n".join(capped)
    summary = plan_task.run(params(cluster_state=EXAMPLE, output="summary"), utc_now())
    assert [line.split()[0] for line in summary["table"][1:4]] == ["node1", "node2", "node3"]
    assert summary["table"][-1] == table["table"][-1]


def test_blocked_items_carry_their_action_and_steps_outside_the_play_warn():
    facts = {"node1": {"reachable": False, "error": "ssh: connect refused"}}
    result = plan_task.run(params(cluster_state=EXAMPLE, node_facts=facts), utc_now())
    assert result["blocked"] and all(b["action"] == "attach" and b["node"] == "node1" for b in result["blocked"])
    assert len(result["blocked"]) == len(set((b["volume"], b["pod"], b["reason"]) for b in result["blocked"]))
    # one warning for both nodes outside the play (issue 30: one per node was 4,997 at the envelope)
    assert len(result["warnings"]) == 1 and result["warnings"][0].startswith("the plan has 8 step(s) ("), result
    assert " on 2 nodes that are not in this run's hosts (no node facts for them: node2, node3): they are not " \
        "run; add the nodes to the inventory" in result["warnings"][0], result["warnings"]
    assert result["run_nodes"] == ["node1"]
    assert "warnings" not in plan_task.run(params(cluster_state=EXAMPLE), utc_now())  # no node facts: ad hoc


def test_teardown_refused_with_output_table_carries_the_table_not_the_plan():
    from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import TeardownRefused
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    from simulate import bound, cluster, facts, node, uvn
    names = ["pv-" + c for c in "abcd"]
    objects = [node("node1", attached=[uvn(n) for n in names], in_use=[uvn(n) for n in names])]
    for name in names:
        objects.extend(bound(name, "ns/" + name))  # no pods: a snapshot that lost them
    with pytest.raises(TeardownRefused) as err:
        mounted = facts("node1", devices=names, global_mounts=names, pod_mounts=[("uid-ns-" + n, n) for n in names])
        plan_task.run(params(cluster=cluster(*objects), node_facts={"node1": mounted}, output="table"), utc_now())
    fields = err.value.to_result()
    assert fields["table"][-1].startswith("Plan: ") and "Teardown guard: 4 of 4" in fields["table"][-2]
    assert fields["teardown_guard"]["tripped"] and "plan" not in fields


def test_node_errors_name_the_nodes_whose_state_was_not_gathered():
    """The role fails the run with node_errors (it has no set_fact of its own for them any more)."""
    down = {"node_name": "node2", "reachable": False, "error": "Failed to connect to the host via ssh"}
    facts = {"node1": {"node_name": "node1", "reachable": True, "attached_devices": [], "mounts": [], "pods": []},
             "node2": down}
    result = plan_task.run(params(cluster_state=EXAMPLE, node_facts=facts), utc_now())
    assert result["node_errors"] == [{"node": "node2", "phase": "facts", "msg": "Failed to connect to the host via ssh"}]
    assert any(b["node"] == "node2" and "unreachable" in b["reason"] for b in result["blocked"])
    assert "node_errors" not in plan_task.run(params(cluster_state=EXAMPLE), utc_now())  # no node facts, no errors
