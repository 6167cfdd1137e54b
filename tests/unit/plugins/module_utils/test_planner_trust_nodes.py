# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A partial, foreign or surprising cluster never costs a running pod its volume: out-of-service and deleted nodes,
reconstruction per volume, intent before action.

One case per rule of docs/planner.md "Trust", each naming the Kubernetes source it follows (the other rules:
test_planner_trust.py).
"""

import datetime
import os
import sys


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, facts, node, pod, uvn, va  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    DETACH_REQUESTED_AT_ANNOTATION)
from planner_trust_lib import NOW, OOS, converged_node1, reasons, run, steps, teardown  # noqa: E402


# ---- 6. out-of-service and deleted nodes ---------------------------------------------------------------

def moved_to_node2(node1):
    """An RWO volume attached and in use on node1; its pod now runs on node2."""
    return cluster(node1, node("node2"), bound("pv-a", "ns/a"), va("pv-a", "node1"), pod("ns/p", "node2", ["a"]))


def test_out_of_service_unreachable_node_releases_at_once_in_the_records():
    """reconciler.go hasOutOfServiceTaint: detach without waiting, even while mounted."""
    node1 = node("node1", ready=False, attached=[uvn("pv-a")], in_use=[uvn("pv-a")], taints=[OOS])
    result = run(moved_to_node2(node1), {"node1": facts("node1", reachable=False), "node2": facts("node2")})
    detach = [s for s in result["plan"] if s["action"] == "detach"]
    assert len(detach) == 1 and detach[0]["forced"] and detach[0]["record_only"]
    assert "released in the cluster only" in detach[0]["reason"]
    assert ("attach", "device", "node2", "pv-a", None) in steps(result)
    assert result["nodes_out_of_service"] == ["node1"]
    # the executor records it without any node module run, and keeps it out of node1's work
    assert executor.phase_items(result, "teardown", "node1") == []
    assert executor.phase_nodes(result, "teardown") == []
    outcome = executor.task_outcome(result, ["teardown"], {})
    assert [(r["type"], r["node"], r["pv_name"]) for r in outcome["records"]] == [("detached", "node1", "pv-a")]
    assert outcome["errors"] == []
    # and an unreachable out-of-service node is not a failed node
    assert executor.facts_errors({"node1": facts("node1", reachable=False)}, result["nodes_out_of_service"]) == []
    assert len(executor.facts_errors({"node1": facts("node1", reachable=False)}, [])) == 1


def test_out_of_service_reachable_node_is_force_detached_on_the_node():
    node1 = node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")], taints=[OOS])
    node_facts = {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"]), "node2": facts("node2")}
    result = run(moved_to_node2(node1), node_facts)
    detach = [s for s in result["plan"] if s["action"] == "detach"][0]
    assert not detach.get("record_only")
    assert executor.phase_items(result, "teardown", "node1")[0]["detach"] is True


def test_deleted_node_waits_max_wait_for_unmount_then_releases():
    """actual_state_of_world.go AddVolumeNode assumes mounted; reconciler.go force-detaches from an
    unhealthy (here: deleted) node after ReconcilerMaxWaitForUnmountDuration."""
    data = cluster(node("node2"), bound("pv-a", "ns/a"), va("pv-a", "node1"), pod("ns/p", "node2", ["a"]))
    first = run(data, {"node2": facts("node2")})
    assert steps(first, "detach") == [] and [r["node"] for r in first["detach_requests"]] == ["node1"]
    assert any("node node1 has no Node object in the snapshot" in r for r in reasons(first))
    old = (NOW - datetime.timedelta(seconds=400)).strftime("%Y-%m-%dT%H:%M:%SZ")
    data = cluster(node("node2"), bound("pv-a", "ns/a"), pod("ns/p", "node2", ["a"]),
                   va("pv-a", "node1", annotations={DETACH_REQUESTED_AT_ANNOTATION: old}))
    later = run(data, {"node2": facts("node2")})
    detach = [s for s in later["plan"] if s["action"] == "detach"]
    assert len(detach) == 1 and detach[0]["forced"] and detach[0]["record_only"]
    assert ("attach", "device", "node2", "pv-a", None) in steps(later)


# ---- 7. reconstruction is per volume -------------------------------------------------------------------

def uncertain_global(mounted, device="/dev/loop7"):
    return {"unique_volume_name": None, "driver": "loop.kubevol.io", "pv_name": None, "mounted": mounted,
            "path": "/var/lib/kubelet/plugins/kubernetes.io/csi/loop.kubevol.io/%s/globalmount" % ("ab" * 32),
            "device": device if mounted else None, "uncertain": "vol_data.json is not JSON"}


def test_an_unreadable_global_mount_blocks_only_itself_when_mounted():
    """reconstruct_common.go: a volume whose reconstruction failed is handled alone; the rest goes on."""
    node_facts = facts("node1")
    node_facts["global_mounts"].append(uncertain_global(True))
    data = cluster(node("node1"), bound("pv-a", "ns/a"), pod("ns/p", "node1", ["a"]))
    result = run(data, {"node1": node_facts})
    assert ("mount", "pod", "node1", "pv-a", "ns/p") in steps(result)
    assert teardown(result) == [] and not [s for s in result["plan"] if s["action"] == "cleanup"]
    assert any("cannot identify the volume mounted at" in r and "vol_data.json is not JSON" in r
               for r in reasons(result))


def test_an_unidentified_mount_keeps_its_kubevol_device_attached():
    node_facts = facts("node1", devices=["pv-a"])
    node_facts["devices"][0]["device"] = "/dev/loop7"
    node_facts["global_mounts"].append(uncertain_global(True, "/dev/loop7"))
    data = cluster(node("node1", attached=[uvn("pv-a")]), bound("pv-a", "ns/a"))
    assert steps(run(data, {"node1": node_facts}), "detach") == []


def test_a_stale_directory_of_another_shape_is_reported_not_cleaned():
    """volume_detach removes only the two shapes the kubelet's CSI plugin creates (globalmount, pod mount)."""
    node_facts = facts("node1")
    node_facts["pod_mounts"].append({"pod_uid": "uid-gone", "pv_name": "pv-raw", "mounted": False, "mode": "Block",
                                     "path": "/var/lib/kubelet/pods/uid-gone/volumeDevices/kubernetes.io~csi/pv-raw",
                                     "unique_volume_name": None, "uncertain": "no vol_data.json"})
    result = run(cluster(node("node1")), {"node1": node_facts})
    assert result["plan"] == []
    assert any("remove it by hand" in r and "pv-raw" in r for r in reasons(result))


def test_a_stale_unmounted_directory_is_cleaned():
    node_facts = facts("node1")
    node_facts["global_mounts"].append(uncertain_global(False))
    node_facts["pod_mounts"].append({"pod_uid": "uid-gone", "pv_name": "pv-unknown", "mounted": False,
                                     "path": "/var/lib/kubelet/pods/uid-gone/volumes/kubernetes.io~csi/pv-unknown/mount",
                                     "unique_volume_name": None, "uncertain": "no vol_data.json"})
    result = run(cluster(node("node1")), {"node1": node_facts})
    cleanup = [s for s in result["plan"] if s["action"] == "cleanup"]
    assert sorted(s["path"] for s in cleanup) == sorted([uncertain_global(False)["path"],
                                                         node_facts["pod_mounts"][0]["path"]])
    assert sorted(executor.phase_stale_paths(result, "teardown", "node1")) == sorted(s["path"] for s in cleanup)
    assert executor.phase_items(result, "teardown", "node1") == []


def test_an_attachment_on_a_node_without_node_object_blocks_a_second_rwo_attach_until_released():
    """The A/D controller keeps the attachment of a deleted Node in its actual state until it is detached."""
    data = cluster(node("node2"), bound("pv-a", "ns/a"), va("pv-a", "node1"), pod("ns/p", "node2", ["a"]))
    result = run(data, {"node2": facts("node2")})
    assert steps(result, "attach") == []
    assert any(r.startswith('Multi-Attach error for volume "pv-a"') for r in reasons(result))
    # a partial snapshot: node1 reports the device but its Node object is missing
    data = cluster(node("node2"), bound("pv-a", "ns/a"), pod("ns/p", "node2", ["a"]))
    result = run(data, {"node1": converged_node1("pv-a"), "node2": facts("node2")})
    assert steps(result, "attach") == [] and teardown(result) == []


def test_volumes_in_use_that_node_status_lacks_are_repaired():
    """kubelet_node_status.go reports every mounted volume in volumesInUse; a lost record is written again."""
    data = cluster(node("node1", attached=[uvn("pv-a"), uvn("pv-b")], in_use=[uvn("pv-b")]), bound("pv-a", "ns/a"),
                   bound("pv-b", "ns/b"), pod("ns/a", "node1", ["a"], uid="uid-ns-pv-a"),
                   pod("ns/b", "node1", ["b"], uid="uid-ns-pv-b"))
    result = run(data, {"node1": converged_node1("pv-a", "pv-b")})
    assert result["plan"] == []
    assert result["in_use_repairs"] == [{"node": "node1", "unique_volume_names": [uvn("pv-a")], "in_use": True}]
    assert executor.detach_request_records(result) == [
        {"type": "in_use", "node": "node1", "unique_volume_names": [uvn("pv-a")], "in_use": True}]


def test_volumes_in_use_a_node_no_longer_has_mounted_are_removed_but_not_other_drivers():
    """The other direction: an entry for a kubevol volume the reachable node has not mounted is stale; an entry of
    another driver belongs to its own node plugin; a volume this plan mounts is left to its own record."""
    ebs = "kubernetes.io/csi/ebs.csi.aws.com^vol-1"
    data = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a"), uvn("pv-gone"), ebs]),
                   bound("pv-a", "ns/a"), pod("ns/a", "node1", ["a"], uid="uid-ns-pv-a"))
    result = run(data, {"node1": converged_node1("pv-a")})
    assert result["plan"] == []
    assert result["in_use_repairs"] == [{"node": "node1", "unique_volume_names": [uvn("pv-gone")], "in_use": False}]
    # mounted by this very plan: not repaired here (the mount records it)
    data = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   pod("ns/a", "node1", ["a"], uid="uid-ns-pv-a"))
    result = run(data, {"node1": facts("node1", devices=["pv-a"])})
    assert ("mount", "device", "node1", "pv-a", None) in steps(result) and result["in_use_repairs"] == []


def test_an_unsafe_path_in_node_facts_is_blocked_never_cleaned():
    """A symlink planted at a pod's volume directory (node facts: unsafe) is reported, never acted through."""
    node_facts = facts("node1")
    node_facts["pod_mounts"].append({"pod_uid": "uid-gone", "pv_name": "pv-x", "mode": "Filesystem", "mounted": False,
                                     "path": "/var/lib/kubelet/pods/uid-gone/volumes/kubernetes.io~csi/pv-x/mount",
                                     "unique_volume_name": None, "unsafe": True,
                                     "uncertain": "refusing /var/lib/kubelet/pods/uid-gone: it is a symlink (to /etc)"})
    result = run(cluster(node("node1")), {"node1": node_facts})
    assert result["plan"] == []
    assert [b["reason"] for b in result["blocked"]] == [
        "refusing /var/lib/kubelet/pods/uid-gone: it is a symlink (to /etc) [KV-UNIDENTIFIED]"]


# ---- intent before action (issue: concurrent and killed runs) ------------------------------------------

def test_attach_intents_are_recorded_before_the_attach_and_create_an_unattached_va():
    """csi_attacher.go Attach: the VolumeAttachment exists before the attacher acts."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import RecordApplier
    data = cluster(node("node1"), bound("pv-a", "ns/a"), pod("ns/p", "node1", ["a"]))
    result = run(data, {"node1": facts("node1")})
    (intent,) = executor.attach_intents(result)
    assert intent == {"type": "attach_intent", "node": "node1", "pv_name": "pv-a", "driver": "loop.kubevol.io",
                      "volume_handle": "pv-a.img"}
    failed = {"nodes": {}, "volumes": {uvn("pv-a"): "detach on node0 failed"}}
    assert executor.attach_intents(result, failed) == []
    applier = RecordApplier(data)
    applier.apply_all([intent])
    (created,) = [o for o in data["items"] if o["kind"] == "VolumeAttachment"]
    assert created["status"] == {"attached": False} and created["spec"]["nodeName"] == "node1"
    applier.apply_all([intent])  # idempotent: an attachment already recorded is left as it is
    assert len([o for o in data["items"] if o["kind"] == "VolumeAttachment"]) == 1


def test_no_attach_intent_is_written_for_a_node_outside_the_run():
    """A run limited to node1 (--limit, the play's hosts: the plan task's run_nodes): node2's attach is planned from
    the cluster but no task of this run makes it, so the cluster gets no VolumeAttachment for it."""
    data = cluster(node("node1"), node("node2"), bound("pv-a", "ns/a"), bound("pv-b", "ns/b"),
                   pod("ns/p", "node1", ["a"]), pod("ns/q", "node2", ["b"]))
    result = run(data, {"node1": facts("node1")})
    assert sorted(i["node"] for i in executor.attach_intents(result)) == ["node1", "node2"]  # no run_nodes: all
    result["run_nodes"] = ["node1"]
    assert [(i["node"], i["pv_name"]) for i in executor.attach_intents(result)] == [("node1", "pv-a")]


def test_an_unconfirmed_attachment_counts_for_multi_attach_until_its_node_reports_otherwise():
    """A run killed after node1 attached, before its record: the VA (attached: false) is all the cluster knows."""
    data = cluster(node("node1"), node("node2"), bound("pv-a", "ns/a"), va("pv-a", "node1", attached=False),
                   pod("ns/p", "node2", ["a"]))
    # node1 unreachable: it may hold the volume, node2 must not attach it
    result = run(data, {"node1": facts("node1", reachable=False, error="ssh: timed out"), "node2": facts("node2")})
    assert not [s for s in result["plan"] if s["action"] == "attach"]
    reasons = [b["reason"] for b in result["blocked"] if b["node"] == "node2"]
    assert any("Multi-Attach" in r and "node node1 may hold it" in r and "unreachable" in r for r in reasons), reasons
    # node1 reports the device and no pod uses it there: detached from node1 first, then attached to node2 (the
    # teardown task runs and is recorded before the setup task: a failed detach keeps node2 from attaching)
    result = run(data, {"node1": facts("node1", devices=["pv-a"]), "node2": facts("node2")})
    assert steps(result) == [("detach", "device", "node1", "pv-a", None), ("attach", "device", "node2", "pv-a", None),
                             ("mount", "device", "node2", "pv-a", None), ("mount", "pod", "node2", "pv-a", "ns/p")]
    # node1 reachable and reports no device: not held; its VA is cleaned up and node2 attaches
    result = run(data, {"node1": facts("node1"), "node2": facts("node2")})
    assert ("detach", "device", "node1", "pv-a", None) in steps(result)
    assert ("attach", "device", "node2", "pv-a", None) in steps(result)
