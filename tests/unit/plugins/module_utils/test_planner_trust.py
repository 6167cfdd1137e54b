# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A partial, foreign or surprising cluster never costs a running pod its volume: a snapshot must look like a cluster,
and the teardown guard.

One case per rule of docs/planner.md "Trust", each naming the Kubernetes source it follows; the other rules are in
test_planner_trust_pods.py (pods keep their volumes, foreign drivers, read-only per pod) and
test_planner_trust_nodes.py (out-of-service and deleted nodes, reconstruction per volume, intent before action).
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, facts, node, pod, uvn, va  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import TeardownRefused  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import StoreError  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.modules import volume_reconcile_plan as plan_module  # noqa: E402
from planner_trust_lib import NOW, converged_node1, reasons, run, steps, teardown  # noqa: E402


# ---- 1. a snapshot must look like a cluster -----------------------------------------------------------

@pytest.mark.parametrize("text, match", [
    ("", "the file is empty"),
    ("\n# only a comment\n", "the file is empty"),
    ("42\n", "document 1 is an int"),
    ("just some words\n", "document 1 is the text 'just some words'"),
    ('{"kind": "List", "items": {"a": 1}}', "items is a dict, not a list"),
    ("items: [1, {kind: Pod}]\nkind: List\nmetadata: {}\n", r"items\[0\] is not a Kubernetes object \(an int\)"),
    ("error: You must be logged in to the server (Unauthorized)\n", "kubectl's error output"),
    ("Error from server (Forbidden): pods is forbidden: User \"x\" cannot list\n", "kubectl's error output"),
    ("Unable to connect to the server: dial tcp 10.0.0.1:6443: i/o timeout\n", "kubectl's error output"),
])
def test_malformed_snapshot_is_a_clean_error_naming_the_file(tmp_path, text, match):
    """kubevol's own rule (no Kubernetes analogue): a file that is not a List is never an empty cluster."""
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    with pytest.raises(StoreError, match=match) as err:
        FileStore(str(path)).load()
    assert str(path) in err.value.msg


def test_zero_byte_file_through_the_planner_module_plans_nothing(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("")
    params = dict(cluster_source="file", cluster_state=str(path), cluster=None, node_facts={"node1": converged_node1("pv-a")},
                  force_detach=True, max_wait_for_unmount=360, known_drivers=["loop.kubevol.io"], scope=None,
                  max_teardown_fraction=0.5, max_teardown_count=20, allow_mass_teardown=False)
    with pytest.raises(StoreError, match="the file is empty"):
        plan_module.run(params, NOW)


def test_kubectl_json_cut_off_after_an_item_plans_nothing(tmp_path):
    """kubectl's JSON is read object by object (FileStore.stream_items); a file cut off between two objects must not
    plan from the objects read before the cut. Here the cut drops the pods: planned from what came before it, the
    running pod's volume would be unmounted and detached."""
    import json
    full = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   pod("ns/p", "node1", ["a"], uid="uid-ns-pv-a"))
    node_facts = {"node1": converged_node1("pv-a")}
    params = dict(cluster_source="file", cluster=None, node_facts=node_facts, force_detach=True,
                  max_wait_for_unmount=360, known_drivers=["loop.kubevol.io"], scope=None, max_teardown_fraction=0.5,
                  max_teardown_count=20, allow_mass_teardown=False, output="full", table_rows=100)
    text = json.dumps(full, indent=4)
    complete = tmp_path / "complete.json"
    complete.write_text(text)
    assert teardown(plan_module.run(dict(params, cluster_state=str(complete)), NOW)) == []
    before_the_pod = cluster(*full["items"][:-1])
    assert teardown(run(before_the_pod, node_facts))  # what a plan from the objects before the cut would do
    cut = tmp_path / "cut.json"
    cut.write_text(text[:text.index('"kind": "Pod"')])  # kubectl's output, cut off where the pod begins
    with pytest.raises(StoreError, match="invalid") as err:
        plan_module.run(dict(params, cluster_state=str(cut)), NOW)
    assert str(cut) in err.value.msg and "write it again with `kubectl get" in err.value.msg


def test_empty_list_with_a_node_reporting_volumes_tears_nothing_down():
    """reconstruct.go readyToUnmount: the kubelet removes nothing before its pod sources are ready."""
    result = run(cluster(), {"node1": converged_node1("pv-a", "pv-b")})
    assert teardown(result) == []
    assert any("no Node object node1" in r and r.endswith("[KV-NODE-UNKNOWN]") for r in reasons(result))


def test_a_node_missing_from_the_snapshot_is_left_alone_the_others_are_planned():
    data = cluster(node("node2"), bound("pv-a", "ns/a"), bound("pv-b", "ns/b"), pod("ns/q", "node2", ["b"]))
    result = run(data, {"node1": converged_node1("pv-a"), "node2": facts("node2")})
    assert [s for s in steps(result) if s[2] == "node1"] == []
    assert ("attach", "device", "node2", "pv-b", None) in steps(result)
    assert [b["node"] for b in result["blocked"]] == ["node1"]


def test_a_snapshot_without_any_node_object_detaches_nothing():
    data = cluster(bound("pv-a", "ns/a"), va("pv-a", "node1"))
    result = run(data)
    assert steps(result, "detach") == []
    assert any("no Node object at all" in r for r in reasons(result))


# ---- 2. the teardown guard -----------------------------------------------------------------------------

def four_mounted():
    data = [node("node1", attached=[uvn("pv-" + c) for c in "abcd"], in_use=[uvn("pv-" + c) for c in "abcd"])]
    for c in "abcd":
        data.extend(bound("pv-" + c, "ns/" + c))
    return data, {"node1": converged_node1(*["pv-" + c for c in "abcd"])}


def test_guard_trips_when_the_pods_vanish_from_the_snapshot():
    data, node_facts = four_mounted()
    result = run(cluster(*data), node_facts)
    guard = result["teardown_guard"]
    assert guard["tripped"] and guard["mounted"] == 4 and guard["teardown"] == 4
    assert [v["volume"] for v in guard["volumes"]] == ["pv-a", "pv-b", "pv-c", "pv-d"]
    assert guard["volumes"][0]["steps"] == ["unmount/pod", "unmount/device", "detach/device"]


def test_guard_refusal_through_the_module_names_the_teardown_and_the_override(tmp_path):
    data, node_facts = four_mounted()
    params = dict(cluster_source="file", cluster_state=None, cluster=cluster(*data), node_facts=node_facts, force_detach=True,
                  max_wait_for_unmount=360, known_drivers=["loop.kubevol.io"], scope=None,
                  max_teardown_fraction=0.5, max_teardown_count=20, allow_mass_teardown=False)
    with pytest.raises(TeardownRefused) as err:
        plan_module.run(params, NOW)
    msg = err.value.msg
    assert "4 of the 4 volumes mounted now" in msg and "node1 pv-a (unmount/pod" in msg
    assert "allow_mass_teardown=true" in words.say(msg) and "kubevol_allow_mass_teardown=true" in words.say(msg, words.ROLE)
    assert msg.startswith("refusing a mass teardown, so no node was changed: ") and msg.endswith("[KV-MASS-TEARDOWN]")
    assert len(err.value.kwargs["plan"]) == 12  # the plan travels with the failure, for the table
    params["allow_mass_teardown"] = True
    assert len(plan_module.run(params, NOW)["plan"]) == 12


def test_guard_lets_one_volume_move_and_a_minority_teardown_through():
    data, node_facts = four_mounted()
    data = data + [pod("ns/" + c, "node1", [c], uid="uid-ns-pv-" + c) for c in "bcd"]  # pod ns/a is gone: 1 of 4
    assert not run(cluster(*data), node_facts)["teardown_guard"]["tripped"]
    single = [node("node1", attached=[uvn("pv-a")])] + bound("pv-a", "ns/a")
    result = run(cluster(*single), {"node1": converged_node1("pv-a")})
    assert result["teardown_guard"]["teardown"] == 1 and not result["teardown_guard"]["tripped"]


def test_guard_absolute_count():
    data, node_facts = four_mounted()
    data = data + [pod("ns/" + c, "node1", [c], uid="uid-ns-pv-" + c) for c in "cd"]  # 2 of 4: within the fraction
    assert not run(cluster(*data), node_facts)["teardown_guard"]["tripped"]
    assert run(cluster(*data), node_facts, max_teardown_count=1)["teardown_guard"]["tripped"]
