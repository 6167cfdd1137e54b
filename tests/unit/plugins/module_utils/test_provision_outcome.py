# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The provisioner's tasks in a run (run/provision_outcome.py, run/executor.py): where provision and delete go in the
task sequence, what each host is given, and the hosts' results turned into records (the PV made and its claim bound,
the PV deleted) and failures (an uncertain CreateVolume said so, a host that did not answer)."""

from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor, provision_outcome

LOOP = "loop.kubevol.io"


def create(claim, host="node1", name=None):
    name = name or "pvc-u-" + claim
    return {"op": "create_volume", "host": host, "driver": LOOP, "claim": "ns/" + claim, "claim_uid": "u-" + claim,
            "name": name, "request": {"capacity_bytes": 1 << 30},
            "pv": {"apiVersion": "v1", "kind": "PersistentVolume",
                   "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": LOOP}},
                   "spec": {"csi": {"driver": LOOP}, "claimRef": {"uid": "u-" + claim}}}}


def delete(pv, host="node1", claim="gone"):
    return {"op": "delete_volume", "host": host, "driver": LOOP, "pv_name": pv, "volume_id": pv + ".img",
            "claim": "ns/" + claim, "unique_volume_name": "kubernetes.io/csi/%s^%s.img" % (LOOP, pv)}


def plan_result(steps=(), provisioning=(), deletions=(), records=()):
    return {"plan": list(steps), "volume_items": {}, "by_node": {}, "provisioning": list(provisioning),
            "deletions": list(deletions), "storage_records": list(records)}


def teardown_step(pv):
    return {"action": "detach", "target": "device", "node": "node1", "volume": pv, "pod": None, "pod_uid": None,
            "reason": "x", "unique_volume_name": "kubernetes.io/csi/%s^%s.img" % (LOOP, pv)}


def setup_step(pv):
    return dict(teardown_step(pv), action="attach")


def test_the_task_sequence():
    def names(seq):
        return [(t["name"], t.get("hosts")) for t in seq]
    # provisioning: the only task of this plan (the rest is planned again after it)
    state = executor.initial_run_state(plan_result([teardown_step("pv-a")], [create("c", "node2"), create("d")],
                                                   [delete("pv-a")]))
    assert names(state["tasks"]) == [("provision", ["node1", "node2"])]
    # deletion: after the teardown, before the setup
    state = executor.initial_run_state(plan_result([teardown_step("pv-a"), setup_step("pv-b")], (),
                                                   [delete("pv-a", "node2")]))
    assert names(state["tasks"]) == [("teardown", None), ("delete", ["node2"]), ("setup", None)]
    # neither: the tasks it always had
    assert names(executor.initial_run_state(plan_result([setup_step("pv-b")]))["tasks"]) == [("setup", None)]
    # the storage records are written by the first step, with the provisioning intents
    started = {"type": "provisioning_started", "pvc": "ns/c", "driver": LOOP}
    _state, records, upcoming = executor.run_step(plan_result((), [create("c")], (), [started]))
    assert records == [started] and [t["name"] for t in upcoming] == ["provision"]


def test_a_host_gets_its_operations_minus_what_failed():
    result = plan_result((), (), [delete("pv-a"), delete("pv-b", "node2"), delete("pv-c")])
    failures = {"nodes": {}, "volumes": {"kubernetes.io/csi/%s^pv-c.img" % LOOP: "teardown failed on node1"}}
    assert [op["pv_name"] for op in provision_outcome.host_operations(result, "delete", "node1", failures)] == ["pv-a"]
    state = executor.initial_run_state(result)
    state["failures"] = failures
    after = provision_outcome.storage_state_after(result, "delete", {
        "node1": {"operations": [{"op": "delete_volume", "pv_name": "pv-a", "claim": "ns/gone", "called": True}],
                  "failures": []},
        "node2": {"unreachable": True, "failed": True, "msg": "ssh: timed out"}}, state)
    assert after["records"] == [{"type": "pv_deleted", "pv_name": "pv-a"}]  # a DeleteVolume's result, by its PV
    assert [(e["node"], e["volumes"]) for e in after["errors"]] == [("node2", ["pv-b"])]
    assert "host node2 is unreachable: ssh: timed out" in after["errors"][0]["msg"]
    assert [b["volume"] for b in after["blocked"]] == ["pv-c"] and "teardown failed" in after["blocked"][0]["reason"]


def test_provisioning_results_become_the_pv_and_its_binding():
    result = plan_result((), [create("c"), create("u"), create("f")])
    state = executor.initial_run_state(result)
    answer = {"volume_id": "pvc-u-c", "capacity_bytes": 1 << 30, "volume_context": {"pool": "/p"}}
    after, records, upcoming = executor.run_step(result, dict((k, state[k]) for k in (
        "tasks", "failures", "blocked", "errors")), "provision", {"node1": {
            "operations": [{"op": "create_volume", "claim": "ns/c", "called": True, "volume": answer,
                            "topology_supported": False}],
            "failures": [{"op": "create_volume", "claim": "ns/u", "msg": "CreateVolume pvc-u-u: DEADLINE_EXCEEDED",
                          "uncertain": True},
                         {"op": "create_volume", "claim": "ns/f", "msg": "CreateVolume pvc-u-f: INVALID_ARGUMENT",
                          "uncertain": False}]}})
    assert upcoming == []  # the plan made again decides what follows
    made, uncertain = records
    assert (made["type"], made["pvc"], made["claim_uid"]) == ("provisioned", "ns/c", "u-c")
    # the uncertain one is marked on its claim (the final one is not: nothing was made)
    assert uncertain == {"type": "provisioning_uncertain", "pvc": "ns/u", "volume_name": "pvc-u-u"}
    assert made["pv"]["spec"]["csi"]["volumeHandle"] == "pvc-u-c" and made["pv"]["spec"]["capacity"] == {
        "storage": "1Gi"}
    error, = after["errors"]
    assert error["volumes"] == ["ns/u", "ns/f"]
    assert "calls CreateVolume pvc-u-u again, and the driver answers with the volume it made" in error["msg"]
    assert "pvc-u-f again" not in error["msg"]  # a final failure: nothing was made
    assert after["carried"]["errors"] == [error]
    # the run starts again on the plan made after it, the provisioning's errors kept
    again = executor.initial_run_state(plan_result([setup_step("pv-x")]), after["carried"])
    assert again["errors"] == [error] and [t["name"] for t in again["tasks"]] == ["setup"]
