# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Objects that no longer exist (issue 25) and the detach clock of an unreachable node (issue 29).

reconciler.go: the A/D controller detaches what its actual state holds by the unique name alone (a PV deleted
since is no obstacle: csi_attacher.go Detach splits driver^handle), records when it first wanted a detach
(SetDetachRequestTime) and force-detaches an unhealthy node's volume after maxWaitForUnmountDuration."""

import datetime
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, facts, node, pod, uvn, va  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor

from ansible_collections.kubevol.volumes.plugins.module_utils.records import record  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    DETACH_REQUESTED_AT_ANNOTATION, check_component)
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa: E402

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
LONG_AGO = {DETACH_REQUESTED_AT_ANNOTATION: "2026-11-22T11:00:00Z"}
RECENT = {DETACH_REQUESTED_AT_ANNOTATION: "2026-11-22T11:59:00Z"}


def run(data, node_facts=None, force_detach=True, max_wait=360):
    opts = PlanOptions(force_detach, max_wait, ("loop.kubevol.io",), NOW)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts)


def reasons(result):
    return [b["reason"] for b in result["blocked"]]


def detaches(result):
    return [s for s in result["plan"] if s["action"] == "detach"]


def node_items(result, node):
    return list((result["volume_items"].get(node) or {}).values())


# ---- 1. a dangling attachment: the PV is gone --------------------------------------------------------

def gone_pv(va_pv_name="pv-x6", with_va=True, extra=()):
    """pv-x6 attached to node1 (node status, its VA) and never mounted; the PV itself deleted since."""
    objs = [node("node1", attached=[uvn("pv-x6")]), node("node2")]
    if with_va:
        attachment = va("pv-x6", "node1")
        attachment["spec"]["source"]["persistentVolumeName"] = va_pv_name
        objs.append(attachment)
    return cluster(*(objs + list(extra)))


@pytest.mark.parametrize("va_pv_name,with_va,expected,how", [
    ("pv-x6", True, "pv-x6", "spec.source.persistentVolumeName"),
    ("../etc", True, "pv-x6.img", "its volume handle"),     # not one path component
    ("", True, "pv-x6.img", "its volume handle"),
    (None, False, "pv-x6.img", "its volume handle"),         # node status alone
])
def test_gone_pv_is_detached_under_a_name_the_node_accepts(va_pv_name, with_va, expected, how):
    result = run(gone_pv(va_pv_name, with_va), {"node1": facts("node1", devices=["pv-x6"]), "node2": facts("node2")})
    assert result["blocked"] == []
    [step] = detaches(result)
    assert (step["node"], step["volume"], step["unique_volume_name"]) == ("node1", expected, uvn("pv-x6"))
    assert "its PV is gone: named %s after" % expected in step["reason"] and how in step["reason"]
    [item] = node_items(result, "node1")
    assert item["pv_name"] == expected and item["volume_handle"] == "pv-x6.img"
    # the node's own checks pass (names.check_component, node/volume.py volume_item): the old code sent
    # 'kubernetes.io/csi/loop.kubevol.io^pv-x6.img' and every run failed with "refusing PV name"
    volume_item(dict(executor.phase_items(result, "teardown", "node1")[0]))


def test_gone_pv_name_taken_by_another_pv_is_not_used():
    """A PV created since under the old name names other directories: the handle stands for the gone one."""
    result = run(gone_pv(extra=[bound("pv-x6-new", "ns/a")]))
    assert detaches(result)[0]["volume"] == "pv-x6"
    taken = gone_pv(va_pv_name="pv-a", extra=[bound("pv-a", "ns/a")])
    assert [s["volume"] for s in detaches(run(taken)) if s["unique_volume_name"] == uvn("pv-x6")] == ["pv-x6.img"]


def test_gone_pv_detach_is_recorded_and_a_second_run_plans_nothing():
    data = gone_pv()
    result = run(data, {"node1": facts("node1", devices=["pv-x6"]), "node2": facts("node2")})
    outcome = executor.task_outcome(result, ["teardown"], {"node1": {"phase_results": {"teardown": {
        "changed": True, "volumes": [{"pv_name": "pv-x6", "unique_volume_name": uvn("pv-x6")}]}}}})
    assert outcome["errors"] == []
    assert [(r["type"], r["node"], r["volume_handle"]) for r in outcome["records"]] == [
        ("detached", "node1", "pv-x6.img")]
    assert record.apply_records(data, outcome["records"])  # the VA deleted, node status updated
    assert not [o for o in data["items"] if o["kind"] == "VolumeAttachment"]
    assert not data["items"][0]["status"].get("volumesAttached")
    again = run(data, {"node1": facts("node1"), "node2": facts("node2")})
    assert again["plan"] == [] and again["blocked"] == []


def test_gone_pv_unmounted_global_mount_uses_a_safe_name():
    gm = {"unique_volume_name": uvn("pv-x6"), "driver": "loop.kubevol.io", "volume_handle": "pv-x6.img",
          "pv_name": "a/../../b", "path": "/g/x", "mounted": True, "device": "/dev/loop0", "fs_type": "ext4"}
    node_facts = facts("node1", devices=["pv-x6"])
    node_facts["global_mounts"] = [gm]
    result = run(gone_pv(), {"node1": node_facts, "node2": facts("node2")})
    assert [(s["action"], s["volume"]) for s in result["plan"]] == [("unmount", "pv-x6"), ("detach", "pv-x6")]
    for item in executor.phase_items(result, "teardown", "node1"):
        check_component("PV name", item["pv_name"])


def test_gone_pv_with_an_unsafe_handle_is_blocked_not_sent():
    objs = gone_pv(with_va=False)
    objs["items"][0]["status"]["volumesAttached"] = [{"name": "kubernetes.io/csi/loop.kubevol.io^a/b", "devicePath": ""}]
    result = run(objs)
    assert result["plan"] == []
    assert "not one safe path component" in reasons(result)[0]


# ---- 2. a ghost pod volume directory ----------------------------------------------------------------

def ghost_facts(mounted=False):
    """pods/gone/volumes/kubernetes.io~csi/pv-a whose vol_data.json names pv-b's volume."""
    node_facts = facts("node1", devices=["pv-b"])
    node_facts["pod_mounts"] = [{"pod_uid": "gone", "pv_name": "pv-a", "mode": "Filesystem",
                                 "path": "/var/lib/kubelet/pods/gone/volumes/kubernetes.io~csi/pv-a/mount",
                                 "mounted": mounted, "read_only": False, "device": "/dev/loop0" if mounted else None,
                                 "unique_volume_name": uvn("pv-b")}]
    return {"node1": node_facts}


def test_ghost_directory_is_blocked_once_never_an_empty_step():
    data = cluster(node("node1", attached=[uvn("pv-b")]), bound("pv-a", "ns/a"), bound("pv-b", "ns/b"),
                   va("pv-b", "node1"), pod("ns/p", "node1", ["b"]))
    result = run(data, ghost_facts())
    assert [s for s in result["plan"] if s["action"] == "unmount"] == []  # old code: unmount/pod of pv-b, no effect
    [reason] = [r for r in reasons(result) if "vol_data.json" in r]
    assert "named for PV pv-a" in reason and "(PV pv-b)" in reason
    assert "unmount it" not in reason and reason.endswith("remove it by hand [KV-UNIDENTIFIED]")


def test_mounted_ghost_keeps_its_volume_attached():
    data = cluster(node("node1", attached=[uvn("pv-b")]), bound("pv-b", "ns/b"), va("pv-b", "node1"))
    result = run(data, ghost_facts(mounted=True))
    assert detaches(result) == []
    assert any("check what it holds, unmount it, then remove it by hand" in r for r in reasons(result))


def test_orphan_directory_of_a_gone_pv_is_torn_down_under_its_own_name():
    node_facts = ghost_facts()
    node_facts["node1"]["pod_mounts"][0]["unique_volume_name"] = uvn("pv-x6")
    node_facts["node1"]["devices"] = facts("node1", devices=["pv-x6"])["devices"]
    result = run(gone_pv(), node_facts)
    assert [(s["action"], s["volume"]) for s in result["plan"]] == [("unmount", "pv-a"), ("detach", "pv-x6")]
    [item] = executor.phase_items(result, "teardown", "node1")
    assert (item["pv_name"], item["volume_handle"], item["detach"]) == ("pv-a", "pv-x6.img", True)


# ---- 3. an unreachable NotReady node: the detach clock ------------------------------------------------

def unreachable(ready=False, annotations=None, in_use=True):
    """pv-a attached to node1, which cannot be reached; its pod now runs on node2."""
    name = uvn("pv-a")
    data = cluster(node("node1", ready=ready, attached=[name], in_use=[name] if in_use else []), node("node2"),
                   bound("pv-a", "ns/a"), va("pv-a", "node1", annotations=annotations), pod("ns/p", "node2", ["a"]))
    return data, {"node1": facts("node1", reachable=False, error="ssh: timed out"), "node2": facts("node2")}


def test_unreachable_not_ready_node_first_run_records_the_request_time():
    result = run(*unreachable())
    assert detaches(result) == []
    assert result["detach_requests"] == [{"name": va("pv-a", "node1")["metadata"]["name"], "node": "node1",
                                          "volume": "pv-a", "requested_at": "2026-11-22T12:00:00Z"}]
    assert any(r.startswith("node node1 is unreachable (ssh: timed out), so the detach requested 0s ago waits") and
               "after @{max_wait_for_unmount} (360s) [KV-NODE-UNREACHABLE]" in r for r in reasons(result))
    # the run's first write keeps it on the VolumeAttachment (executor.run_step -> detach_request_records)
    _state, records, _tasks = executor.run_step(result)
    assert [(r["type"], r["node"], r["requested_at"]) for r in records if r["type"] == "detach_requested"] == [
        ("detach_requested", "node1", "2026-11-22T12:00:00Z")]


@pytest.mark.parametrize("in_use", [True, False])
def test_unreachable_not_ready_node_released_record_only_after_max_wait(in_use):
    data, node_facts = unreachable(annotations=LONG_AGO, in_use=in_use)
    result = run(data, node_facts)
    [step] = detaches(result)
    assert step["record_only"] and step["forced"] is in_use
    assert "is not Ready, max_wait_for_unmount has passed, and is unreachable" in step["reason"]
    assert result["detach_requests"] == []
    # nothing runs on node1: the controller records the release alone (the VA deleted, node status updated)
    assert executor.phase_nodes(result, "teardown") == []
    outcome = executor.task_outcome(result, ["teardown"], {})
    assert [(r["type"], r["node"], r["pv_name"]) for r in outcome["records"]] == [("detached", "node1", "pv-a")]
    assert record.apply_records(data, outcome["records"])
    assert not [o for o in data["items"] if o["kind"] == "VolumeAttachment"]
    status = data["items"][0]["status"]
    assert not status.get("volumesAttached") and not status.get("volumesInUse")
    # node2's attach is planned; the storage side keeps node1's hold on the image (it may still have its device):
    # the release is the records', never the backend's (the node's own detach, or force_release_holders)
    attach = [s for s in result["plan"] if s["action"] == "attach"]
    assert [s["node"] for s in attach] == ["node2"]
    assert "node1" not in (result["volume_items"]["node2"][uvn("pv-a")].get("release_holders") or ())


def test_unreachable_not_ready_node_waits_before_max_wait():
    result = run(*unreachable(annotations=RECENT))
    assert detaches(result) == [] and result["detach_requests"] == []
    assert any("detach requested 60s ago" in r for r in reasons(result))


@pytest.mark.parametrize("ready,force_detach", [(True, True), (False, False)])
def test_unreachable_node_never_released_when_ready_or_force_detach_off(ready, force_detach):
    result = run(*unreachable(ready=ready, annotations=LONG_AGO), force_detach=force_detach)
    assert detaches(result) == []
    assert any(r.startswith("node node1 is unreachable (ssh: timed out), so the detach requested 3600s ago waits")
               and "released in the cluster only" not in r for r in reasons(result))
    assert not [s for s in result["plan"] if s["action"] == "attach"]  # Multi-Attach: node1 still holds it


def test_record_is_written_for_the_first_request():
    """record.py keeps the first request time on the VolumeAttachment (SetDetachRequestTime)."""
    data, node_facts = unreachable()
    result = run(data, node_facts)
    records = executor.detach_request_records(result)
    assert record.apply_records(data, records)
    [attachment] = [o for o in data["items"] if o["kind"] == "VolumeAttachment"]
    assert attachment["metadata"]["annotations"][DETACH_REQUESTED_AT_ANNOTATION] == "2026-11-22T12:00:00Z"
    later = run(data, node_facts)
    assert later["detach_requests"] == []


def test_orphan_directory_with_a_name_no_node_module_takes_is_blocked_not_sent():
    node_facts = ghost_facts()
    entry = node_facts["node1"]["pod_mounts"][0]
    entry.update(pv_name="pv-a\nx", unique_volume_name=uvn("pv-x6"))
    result = run(gone_pv(with_va=False), node_facts)
    assert [s for s in result["plan"] if s["action"] == "unmount"] == []
    assert any("has a name the node modules refuse" in r for r in reasons(result))


# ---- 4. a check run across the plan: the attach names the nodes detached first -----------------------

def test_an_attach_names_the_nodes_whose_teardown_detaches_the_volume_first():
    """An RWO pod move: node1's detach comes before node2's attach in the real run; a check run detaches nothing, so
    the attach item says whose holds the plan releases first (drivers/loop_holders.py reads it in check mode)."""
    data = cluster(node("node1", attached=[uvn("pv-a")]), node("node2"), bound("pv-a", "ns/a"),
                   pod("ns/new", "node2", ["a"]))
    result = run(data, {"node1": facts("node1", devices=["pv-a"]), "node2": facts("node2")})
    [detach] = detaches(result)
    [attach] = [s for s in result["plan"] if s["action"] == "attach"]
    assert (detach["node"], attach["node"]) == ("node1", "node2") and not detach.get("record_only")
    [item] = executor.phase_items(result, "attach", "node2")
    assert item["detached_first_from"] == ["node1"]
    assert volume_item(item).detached_first_from == ("node1",)
    [teardown] = executor.phase_items(result, "teardown", "node1")
    assert "detached_first_from" not in teardown


def test_a_plain_attach_and_a_release_without_its_node_name_no_node():
    """Nothing detached: no field. A release recorded without its node (record_only) leaves that node's hold on the
    storage side, so it is no detach the check may count."""
    plain = run(cluster(node("node1"), bound("pv-a", "ns/a"), pod("ns/p", "node1", ["a"])))
    [item] = executor.phase_items(plain, "attach", "node1")
    assert "detached_first_from" not in item and volume_item(item).detached_first_from == ()
    result = run(*unreachable(annotations=LONG_AGO))
    [step] = detaches(result)
    assert step["record_only"]
    [item] = executor.phase_items(result, "attach", "node2")
    assert "detached_first_from" not in item
