# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One case per planner rule of attaching and detaching, in the spirit of attachdetach/reconciler/reconciler_test.go:
multi-attach, the detach guard, devices the node reports but the cluster has no record of, and a blank
multi-attach volume set up by one node first."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, facts, node, pod, uvn, va  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    DETACH_REQUESTED_AT_ANNOTATION)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan import planner  # noqa: E402
from planner_lib import OOS, basic, reasons, run, steps  # noqa: E402


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
