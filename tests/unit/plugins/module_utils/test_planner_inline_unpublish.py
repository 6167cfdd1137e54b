# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inline ephemeral CSI volumes (pod.spec.volumes[].csi): unpublish_inline, what the executor records for them
(nothing), and planning again over what the plan leaves plans nothing. Kubernetes: csi_mounter.go TearDownAt.
Names and publish_inline: test_planner_inline.py."""

import os
import sys


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import cluster, facts, node  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item  # noqa: E402
from planner_inline_lib import (  # noqa: E402
    HANDLE, POOL, UID, UNIQUE, ephemeral_driver, inline_pod, reasons, run, steps, with_ephemeral)


# ---- unpublish_inline --------------------------------------------------------------------------------

def test_gone_pod_is_unpublished_and_its_image_named():
    result = run(cluster(node("node1"), ephemeral_driver()), {"node1": with_ephemeral("node1")})
    assert steps(result) == [("unmount", "pod", "node1", "uid-p/scratch", None)]
    step = result["plan"][0]
    assert step["ephemeral"] is True and step["unique_volume_name"] == UNIQUE and step["pod_uid"] == UID
    assert "is gone from the cluster" in step["reason"] and "delete the volume" in step["reason"]
    item = result["volume_items"]["node1"][UNIQUE]
    assert item["ephemeral"] is True and item["volume_handle"] == HANDLE and item["pv_name"] == "scratch"
    assert item["volume_attributes"] == {"pool": POOL}
    # the executor's teardown item: this pod only, no device unmount, no detach record
    items = executor.phase_items(result, "teardown", "node1")
    assert items[0]["pods"] == [{"uid": UID, "name": UID, "read_only": False}]
    assert volume_item(items[0]).ephemeral is True


def test_terminated_pod_is_unpublished():
    data = cluster(node("node1"), ephemeral_driver(), inline_pod(phase="Succeeded"))
    result = run(data, {"node1": with_ephemeral("node1")})
    assert steps(result) == [("unmount", "pod", "node1", "ns/p/scratch", "ns/p")]
    assert "pod ns/p no longer runs on node node1" in result["plan"][0]["reason"]


def test_terminating_pod_gets_no_new_volume_and_keeps_its_own():
    # deletionTimestamp set, a container still running: findAndAddNewPods adds nothing, what it has stays
    data = cluster(node("node1"), ephemeral_driver(), inline_pod(deleted=True, states=["running"]))
    assert run(data)["plan"] == []
    result = run(data, {"node1": with_ephemeral("node1")})
    assert result["plan"] == []
    # its containers stopped: it is terminated, and the volume goes
    data = cluster(node("node1"), ephemeral_driver(), inline_pod(deleted=True, states=["terminated"]))
    assert steps(run(data, {"node1": with_ephemeral("node1")})) == [("unmount", "pod", "node1", "ns/p/scratch",
                                                                     "ns/p")]


def test_record_only_leftover_is_torn_down():
    # a run killed after the pod directory went: only the driver's record names the image
    f = with_ephemeral("node1", mounted=False, pod_dir=False)
    result = run(cluster(node("node1"), ephemeral_driver()), {"node1": f})
    assert steps(result) == [("unmount", "pod", "node1", "uid-p/scratch", None)]
    assert "nothing is mounted" in result["plan"][0]["reason"]


def test_live_pod_keeps_its_volume_even_when_blocked():
    # the CSIDriver lost Ephemeral after the publish: the pod runs on, its volume stays
    data = cluster(node("node1"), ephemeral_driver(modes=("Persistent",)), inline_pod())
    result = run(data, {"node1": with_ephemeral("node1")})
    assert result["plan"] == []
    assert len(result["blocked"]) == 1


def test_pod_outside_scope_is_not_touched():
    data = cluster(node("node1"), ephemeral_driver(), inline_pod(phase="Succeeded"), inline_pod("ns/q", uid="uid-q"))
    result = run(data, {"node1": with_ephemeral("node1")}, scope={"ns/q"})
    assert all(s["pod_uid"] != UID for s in result["plan"])


def test_pod_moved_to_another_node_is_unpublished_on_the_old():
    data = cluster(node("node1"), node("node2"), ephemeral_driver(), inline_pod(node_name="node2"))
    result = run(data, {"node1": with_ephemeral("node1"), "node2": facts("node2")})
    assert steps(result) == [("unmount", "pod", "node1", "ns/p/scratch", "ns/p"),
                             ("mount", "pod", "node2", "ns/p/scratch", "ns/p")]


def test_pod_on_a_node_the_snapshot_does_not_picture_keeps_its_volume_there():
    # node1's Node object is missing from the snapshot: its inline volume is not torn down there, so none is
    # created on node2 for the same pod (a second copy, and the image name is the same)
    data = cluster(node("node2"), ephemeral_driver(), inline_pod(node_name="node2"))
    result = run(data, {"node1": with_ephemeral("node1"), "node2": facts("node2")})
    assert steps(result) == []
    assert any("inline volume scratch is still on node node1" in r for r in reasons(result)), reasons(result)


def test_foreign_ephemeral_facts_are_hands_off():
    f = with_ephemeral("node1", driver="other.csi.io")
    result = run(cluster(node("node1")), {"node1": f})
    assert result["plan"] == [] and result["actual"]["foreign_mounts"] >= 1


def test_foreign_ephemeral_pod_dir_stays_foreign():
    # another driver's inline volume (e.g. a secrets-store CSI driver): in pod_mounts only, hands off
    f = with_ephemeral("node1", driver="other.csi.io")
    f["ephemeral_volumes"] = []
    result = run(cluster(node("node1")), {"node1": f})
    assert result["plan"] == [] and result["actual"]["foreign_mounts"] == 1


def test_teardown_guard_counts_ephemeral_volumes():
    data = cluster(node("node1"), ephemeral_driver())
    f = with_ephemeral("node1")
    other = with_ephemeral("node1", uid="uid-other")
    f["pod_mounts"] += other["pod_mounts"]
    f["ephemeral_volumes"] += other["ephemeral_volumes"]
    result = run(data, {"node1": f}, max_teardown_count=1, allow_mass_teardown=True)
    guard = result["teardown_guard"]
    assert guard["mounted"] == 2 and guard["teardown"] == 2 and guard["allow_mass_teardown"] is True


def test_node_without_picture_keeps_ephemeral_volumes():
    result = run(cluster(node("node2"), ephemeral_driver()), {"node1": with_ephemeral("node1")})
    assert result["plan"] == []
    assert "no Node object node1" in reasons(result)[0]


# ---- the executor records nothing for them ------------------------------------------------------------

def test_no_records_for_publish_or_unpublish():
    publish = run(cluster(node("node1"), ephemeral_driver(), inline_pod()))
    result = {"volumes": [{"pv_name": "scratch", "unique_volume_name": UNIQUE, "changed": True}], "changed": True}
    outcome = executor.task_outcome(publish, ["mount"], {"node1": {"phase_results": {"mount": result}}})
    assert outcome["records"] == [] and outcome["errors"] == []
    assert executor.attach_intents(publish) == []
    teardown = run(cluster(node("node1"), ephemeral_driver()), {"node1": with_ephemeral("node1")})
    outcome = executor.task_outcome(teardown, ["teardown"], {"node1": {"phase_results": {"teardown": result}}})
    assert outcome["records"] == [] and outcome["errors"] == []


def test_failed_publish_is_reported():
    publish = run(cluster(node("node1"), ephemeral_driver(), inline_pod()))
    result = {"failed": True, "msg": "volume scratch: invalid volumeAttributes.pool", "volumes": [],
              "failures": [{"unique_volume_name": UNIQUE, "msg": "invalid volumeAttributes.pool"}]}
    outcome = executor.task_outcome(publish, ["mount"], {"node1": {"phase_results": {"mount": result}}})
    assert outcome["records"] == [] and outcome["errors"][0]["volumes"] == ["scratch"]


# ---- property: planning again over what the plan leaves plans nothing -------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

NODES = ("n1", "n2")


def _apply(result, node_facts):
    """What the nodes have after every step of the plan succeeded (inline volumes only)."""
    new = dict((n, dict(f, pod_mounts=list(f.get("pod_mounts") or []),
                        ephemeral_volumes=list(f.get("ephemeral_volumes") or [])))
               for n, f in node_facts.items())
    for step in result["plan"]:
        f = new.get(step["node"])
        if f is None or f.get("reachable") is False:
            continue
        assert step.get("ephemeral"), step
        item = result["volume_items"][step["node"]][step["unique_volume_name"]]
        key = (step["pod_uid"], item["pv_name"])
        f["ephemeral_volumes"] = [e for e in f["ephemeral_volumes"] if (e["pod_uid"], e["volume_name"]) != key]
        f["pod_mounts"] = [m for m in f["pod_mounts"] if (m["pod_uid"], m["pv_name"]) != key]
        if step["action"] == "mount":
            done = with_ephemeral(step["node"], uid=step["pod_uid"], volume=item["pv_name"],
                                  read_only=step["pod_read_only"])
            f["ephemeral_volumes"] += done["ephemeral_volumes"]
            f["pod_mounts"] += done["pod_mounts"]
    return new


@st.composite
def inline_worlds(draw):
    objs = [node(n) for n in NODES]
    modes = draw(st.sampled_from([None, ("Persistent",), ("Persistent", "Ephemeral"), ("Ephemeral",)]))
    if modes is not None or draw(st.booleans()):
        objs.append(ephemeral_driver(modes=modes))
    uids = ["uid-p%d" % i for i in range(3)]
    for i in range(draw(st.integers(0, 3))):
        attributes = draw(st.sampled_from([{"size": "64Mi"}, {"size": "1Gi", "pool": POOL}, {}, {"size": "x"}]))
        objs.append(inline_pod("ns/p%d" % i, draw(st.sampled_from(NODES + ("",))), attributes=attributes,
                               read_only=draw(st.booleans()),
                               phase=draw(st.sampled_from(["Running", "Running", "Pending", "Succeeded"]))))
    node_facts = {}
    for n in NODES:
        if draw(st.integers(0, 4)) == 0:
            node_facts[n] = facts(n, reachable=False)
            continue
        f = facts(n)
        f["ephemeral_volumes"] = []
        for uid in draw(st.lists(st.sampled_from(uids + ["gone"]), unique=True, max_size=2)):
            e = with_ephemeral(n, uid=uid, mounted=draw(st.booleans()), read_only=draw(st.booleans()),
                               pod_dir=draw(st.booleans()))
            f["pod_mounts"] += e["pod_mounts"]
            f["ephemeral_volumes"] += e["ephemeral_volumes"]
        node_facts[n] = f
    return cluster(*objs), node_facts


@settings(max_examples=150, deadline=None)
@given(inline_worlds())
def test_plan_never_crashes_and_converges(world):
    data, node_facts = world
    first = run(data, node_facts, allow_mass_teardown=True)
    for step in first["plan"]:
        assert step["ephemeral"] is True and (step["action"], step["target"]) in (("mount", "pod"), ("unmount", "pod"))
    assert executor.attach_intents(first) == []
    second = run(data, _apply(first, node_facts), allow_mass_teardown=True)
    assert second["plan"] == [], second["plan"]
