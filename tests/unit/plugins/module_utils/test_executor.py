"""The phase executor: plan steps -> one module call per node per phase -> cluster records."""
import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor, outcome
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import lean_plan

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


PLAN = lean_plan([
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
])


def phase_outcome(plan, phase, results, failures=None):
    """One phase's outcome as the role gets it: a node task of that phase alone (task_outcome), each node's module
    result the phase_results of its node_phases result (None: the host did not run it)."""
    hosts = dict((node, None if result is None else {"phase_results": {phase: result}})
                 for node, result in results.items())
    return executor.task_outcome(plan, [phase], hosts, failures)


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
    out = phase_outcome(PLAN, "teardown", {"n1": {"changed": True}})
    assert [r["type"] for r in out["records"]] == ["detached"]
    assert out["records"][0]["node"] == "n1" and out["records"][0]["pv_name"] == "pv-a"
    assert out["errors"] == [] and out["blocked"] == []

    result = {"changed": True, "volumes": [
        {"unique_volume_name": unique_volume_name(DRIVER, "pv-a.img"), "device_path": "/dev/loop7"},
        {"unique_volume_name": unique_volume_name(DRIVER, "pv-c.img"), "device_path": "/dev/loop8"}]}
    out = phase_outcome(PLAN, "attach", {"n2": result})
    assert [(r["type"], r["pv_name"], r["device_path"]) for r in out["records"]] == [
        ("attached", "pv-a", "/dev/loop7"), ("attached", "pv-c", "/dev/loop8")]

    out = phase_outcome(PLAN, "mount", {"n2": {"changed": True}})
    assert {r["type"] for r in out["records"]} == {"in_use"}
    assert all(r["in_use"] for r in out["records"])

    out = phase_outcome(PLAN, "expand_controller", {"n2": {"changed": True}})
    assert out["records"] == [{"type": "controller_expanded", "pv_name": "pv-c", "capacity": "2Gi"}]
    out = phase_outcome(PLAN, "expand_node", {"n2": {"changed": True}})
    assert out["records"] == [{"type": "node_expanded", "pvc": "ns/c", "capacity": "2Gi"}]


def test_failed_detach_blocks_the_attach_elsewhere_and_records_nothing_for_it():
    failed = {"failed": True, "msg": "umount: target is busy"}
    out = phase_outcome(PLAN, "teardown", {"n1": failed})
    assert out["records"] == []
    key_a = unique_volume_name(DRIVER, "pv-a.img")
    assert key_a in out["failures"]["volumes"]
    assert out["errors"] == [{"node": "n1", "phase": "teardown", "msg": "umount: target is busy (volumes not done: pv-a, pv-b)",
                              "volumes": ["pv-a", "pv-b"]}]
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
    out = phase_outcome(PLAN, "attach", {"n2": result})
    assert [r["pv_name"] for r in out["records"]] == ["pv-a"]
    assert key_c in out["failures"]["volumes"] and key_a not in out["failures"]["volumes"]


def test_unreachable_node_blocks_its_later_steps():
    out = phase_outcome(PLAN, "attach", {"n2": {"unreachable": True, "msg": "ssh: connection refused"}})
    assert "n2" in out["failures"]["nodes"]
    assert executor.phase_items(PLAN, "mount", "n2", out["failures"]) == []
    assert all(b["reason"].startswith("not attempted: node unreachable") for b in out["blocked"]
               if b["node"] == "n2" and b["volume"] == "pv-c")


def test_a_node_missing_from_the_play_is_reported():
    out = phase_outcome(PLAN, "teardown", {})
    assert out["errors"] and "n1" in out["errors"][0]["msg"]


def test_detach_request_records():
    plan_result = {"detach_requests": [{"name": "csi-x", "node": "n1", "pv_name": "pv-a", "driver": DRIVER,
                                        "volume_handle": "pv-a.img", "requested_at": "2026-11-22T00:00:00Z"}],
                   "detach_requests_to_clear": []}
    (rec,) = executor.detach_request_records(plan_result)
    assert rec["type"] == "detach_requested" and rec["requested_at"] == "2026-11-22T00:00:00Z"


@pytest.mark.parametrize("phase", phases.NAMES)
def test_empty_plan_has_no_work(phase):
    assert executor.phase_items([], phase, "n1") == []
    assert phase_outcome([], phase, {}) == {"records": [], "failures": {"nodes": {}, "volumes": {}},
                                            "blocked": [], "errors": [], "pending": []}


def test_facts_errors_name_each_node_whose_state_was_not_gathered():
    node_facts = {"n2": {"node_name": "n2", "reachable": False, "error": "ssh: connection refused"},
                  "n1": {"node_name": "n1", "reachable": True, "devices": []},
                  "n3": {"node_name": "n3", "reachable": False}}
    assert executor.facts_errors(node_facts) == [
        {"node": "n2", "phase": "facts", "msg": "ssh: connection refused"},
        {"node": "n3", "phase": "facts", "msg": "node facts were not gathered"}]
    assert executor.facts_errors({}) == []


# ---- the role's node tasks (plugins/action/node_phases.py + executor.task_outcome) -----------------------

SETUP = ["attach", "mount", "expand_controller", "expand_node"]
KEY_A, KEY_C = unique_volume_name(DRIVER, "pv-a.img"), unique_volume_name(DRIVER, "pv-c.img")


def ran(*phases, **overrides):
    """A node_phases task result: each phase's module succeeded unless overridden."""
    results = dict((phase, {"changed": True}) for phase in phases)
    results.update(overrides)
    return {"changed": True, "phase_results": results}


def test_run_tasks_teardown_then_one_setup_task():
    assert executor.run_tasks(PLAN["plan"]) == {
        "teardown": True, "setup": SETUP, "expand_node_after": False,
        "sequence": [{"name": "teardown", "phases": ["teardown"]}, {"name": "setup", "phases": SETUP}]}
    assert executor.run_tasks(PLAN["plan"][4:6]) == {"teardown": False, "setup": ["attach"], "expand_node_after": False,
                                                     "sequence": [{"name": "setup", "phases": ["attach"]}]}
    assert executor.run_tasks([]) == {"teardown": False, "setup": [], "expand_node_after": False, "sequence": []}


def test_run_tasks_waits_for_a_controller_expansion_on_another_node():
    plan = [step("expand", "controller", "n1", "pv-c", size_to=2 << 30, capacity="2Gi"),
            step("expand", "node", "n1", "pv-c", size_to=2 << 30, capacity="2Gi", pvc="ns/c"),
            step("expand", "node", "n2", "pv-c", size_to=2 << 30, capacity="2Gi", pvc="ns/c")]
    assert executor.run_tasks(plan) == {
        "teardown": False, "setup": ["expand_controller"], "expand_node_after": True,
        "sequence": [{"name": "setup", "phases": ["expand_controller"]}, {"name": "expand_node", "phases": ["expand_node"]}]}


def test_a_nodes_phases_follow_each_other_and_stop_for_what_failed_there():
    """node_phases asks for each phase's work with the failures advance() returned after the last one."""
    items, _stale, _forced = executor.phase_work(PLAN, "attach", "n2")
    assert [i["pv_name"] for i in items] == ["pv-a", "pv-c"]
    failed_c = {"failed": True, "msg": "losetup: no free loop device", "volumes": [{"unique_volume_name": KEY_A}]}
    failures = executor.advance(PLAN, "attach", "n2", failed_c, {})
    items, _stale, _forced = executor.phase_work(PLAN, "mount", "n2", failures)
    assert [i["pv_name"] for i in items] == ["pv-a"]
    assert executor.phase_work(PLAN, "expand_controller", "n2", failures)[0] == []


def test_setup_task_outcome_records_each_phase_once_and_carries_failures():
    attach = {"changed": True, "volumes": [{"unique_volume_name": KEY_A, "device_path": "/dev/loop7"},
                                           {"unique_volume_name": KEY_C, "device_path": "/dev/loop8"}]}
    out = executor.task_outcome(PLAN, SETUP, {"n2": ran(*SETUP, attach=attach)})
    assert [r["type"] for r in out["records"]] == ["attached", "attached", "in_use", "in_use", "controller_expanded",
                                                   "node_expanded"]
    assert out["errors"] == [] and out["blocked"] == [] and out["failures"] == {"nodes": {}, "volumes": {}}


def test_setup_failure_on_one_node_reports_that_nodes_later_steps():
    failed = {"failed": True, "msg": "losetup: no free loop device", "volumes": [{"unique_volume_name": KEY_A}]}
    out = executor.task_outcome(PLAN, SETUP, {"n2": {"phase_results": {"attach": failed, "mount": {"changed": True}}}})
    assert [(r["type"], r.get("pv_name") or r["unique_volume_names"]) for r in out["records"]] == [
        ("attached", "pv-a"), ("in_use", [KEY_A])]
    assert KEY_C in out["failures"]["volumes"]
    assert sorted((b["volume"], b["action"], b["pod"] or "-") for b in out["blocked"]) == [
        ("pv-c", "expand", "-"), ("pv-c", "expand", "-"), ("pv-c", "mount", "-"), ("pv-c", "mount", "ns/new3")]


def test_a_failed_detach_on_one_node_stops_the_attach_on_the_other():
    """An RWO volume's detach on n1 must have completed and been recorded before n2 attaches it."""
    busy = {"failed": True, "msg": "umount: target is busy", "volumes": []}
    teardown = executor.task_outcome(PLAN, ["teardown"], {"n1": ran("teardown", teardown=busy)})
    assert teardown["records"] == [] and KEY_A in teardown["failures"]["volumes"]
    assert {(b["node"], b["volume"], b["action"]) for b in teardown["blocked"]} >= {("n2", "pv-a", "attach")}
    # what node_phases on n2 gets for the setup task: pv-a is not attached there
    items, _stale, _forced = executor.phase_work(PLAN, "attach", "n2", teardown["failures"])
    assert [i["pv_name"] for i in items] == ["pv-c"]
    setup = executor.task_outcome(PLAN, SETUP, {"n2": ran(*SETUP)}, teardown["failures"])
    assert not [r for r in setup["records"] if r.get("pv_name") == "pv-a" or KEY_A in r.get("unique_volume_names", ())]


def test_the_run_state_threads_failures_and_keeps_the_runs_errors_and_blocked_steps():
    """The role's one state variable: it starts with the nodes that could not be gathered, each node task carries
    its failures into the next, and errors and blocked steps add up over the run; records are each task's own."""
    gathered = dict(PLAN, node_errors=[{"node": "n3", "phase": "facts", "msg": "unreachable", "volumes": []}])
    state = executor.initial_run_state(gathered)
    assert state == {"tasks": executor.run_tasks(PLAN["plan"])["sequence"], "failures": {"nodes": {}, "volumes": {}},
                     "blocked": [], "records": [], "pending": [],
                     "errors": [{"node": "n3", "phase": "facts", "msg": "unreachable", "volumes": []}]}
    assert [t["name"] for t in state["tasks"]] == ["teardown", "setup"]
    busy = {"failed": True, "msg": "umount: target is busy", "volumes": []}
    after_teardown = executor.run_state_after(gathered, ["teardown"], {"n1": ran("teardown", teardown=busy)}, state)
    assert KEY_A in after_teardown["failures"]["volumes"] and after_teardown["records"] == []
    assert [e["node"] for e in after_teardown["errors"]] == ["n3", "n1"]
    assert ("n2", "pv-a", "attach") in {(b["node"], b["volume"], b["action"]) for b in after_teardown["blocked"]}
    after_setup = executor.run_state_after(gathered, SETUP, {"n2": ran(*SETUP)}, after_teardown)
    assert after_setup["failures"]["volumes"].keys() >= {KEY_A}  # the failed detach still stops what needs pv-a
    assert after_setup["errors"] == after_teardown["errors"] and after_setup["tasks"] == state["tasks"]
    assert after_setup["blocked"][:len(after_teardown["blocked"])] == after_teardown["blocked"]
    assert after_setup["records"] and not [r for r in after_setup["records"] if r.get("pv_name") == "pv-a"]
    assert state["errors"] == [gathered["node_errors"][0]] and state["blocked"] == []  # the input is not changed


def test_a_host_that_did_not_run_the_task_or_is_unreachable():
    out = executor.task_outcome(PLAN, ["teardown"], {})
    assert out["errors"] and "did not run it" in out["errors"][0]["msg"] and out["records"] == []
    out = executor.task_outcome(PLAN, SETUP, {"n2": {"unreachable": True, "msg": "ssh: connect timed out"}})
    # the reason later steps wait says where; the message itself is the node task's, printed once
    assert out["failures"]["nodes"] == {"n2": "node unreachable: n2, in phase attach"} and out["records"] == []
    # a phase the node did not run although the plan has work there is never counted as done
    out = executor.task_outcome(PLAN, SETUP, {"n2": ran("attach")})
    assert [r["type"] for r in out["records"]] == ["attached", "attached"]
    assert out["errors"][0]["phase"] == "mount" and "did not run phase mount" in out["errors"][0]["msg"]


# ---- the run's steps (executor.run_step, what reconcile_run writes) -------------------------------------------

def test_the_first_step_starts_the_run_and_writes_the_detach_requests_only():
    requested = dict(PLAN, detach_requests=[{"node": "n1", "driver": DRIVER, "volume_handle": "pv-a.img",
                                             "requested_at": "2026-11-24T08:00:00Z"}])
    state, records, upcoming = executor.run_step(requested)
    assert state == {"tasks": executor.run_tasks(PLAN["plan"])["sequence"], "failures": {"nodes": {}, "volumes": {}},
                     "blocked": [], "errors": [], "pending": []}
    assert [r["type"] for r in records] == ["detach_requested"]  # the teardown comes first: no intents yet
    assert [t["name"] for t in upcoming] == ["teardown", "setup"]


def test_the_setups_intents_follow_the_teardowns_records_in_one_write():
    """Every detach is recorded, and every attachment about to be made is an intent, before any node attaches."""
    state, _records, _upcoming = executor.run_step(PLAN)
    state, records, upcoming = executor.run_step(PLAN, state, "teardown", {"n1": ran("teardown")})
    types = [(r["type"], r.get("node"), r.get("pv_name") or r.get("pvc")) for r in records]
    assert types == [("detached", "n1", "pv-a"), ("attach_intent", "n2", "pv-a"), ("attach_intent", "n2", "pv-c"),
                     ("resize_intent", None, "ns/c")], types
    assert [t["name"] for t in upcoming] == ["setup"] and "records" not in state
    state, records, upcoming = executor.run_step(PLAN, state, "setup", {"n2": ran(*SETUP)})
    assert upcoming == [] and "attach_intent" not in [r["type"] for r in records]
    assert [r["type"] for r in records].count("attached") == 2


def test_a_failed_detach_writes_no_intent_for_that_volume():
    state, _records, _upcoming = executor.run_step(PLAN)
    busy = {"failed": True, "msg": "umount: target is busy", "volumes": []}
    state, records, _upcoming = executor.run_step(PLAN, state, "teardown", {"n1": ran("teardown", teardown=busy)})
    assert [(r["type"], r["pv_name"]) for r in records if r["type"] == "attach_intent"] == [("attach_intent", "pv-c")]
    assert KEY_A in state["failures"]["volumes"] and [e["node"] for e in state["errors"]] == ["n1"]


def test_check_mode_steps_write_nothing_and_a_task_not_in_the_run_is_refused():
    """Check mode runs the node tasks too (in the node modules' check mode): the same tasks, no records."""
    state, records, upcoming = executor.run_step(PLAN, check_mode=True)
    assert records == [] and [t["name"] for t in upcoming] == [t["name"] for t in state["tasks"]] == ["teardown", "setup"]
    state, records, upcoming = executor.run_step(PLAN, state, "teardown", {"n1": ran("teardown")}, check_mode=True)
    assert records == [] and [t["name"] for t in upcoming] == ["setup"]
    with pytest.raises(ValueError, match="'expand_node' is not one of this run's node tasks"):
        executor.run_step(PLAN, state, "expand_node", {})


def test_a_node_task_past_kubevol_node_timeout_counts_as_unreachable():
    from ansible_collections.kubevol.volumes.plugins.module_utils.run.outcome import _phase_result, timed_out
    host = {"failed": True, "msg": "Task failed: Timed out after 20 second(s).", "timedout": {"period": 20}}
    result = _phase_result(host, "teardown", "node3")
    assert result["unreachable"] is True and result["failed"] is True
    assert "node node3 did not answer within 20s (kubevol_node_timeout)" in result["msg"]
    assert timed_out({"failed": True, "msg": "other"}, "node3") is None


HOSTPATH = "hostpath.csi.k8s.io"


def foreign_plan():
    hp = step("attach", "device", "n2", "pv-h", unique_volume_name=unique_volume_name(HOSTPATH, "pv-h.img"))
    hp["item"]["driver"] = HOSTPATH
    mount = step("mount", "device", "n2", "pv-h", unique_volume_name=unique_volume_name(HOSTPATH, "pv-h.img"))
    mount["item"]["driver"] = HOSTPATH
    return lean_plan([hp, mount, step("attach", "device", "n2", "pv-c")])


def test_a_volume_the_node_cannot_serve_is_failed_not_applied_nor_recorded():
    """Issue 26: a driver the node has no backend for. The node fails that volume (node/context.py no_backend);
    the outcome records no attachment for it, names it in the node's error and blocks its mount, while the other
    volume of the call is recorded."""
    key_h, key_c = unique_volume_name(HOSTPATH, "pv-h.img"), unique_volume_name(DRIVER, "pv-c.img")
    msg = ("volume pv-h on node n2: driver hostpath.csi.k8s.io cannot be served there: kubevol on node n2 has no "
           "backend for hostpath.csi.k8s.io (it drives loop.kubevol.io)")
    result = {"failed": True, "msg": "1 of 2 volume(s) failed on node n2: " + msg, "completed": ["pv-c"],
              "volumes": [{"pv_name": "pv-c", "unique_volume_name": key_c, "device": "/dev/loop8"}],
              "failures": [{"volume": "pv-h", "unique_volume_name": key_h, "node": "n2", "step": "find driver",
                            "msg": msg}]}
    out = phase_outcome(foreign_plan(), "attach", {"n2": result})
    assert [(r["type"], r["pv_name"]) for r in out["records"]] == [("attached", "pv-c")]
    assert out["failures"]["volumes"][key_h] == "attach on node n2 failed"  # the message is the error's, once
    assert key_c not in out["failures"]["volumes"]
    assert [(e["node"], e["phase"], e["volumes"]) for e in out["errors"]] == [("n2", "attach", ["pv-h"])]
    assert HOSTPATH in out["errors"][0]["msg"]
    assert [(b["volume"], b["action"]) for b in out["blocked"]] == [("pv-h", "mount")]


def test_a_volume_result_saying_skipped_is_not_done():
    """An older node module answered a foreign driver's volume with ``skipped`` and exit 0: counted as applied and
    recorded attached. A skip is that volume's failure; an expansion's skip (a Block volume) stays done."""
    key_h, key_c = unique_volume_name(HOSTPATH, "pv-h.img"), unique_volume_name(DRIVER, "pv-c.img")
    result = {"changed": True, "volumes": [
        {"pv_name": "pv-h", "unique_volume_name": key_h, "changed": False,
         "skipped": "driver hostpath.csi.k8s.io has no kubevol backend on node n2: left to its own CSI node plugin"},
        {"pv_name": "pv-c", "unique_volume_name": key_c, "device": "/dev/loop8"}]}
    outcomes, failed_msg = outcome._volume_outcomes(result)
    assert outcomes[key_c] is True and outcomes[key_h] is not True and HOSTPATH in outcomes[key_h]
    assert HOSTPATH in failed_msg
    out = phase_outcome(foreign_plan(), "attach", {"n2": result})
    assert [r["pv_name"] for r in out["records"]] == ["pv-c"]
    assert [(e["node"], e["volumes"]) for e in out["errors"]] == [("n2", ["pv-h"])]
    grown = {"changed": True, "volumes": [{"pv_name": "pv-c", "unique_volume_name": key_c, "stage": "node",
                                           "skipped": "Block volume: no filesystem to grow (device rescanned)"}]}
    assert outcome._volume_outcomes(grown) == ({key_c: True}, None)


def test_one_failed_detach_does_not_take_the_other_volumes_of_the_batch():
    """run_each's shape for a teardown where pv-a's unmount failed: pv-b's teardown is recorded, only pv-a is
    named, and nothing says "volumes not done" of pv-b."""
    key_a, key_b = unique_volume_name(DRIVER, "pv-a.img"), unique_volume_name(DRIVER, "pv-b.img")
    msg = "unmount failed on node n1 for volume pv-a: target is busy"
    result = {"failed": True, "msg": "1 of 2 volume(s) failed on node n1: " + msg, "completed": ["pv-b"],
              "volumes": [{"pv_name": "pv-b", "unique_volume_name": key_b, "changed": True}],
              "failures": [{"volume": "pv-a", "unique_volume_name": key_a, "node": "n1", "msg": msg}]}
    out = phase_outcome(PLAN, "teardown", {"n1": result})
    assert key_a in out["failures"]["volumes"] and key_b not in out["failures"]["volumes"]
    assert [e["volumes"] for e in out["errors"]] == [["pv-a"]] and "not done" not in out["errors"][0]["msg"]


def test_a_node_lost_after_its_attach_is_unreachable_and_its_attach_is_recorded():
    """node_phases says the host is unreachable (it was lost in the mount phase) and keeps each phase's result: what
    the node did before is recorded, the rest is not attempted."""
    attach = {"changed": True, "volumes": [{"unique_volume_name": KEY_A, "device_path": "/dev/loop4"},
                                           {"unique_volume_name": KEY_C, "device_path": "/dev/loop5"}]}
    lost = {"unreachable": True, "failed": True, "msg": "node_volume_mount: ssh: closed"}
    host = dict(ran("attach", attach=attach, mount=lost), unreachable=True, msg=lost["msg"])
    out = executor.task_outcome(PLAN, SETUP, {"n2": host})
    assert sorted(r["pv_name"] for r in out["records"] if r["type"] == "attached") == ["pv-a", "pv-c"]
    assert "n2" in out["failures"]["nodes"] and [(e["node"], e["phase"], e.get("unreachable")) for e in out["errors"]] \
        == [("n2", "mount", True)]
