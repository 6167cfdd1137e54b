# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan_text: the plan table, the per-node summary, blocked items once with their action, the run summary."""
import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.kubevol.volumes.plugins.filter.plan_table import plan_table, run_summary as run_summary_filter
from ansible_collections.kubevol.volumes.plugins.module_utils.plan import plan_text
from ansible_collections.kubevol.volumes.plugins.module_utils.run import run_report


def step(action, target, node, volume, pod=None, **extra):
    return dict({"action": action, "target": target, "node": node, "volume": volume, "pod": pod,
                 "unique_volume_name": "kubernetes.io/csi/loop.kubevol.io^%s.img" % volume, "reason": "why"}, **extra)


# node3 is unreachable and holds pv-logs, which node1 wants (Multi-Attach); web moves node2 -> node1
RESULT = {
    "plan": [step("unmount", "pod", "node2", "pv-web", "shop/web-0"), step("unmount", "device", "node2", "pv-web"),
             step("detach", "device", "node2", "pv-web"), step("attach", "device", "node1", "pv-web"),
             step("mount", "device", "node1", "pv-web"), step("mount", "pod", "node1", "pv-web", "shop/web-0")],
    "blocked": [
        {"node": "node1", "volume": "pv-logs", "pod": "tools/writer", "reason": "Multi-Attach error (node3 unreachable)"},
        {"node": "node3", "volume": "pv-logs", "pod": None, "reason": "node unreachable: gone"},
        {"node": "node3", "volume": "pv-logs", "pod": None, "reason": "node unreachable: gone"},  # a second rule
        {"node": "node3", "volume": "pv-new", "pod": None, "reason": "node unreachable: gone"},
        {"node": "node4", "volume": None, "pod": "shop/lost", "reason": "pod is scheduled to node node4, which does not exist"},
    ],
    "desired": {"per_node": {"node1": ["pv-logs", "pv-web"], "node3": ["pv-new"]}},
    "actual": {"per_node": {"node2": ["pv-web"], "node3": ["pv-logs"]}},
    "summary": {"unmount": 2, "detach": 1, "attach": 1, "mount": 2, "expand": 0, "blocked": 4},
    "teardown_guard": {"teardown": 1, "mounted": 3, "max_teardown_fraction": 0.5, "max_teardown_count": 20},
}


def test_blocked_once_with_the_action_it_holds_back():
    blocked = plan_text.blocked_once(RESULT)
    assert [(b["node"], b["volume"], b["action"]) for b in blocked] == [
        ("node1", "pv-logs", "attach"),   # wanted there, not attached
        ("node3", "pv-logs", "detach"),   # attached there, not wanted: once, although two rules blocked it
        ("node3", "pv-new", "attach"),
        ("node4", None, "mount"),         # a pod that cannot start
    ]
    # the planner's own action wins when it gives one
    assert plan_text.blocked_once({"blocked": [{"node": "n", "volume": "v", "pod": None, "reason": "r",
                                                "action": "expand"}]})[0]["action"] == "expand"


def test_table_lists_each_blocked_line_once_with_its_action():
    lines = plan_table(RESULT).splitlines()
    assert lines[0].split() == ["ACTION", "NODE", "VOLUME", "POD", "REASON"]
    blocked = lines[lines.index("Blocked:") + 1:]
    assert blocked[0].split()[:4] == ["ACTION", "NODE", "VOLUME", "POD"]
    rows = [line for line in blocked if line.startswith("!")]
    expected = [["attach", "node1", "pv-logs"], ["detach", "node3", "pv-logs"], ["attach", "node3", "pv-new"],
                ["mount", "node4", "-"]]
    assert [r.split()[1:4] for r in rows] == expected
    assert lines[-2].startswith("Teardown guard: 1 of 3")
    assert lines[-1] == "Plan: 2 to unmount, 1 to detach, 1 to attach, 2 to mount, 0 to expand; 4 blocked"
    with pytest.raises(AnsibleFilterError):
        plan_table({"table": []})


def test_table_rows_are_capped():
    lines = plan_text.table_lines(RESULT, max_rows=2)
    assert len([line for line in lines if line.startswith(("+", "-"))]) == 2
    assert "... and 4 more steps not shown" in "\n".join(lines)
    assert "... and 2 more blocked not shown" in "\n".join(lines)


def test_the_filter_caps_rows_and_says_how_to_see_them():
    """The role prints the plan through the filter with kubevol_plan_table_rows: the line counting the rows left
    out names the role's variable; 0, like no cap, prints them all; a cap that is not a row count is refused."""
    capped = plan_table(RESULT, 2, "set kubevol_plan_table_rows higher, or to 0 for all").splitlines()
    assert "... and 4 more steps not shown (set kubevol_plan_table_rows higher, or to 0 for all)" in capped
    assert "... and 2 more blocked not shown (set kubevol_plan_table_rows higher, or to 0 for all)" in capped
    assert "... and 4 more steps not shown (raise max_rows)" in plan_table(RESULT, 2).splitlines()
    assert plan_table(RESULT, 0) == plan_table(RESULT) and "not shown" not in plan_table(RESULT, 0)
    for bad in (-1, "2", True):
        with pytest.raises(AnsibleFilterError):
            plan_table(RESULT, bad)


def test_summary_is_one_line_per_node():
    lines = plan_text.summary_lines(RESULT)
    assert lines[0].split() == ["NODE", "UNMOUNT", "DETACH", "ATTACH", "MOUNT", "EXPAND", "BLOCKED"]
    assert [line.split() for line in lines[1:5]] == [
        ["node1", "0", "0", "1", "2", "0", "1"], ["node2", "2", "1", "0", "0", "0", "0"],
        ["node3", "0", "0", "0", "0", "0", "2"], ["node4", "0", "0", "0", "0", "0", "1"]]
    assert lines[-1].startswith("Plan: ")


def test_shape_keeps_only_what_people_read():
    assert plan_text.shape(RESULT, "full") is RESULT
    table = plan_text.shape(RESULT, "table")
    assert sorted(table) == ["changed", "summary", "table"] and table["table"] == plan_text.table_lines(RESULT)
    summary = plan_text.shape(dict(RESULT, warnings=["w"]), "summary")
    assert summary["table"] == plan_text.summary_lines(RESULT) and summary["warnings"] == ["w"]


def test_steps_on_nodes_outside_the_play_are_warned_about():
    result = dict(RESULT, plan=RESULT["plan"] + [step("detach", "device", "gone", "pv-x", record_only=True)])
    warnings = plan_text.nodes_outside(result, ["node2"])
    assert len(warnings) == 1 and "3 step(s) on node node1" in warnings[0]
    assert "attach/device, mount/device, mount/pod" in warnings[0]  # record-only releases need no node
    assert plan_text.nodes_outside(result, ["node1", "node2"]) == []


def test_run_summary_applied_failed_blocked_per_node():
    errors = [{"node": "node1", "phase": "mount", "msg": "mount: boom", "volumes": ["pv-web"]}]
    after = [{"node": "node1", "volume": "pv-web", "pod": "shop/web-0", "action": "mount",
              "reason": "not attempted: mount on node node1 failed"}]
    out = run_report.run_summary(RESULT, errors, after)
    nodes = out["nodes"]
    assert (nodes["node2"]["applied"], nodes["node2"]["failed"], nodes["node2"]["blocked"]) == (3, 0, 0)
    # attach applied, the global mount failed, the pod mount not attempted (blocked), pv-logs blocked by the plan
    assert (nodes["node1"]["applied"], nodes["node1"]["failed"], nodes["node1"]["blocked"]) == (1, 1, 2)
    assert nodes["node1"]["volumes"]["pv-web"] == ["attach/device", "mount/device FAILED", "mount BLOCKED"]
    assert out["errors"] == errors and len(out["blocked"]) == 5
    text = "\n".join(out["lines"])
    assert "node1: 1 applied, 1 failed, 2 blocked" in text and "node3: 0 applied, 0 failed, 2 blocked" in text
    # the plan table showed the plan's blocked items: only the one blocked during the run is listed again
    assert text.count("pv-logs  tools/writer") == 0 and "Blocked during the run:" in text
    # node1's message was printed by its own node task: the report names it, once, and does not repeat it
    assert out["lines"][-1] == "Failed on 1 node(s), each one's message is in its own task's output above: node1 (mount)"
    assert "mount: boom" not in text


def test_run_summary_failed_steps_by_node_and_phase():
    """A step failed when an error of its node and phase names its volume, or names no volume (the whole phase
    failed there); errors of another phase or node leave it applied."""
    plan = {"plan": [step("attach", "device", "n1", "pv-a"), step("attach", "device", "n1", "pv-b"),
                     step("mount", "device", "n1", "pv-a"), step("attach", "device", "n2", "pv-a"),
                     step("mount", "device", "n2", "pv-c"), step("mount", "device", "n3", "pv-d")]}
    errors = [{"node": "n1", "phase": "attach", "msg": "x", "volumes": ["pv-b"]},
              {"node": "n1", "phase": "attach", "msg": "y", "volumes": ["pv-z"]},
              {"node": "n2", "phase": "mount", "msg": "died", "volumes": []},
              {"node": "n2", "phase": "mount", "msg": "z", "volumes": ["pv-q"]},
              {"node": "n3", "phase": "attach", "msg": "other phase", "volumes": ["pv-d"]}]
    volumes = dict((n, row["volumes"]) for n, row in run_report.run_summary(plan, errors)["nodes"].items())
    assert volumes["n1"] == {"pv-a": ["attach/device", "mount/device"], "pv-b": ["attach/device FAILED"]}
    assert volumes["n2"] == {"pv-a": ["attach/device"], "pv-c": ["mount/device FAILED"]}
    assert volumes["n3"] == {"pv-d": ["mount/device"]}


def test_run_summary_in_check_mode_and_without_the_plan_table():
    out = run_summary_filter(RESULT, [{"node": "node3", "phase": "facts", "msg": "unreachable"}], [], True, False)
    assert out["lines"][0].startswith("Check mode, nothing was changed")
    text = "\n".join(out["lines"])
    assert "node1: 3 would run, 0 would fail, 1 blocked" in text and "node2: 3 would run, 0 would fail, 0 blocked" in text
    # the plan table was not printed: every blocked item is listed here, once
    assert text.count("pv-logs") == 4  # node1's and node3's volume lines, and one blocked row each
    rows = [line for line in out["lines"] if line.startswith("!")]
    assert len(rows) == 4
    with pytest.raises(AnsibleFilterError):
        run_summary_filter({})


def test_node_counts_reads_the_planners_steps_and_a_hand_made_plan_alike():
    planned = [{"node": "n1", "action": "attach"}, {"node": "n1", "action": "mount"}, {"node": None, "action": "mount"}]
    hand_made = [{"node": "n1", "action": "attach"}, {"action": "mount", "node": "n1"}, {"action": "mount"}]
    counts = plan_text.node_counts({"plan": planned, "blocked": [{"node": "n2", "volume": "v", "reason": "r"}]})
    assert counts == plan_text.node_counts({"plan": hand_made, "blocked": [{"node": "n2", "volume": "v", "reason": "r"}]})
    assert (counts["n1"]["attach"], counts["n1"]["mount"], counts[None]["mount"], counts["n2"]["blocked"]) == (1, 1, 1, 1)
