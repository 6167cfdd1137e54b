# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A partial, foreign or surprising cluster never costs a running pod its volume: running pods keep their volumes,
foreign drivers are hands-off, read-only is per pod.

One case per rule of docs/planner.md "Trust", each naming the Kubernetes source it follows (the other rules:
test_planner_trust.py).
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, facts, node, pod, pv, pvc, uvn, va  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor  # noqa: E402
from planner_trust_lib import EBS, converged_node1, run, steps, teardown  # noqa: E402


# ---- 3. running pods keep their volumes ----------------------------------------------------------------

KEEP_CASES = [
    ("PVC missing", lambda: [pv("pv-a", claim="ns/a")]),
    ("PVC Lost", lambda: [pv("pv-a", claim="ns/a"), pvc("ns/a", "pv-a", phase="Lost")]),
    ("PV missing", lambda: [pvc("ns/a", "pv-a")]),
    ("claimRef uid mismatch", lambda: [pv("pv-a", claim="ns/a", uid="old"), pvc("ns/a", "pv-a")]),
    ("nothing left but the pod", lambda: []),
]


@pytest.mark.parametrize("name, objects", KEEP_CASES, ids=[c[0] for c in KEEP_CASES])
def test_running_pod_keeps_its_mounted_volume_whatever_is_wrong_with_its_claim(name, objects):
    """desired_state_of_world_populator.go findAndRemoveDeletedPods: only a deleted or terminated pod
    loses its volumes; a claim that stops resolving blocks new mounts, never unmounts."""
    node1 = node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")])
    data = cluster(node1, pod("ns/p", "node1", ["a"], uid="uid-ns-pv-a"), *objects())
    result = run(data, {"node1": converged_node1("pv-a")})
    assert teardown(result) == []
    assert any(b["pod"] == "ns/p" for b in result["blocked"]), result["blocked"]


def test_running_pod_keeps_an_attachment_without_node_facts():
    """Without facts the pod's claim still leads to its PV (PVC volumeName or PV claimRef): kept attached."""
    data = cluster(node("node1", attached=[uvn("pv-a")]), pod("ns/p", "node1", ["a"]),
                   pv("pv-a", claim="ns/a"), pvc("ns/a", "pv-a", phase="Lost"))
    assert steps(run(data), "detach") == []


def test_terminated_pod_releases_its_volume():
    """pkg/volume/util/util.go IsPodTerminated: deleted with no container running releases the volume."""
    data = cluster(node("node1", attached=[uvn("pv-a")]), *bound("pv-a", "ns/a"),
                   pod("ns/p", "node1", ["a"], uid="uid-ns-pv-a", deleted=True, states=["terminated"]))
    result = run(data, {"node1": converged_node1("pv-a")})
    assert [s[:2] for s in teardown(result)] == [("unmount", "pod"), ("unmount", "device"), ("detach", "device")]


# ---- 4. foreign drivers are hands-off ------------------------------------------------------------------

def test_foreign_driver_volumes_are_never_planned_blocked_or_torn_down():
    """A kubelet only acts on its own plugins' volumes (operation_executor via the volume plugin manager)."""
    ebs = "kubernetes.io/csi/%s^vol-0abc" % EBS
    node_facts = {"node1": converged_node1("pv-a")}
    node_facts["node1"]["devices"].append({"unique_volume_name": ebs, "driver": EBS, "device": "/dev/nvme1n1"})
    node_facts["node1"]["global_mounts"].append({"unique_volume_name": ebs, "driver": EBS, "pv_name": "pv-ebs",
                                                 "path": "/g/ebs", "mounted": True, "foreign": True})
    node_facts["node1"]["pod_mounts"].append({"pod_uid": "uid-gone", "pv_name": "pv-ebs", "mounted": True,
                                              "unique_volume_name": ebs, "driver": EBS, "foreign": True})
    node_facts["node1"]["pod_mounts"].append({"pod_uid": "uid-gone2", "pv_name": "pv-ebs2", "mounted": True,
                                              "unique_volume_name": None, "driver": EBS, "foreign": True})
    data = cluster(node("node1", attached=[uvn("pv-a"), ebs]), bound("pv-a", "ns/a"),
                   bound("pv-ebs", "ns/e", driver=EBS), pod("ns/a", "node1", ["a"], uid="uid-ns-pv-a"),
                   pod("ns/e", "node1", ["e"]), va("pv-ebs", "node1", driver=EBS))
    result = run(data, node_facts)
    assert result["plan"] == [] and result["blocked"] == []
    assert result["desired"]["foreign_volumes"] == 1 and result["actual"]["foreign_mounts"] == 4


def test_foreign_is_decided_by_known_drivers_too():
    """Facts from an older node module carry no `foreign` key: the planner's known_drivers decides."""
    ebs = "kubernetes.io/csi/%s^vol-0abc" % EBS
    node_facts = facts("node1")
    node_facts["global_mounts"].append({"unique_volume_name": ebs, "pv_name": "pv-ebs", "path": "/g/ebs",
                                        "mounted": True})
    result = run(cluster(node("node1")), {"node1": node_facts})
    assert result["plan"] == [] and result["blocked"] == []


# ---- 5. read-only is per pod ---------------------------------------------------------------------------

def test_staging_is_read_write_when_the_first_pod_is_a_reader():
    """csi_attacher.go MountDevice stages read-write; csi_mounter.go SetUpAt applies the pod's readOnly."""
    data = cluster(node("node1"), bound("pv-a", "ns/a"), pod("ns/r", "node1", ["a"], claim_read_only=["a"]))
    result = run(data, {"node1": facts("node1")})
    stage = [s for s in result["plan"] if (s["action"], s["target"]) == ("mount", "device")][0]
    publish = [s for s in result["plan"] if (s["action"], s["target"]) == ("mount", "pod")][0]
    assert result["volume_items"]["node1"][stage["unique_volume_name"]]["read_only"] is False
    assert executor.phase_items(result, "mount", "node1")[0]["pods"] == [
        {"uid": "uid-ns-r", "name": "ns/r", "read_only": True}]
    assert publish["pod_read_only"] is True


@pytest.mark.parametrize("pv_kwargs", [{"read_only": True}, {"modes": ("ReadOnlyMany",)}])
def test_staging_is_read_only_when_the_pv_is(pv_kwargs):
    data = cluster(node("node1"), bound("pv-a", "ns/a", **pv_kwargs), pod("ns/r", "node1", ["a"]))
    result = run(data, {"node1": facts("node1")})
    stage = [s for s in result["plan"] if s["target"] == "device" and s["action"] == "mount"][0]
    assert result["volume_items"]["node1"][stage["unique_volume_name"]]["read_only"] is True


def test_read_only_staging_left_by_an_older_run_is_remounted_for_a_writer():
    node_facts = facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("uid-ns-r", "pv-a", True)])
    node_facts["global_mounts"][0]["read_only"] = True
    data = cluster(node("node1", attached=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   pod("ns/r", "node1", ["a"], uid="uid-ns-r", claim_read_only=["a"]),
                   pod("ns/w", "node1", ["a"], uid="uid-ns-w"))
    result = run(data, {"node1": node_facts})
    assert steps(result) == [("mount", "device", "node1", "pv-a", None), ("mount", "pod", "node1", "pv-a", "ns/w")]
    assert "remount read-write" in result["plan"][0]["reason"] and "ns/w" in result["plan"][0]["reason"]
    # a reader alone keeps the old staging as it is: nothing to fix
    data = cluster(node("node1", attached=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   pod("ns/r", "node1", ["a"], uid="uid-ns-r", claim_read_only=["a"]))
    assert run(data, {"node1": node_facts})["plan"] == []


def test_a_writers_read_only_bind_is_fixed():
    node_facts = facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("uid-ns-w", "pv-a", True)])
    data = cluster(node("node1", attached=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   pod("ns/w", "node1", ["a"], uid="uid-ns-w"))
    result = run(data, {"node1": node_facts})
    assert [(s["action"], s["target"], s["reason"]) for s in result["plan"]] == [
        ("mount", "pod", "remount: read-only changed")]
    assert result["plan"][0]["pod_read_only"] is False
