# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes parity rules: ReadWriteOncePod, terminating pods, fsGroup, Block expansion, expansion recovery,
quantities in reasons. One case per rule, each citing the Kubernetes behaviour it ports."""

import datetime
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, csidriver, facts, node, pod, uvn  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa: E402

NOW = datetime.datetime(2026, 11, 23, 12, 0, 0, tzinfo=datetime.timezone.utc)


def run(data, node_facts=None):
    opts = PlanOptions(True, 360, ("loop.kubevol.io",), NOW)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts)


def steps(result, action=None):
    return [(s["action"], s["target"], s["node"], s["volume"], s["pod"]) for s in result["plan"]
            if action is None or s["action"] == action]


def reasons(result):
    return [b["reason"] for b in result["blocked"]]


def with_security(obj, **security):
    obj["spec"]["securityContext"] = security
    return obj


def created(obj, when):
    obj["metadata"]["creationTimestamp"] = when
    return obj


def fs_facts(node_name, pv_name, uid, root_gid=0, root_mode="0755"):
    f = facts(node_name, devices=[pv_name], global_mounts=[pv_name], pod_mounts=[(uid, pv_name)])
    f["pod_mounts"][0].update(root_gid=root_gid, root_mode=root_mode)
    return f


# ---- ReadWriteOncePod -------------------------------------------------------------------------------

def test_rwop_second_pod_on_same_node_is_refused():
    data = cluster(node("node1"), bound("pv-a", "ns/a", modes=("ReadWriteOncePod",)),
                   created(pod("ns/old", "node1", ["a"]), "2026-01-01T00:00:00Z"),
                   created(pod("ns/new", "node1", ["a"]), "2026-01-02T00:00:00Z"))
    result = run(data)
    assert steps(result, "mount") == [("mount", "device", "node1", "pv-a", None),
                                      ("mount", "pod", "node1", "pv-a", "ns/old")]
    assert any("ReadWriteOncePod access mode and is already in use by another pod (ns/old)" in r
               for r in reasons(result))


def test_rwop_pod_that_has_it_mounted_keeps_it():
    data = cluster(node("node1", attached=[uvn("pv-a")]), bound("pv-a", "ns/a", modes=("ReadWriteOncePod",)),
                   created(pod("ns/old", "node1", ["a"]), "2026-01-01T00:00:00Z"),
                   created(pod("ns/new", "node1", ["a"]), "2026-01-02T00:00:00Z"))
    result = run(data, {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"],
                                       pod_mounts=[("uid-ns-new", "pv-a")])})
    assert steps(result, "mount") == []
    assert any("already in use by another pod (ns/new)" in r for r in reasons(result))


def test_rwop_second_node_is_a_multi_attach_error():
    data = cluster(node("node1"), node("node2"), bound("pv-a", "ns/a", modes=("ReadWriteOncePod",)),
                   pod("ns/p", "node1", ["a"]), pod("ns/q", "node2", ["a"]))
    result = run(data)
    assert len(steps(result, "attach")) == 1
    assert any("Multi-Attach" in r for r in reasons(result))


def test_rwo_two_pods_on_one_node_both_mount():
    data = cluster(node("node1"), bound("pv-a", "ns/a"), pod("ns/p", "node1", ["a"]), pod("ns/q", "node1", ["a"]))
    assert len(steps(run(data), "mount")) == 3


# ---- terminating pods ----------------------------------------------------------------------------------

def test_terminating_pod_gets_no_new_volume():
    data = cluster(node("node1"), bound("pv-a", "ns/a"),
                   pod("ns/p", "node1", ["a"], deleted=True, states=["running"]))
    result = run(data)
    assert steps(result) == []
    assert result["blocked"] == []


def test_terminating_pod_keeps_what_it_has():
    data = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   pod("ns/p", "node1", ["a"], deleted=True, states=["running"]))
    result = run(data, {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"],
                                       pod_mounts=[("uid-ns-p", "pv-a")])})
    assert steps(result) == []


def test_terminated_pod_is_torn_down():
    data = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   pod("ns/p", "node1", ["a"], deleted=True, states=["terminated"]))
    result = run(data, {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"],
                                       pod_mounts=[("uid-ns-p", "pv-a")])})
    assert [s[:2] for s in steps(result)] == [("unmount", "pod"), ("unmount", "device"), ("detach", "device")]


# ---- fsGroup ----------------------------------------------------------------------------------------------

def _fs_group_step(result):
    mounts = [s for s in result["plan"] if (s["action"], s["target"]) == ("mount", "pod")]
    assert len(mounts) == 1
    return mounts[0].get("pod_fs_group"), mounts[0].get("pod_fs_group_change_policy")


@pytest.mark.parametrize("policy,modes,fs_type,expected", [
    (None, ("ReadWriteOnce",), "ext4", 2000),                      # no CSIDriver: ReadWriteOnceWithFSType
    ("ReadWriteOnceWithFSType", ("ReadWriteOnce",), "ext4", 2000),
    ("ReadWriteOnceWithFSType", ("ReadWriteMany",), "ext4", None),  # not RWO
    ("ReadWriteOnceWithFSType", ("ReadWriteOnce",), "", None),      # no fsType on the PV
    ("File", ("ReadWriteMany",), "", 2000),
    ("None", ("ReadWriteOnce",), "ext4", None),
])
def test_fs_group_policy(policy, modes, fs_type, expected):
    objs = [node("node1"), bound("pv-a", "ns/a", modes=modes, fs_type=fs_type),
            with_security(pod("ns/p", "node1", ["a"]), fsGroup=2000)]
    if policy:
        driver = csidriver()
        driver["spec"]["fsGroupPolicy"] = policy
        objs.append(driver)
    assert _fs_group_step(run(cluster(*objs)))[0] == expected


def test_fs_group_change_policy_passed_and_defaults_to_always():
    data = cluster(node("node1"), bound("pv-a", "ns/a"),
                   with_security(pod("ns/p", "node1", ["a"]), fsGroup=2000, fsGroupChangePolicy="OnRootMismatch"))
    assert _fs_group_step(run(data)) == (2000, "OnRootMismatch")
    data = cluster(node("node1"), bound("pv-a", "ns/a"), with_security(pod("ns/p", "node1", ["a"]), fsGroup=7))
    assert _fs_group_step(run(data)) == (7, "Always")


def test_fs_group_reaches_the_node_item():
    data = cluster(node("node1"), bound("pv-a", "ns/a"), with_security(pod("ns/p", "node1", ["a"]), fsGroup=2000))
    items = executor.phase_items(run(data), "mount", "node1")
    assert items[0]["pods"] == [{"uid": "uid-ns-p", "name": "ns/p", "read_only": False, "fs_group": 2000,
                                 "fs_group_change_policy": "Always"}]


def test_mounted_volume_with_wrong_root_group_is_fixed_and_right_one_left():
    data = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   with_security(pod("ns/p", "node1", ["a"]), fsGroup=2000))
    wrong = run(data, {"node1": fs_facts("node1", "pv-a", "uid-ns-p", 0, "0755")})
    assert steps(wrong) == [("mount", "pod", "node1", "pv-a", "ns/p")]
    assert "apply fsGroup 2000" in wrong["plan"][0]["reason"]
    assert steps(run(data, {"node1": fs_facts("node1", "pv-a", "uid-ns-p", 2000, "2775")})) == []
    # facts without the root (an older node module): no step, not a loop of remounts
    assert steps(run(data, {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"],
                                           pod_mounts=[("uid-ns-p", "pv-a")])})) == []


def test_block_and_read_only_pods_get_no_fs_group():
    data = cluster(node("node1"), bound("pv-a", "ns/a", mode="Block"),
                   with_security(pod("ns/p", "node1", ["a"], devices=["a"]), fsGroup=2000))
    assert _fs_group_step(run(data))[0] is None
    data = cluster(node("node1"), bound("pv-a", "ns/a"),
                   with_security(pod("ns/p", "node1", ["a"], read_only_mounts=["a"]), fsGroup=2000))
    assert _fs_group_step(run(data))[0] is None


@pytest.mark.parametrize("security,text", [
    ({"fsGroup": -5}, "securityContext.fsGroup -5 is not a group ID"),
    ({"fsGroup": "2000"}, "securityContext.fsGroup '2000' is not a group ID"),
    ({"fsGroup": 2000, "fsGroupChangePolicy": "Sometimes"}, "fsGroupChangePolicy 'Sometimes' is not a policy"),
])
def test_bad_security_context_is_blocked(security, text):
    data = cluster(node("node1"), bound("pv-a", "ns/a"), with_security(pod("ns/p", "node1", ["a"]), **security))
    result = run(data)
    assert steps(result) == []
    assert any(text in r for r in reasons(result)), reasons(result)


def test_unknown_fs_group_policy_is_blocked():
    driver = csidriver()
    driver["spec"]["fsGroupPolicy"] = "Sometimes"
    result = run(cluster(node("node1"), bound("pv-a", "ns/a"), driver, pod("ns/p", "node1", ["a"])))
    assert steps(result) == []
    assert any("unknown spec.fsGroupPolicy 'Sometimes'" in r for r in reasons(result)), reasons(result)


# ---- Block expansion ----------------------------------------------------------------------------------------

def test_block_volume_expands_on_the_node_too():
    data = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]),
                   bound("pv-a", "ns/a", size="1Gi", request="2Gi", capacity="1Gi", mode="Block"),
                   pod("ns/p", "node1", ["a"], devices=["a"]))
    f = facts("node1", devices=["pv-a"])
    f["pod_mounts"] = [{"pod_uid": "uid-ns-p", "pv_name": "pv-a", "mode": "Block", "path": "/d", "mounted": True,
                        "read_only": False, "device": "/dev/loop0", "unique_volume_name": uvn("pv-a")}]
    result = run(data, {"node1": f})
    expand = [s for s in result["plan"] if s["action"] == "expand"]
    assert [s["target"] for s in expand] == ["controller", "node"]
    assert "rescan the block device" in expand[1]["reason"]
    assert expand[1]["size_to"] == 2 * 2 ** 30


# ---- expansion recovery (RecoverVolumeExpansionFailure) -----------------------------------------------------

def _resizing(request, capacity, pv_size, allocated, state):
    objs = bound("pv-a", "ns/a", size=pv_size, request=request, capacity=capacity)
    status = objs[1]["status"]
    if allocated:
        status["allocatedResources"] = {"storage": allocated}
    if state:
        status["allocatedResourceStatuses"] = {"storage": state}
    return cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), objs, pod("ns/p", "node1", ["a"]))


MOUNTED = {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("uid-ns-p", "pv-a")])}


@pytest.mark.parametrize("state", ["ControllerResizeInfeasible", "NodeResizeInfeasible"])
def test_infeasible_expansion_is_not_retried_at_the_same_size(state):
    pv_size = "1Gi" if state.startswith("Controller") else "10G"
    result = run(_resizing("10G", "1Gi", pv_size, "10G", state), MOUNTED)
    assert steps(result, "expand") == []
    text = [r for r in reasons(result) if state in r]
    assert text and "lower its spec.resources.requests.storage below 10G (not below its capacity 1Gi)" in text[0]


def test_lowered_request_after_infeasible_expansion_is_tried():
    result = run(_resizing("2Gi", "1Gi", "1Gi", "10G", "ControllerResizeInfeasible"), MOUNTED)
    assert [s[:2] for s in steps(result, "expand")] == [("expand", "controller"), ("expand", "node")]
    assert result["plan"][-1]["size_to"] == 2 * 2 ** 30


@pytest.mark.parametrize("state,expected", [
    ("NodeResizePending", [("expand", "node")]),
    ("NodeResizeInProgress", [("expand", "node")]),
    (None, []),                                   # allocatedResources set, no state: finished (runPreCheck)
])
def test_node_expansion_follows_the_recorded_state(state, expected):
    result = run(_resizing("2Gi", "1Gi", "2Gi", "2Gi", state), MOUNTED)
    assert [s[:2] for s in steps(result, "expand")] == expected


def test_expansion_intents_and_records():
    result = run(_resizing("2Gi", "1Gi", "1Gi", None, None), MOUNTED)
    intents = [r for r in executor.attach_intents(result) if r["type"] == "resize_intent"]
    # the controller goes first; its record moves the claim to NodeResizePending for the node
    assert intents == [{"type": "resize_intent", "pvc": "ns/a", "stage": "controller", "capacity": 2 * 2 ** 30}]
    node_only = run(_resizing("2Gi", "1Gi", "2Gi", "2Gi", "NodeResizePending"), MOUNTED)
    assert [r for r in executor.attach_intents(node_only) if r["type"] == "resize_intent"] == [
        {"type": "resize_intent", "pvc": "ns/a", "stage": "node", "capacity": 2 * 2 ** 30}]


# ---- quantities as users write them ----------------------------------------------------------------------

def test_reason_prints_decimal_quantities():
    data = cluster(node("node1"), bound("pv-a", "ns/a", size="5G", request="10G"), pod("ns/p", "node1", ["a"]))
    reason = [s for s in run(data)["plan"] if s["target"] == "controller"][0]["reason"]
    assert "requests 10G, PV has 5G" in reason and "Ki" not in reason


# ---- a PV fsType kubevol does not handle --------------------------------------------------------------

def test_a_pv_whose_fs_type_kubevol_does_not_handle_is_blocked_alone():
    """The kubelet would fail such a mount (unknown filesystem type); kubevol blocks it in the plan with the field
    to fix, and the node's other volumes go on. A Block volume's fsType is not used."""
    data = cluster(node("node1"), bound("pv-fat", "ns/fat", fs_type="vfat"), bound("pv-ok", "ns/ok"),
                   bound("pv-raw", "ns/raw", fs_type="vfat", mode="Block"),
                   pod("ns/app", "node1", ["fat", "ok"]), pod("ns/raw", "node1", ["raw"], devices=["raw"]))
    result = run(data)
    assert sorted(set(s[3] for s in steps(result))) == ["pv-ok", "pv-raw"]
    assert any("PV pv-fat: csi.fsType 'vfat' is not one kubevol formats or mounts: set the PV's csi.fsType to one of "
               "btrfs, ext3, ext4, xfs [KV-OBJECT-REFUSED]" in r for r in reasons(result)), reasons(result)
