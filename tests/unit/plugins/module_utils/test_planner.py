# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One case per planner rule, in the spirit of attachdetach/reconciler/reconciler_test.go: desired state, node facts,
mount level, expansion, scope. Attach and detach: test_planner_attach.py."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import apply_plan, bound, cluster, csidriver, facts, node, pod, pv, pvc, uvn  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.common.phases import STEP_KINDS
from planner_lib import basic, reasons, run, steps  # noqa: E402


# ---- desired state --------------------------------------------------------------------------------

ATTACH_CASES = [
    ("managed node attaches", basic(pod("ns/p", "node1", ["a"])), [("attach", "device", "node1", "pv-a", None)]),
    ("unmanaged node: no attach", basic(pod("ns/p", "node1", ["a"]), node1=node("node1", managed=False)), []),
    ("unscheduled pod ignored", basic(pod("ns/p", "", ["a"])), []),
    ("succeeded pod ignored", basic(pod("ns/p", "node1", ["a"], phase="Succeeded")), []),
    ("failed pod ignored", basic(pod("ns/p", "node1", ["a"], phase="Failed")), []),
    ("deleted pod, containers terminated", basic(pod("ns/p", "node1", ["a"], deleted=True, states=["terminated"])),
     []),
    ("deleted pod, no container statuses", basic(pod("ns/p", "node1", ["a"], deleted=True)), []),
    # terminating: the kubelet adds no volume for it (findAndAddNewPods), so nothing new is attached either
    ("deleted pod, a container still running", basic(pod("ns/p", "node1", ["a"], deleted=True,
                                                         states=["running", "terminated"])), []),
    ("attachRequired false: no attach", basic(pod("ns/p", "node1", ["a"]), csidriver(attach_required=False)), []),
    ("no CSIDriver object: attach", basic(pod("ns/p", "node1", ["a"])), [("attach", "device", "node1", "pv-a", None)]),
    ("CSIDriver attachRequired true", basic(pod("ns/p", "node1", ["a"]), csidriver()),
     [("attach", "device", "node1", "pv-a", None)]),
    ("two pods share one attachment", basic(pod("ns/p", "node1", ["a"]), pod("ns/q", "node1", ["a"])),
     [("attach", "device", "node1", "pv-a", None)]),
    ("inline CSI never attached", basic(pod("ns/p", "node1", [], volumes=[
        {"name": "i", "csi": {"driver": "loop.kubevol.io"}}])), []),
    ("nfs never attached", basic(pod("ns/p", "node1", [], volumes=[{"name": "n", "nfs": {"server": "s", "path": "/"}}])),
     []),
]


@pytest.mark.parametrize("name,data,expected", ATTACH_CASES, ids=[c[0] for c in ATTACH_CASES])
def test_attach_level(name, data, expected):
    assert steps(run(data), "attach") == expected


def test_non_attachable_counted_as_skipped():
    result = run(basic(pod("ns/p", "node1", ["a"], volumes=[{"name": "n", "nfs": {}}, {"name": "e", "emptyDir": {}}])))
    assert result["summary"]["skipped"] == 2
    assert result["blocked"] == []


def test_attach_required_false_still_mounts():
    result = run(basic(pod("ns/p", "node1", ["a"]), csidriver(attach_required=False)))
    assert steps(result) == [("mount", "device", "node1", "pv-a", None), ("mount", "pod", "node1", "pv-a", "ns/p")]


def test_unmanaged_node_mount_waits_for_attach():
    result = run(basic(pod("ns/p", "node1", ["a"]), node1=node("node1", managed=False)))
    assert steps(result) == []
    assert "not managed by the attach/detach controller" in reasons(result)[0]


BLOCKED_CASES = [
    ("unbound claim", cluster(node("node1"), pv("pv-a", claim="ns/a"), pvc("ns/a", "", phase="Pending"),
                              pod("ns/p", "node1", ["a"])), "has non-bound phase 'Pending'"),
    ("bound phase but no volumeName", cluster(node("node1"), pvc("ns/a", ""), pod("ns/p", "node1", ["a"])),
     "and volumeName ''"),
    ("PVC missing", cluster(node("node1"), pod("ns/p", "node1", ["a"])), "claim ns/a does not exist"),
    ("PV missing", cluster(node("node1"), pvc("ns/a", "pv-a"), pod("ns/p", "node1", ["a"])),
     "PV pv-a of claim ns/a does not exist"),
    ("claimRef uid mismatch", cluster(node("node1"), pv("pv-a", claim="ns/a", uid="old"), pvc("ns/a", "pv-a"),
                                      pod("ns/p", "node1", ["a"])), "claimRef uid old, the claim's uid uid-ns/a"),
    ("no claimRef", cluster(node("node1"), pv("pv-a"), pvc("ns/a", "pv-a"), pod("ns/p", "node1", ["a"])),
     "not bound to claim ns/a yet"),
    ("pod on a missing node", cluster(bound("pv-a", "ns/a"), pod("ns/p", "ghost", ["a"])),
     "node ghost of pod ns/p is not in the cluster snapshot"),
]


@pytest.mark.parametrize("name,data,expected", BLOCKED_CASES, ids=[c[0] for c in BLOCKED_CASES])
def test_blocked_with_reason(name, data, expected):
    result = run(data)
    assert result["plan"] == []
    assert len(result["blocked"]) == 1 and expected in result["blocked"][0]["reason"], result["blocked"]
    assert result["blocked"][0]["pod"] == "ns/p"


def test_generic_ephemeral_volume_claim_name_and_owner():
    eph = [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {}}}]
    owned = cluster(node("node1"), pv("pv-e", claim="ns/p-scratch"), pvc("ns/p-scratch", "pv-e", owner="uid-ns-p"),
                    pod("ns/p", "node1", [], volumes=eph))
    assert steps(run(owned), "attach") == [("attach", "device", "node1", "pv-e", None)]
    stray = cluster(node("node1"), pv("pv-e", claim="ns/p-scratch"), pvc("ns/p-scratch", "pv-e", owner="other"),
                    pod("ns/p", "node1", [], volumes=eph))
    assert "not owned by pod" in reasons(run(stray))[0]


# ---- node facts: unreachable, unknown ---------------------------------------------------------------

def test_unreachable_node_blocks_its_steps_and_dependants():
    data = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), node("node2"), bound("pv-a", "ns/a"),
                   pod("ns/new", "node2", ["a"]))
    result = run(data, {"node1": facts("node1", reachable=False, error="ssh timeout"), "node2": facts("node2")})
    assert steps(result) == []
    assert any(r.startswith("node node1 is unreachable (ssh timeout), so the detach requested 0s ago waits")
               for r in reasons(result))
    assert any(r.startswith("Multi-Attach error") and "node1 unreachable" in r for r in reasons(result))


def test_node_without_facts_gets_mounts_but_no_unmounts():
    result = run(basic(pod("ns/p", "node1", ["a"])))
    assert ("mount", "pod", "node1", "pv-a", "ns/p") in steps(result)
    assert steps(result, "unmount") == []


# ---- mount level -------------------------------------------------------------------------------------

def test_phase_order():
    data = cluster(node("node1", attached=[uvn("pv-old")]), node("node2"), bound("pv-old", "ns/old"),
                   bound("pv-a", "ns/a", size="1Gi", request="2Gi", capacity="1Gi"), pod("ns/p", "node2", ["a"]))
    node_facts = {"node1": facts("node1", devices=["pv-old"], global_mounts=["pv-old"], pod_mounts=[("x", "pv-old")]),
                  "node2": facts("node2")}
    stale = "/var/lib/kubelet/plugins/kubernetes.io/csi/loop.kubevol.io/%s/globalmount" % ("0" * 64)
    node_facts["node1"]["global_mounts"].append({"unique_volume_name": None, "driver": "loop.kubevol.io",
                                                 "path": stale, "mounted": False, "uncertain": "no vol_data.json"})
    result = run(data, node_facts)
    order = [(s["action"], s["target"]) for s in result["plan"]]
    assert order == list(STEP_KINDS)


def test_mount_skips_what_is_mounted_and_remounts_on_read_only_change():
    data = basic(pod("ns/p", "node1", ["a"], read_only_mounts=["a"]), node1=node("node1", attached=[uvn("pv-a")]))
    ok = {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("uid-ns-p", "pv-a", True)])}
    assert run(data, ok)["plan"] == []
    changed = {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"],
                              pod_mounts=[("uid-ns-p", "pv-a", False)])}
    result = run(data, changed)
    assert steps(result) == [("mount", "pod", "node1", "pv-a", "ns/p")]
    assert result["plan"][0]["reason"] == "remount: read-only changed"


def test_read_only_sources():
    data = basic(pod("ns/p", "node1", ["a"], claim_read_only=["a"]), pod("ns/q", "node1", ["a"]))
    result = run(data)
    pods = dict((s["pod"], s["pod_read_only"]) for s in result["plan"] if s["target"] == "pod")
    assert pods == {"ns/p": True, "ns/q": False}
    (item,) = result["volume_items"]["node1"].values()
    assert item["read_only"] is False  # the staging mount: the PV's own flag
    pv_ro = run(cluster(node("node1"), bound("pv-a", "ns/a", read_only=True), pod("ns/p", "node1", ["a"])))
    assert [i["read_only"] for i in pv_ro["volume_items"]["node1"].values()] == [True]
    assert all(s["pod_read_only"] for s in pv_ro["plan"] if s["target"] == "pod")


def test_each_node_volume_item_is_in_the_plan_once():
    """A lean plan: steps name their item (node, unique_volume_name); by_node indexes each node's steps."""
    data = basic(pod("ns/p", "node1", ["a"]), pod("ns/q", "node1", ["a"]), pod("ns/r", "node1", ["a"]))
    result = run(data)
    assert [s["action"] + "/" + s["target"] for s in result["plan"]] == [
        "attach/device", "mount/device", "mount/pod", "mount/pod", "mount/pod"]
    assert all("item" not in s for s in result["plan"])
    assert list(result["volume_items"]) == ["node1"] and len(result["volume_items"]["node1"]) == 1
    assert result["by_node"] == {"node1": [0, 1, 2, 3, 4]}


def test_block_mode_maps_without_global_mount():
    data = cluster(node("node1"), bound("pv-b", "ns/b", mode="Block"), pod("ns/p", "node1", ["b"], devices=["b"]))
    result = run(data)
    assert steps(result) == [("attach", "device", "node1", "pv-b", None), ("mount", "pod", "node1", "pv-b", "ns/p")]
    assert result["volume_items"]["node1"][result["plan"][1]["unique_volume_name"]]["mode"] == "Block"


def test_volume_mode_mismatch_blocked():
    data = cluster(node("node1"), bound("pv-b", "ns/b", mode="Block"), pod("ns/p", "node1", ["b"]))
    assert "volumeMode Block" in reasons(run(data))[0]


# ---- expansion ---------------------------------------------------------------------------------------

def test_expand_controller_then_node():
    data = cluster(node("node1"), bound("pv-a", "ns/a", size="1Gi", request="2Gi", capacity="1Gi"),
                   pod("ns/p", "node1", ["a"]))
    result = run(data)
    expands = [(s["target"], s["size_from"], s["size_to"]) for s in result["plan"] if s["action"] == "expand"]
    assert expands == [("controller", 2 ** 30, 2 ** 31), ("node", 2 ** 30, 2 ** 31)]


def test_expand_node_only_when_pv_grew():
    data = cluster(node("node1"), bound("pv-a", "ns/a", size="2Gi", request="2Gi", capacity="1Gi"),
                   pod("ns/p", "node1", ["a"]))
    assert [s["target"] for s in run(data)["plan"] if s["action"] == "expand"] == ["node"]


def test_no_resize_for_read_only():
    data = cluster(node("node1"), bound("pv-a", "ns/a", size="2Gi", request="2Gi", capacity="1Gi", read_only=True),
                   pod("ns/p", "node1", ["a"]))
    assert [s for s in run(data)["plan"] if s["action"] == "expand"] == []


# ---- scope -------------------------------------------------------------------------------------------

def test_scope_ignores_other_pods_for_desired_and_teardown():
    data = cluster(node("node1", attached=[uvn("pv-b")]), bound("pv-a", "ns/a"), bound("pv-b", "other/b"),
                   pod("ns/p", "node1", ["a"]), pod("other/q", "node1", ["b"]))
    node_facts = {"node1": facts("node1", devices=["pv-b"], global_mounts=["pv-b"], pod_mounts=[("uid-other-q", "pv-b")])}
    result = run(data, node_facts, scope=frozenset(["ns/p"]))
    assert set(s[3] for s in steps(result)) == {"pv-a"}


def test_scope_leaves_a_moved_out_of_scope_pods_old_mount_alone():
    """other/q moved from node2 to node1 (new uid): its old mount on node2 is an orphan, but its volume
    belongs to a pod outside the scope, so a scoped run neither unmounts nor detaches it anywhere."""
    data = cluster(node("node1"), node("node2", attached=[uvn("pv-b")]), bound("pv-a", "ns/a"),
                   bound("pv-b", "other/b"), pod("ns/p", "node1", ["a"]), pod("other/q", "node1", ["b"]))
    node_facts = {"node1": facts("node1"),
                  "node2": facts("node2", devices=["pv-b"], global_mounts=["pv-b"], pod_mounts=[("old-uid", "pv-b")])}
    result = run(data, node_facts, scope=frozenset(["ns/p"]))
    assert set(s[3] for s in steps(result)) == {"pv-a"}
    # Without a scope the same leftovers are torn down, and the volume follows its pod.
    unscoped = run(data, node_facts)
    assert ("detach", "device", "node2", "pv-b", None) in steps(unscoped)
    assert ("attach", "device", "node1", "pv-b", None) in steps(unscoped)


def test_replan_after_apply_is_empty():
    data = cluster(node("node1", attached=[uvn("pv-old")]), node("node2"), bound("pv-old", "ns/old"),
                   bound("pv-a", "ns/a", size="1Gi", request="2Gi", capacity="1Gi"), pod("ns/p", "node2", ["a"]))
    node_facts = {"node1": facts("node1", devices=["pv-old"], global_mounts=["pv-old"], pod_mounts=[("x", "pv-old")]),
                  "node2": facts("node2")}
    result = run(data, node_facts)
    data2, facts2 = apply_plan(result, data, node_facts)
    assert run(data2, facts2)["plan"] == []
