# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node-side grow that fails or cannot run yet, as Kubernetes handles it: the claim records it pending
(FileSystemResizePending, NodeResizeError with the reason, NodeResizeInProgress), the run counts it pending, not
failed, and the planner tries it again only when what made it fail may have changed, or after its backoff
(records/claim.py, run/outcome.py, plan/rules_expand.py)."""

import copy
import datetime
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, facts, node, pod, uvn  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (  # noqa: E402
    ClusterIndex, cluster_from_data)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    NODE_EXPANSION_PENDING_ANNOTATION as ANNOTATION)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan import plan_text  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.records.claim import (  # noqa: E402
    FS_RESIZE_PENDING_MESSAGE, backoff_seconds)
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import apply_records  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor, run_report  # noqa: E402

NOW = datetime.datetime(2026, 11, 30, 12, 0, 0, tzinfo=datetime.timezone.utc)
T0 = "2026-11-30T11:00:00Z"
GI = 2 ** 30
OLD_UID, NEW_UID = "uid-old", "uid-new"
DETAIL = "`resize2fs /dev/loop3` exited 1: Permission denied to resize filesystem"


# ---- the claim's records --------------------------------------------------------------------------------------

def claim_list(status=None, annotations=None):
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "data", "namespace": "prod"},
           "spec": {"volumeName": "pv-a", "resources": {"requests": {"storage": "2Gi"}}},
           "status": status or {"phase": "Bound", "capacity": {"storage": "1Gi"},
                                "allocatedResources": {"storage": "2Gi"},
                                "allocatedResourceStatuses": {"storage": "NodeResizeInProgress"},
                                "conditions": [{"type": "ModifyingVolume", "status": "True"},
                                               {"type": "FileSystemResizePending", "status": "True",
                                                "lastProbeTime": None, "lastTransitionTime": "2026-11-30T10:00:00Z",
                                                "message": FS_RESIZE_PENDING_MESSAGE}]}}
    if annotations:
        pvc["metadata"]["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "List", "items": [pvc]}


def the_claim(cluster_list):
    return cluster_list["items"][0]


def pending_record(**extra):
    record = {"type": "node_expansion_pending", "pvc": "prod/data", "capacity": 2 * GI, "node_name": "node1",
              "reason": "OnlineExpansionFailed", "message": DETAIL, "pods": [OLD_UID], "offline": True, "at": T0}
    record.update(extra)
    return record


def test_a_pending_grow_is_recorded_as_the_kubelet_records_a_failed_node_expansion():
    data = claim_list()
    assert apply_records(data, [pending_record()])
    pvc = the_claim(data)
    status = pvc["status"]
    # MarkNodeExpansionFailedCondition: the state stays in progress, nothing is recorded as grown
    assert status["allocatedResourceStatuses"] == {"storage": "NodeResizeInProgress"}
    assert status["capacity"] == {"storage": "1Gi"} and status["allocatedResources"] == {"storage": "2Gi"}
    # FileSystemResizePending kept as it was (same status: its lastTransitionTime stays), NodeResizeError added
    assert status["conditions"] == [
        {"type": "ModifyingVolume", "status": "True"},
        {"type": "FileSystemResizePending", "status": "True", "lastProbeTime": None,
         "lastTransitionTime": "2026-11-30T10:00:00Z", "message": FS_RESIZE_PENDING_MESSAGE},
        {"type": "NodeResizeError", "status": "True", "lastProbeTime": None, "lastTransitionTime": T0,
         "reason": "OnlineExpansionFailed", "message": "failed to expand pvc with " + DETAIL}]
    memo = json.loads(pvc["metadata"]["annotations"][ANNOTATION])
    assert memo == {"node1": {"pods": [OLD_UID], "size": 2 * GI, "reason": "OnlineExpansionFailed",
                              "offline": True, "detail": DETAIL, "attempt": 1, "at": T0, "retryAfter": None}}
    # the same record again changes nothing
    assert apply_records(data, [pending_record()]) == []


def test_each_node_keeps_its_own_pending_grow():
    """A volume several nodes mount (ReadWriteMany) waits on each: one node's record leaves the other's."""
    data = claim_list()
    apply_records(data, [pending_record(), pending_record(node_name="node2", pods=["uid-2"])])
    memos = json.loads(the_claim(data)["metadata"]["annotations"][ANNOTATION])
    assert sorted(memos) == ["node1", "node2"] and memos["node2"]["pods"] == ["uid-2"], memos


def test_a_claim_without_the_pending_condition_gets_it():
    data = claim_list(status={"phase": "Bound", "capacity": {"storage": "1Gi"}})
    apply_records(data, [pending_record(offline=False, reason="ToolMissing")])
    status = the_claim(data)["status"]
    assert [c["type"] for c in status["conditions"]] == ["FileSystemResizePending", "NodeResizeError"]
    assert status["conditions"][0]["message"] == FS_RESIZE_PENDING_MESSAGE
    assert status["allocatedResourceStatuses"] == {"storage": "NodeResizeInProgress"}


@pytest.mark.parametrize("attempt,after", [(1, "11:05:00"), (2, "11:10:00"), (3, "11:20:00"), (5, "12:00:00"),
                                           (9, "12:00:00")])
def test_a_cause_the_plan_cannot_see_is_retried_after_a_doubling_backoff(attempt, after):
    data = claim_list()
    apply_records(data, [pending_record(offline=False, reason="ToolMissing", attempt=attempt)])
    memo = json.loads(the_claim(data)["metadata"]["annotations"][ANNOTATION])["node1"]
    assert memo["attempt"] == attempt and memo["retryAfter"] == "2026-11-30T%sZ" % after
    assert backoff_seconds(1) == 300 and backoff_seconds(100) == 3600


def test_a_new_failure_updates_the_error_but_not_its_transition_time():
    data = claim_list()
    apply_records(data, [pending_record()])
    apply_records(data, [pending_record(reason="ToolMissing", message="`resize2fs` exited 127", offline=False,
                                        at="2026-11-30T11:30:00Z")])
    error = the_claim(data)["status"]["conditions"][-1]
    assert error["reason"] == "ToolMissing" and error["message"] == "failed to expand pvc with `resize2fs` exited 127"
    assert error["lastTransitionTime"] == T0


def test_mark_fs_resize_finished_clears_the_pending_grow():
    data = claim_list(annotations={"other": "kept"})
    apply_records(data, [pending_record()])
    apply_records(data, [{"type": "node_expanded", "pvc": "prod/data", "capacity": 2 * GI}])
    pvc = the_claim(data)
    assert pvc["metadata"]["annotations"] == {"other": "kept"}
    assert pvc["status"]["capacity"] == {"storage": "2Gi"}
    assert "allocatedResourceStatuses" not in pvc["status"]
    assert pvc["status"]["conditions"] == [{"type": "ModifyingVolume", "status": "True"}]
    alone = claim_list()
    apply_records(alone, [pending_record(), {"type": "node_expanded", "pvc": "prod/data", "capacity": 2 * GI}])
    assert "annotations" not in the_claim(alone)["metadata"]


@pytest.mark.parametrize("change,field", [
    ({"pvc": "data"}, "pvc"), ({"reason": ""}, "reason"), ({"node_name": None}, "node_name"),
    ({"pods": "uid"}, "pods"), ({"offline": "yes"}, "offline"), ({"attempt": 0}, "attempt"),
    ({"capacity": "lots"}, "capacity"),
])
def test_bad_pending_records_are_refused_before_anything_changes(change, field):
    data = claim_list()
    before = copy.deepcopy(data)
    with pytest.raises(InvalidInput) as err:
        apply_records(data, [pending_record(**change)])
    assert "records[0].%s" % field in str(err.value)
    assert data == before


# ---- the planner --------------------------------------------------------------------------------------------

def memo(pods=(OLD_UID,), node_name="node1", size=2 * GI, offline=True, attempt=1, retry=None, reason=None):
    return json.dumps({node_name: {
        "pods": list(pods), "size": size, "offline": offline, "attempt": attempt, "at": T0, "retryAfter": retry,
        "reason": reason or ("OnlineExpansionFailed" if offline else "ToolMissing"), "detail": DETAIL}})


def growing(annotation=None, pods=((OLD_UID, "node1"),), mounted=((OLD_UID, "node1"),)):
    """pv-a grown to 2Gi by the controller, the claim still at 1Gi and NodeResizeInProgress, ext4; ``pods`` run
    (uid, node) and ``mounted`` are the pod mounts the nodes report (with the global mount of each such node)."""
    objs = bound("pv-a", "ns/a", size="2Gi", request="2Gi", capacity="1Gi")
    status = objs[1]["status"]
    status["allocatedResources"] = {"storage": "2Gi"}
    status["allocatedResourceStatuses"] = {"storage": "NodeResizeInProgress"}
    if annotation:
        objs[1]["metadata"]["annotations"] = {ANNOTATION: annotation}
    nodes = sorted(set(n for _uid, n in pods) | set(n for _uid, n in mounted) | {"node1"})
    data = cluster([node(n, attached=[uvn("pv-a")], in_use=[uvn("pv-a")]) for n in nodes], objs,
                   [pod("ns/p-%s" % uid, n, ["a"], uid=uid) for uid, n in pods])
    node_facts = {}
    for n in nodes:
        here = [uid for uid, where in mounted if where == n]
        node_facts[n] = facts(n, devices=["pv-a"], global_mounts=["pv-a"] if here else [],
                              pod_mounts=[(uid, "pv-a") for uid in here])
    return data, node_facts


def run(data, node_facts, now=NOW, stage="all"):
    opts = PlanOptions(True, 360, ("loop.kubevol.io",), now, stage=stage)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts)


def kinds(result):
    return [(s["action"], s["target"], s["node"], s.get("pod_uid")) for s in result["plan"]]


def test_without_a_pending_grow_the_node_grows_and_the_step_names_the_pods():
    result = run(*growing())
    (step,) = [s for s in result["plan"] if s["action"] == "expand"]
    assert (step["target"], step["node"], step["size_to"], step["pvc"]) == ("node", "node1", 2 * GI, "ns/a")
    assert step["pods"] == ["ns/p-uid-old"] and step["pod_uids"] == [OLD_UID] and step["attempt"] == 1
    assert result["pending"] == [] and result["summary"]["pending"] == 0


def test_an_offline_grow_is_not_tried_again_while_its_pods_are_the_same():
    result = run(*growing(memo()))
    assert kinds(result) == [] and result["blocked"] == []
    (entry,) = result["pending"]
    assert (entry["node"], entry["volume"], entry["action"], entry["pvc"]) == ("node1", "pv-a", "expand", "ns/a")
    assert entry["reason"] == (
        "grow of volume pv-a (claim ns/a) to 2Gi on node node1 is pending: %s; restart pod ns/p-uid-old (or move it "
        "to another node): it grows offline at its next mount [KV-GROW-PENDING]" % DETAIL)
    # however long it waits: only its pods tell
    assert run(*growing(memo()), now=NOW + datetime.timedelta(days=30))["pending"] == result["pending"]
    lines = plan_text.table_lines(result)
    assert "Pending (not tried in this run):" in lines and lines[-1].endswith("0 blocked; 1 pending"), lines
    assert any(line.startswith("~") and "restart pod ns/p-uid-old" in line for line in lines), lines


def test_a_restarted_pod_gives_the_offline_grow_its_window():
    """The pod's uid changed: its old mount goes, and with no pod mount left the global mount is unmounted and
    staged again (the stage grows ext4 offline); then the grow is tried, a first attempt under new conditions."""
    result = run(*growing(memo(), pods=[(NEW_UID, "node1")], mounted=[(OLD_UID, "node1")]))
    assert kinds(result) == [("unmount", "pod", "node1", OLD_UID), ("unmount", "device", "node1", None),
                             ("mount", "device", "node1", None), ("mount", "pod", "node1", NEW_UID),
                             ("expand", "node", "node1", None)], kinds(result)
    assert result["pending"] == []
    unstage = result["plan"][1]
    assert "grow the filesystem offline" in unstage["reason"] and "restarted or moved" in unstage["reason"]
    assert result["plan"][-1]["attempt"] == 1 and result["plan"][-1]["pod_uids"] == [NEW_UID]
    # the teardown item unmounts the global mount and keeps the device attached
    (item,) = executor.phase_items(result, "teardown", "node1")
    assert item["unmount_device"] is True and item["detach"] is False


def test_a_pod_still_mounted_keeps_the_global_mount_but_new_pods_retry_the_grow():
    """Two pods, one restarted: the other still has it mounted, so no window; the set of pods changed, so the grow
    is tried again (it may work: the kubelet would try too)."""
    result = run(*growing(memo(pods=(OLD_UID, "uid-other")), pods=[(NEW_UID, "node1"), ("uid-other", "node1")],
                          mounted=[(OLD_UID, "node1"), ("uid-other", "node1")]))
    assert ("unmount", "device", "node1", None) not in kinds(result)
    assert ("expand", "node", "node1", None) in kinds(result) and result["pending"] == []


def test_a_pod_moved_to_another_node_is_grown_there():
    result = run(*growing(memo(), pods=[(OLD_UID, "node2")], mounted=[(OLD_UID, "node1")]))
    assert [k for k in kinds(result) if k[0] == "expand"] == [("expand", "node", "node2", None)]
    assert result["pending"] == []


def test_another_size_is_a_new_attempt():
    result = run(*growing(memo(size=3 * GI)))
    assert [k[:2] for k in kinds(result)] == [("expand", "node")] and result["plan"][0]["attempt"] == 1


def test_a_hand_edited_annotation_is_no_pending_grow():
    assert [k[:2] for k in kinds(run(*growing("not json")))] == [("expand", "node")]


def test_a_cause_the_plan_cannot_see_waits_for_its_backoff_then_counts_the_attempt():
    waiting = memo(offline=False, attempt=2, retry="2026-11-30T12:10:00Z")
    result = run(*growing(waiting))
    assert kinds(result) == []
    (entry,) = result["pending"]
    assert "it is tried again from 2026-11-30T12:10:00Z, or at once when its pods restart or move" in entry["reason"]
    later = run(*growing(waiting), now=NOW + datetime.timedelta(minutes=10))
    assert [k[:2] for k in kinds(later)] == [("expand", "node")] and later["plan"][0]["attempt"] == 3
    assert later["pending"] == []


def test_pending_grows_belong_to_the_node_stage():
    data, node_facts = growing(memo())
    assert run(data, node_facts, stage="attach_detach")["pending"] == []
    assert len(run(data, node_facts, stage="node")["pending"]) == 1


# ---- the run --------------------------------------------------------------------------------------------------

def node_result(pending=True):
    """node1's setup task result: its expand_node phase with pv-a's grow pending, and pv-b mounted."""
    grow = {"pv_name": "pv-a", "unique_volume_name": uvn("pv-a"), "stage": "node", "changed": True, "skipped": None,
            "pending": None}
    if pending:
        grow["pending"] = {"reason": "OnlineExpansionFailed", "offline": True, "detail": DETAIL, "msg": "...",
                           "step": "grow filesystem online", "code": "KV-GROW-PENDING"}
    mount = {"pv_name": "pv-b", "unique_volume_name": uvn("pv-b"), "changed": True}
    return {"changed": True, "phase_results": {
        "mount": {"changed": True, "volumes": [mount]},
        "expand_node": {"changed": True, "volumes": [grow], "pending": [dict(grow["pending"] or {}, volume="pv-a")]}}}


def grow_and_mount_plan():
    data, node_facts = growing()
    objs = bound("pv-b", "ns/b")
    data["items"].extend(objs + [pod("ns/q", "node1", ["b"], uid="uid-q")])
    node1 = [o for o in data["items"] if o["kind"] == "Node" and o["metadata"]["name"] == "node1"][0]
    node1["status"]["volumesAttached"].append({"name": uvn("pv-b"), "devicePath": ""})  # attached: mount only
    node_facts["node1"]["devices"].append(facts("node1", devices=["pv-b"])["devices"][0])
    return run(data, node_facts)


def test_a_pending_grow_is_no_failure_and_the_other_volumes_are_recorded():
    plan = grow_and_mount_plan()
    assert sorted(k[:2] for k in kinds(plan)) == [("expand", "node"), ("mount", "device"), ("mount", "pod")]
    outcome = executor.task_outcome(plan, ["mount", "expand_node"], {"node1": node_result()})
    assert outcome["errors"] == [] and outcome["failures"] == {"nodes": {}, "volumes": {}}
    assert outcome["blocked"] == []
    types = [r["type"] for r in outcome["records"]]
    assert "in_use" in types and "node_expanded" not in types
    (record,) = [r for r in outcome["records"] if r["type"] == "node_expansion_pending"]
    assert record == {"type": "node_expansion_pending", "pvc": "ns/a", "capacity": 2 * GI, "node_name": "node1",
                      "reason": "OnlineExpansionFailed", "message": DETAIL, "pods": [OLD_UID], "offline": True,
                      "attempt": 1}
    (entry,) = outcome["pending"]
    assert entry["node"] == "node1" and entry["volume"] == "pv-a" and "restart pod ns/p-uid-old" in entry["reason"]
    # the report: pending, not applied and not failed; nothing under Failed
    summary = run_report.run_summary(plan, outcome["errors"], outcome["blocked"], pending=outcome["pending"])
    row = summary["nodes"]["node1"]
    assert (row["applied"], row["failed"], row["pending"]) == (2, 0, 1), row
    assert row["volumes"]["pv-a"] == ["expand PENDING"]
    assert "node1: 2 applied, 0 failed, 0 blocked, 1 pending" in summary["lines"]
    assert not [line for line in summary["lines"] if "ailed on" in line or line.startswith("Failed")]
    assert summary["failed_nodes"] == {} and summary["failed_elsewhere"] == []
    assert summary["pending"] == outcome["pending"]


def test_a_grow_that_succeeds_is_recorded_finished():
    plan = grow_and_mount_plan()
    outcome = executor.task_outcome(plan, ["mount", "expand_node"], {"node1": node_result(pending=False)})
    assert outcome["pending"] == []
    assert {"type": "node_expanded", "pvc": "ns/a", "capacity": 2 * GI} in outcome["records"]


def test_the_run_state_carries_the_pending_grows_to_the_summary():
    plan = grow_and_mount_plan()
    state, _records, _upcoming = executor.run_step(plan)
    state, _records, upcoming = executor.run_step(plan, state, "setup", {"node1": node_result()})
    assert upcoming == [] and [p["volume"] for p in state["pending"]] == ["pv-a"]
    assert state["errors"] == []


def test_each_node_of_a_shared_volume_is_tried_on_its_own_record():
    """ReadWriteMany on two nodes: node1's grow is pending (its own entry), node2 has none and grows."""
    data, node_facts = growing(memo(), pods=[(OLD_UID, "node1"), ("uid-2", "node2")],
                               mounted=[(OLD_UID, "node1"), ("uid-2", "node2")])
    for obj in data["items"]:
        if obj["kind"] in ("PersistentVolume", "PersistentVolumeClaim"):
            obj["spec"]["accessModes"] = ["ReadWriteMany"]
    result = run(data, node_facts)
    assert [k for k in kinds(result) if k[0] == "expand"] == [("expand", "node", "node2", None)]
    assert [(e["node"], e["volume"]) for e in result["pending"]] == [("node1", "pv-a")]
