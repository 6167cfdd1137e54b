# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_report: the end-of-run report lists the run's nodes (and what the controller does for other nodes), and
the cluster's other nodes in one line of counts; the plan's one warning about them (plan_text.nodes_outside)."""
from ansible_collections.kubevol.volumes.plugins.filter.plan_table import run_summary as run_summary_filter
from ansible_collections.kubevol.volumes.plugins.module_utils.plan import plan_text
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import lean_plan
from ansible_collections.kubevol.volumes.plugins.module_utils.run import run_report


def step(action, target, node, volume, pod=None, **extra):
    unique = "kubernetes.io/csi/loop.kubevol.io^%s.img" % volume
    return dict({"action": action, "target": target, "node": node, "volume": volume, "pod": pod, "pod_uid": None,
                 "unique_volume_name": unique, "reason": "why",
                 "item": {"pv_name": volume, "unique_volume_name": unique}}, **extra)


def cluster_plan(outside=12, run_nodes=("n00", "n01")):
    """n00 and n01 are the run's hosts; n02.. are the cluster's other nodes, two steps each; ``gone`` (a deleted
    node, no host) has a record-only release; n05 also has a controller host's expansion."""
    steps = []
    for i in range(2 + outside):
        node = "n%02d" % i
        steps.append(step("attach", "device", node, "pv-%d" % i))
        steps.append(step("mount", "device", node, "pv-%d" % i))
    steps.insert(0, step("detach", "device", "gone", "pv-old", record_only=True, forced=True))
    steps.append(step("expand", "controller", "n05", "pv-5", controller_host="ctl", size_to=2))
    result = lean_plan(steps)
    result["blocked"] = [{"node": "n01", "volume": "pv-x", "pod": None, "reason": "r", "action": "attach"}]
    if outside:  # the last outside node has a blocked attach too
        result["blocked"].append({"node": "n%02d" % (1 + outside), "volume": "pv-y", "pod": None, "reason": "r",
                                  "action": "attach"})
    result["run_nodes"] = list(run_nodes)
    return result


def test_the_report_lists_the_run_nodes_and_counts_the_others_in_one_line():
    result = cluster_plan()
    out = run_report.run_summary(result, check_mode=True)
    # the run's two hosts, the deleted node's record-only release, n05's controller-host expansion (all its steps)
    assert sorted(out["nodes"]) == ["gone", "n00", "n01", "n05"]
    assert out["nodes"]["gone"]["volumes"] == {"pv-old": ["detach/device"]}
    assert out["nodes"]["n05"]["volumes"] == {"pv-5": ["attach/device", "mount/device", "expand/controller"]}
    assert (out["nodes"]["n01"]["planned"], out["nodes"]["n01"]["blocked"]) == (2, 1)
    # n02..n13 without n05: 11 nodes, 22 steps, n13's blocked attach; the first five named
    assert out["outside"] == {"nodes": 11, "steps": 22, "blocked": 1, "names": ["n02", "n03", "n04", "n06", "n07"]}
    text = out["lines"]
    assert text[0].startswith("Check mode, nothing was changed")
    outside = [line for line in text if "not in this run's hosts" in line]
    assert outside == ["11 other node(s) of the cluster, not in this run's hosts: 22 step(s) not run, 1 blocked "
                       "(n02, n03, n04, n06, n07, and 6 more); add them to the inventory (kubevol_node_name maps a "
                       "host to its Kubernetes node name) or drop --limit"]
    assert not [line for line in text if line.startswith(("n02", "n13"))]
    assert "n00: 2 would run, 0 would fail, 0 blocked" in text and "gone: 1 would run, 0 would fail, 0 blocked" in text
    # every blocked item is still in ``blocked`` (the plan's table prints them), each once
    assert len(out["blocked"]) == 2
    # the filter reads run_nodes from the plan too
    assert run_summary_filter(result, [], [], True)["lines"] == text


def test_the_run_nodes_rows_are_what_a_report_of_every_node_says_of_them():
    """--check reports for the run's hosts exactly what it reported before (every node listed)."""
    result = cluster_plan()
    every = run_report.run_summary(dict(result, run_nodes=None), check_mode=True)
    assert "n13" in every["nodes"] and every["outside"]["nodes"] == 0
    scoped = run_report.run_summary(result, check_mode=True)
    for node in scoped["nodes"]:
        assert scoped["nodes"][node] == every["nodes"][node]
    for node in ("n00", "n01", "gone"):
        lines = [line for line in every["lines"] if line.startswith(node + ":")]
        assert lines and lines[0] in scoped["lines"]


class Tripwire(dict):
    """A step of a node outside the run: the report may ask it only whether the controller runs it."""

    def get(self, key, default=None):
        assert key in ("record_only", "controller_host"), "the report read %r of a step it does not report" % key
        return dict.get(self, key, default)


def test_only_the_reported_nodes_steps_are_summarized():
    result = cluster_plan(outside=40)
    result["plan"] = [step if step["node"] in ("n00", "n01", "gone", "n05") else Tripwire(step)
                      for step in result["plan"]]
    out = run_report.run_summary(result, check_mode=True)
    assert out["outside"]["nodes"] == 39 and out["outside"]["steps"] == 78  # n02..n41 but n05


def test_a_real_run_counts_the_outside_steps_as_not_run_and_keeps_every_error():
    result = cluster_plan(outside=3)
    errors = [{"node": "n02", "phase": "attach", "msg": "node n02 has work in phase attach but did not run it",
               "volumes": ["pv-2"]},
              {"node": "n00", "phase": "mount", "msg": "mount: boom", "volumes": ["pv-0"]}]
    after = [{"node": "n02", "volume": "pv-2", "pod": None, "action": "mount", "reason": "not attempted: x"}]
    out = run_report.run_summary(result, errors, after)
    assert out["nodes"]["n00"]["volumes"] == {"pv-0": ["attach/device", "mount/device FAILED"]}
    assert out["nodes"]["gone"]["applied"] == 1  # the controller's release
    # n02 (2 steps, one of them stopped: counted with the blocked) and n03, n04; n05 is reported (controller host)
    assert out["outside"] == {"nodes": 3, "steps": 5, "blocked": 2, "names": ["n02", "n03", "n04"]}
    assert out["lines"][0] == "Per node: steps applied, failed, blocked:"
    assert "3 other node(s) of the cluster, not in this run's hosts: 5 step(s) not run, 2 blocked (n02, n03, n04); " \
           "add them" in "\n".join(out["lines"])
    # each failure once: n00's message is in its own node task's output, so the report names it; n02's steps were
    # run by no task of the run, so its message is the report's to print
    assert out["errors"] == errors and out["failed_nodes"] == {"n00": ["mount"]} and out["failed_elsewhere"] == errors[:1]
    failed = out["lines"][out["lines"].index("Failed outside the run's hosts:") - 3:]
    assert failed == ["", "Failed on 1 node(s), each one's message is in its own task's output above: n00 (mount)", "",
                      "Failed outside the run's hosts:",
                      "  n02: node n02 has work in phase attach but did not run it"], failed
    assert "mount: boom" not in "\n".join(out["lines"])


def test_the_errors_of_nodes_outside_the_run_are_one_line_of_the_report():
    """A --limit real run of a cluster with work on 40 other nodes: each of them has an error (its steps not run);
    the summary's ``errors`` and the report say them in one entry and one line, after the run's own errors."""
    result = cluster_plan(outside=40)
    outside = ["n%02d" % i for i in range(2, 42) if i != 5]
    errors = [{"node": node, "phase": "attach", "msg": "node %s has work in phase attach but did not run it" % node,
               "volumes": []} for node in outside]
    errors.append({"node": "n00", "phase": "mount", "msg": "mount: boom", "volumes": ["pv-0"]})
    errors.append({"node": None, "phase": "record", "msg": "the records could not be written", "volumes": []})
    out = run_report.run_summary(result, errors)
    assert out["errors"] == errors[-2:] + [out["failed_elsewhere"][1]] and out["failed_nodes"] == {"n00": ["mount"]}
    assert [e["phase"] for e in out["failed_elsewhere"]] == ["record", "outside"]
    assert out["failed_elsewhere"][1]["nodes"] == outside and out["failed_elsewhere"][1]["node"] is None
    assert out["failed_elsewhere"][1]["msg"].startswith("39 node(s) not in this run's hosts have steps it did not run")
    failed = out["lines"][out["lines"].index("Failed outside the run's hosts:") + 1:]
    line = ("39 node(s) not in this run's hosts have steps it did not run (n02, n03, n04, n06, n07, and 34 more): add "
            "them to the inventory (kubevol_node_name maps a host to its Kubernetes node name), or run again without "
            "--limit")
    assert failed == ["  the run: the records could not be written", "  " + line], failed
    # one node outside keeps its own error, as before
    one = run_report.run_summary(cluster_plan(outside=1), errors[:1] + errors[-2:-1])
    assert one["lines"][-1] == "  n02: node n02 has work in phase attach but did not run it"
    assert one["errors"] == errors[:1] + errors[-2:-1]


def test_check_mode_counts_what_would_fail():
    """In check mode the node modules checked each step without acting: a step a node refused would fail."""
    result = cluster_plan(outside=0)
    errors = [{"node": "n00", "phase": "mount", "msg": "no mkfs.xfs on node n00", "volumes": ["pv-0"]}]
    out = run_report.run_summary(result, errors, check_mode=True)
    assert "n00: 1 would run, 1 would fail, 0 blocked" in out["lines"]
    assert out["nodes"]["n00"]["volumes"] == {"pv-0": ["attach/device", "mount/device WOULD FAIL"]}
    assert out["lines"][-1] == "Would fail on 1 node(s), each one's message is in its own task's output above: n00 (mount)"


def test_no_outside_node_no_outside_line():
    result = cluster_plan(outside=0)
    out = run_report.run_summary(result, check_mode=True)
    assert out["outside"] == {"nodes": 0, "steps": 0, "blocked": 0, "names": []}
    assert not [line for line in out["lines"] if "not in this run's hosts" in line]


def test_one_warning_for_every_node_outside_the_play():
    result = cluster_plan()
    warnings = plan_text.nodes_outside(result, ["n00", "n01"])
    assert warnings == [
        "the plan has 24 step(s) (attach/device, mount/device) on 12 nodes that are not in this run's hosts (no "
        "node facts for them: n02, n03, n04, n05, n06, and 7 more): they are not run; add the nodes to the inventory "
        "(kubevol_node_name maps a host to its Kubernetes node name), or drop --limit"]
    # the controller's own steps (gone's record-only release, n05's controller-host expansion) are not among them
    # one node outside: the message names it, as it always did
    assert plan_text.nodes_outside(result, ["n%02d" % i for i in range(13)]) == [
        "the plan has 2 step(s) on node n13 (attach/device, mount/device), which is not in this run's hosts (no node "
        "facts for it): they are not run; add the node to the inventory (kubevol_node_name maps a host to its "
        "Kubernetes node name), or drop --limit"]
    assert plan_text.nodes_outside(result, ["n%02d" % i for i in range(14)]) == []


def test_a_node_with_only_blocked_items_is_counted_without_advice():
    """A pod scheduled to a node the cluster does not have: its blocked item is counted in the line, which gives
    no advice to add the node to the inventory (the blocked item says what is wrong)."""
    result = cluster_plan(outside=0)
    result["blocked"].append({"node": "node4", "volume": None, "pod": "shop/lost", "action": "mount",
                              "reason": "pod is scheduled to node node4, which does not exist"})
    out = run_report.run_summary(result, check_mode=True, plan_shown=False)
    assert out["outside"] == {"nodes": 1, "steps": 0, "blocked": 1, "names": ["node4"]}
    assert "1 other node(s) of the cluster, not in this run's hosts: 0 step(s) not run, 1 blocked (node4)" \
        in out["lines"], out["lines"]
    assert len(out["blocked"]) == 2 and any("node4" in line for line in out["lines"] if line.startswith("!"))
