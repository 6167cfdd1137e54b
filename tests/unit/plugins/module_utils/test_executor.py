"""The phase executor: plan steps -> one module call per node per phase -> cluster records."""
import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils import executor
from ansible_collections.kubevol.volumes.plugins.module_utils.names import unique_volume_name

DRIVER = "loop.kubevol.io"


def item(pv, handle=None, **extra):
    base = {"pv_name": pv, "driver": DRIVER, "volume_handle": handle or pv + ".img",
            "volume_attributes": {}, "capacity_bytes": 1 << 30, "mode": "Filesystem",
            "fs_type": "ext4", "mount_options": [], "read_only": False, "pods": []}
    base.update(extra)
    return base


def step(action, target, node, pv, pod_uid=None, **extra):
    it = item(pv, pods=[{"uid": pod_uid, "name": "ns/" + pod_uid, "read_only": False}] if pod_uid else [])
    base = {"action": action, "target": target, "node": node, "volume": pv,
            "pod": ("ns/" + pod_uid) if pod_uid else None, "pod_uid": pod_uid, "reason": "test",
            "unique_volume_name": unique_volume_name(DRIVER, pv + ".img"), "item": it}
    base.update(extra)
    return base


PLAN = [
    step("unmount", "pod", "n1", "pv-a", pod_uid="old"),
    step("unmount", "device", "n1", "pv-a"),
    step("detach", "device", "n1", "pv-a"),
    step("unmount", "pod", "n1", "pv-b", pod_uid="gone"),
    step("attach", "device", "n2", "pv-a"),
    step("attach", "device", "n2", "pv-c"),
    step("mount", "device", "n2", "pv-a"),
    step("mount", "pod", "n2", "pv-a", pod_uid="new1"),
    step("mount", "pod", "n2", "pv-a", pod_uid="new2"),
    step("mount", "device", "n2", "pv-c"),
    step("mount", "pod", "n2", "pv-c", pod_uid="new3"),
    step("expand", "controller", "n2", "pv-c", size_from=1 << 30, size_to=2 << 30, capacity="2Gi"),
    step("expand", "node", "n2", "pv-c", size_from=1 << 30, size_to=2 << 30, capacity="2Gi", pvc="ns/c"),
]


def test_teardown_merges_steps_into_one_item_per_volume():
    items = executor.phase_items(PLAN, "teardown", "n1")
    assert [i["pv_name"] for i in items] == ["pv-a", "pv-b"]
    a, b = items
    assert [p["uid"] for p in a["pods"]] == ["old"] and a["unmount_device"] and a["detach"]
    assert [p["uid"] for p in b["pods"]] == ["gone"] and not b["unmount_device"] and not b["detach"]
    assert executor.phase_items(PLAN, "teardown", "n2") == []


def test_mount_items_collect_every_pod_of_the_volume():
    items = executor.phase_items(PLAN, "mount", "n2")
    assert [(i["pv_name"], [p["uid"] for p in i["pods"]]) for i in items] == [
        ("pv-a", ["new1", "new2"]), ("pv-c", ["new3"])]


def test_expand_items_carry_the_target_size():
    (only,) = executor.phase_items(PLAN, "expand_node", "n2")
    assert only["capacity_bytes"] == 2 << 30


def test_phase_nodes_lists_only_nodes_with_work():
    assert executor.phase_nodes(PLAN, "teardown") == ["n1"]
    assert executor.phase_nodes(PLAN, "attach") == ["n2"]
    assert executor.phase_nodes(PLAN, "expand_controller") == ["n2"]


def test_successful_phases_produce_kubernetes_records():
    out = executor.phase_outcome(PLAN, "teardown", {"n1": {"changed": True}})
    assert [r["type"] for r in out["records"]] == ["detached"]
    assert out["records"][0]["node"] == "n1" and out["records"][0]["pv_name"] == "pv-a"
    assert out["errors"] == [] and out["blocked"] == []

    result = {"changed": True, "volumes": [
        {"unique_volume_name": unique_volume_name(DRIVER, "pv-a.img"), "device_path": "/dev/loop7"},
        {"unique_volume_name": unique_volume_name(DRIVER, "pv-c.img"), "device_path": "/dev/loop8"}]}
    out = executor.phase_outcome(PLAN, "attach", {"n2": result})
    assert [(r["type"], r["pv_name"], r["device_path"]) for r in out["records"]] == [
        ("attached", "pv-a", "/dev/loop7"), ("attached", "pv-c", "/dev/loop8")]

    out = executor.phase_outcome(PLAN, "mount", {"n2": {"changed": True}})
    assert {r["type"] for r in out["records"]} == {"in_use"}
    assert all(r["in_use"] for r in out["records"])

    out = executor.phase_outcome(PLAN, "expand_controller", {"n2": {"changed": True}})
    assert out["records"] == [{"type": "controller_expanded", "pv_name": "pv-c", "capacity": "2Gi"}]
    out = executor.phase_outcome(PLAN, "expand_node", {"n2": {"changed": True}})
    assert out["records"] == [{"type": "node_expanded", "pvc": "ns/c", "capacity": "2Gi"}]


def test_failed_detach_blocks_the_attach_elsewhere_and_records_nothing_for_it():
    failed = {"failed": True, "msg": "umount: target is busy"}
    out = executor.phase_outcome(PLAN, "teardown", {"n1": failed})
    assert out["records"] == []
    key_a = unique_volume_name(DRIVER, "pv-a.img")
    assert key_a in out["failures"]["volumes"]
    assert out["errors"] == [{"node": "n1", "phase": "teardown", "msg": "umount: target is busy"}]
    blocked = {(b["node"], b["volume"], b["action"]) for b in out["blocked"]}
    assert ("n2", "pv-a", "attach") in blocked and ("n2", "pv-a", "mount") in blocked
    assert ("n2", "pv-c", "attach") not in blocked
    # The next phase does not attempt the blocked volume but still does the others.
    items = executor.phase_items(PLAN, "attach", "n2", out["failures"])
    assert [i["pv_name"] for i in items] == ["pv-c"]


def test_partial_failure_records_what_completed():
    key_a = unique_volume_name(DRIVER, "pv-a.img")
    key_c = unique_volume_name(DRIVER, "pv-c.img")
    # The shape node/context.py run_each fails with: only the completed volumes are listed.
    result = {"failed": True, "msg": "attach failed on node n2 for volume pv-c: losetup: no free loop device",
              "failed_volume": "pv-c", "completed": ["pv-a"],
              "volumes": [{"pv_name": "pv-a", "unique_volume_name": key_a, "device": "/dev/loop3"}]}
    out = executor.phase_outcome(PLAN, "attach", {"n2": result})
    assert [r["pv_name"] for r in out["records"]] == ["pv-a"]
    assert key_c in out["failures"]["volumes"] and key_a not in out["failures"]["volumes"]


def test_unreachable_node_blocks_its_later_steps():
    out = executor.phase_outcome(PLAN, "attach", {"n2": {"unreachable": True, "msg": "ssh: connection refused"}})
    assert "n2" in out["failures"]["nodes"]
    assert executor.phase_items(PLAN, "mount", "n2", out["failures"]) == []
    assert all(b["reason"].startswith("not attempted: node unreachable") for b in out["blocked"]
               if b["node"] == "n2" and b["volume"] == "pv-c")


def test_a_node_missing_from_the_play_is_reported():
    out = executor.phase_outcome(PLAN, "teardown", {})
    assert out["errors"] and "n1" in out["errors"][0]["msg"]


def test_detach_request_records():
    plan_result = {"detach_requests": [{"name": "csi-x", "node": "n1", "pv_name": "pv-a", "driver": DRIVER,
                                        "volume_handle": "pv-a.img", "requested_at": "2026-11-22T00:00:00Z"}],
                   "detach_requests_to_clear": []}
    (rec,) = executor.detach_request_records(plan_result)
    assert rec["type"] == "detach_requested" and rec["requested_at"] == "2026-11-22T00:00:00Z"


@pytest.mark.parametrize("phase", [p[0] for p in executor.PHASES])
def test_empty_plan_has_no_work(phase):
    assert executor.phase_items([], phase, "n1") == []
    assert executor.phase_outcome([], phase, {}) == {"records": [], "failures": {"nodes": {}, "volumes": {}},
                                                     "blocked": [], "errors": []}


def test_facts_errors_name_each_node_whose_state_was_not_gathered():
    node_facts = {"n2": {"node_name": "n2", "reachable": False, "error": "ssh: connection refused"},
                  "n1": {"node_name": "n1", "reachable": True, "devices": []},
                  "n3": {"node_name": "n3", "reachable": False}}
    assert executor.facts_errors(node_facts) == [
        {"node": "n2", "phase": "facts", "msg": "ssh: connection refused"},
        {"node": "n3", "phase": "facts", "msg": "node facts were not gathered"}]
    assert executor.facts_errors({}) == []
