# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The stage option (plan/stages.py): the kubelet's share and the attach/detach controller's share of a plan,
each alone, and a pod move carried out by node stage -> attach/detach stage -> node stage."""

import copy
import datetime
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import apply_plan, bound, cluster, facts, node, pod, uvn  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.plan import stages  # noqa: E402

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)


def run(data, node_facts=None, stage="all"):
    opts = PlanOptions(True, 360, ("loop.kubevol.io",), NOW, stage=stage)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts)


def steps(result):
    return [(s["action"], s["target"], s["node"], s["volume"], s["pod"]) for s in result["plan"]]


def reasons(result):
    return [b["reason"] for b in result["blocked"]]


def moved(modes=("ReadWriteOnce",)):
    """pv-a attached to and mounted on node1 for pod ns/old, which is gone; ns/new wants it on node2."""
    data = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), node("node2"),
                   bound("pv-a", "ns/a", modes=modes), pod("ns/new", "node2", ["a"]))
    node_facts = {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("old-uid", "pv-a")]),
                  "node2": facts("node2")}
    return data, node_facts


def test_stage_all_is_the_whole_plan():
    data, node_facts = moved()
    assert steps(run(data, node_facts)) == [
        ("unmount", "pod", "node1", "pv-a", None), ("unmount", "device", "node1", "pv-a", None),
        ("detach", "device", "node1", "pv-a", None), ("attach", "device", "node2", "pv-a", None),
        ("mount", "device", "node2", "pv-a", None), ("mount", "pod", "node2", "pv-a", "ns/new")]
    assert "stage" not in run(data, node_facts)


def test_unknown_stage_refused():
    with pytest.raises(InvalidInput, match="stage"):
        run(*moved(), stage="kubelet")


def test_a_pod_move_seen_by_the_node_stage_alone():
    """The kubelet's share: node1 unmounts; node2 waits for its attach, which is the A/D stage's."""
    data, node_facts = moved()
    result = run(data, node_facts, stage="node")
    assert steps(result) == [("unmount", "pod", "node1", "pv-a", None), ("unmount", "device", "node1", "pv-a", None)]
    waits = [b for b in result["blocked"] if b["reason"].startswith("waiting for the attach/detach stage")]
    assert sorted((b["node"], b["pod"] or "") for b in waits) == [("node2", ""), ("node2", "ns/new")]
    assert "volume pv-a is not attached to node node2 yet" in waits[0]["reason"]
    assert result["stage"] == "node" and result["detach_requests"] == []


def test_a_pod_move_seen_by_the_attach_detach_stage_alone():
    """The A/D controller's share: node1 still has it mounted, so no detach, and the RWO volume is not attached to
    node2 (node1 still holds it): a Multi-Attach error, never two nodes."""
    data, node_facts = moved()
    result = run(data, node_facts, stage="attach_detach")
    assert steps(result) == []
    assert any(r.startswith("waiting for node node1 to unmount it: its node stage has not unmounted it")
               for r in reasons(result))
    assert any(r.startswith('Multi-Attach error for volume "pv-a"') for r in reasons(result))


def test_detach_waits_while_volumes_in_use_lists_it():
    """Facts show nothing mounted but node status still lists it in use: the node has not recorded its unmount."""
    data, _uids = moved()
    node_facts = {"node1": facts("node1", devices=["pv-a"]), "node2": facts("node2")}
    result = run(data, node_facts, stage="attach_detach")
    assert steps(result) == []
    assert any("node.status.volumesInUse of node node1 still lists it" in r for r in reasons(result))
    assert result["in_use_repairs"] == []  # the kubelet's record: the node stage repairs it
    node_result = run(data, node_facts, stage="node")
    assert node_result["in_use_repairs"] == [{"node": "node1", "unique_volume_names": [uvn("pv-a")],
                                              "in_use": False}]


def test_detach_and_attach_once_unmounted_and_recorded():
    data, _uids = moved()
    data["items"][0]["status"]["volumesInUse"] = []
    node_facts = {"node1": facts("node1", devices=["pv-a"]), "node2": facts("node2")}
    result = run(data, node_facts, stage="attach_detach")
    assert steps(result) == [("detach", "device", "node1", "pv-a", None), ("attach", "device", "node2", "pv-a", None)]


def test_forced_detach_is_not_held():
    data, node_facts = moved()
    data["items"][0]["spec"]["taints"] = [{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"}]
    # node1 is shut down (the taint) and not reached: volumesInUse still lists the volume, and the detach is forced
    # in the records only (reconciler.go hasOutOfServiceTaint), in this stage as in a whole reconcile
    result = run(data, {"node2": facts("node2")}, stage="attach_detach")
    detaches = [s for s in result["plan"] if s["action"] == "detach"]
    assert len(detaches) == 1 and detaches[0]["forced"] and detaches[0]["record_only"]
    assert ("attach", "device", "node2", "pv-a", None) in steps(result)


def test_node_stage_plans_only_its_slice():
    """A slice plans for its own nodes (those with facts); the others are other slices' work."""
    data = cluster(node("node1", attached=[uvn("pv-a")]), node("node2", attached=[uvn("pv-b")]),
                   bound("pv-a", "ns/a"), bound("pv-b", "ns/b"), pod("ns/p", "node1", ["a"]), pod("ns/q", "node2", ["b"]))
    node_facts = {"node1": facts("node1", devices=["pv-a"])}
    result = run(data, node_facts, stage="node")
    assert steps(result) == [("mount", "device", "node1", "pv-a", None), ("mount", "pod", "node1", "pv-a", "ns/p")]
    assert all(b["node"] in (None, "node1") for b in result["blocked"])


def test_node_expansion_waits_for_the_controller_expansion():
    data = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]),
                   bound("pv-a", "ns/a", size="1Gi", request="2Gi", capacity="1Gi"), pod("ns/p", "node1", ["a"]))
    node_facts = {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("p-uid", "pv-a")])}
    data["items"][-1]["metadata"]["uid"] = "p-uid"
    everything = [s[:2] for s in steps(run(data, node_facts))]
    assert ("expand", "controller") in everything and ("expand", "node") in everything
    node_result = run(data, node_facts, stage="node")
    assert steps(node_result) == []
    assert any(r.startswith("waiting for the attach/detach stage: the backing volume of pv-a is grown first")
               for r in reasons(node_result))
    assert [s[:2] for s in steps(run(data, node_facts, stage="attach_detach"))] == [("expand", "controller")]


def _round(data, node_facts, stage):
    """One stage carried out as the role records it: the steps, the in-use records of unmounts and repairs."""
    result = run(data, node_facts, stage=stage)
    data, node_facts = apply_plan(result, data, node_facts)
    for s in result["plan"]:
        if (s["action"], s["target"]) == ("unmount", "device"):
            status = next(o for o in data["items"] if o["kind"] == "Node" and o["metadata"]["name"] == s["node"])
            status["status"]["volumesInUse"] = [u for u in status["status"]["volumesInUse"]
                                                if u != s["unique_volume_name"]]
    for repair in result["in_use_repairs"]:
        status = next(o for o in data["items"] if o["kind"] == "Node" and o["metadata"]["name"] == repair["node"])
        names = set(status["status"].get("volumesInUse") or ())
        names = names | set(repair["unique_volume_names"]) if repair["in_use"] else names - set(
            repair["unique_volume_names"])
        status["status"]["volumesInUse"] = sorted(names)
    return result, data, node_facts


def _holders(data, pv):
    return sorted(o["metadata"]["name"] for o in data["items"]
                  if o["kind"] == "Node" and uvn(pv) in [v["name"] for v in o["status"].get("volumesAttached", ())])


@pytest.mark.parametrize("order", [("node", "attach_detach", "node"), ("attach_detach", "node", "attach_detach", "node")])
def test_a_pod_move_converges_through_the_stages_and_never_on_two_nodes(order):
    """The workflow (docs/fleet.md): node stage, A/D stage, node stage; in any order the RWO volume is attached to
    at most one node after each stage, and the move converges: a whole plan afterwards has nothing to do."""
    data, node_facts = moved()
    data, node_facts = copy.deepcopy(data), copy.deepcopy(node_facts)
    for stage in order:
        _result, data, node_facts = _round(data, node_facts, stage)
        assert len(_holders(data, "pv-a")) <= 1
    assert _holders(data, "pv-a") == ["node2"]
    assert steps(run(data, node_facts)) == []


def test_stages_are_the_phase_table():
    """Every step kind belongs to exactly one stage."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.common.phases import STEP_KINDS
    assert set(STEP_KINDS) == stages.NODE_KINDS | stages.ATTACH_DETACH_KINDS
    assert not stages.NODE_KINDS & stages.ATTACH_DETACH_KINDS
