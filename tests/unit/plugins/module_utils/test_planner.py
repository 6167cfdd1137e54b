# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One case per planner rule, in the spirit of attachdetach/reconciler/reconciler_test.go."""

import datetime
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import (apply_plan, bound, cluster, csidriver, facts, node, pod, pv, pvc, uvn,  # noqa: E402
                      va)

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    DETACH_REQUESTED_AT_ANNOTATION, OUT_OF_SERVICE_TAINT)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan import planner  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.phases import STEP_KINDS

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
OOS = {"key": OUT_OF_SERVICE_TAINT, "value": "nodeshutdown", "effect": "NoExecute"}


def run(data, node_facts=None, scope=None, **options):
    opts = PlanOptions(options.get("force_detach", True), options.get("max_wait_for_unmount", 360),
                       tuple(options.get("known_drivers", ("loop.kubevol.io",))), NOW)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts, scope)


def steps(result, action=None):
    return [(s["action"], s["target"], s["node"], s["volume"], s["pod"]) for s in result["plan"]
            if action is None or s["action"] == action]


def reasons(result):
    return [b["reason"] for b in result["blocked"]]


def basic(*extra, node1=None, node2=None, claims=("a",)):
    """node1 and node2, PV pv-<c> bound to ns/<c> for each claim."""
    objs = [node1 or node("node1"), node2 or node("node2")]
    for c in claims:
        objs.extend(bound("pv-" + c, "ns/" + c))
    return cluster(*(objs + list(extra)))


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


# ---- multi-attach ------------------------------------------------------------------------------------

def rwo_held_by_node1(modes=("ReadWriteOnce",), holder_pods=(), **kw):
    return cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), node("node2"),
                   bound("pv-a", "ns/a", modes=modes), pod("ns/new", "node2", ["a"]), *holder_pods)


@pytest.mark.parametrize("modes", [("ReadWriteMany",), ("ReadOnlyMany",), ("ReadWriteOnce", "ReadOnlyMany"), ()])
def test_multi_attach_allowed(modes):
    result = run(rwo_held_by_node1(modes, [pod("ns/old", "node1", ["a"])]))
    assert ("attach", "device", "node2", "pv-a", None) in steps(result)


def test_rwo_exclusively_attached_wording():
    # node1 holds it but no pod there wants it; volumesInUse keeps it (no facts), so it stays
    result = run(rwo_held_by_node1())
    assert steps(result, "attach") == []
    assert ('Multi-Attach error for volume "pv-a" Volume is already exclusively attached to one node and '
            "can't be attached to another [KV-MULTI-ATTACH]") in reasons(result)


def test_rwo_used_by_pods_wording():
    result = run(rwo_held_by_node1(holder_pods=[pod("ns/old", "node1", ["a"]), pod("ns/older", "node1", ["a"])]))
    assert ('Multi-Attach error for volume "pv-a" Volume is already used by pod(s) old, older [KV-MULTI-ATTACH]'
            in reasons(result))


@pytest.mark.parametrize("users,expected", [
    (("ns/a", "other/b"), "Volume is already used by pod(s) a and 1 pod(s) in different namespaces"),
    (("other/b", "x/c"), "Volume is already used by 2 pod(s) in different namespaces"),
])
def test_multi_attach_wording_across_namespaces(users, expected):
    # a PV binds one claim, so only fabricated state has users in several namespaces (inline volumes in Kubernetes)
    spec = type("Spec", (), {"unique_name": "u", "pv_name": "pv-a"})
    holder = type("NV", (), {"pods": users})
    p = type("P", (), {"desired": type("D", (), {"volumes": {("u", "node1"): holder}})})
    nv = type("NV", (), {"spec": spec})
    assert planner._multi_attach_error(p, nv, {"node1"}, "ns/new") == 'Multi-Attach error for volume "pv-a" ' + expected


def test_rwop_is_exclusive():
    result = run(rwo_held_by_node1(("ReadWriteOncePod",)))
    assert steps(result, "attach") == [] and any(r.startswith("Multi-Attach error") for r in reasons(result))


def test_rwo_follows_its_pod_after_detach_in_same_plan():
    data = cluster(node("node1", attached=[uvn("pv-a")]), node("node2"), bound("pv-a", "ns/a"),
                   pod("ns/new", "node2", ["a"]))
    result = run(data, {"node1": facts("node1", devices=["pv-a"]), "node2": facts("node2")})
    assert steps(result)[:2] == [("detach", "device", "node1", "pv-a", None), ("attach", "device", "node2", "pv-a", None)]


def test_uncertain_va_not_counted_for_multi_attach_and_detached():
    data = cluster(node("node1"), node("node2"), bound("pv-a", "ns/a"), va("pv-a", "node1", attached=False),
                   pod("ns/new", "node2", ["a"]))
    result = run(data)
    assert steps(result, "attach") == [("attach", "device", "node2", "pv-a", None)]
    assert steps(result, "detach") == [("detach", "device", "node1", "pv-a", None)]


def test_uncertain_va_wanted_is_attached_again():
    data = basic(va("pv-a", "node1"), pod("ns/p", "node1", ["a"]))
    result = run(data)
    assert steps(result, "attach") == [("attach", "device", "node1", "pv-a", None)]
    assert "uncertain" in result["plan"][0]["reason"]


def test_two_nodes_want_rwo_only_one_attach():
    result = run(basic(pod("ns/p", "node1", ["a"]), pod("ns/q", "node2", ["a"])))
    assert steps(result, "attach") == [("attach", "device", "node1", "pv-a", None)]
    assert "Volume is already used by pod(s) p" in reasons(result)[0]


def test_device_missing_on_node_attaches_again():
    data = basic(pod("ns/p", "node1", ["a"]), node1=node("node1", attached=[uvn("pv-a")]))
    result = run(data, {"node1": facts("node1")})
    assert steps(result, "attach") == [("attach", "device", "node1", "pv-a", None)]
    assert "device" in result["plan"][0]["reason"]


# ---- detach guard ------------------------------------------------------------------------------------

def in_use_on_node1(ready=True, taints=(), annotations=None):
    return cluster(node("node1", ready=ready, attached=[uvn("pv-a")], in_use=[uvn("pv-a")], taints=taints),
                   bound("pv-a", "ns/a"), va("pv-a", "node1", annotations=annotations))


LONG_AGO = {DETACH_REQUESTED_AT_ANNOTATION: "2026-11-22T11:00:00Z"}
RECENT = {DETACH_REQUESTED_AT_ANNOTATION: "2026-11-22T11:59:00Z"}

DETACH_CASES = [
    ("in use: blocked", in_use_on_node1(), {}, None),
    ("out-of-service taint forces", in_use_on_node1(taints=[OOS]), {}, True),
    ("timeout + NotReady + force", in_use_on_node1(ready=False, annotations=LONG_AGO), {}, True),
    ("timeout not reached", in_use_on_node1(ready=False, annotations=RECENT), {}, None),
    ("timeout + Ready: never forced", in_use_on_node1(annotations=LONG_AGO), {}, None),
    ("force_detach false", in_use_on_node1(ready=False, annotations=LONG_AGO), {"force_detach": False}, None),
    ("not in use: plain detach", cluster(node("node1", attached=[uvn("pv-a")]), bound("pv-a", "ns/a")), {}, False),
]


@pytest.mark.parametrize("name,data,options,forced", DETACH_CASES, ids=[c[0] for c in DETACH_CASES])
def test_detach_guard(name, data, options, forced):
    result = run(data, **options)
    detaches = [s for s in result["plan"] if s["action"] == "detach"]
    if forced is None:
        assert detaches == []
        assert reasons(result)[0].startswith("volume still mounted on node node1")
    else:
        assert [s["forced"] for s in detaches] == [forced]


def test_detach_request_recorded_when_first_blocked():
    result = run(in_use_on_node1())
    assert result["detach_requests"] == [{"name": va("pv-a", "node1")["metadata"]["name"], "node": "node1",
                                          "volume": "pv-a", "requested_at": "2026-11-22T12:00:00Z"}]
    assert run(in_use_on_node1(annotations=RECENT))["detach_requests"] == []


def test_stale_detach_request_cleared_when_wanted_again():
    data = cluster(node("node1", attached=[uvn("pv-a")]), bound("pv-a", "ns/a"), va("pv-a", "node1", annotations=RECENT),
                   pod("ns/p", "node1", ["a"]))
    result = run(data)
    assert result["detach_requests_to_clear"] == [{"name": va("pv-a", "node1")["metadata"]["name"], "node": "node1",
                                                   "volume": "pv-a"}]


def test_facts_prove_unmount_covers_in_use():
    data = in_use_on_node1()
    node_facts = {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("gone", "pv-a")])}
    result = run(data, node_facts)
    assert steps(result) == [("unmount", "pod", "node1", "pv-a", None), ("unmount", "device", "node1", "pv-a", None),
                             ("detach", "device", "node1", "pv-a", None)]


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


# ---- devices the node reports but the cluster has no record of -------------------------------------

def test_unrecorded_device_no_pod_wants_is_detached():
    """A run killed between attach and record leaves a device with no VolumeAttachment: it is uncertain."""
    result = run(basic(), {"node1": facts("node1", devices=["pv-a"]), "node2": facts("node2")})
    assert steps(result, "detach") == [("detach", "device", "node1", "pv-a", None)]
    assert "no record" in result["plan"][0]["reason"]


def test_unrecorded_device_a_pod_wants_is_attached_again_to_be_recorded():
    result = run(basic(pod("ns/p", "node1", ["a"])), {"node1": facts("node1", devices=["pv-a"]), "node2": facts("node2")})
    assert steps(result, "attach") == [("attach", "device", "node1", "pv-a", None)]


def test_unrecorded_device_does_not_count_for_multi_attach():
    """Only confirmed attachments block an RWO attach elsewhere (GetNodesForAttachedVolume); the
    unrecorded one on node1 is detached first in the same plan."""
    result = run(basic(pod("ns/p", "node2", ["a"])), {"node1": facts("node1", devices=["pv-a"]), "node2": facts("node2")})
    assert steps(result, "detach") == [("detach", "device", "node1", "pv-a", None)]
    assert steps(result, "attach") == [("attach", "device", "node2", "pv-a", None)]


def test_expand_steps_name_the_claim():
    data = basic(pod("ns/p", "node1", ["a"]))
    for obj in data["items"]:
        if obj["kind"] == "PersistentVolumeClaim":
            obj["spec"]["resources"]["requests"]["storage"] = "2Gi"
    result = run(data, {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"],
                                       pod_mounts=[(p["metadata"]["uid"], "pv-a") for p in data["items"]
                                                   if p["kind"] == "Pod"]), "node2": facts("node2")})
    expands = [s for s in result["plan"] if s["action"] == "expand"]
    assert expands and all(s["pvc"] == "ns/a" for s in expands)


# ---- a blank multi-attach volume is set up by one node first (unless its driver stages under a lock) ------------

def rwx_wanted_on_two_nodes(**node1_kw):
    return cluster(node("node1", **node1_kw), node("node2"), bound("pv-a", "ns/a", modes=("ReadWriteMany",)),
                   pod("ns/p1", "node1", ["a"]), pod("ns/p2", "node2", ["a"]))


@pytest.fixture
def unlocked_stage(monkeypatch):
    """kubevol's driver as one without STAGE_LOCKED (a device driver with no storage-side lock)."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.plan import rules_setup
    from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import STAGE_LOCKED, driver_capabilities
    caps = driver_capabilities("loop.kubevol.io") - {STAGE_LOCKED}
    monkeypatch.setattr(rules_setup, "driver_capabilities", lambda driver: caps if driver == "loop.kubevol.io" else None)


def test_the_loop_driver_stages_a_blank_multi_attach_volume_on_every_node_at_once():
    """Its stage takes the image's holder lock (drivers/loop.py node_stage): no turn is needed."""
    result = run(rwx_wanted_on_two_nodes(), {"node1": facts("node1"), "node2": facts("node2")})
    assert sorted(s[2] for s in steps(result, "attach")) == ["node1", "node2"]
    assert result["blocked"] == []


def test_a_multi_attach_volume_no_node_has_mounted_is_set_up_on_one_node_first(unlocked_stage):
    """Two nodes probing one blank device at once could each format it: node1 goes first, node2 waits a run."""
    node_facts = {"node1": facts("node1"), "node2": facts("node2")}
    result = run(rwx_wanted_on_two_nodes(), node_facts)
    assert steps(result, "attach") == [("attach", "device", "node1", "pv-a", None)]
    assert [s[2] for s in steps(result, "mount")] == ["node1", "node1"]
    blocked = [b for b in result["blocked"] if b["node"] == "node2"]
    assert len(blocked) == 1 and "volume pv-a waits for node node1 to set it up first" in blocked[0]["reason"], result["blocked"]


def test_once_a_node_has_it_mounted_every_node_attaches_it(unlocked_stage):
    node_facts = {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"]), "node2": facts("node2")}
    result = run(rwx_wanted_on_two_nodes(attached=[uvn("pv-a")]), node_facts)
    assert steps(result, "attach") == [("attach", "device", "node2", "pv-a", None)]
    assert result["blocked"] == []


def test_a_node_reporting_it_in_use_is_proof_enough_and_a_holder_goes_first(unlocked_stage):
    in_use = run(rwx_wanted_on_two_nodes(attached=[uvn("pv-a")], in_use=[uvn("pv-a")]))  # no facts: status only
    assert steps(in_use, "attach") == [("attach", "device", "node2", "pv-a", None)]
    # node2 holds it (attached, never mounted): node2 goes first, node1 waits
    data = cluster(node("node1"), node("node2", attached=[uvn("pv-a")]), bound("pv-a", "ns/a", modes=("ReadWriteMany",)),
                   pod("ns/p1", "node1", ["a"]), pod("ns/p2", "node2", ["a"]))
    held = run(data, {"node1": facts("node1"), "node2": facts("node2", devices=["pv-a"])})
    assert steps(held, "attach") == []
    assert [b["node"] for b in held["blocked"]] == ["node1"], held["blocked"]
