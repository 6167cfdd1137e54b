# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Release and deletion (plan/rules_delete.py): a PV whose claim is gone is Released; one with reclaimPolicy Delete that
a driver kubevol drives provisioned gets DeleteVolume, only when nothing holds it on any node, no VolumeAttachment
names it, the snapshot can be trusted and the deletion guard allows it; Retain keeps it. A claim being deleted that no
pod uses loses its pvc-protection finalizer."""

import datetime
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import LOOP, cluster, facts, node, pod, uvn, va  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (  # noqa: E402
    ClusterIndex, cluster_from_data)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)


def run(data, node_facts=None, scope=None, **extra):
    opts = PlanOptions(True, 360, (LOOP,), NOW, 0.5, 20, False, ("/var/lib/kubevol/pool",), None, **extra)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts, scope)


def provisioned_pv(name, claim="data", policy="Delete", by=LOOP, phase="Bound", secret=("", "")):
    annotations = {"volume.kubernetes.io/provisioner-deletion-secret-name": secret[1],
                   "volume.kubernetes.io/provisioner-deletion-secret-namespace": secret[0]}
    if by:
        annotations["pv.kubernetes.io/provisioned-by"] = by
    return {"kind": "PersistentVolume", "metadata": {"name": name, "annotations": annotations},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": policy, "storageClassName": "fast",
                     "claimRef": {"namespace": "ns", "name": claim, "uid": "u-" + claim},
                     "csi": {"driver": LOOP, "volumeHandle": name + ".img"}},
            "status": {"phase": phase}}


def claim(name="data", **meta):
    metadata = dict({"namespace": "ns", "name": name, "uid": "u-" + name}, **meta)
    obj = {"kind": "PersistentVolumeClaim", "metadata": metadata,
           "spec": {"volumeName": "pv-" + name, "resources": {"requests": {"storage": "1Gi"}}},
           "status": {"phase": "Bound"}}
    return obj


NODES = {"node1": facts("node1"), "node2": facts("node2")}


def test_a_released_volume_of_ours_is_deleted_and_a_retained_one_kept():
    data = cluster(node("node1"), node("node2"), provisioned_pv("pv-a", "a", secret=("ns", "creds")),
                   provisioned_pv("pv-r", "r", policy="Retain"), provisioned_pv("pv-h", "h", by=None),
                   provisioned_pv("pv-kept", "kept"), claim("kept"))
    result = run(data, NODES)
    assert sorted(r["pv_name"] for r in result["storage_records"] if r["type"] == "released") == [
        "pv-a", "pv-h", "pv-r"]
    op, = result["deletions"]
    assert (op["op"], op["host"], op["pv_name"], op["volume_id"], op["claim"], op["secret_ref"]) == (
        "delete_volume", "node1", "pv-a", "pv-a.img", "ns/a", "ns/creds")
    assert op["after_teardown"] is False and result["deletion_guard"]["tripped"] is False
    assert result["blocked"] == []
    # Released already: no record again, the deletion still planned
    released = cluster(node("node1"), provisioned_pv("pv-a", "a", phase="Released"))
    result = run(released, {"node1": facts("node1")})
    assert result["storage_records"] == [] and [op["pv_name"] for op in result["deletions"]] == ["pv-a"]


def test_a_claim_replaced_under_the_same_name_releases_the_old_volume():
    data = cluster(node("node1"), provisioned_pv("pv-a", "a"), dict(claim("a"), metadata={
        "namespace": "ns", "name": "a", "uid": "another-uid"}))
    assert [op["pv_name"] for op in run(data, {"node1": facts("node1")})["deletions"]] == ["pv-a"]


def test_nothing_is_deleted_while_a_node_has_it():
    unique = uvn("pv-a")
    held = cluster(node("node1"), node("node2", in_use=[unique]), provisioned_pv("pv-a", "a"))
    result = run(held, {"node1": facts("node1")})  # node2: no facts, its status still lists the volume
    assert result["deletions"] == []
    entry, = result["blocked"]
    assert entry["action"] == "delete" and "node node2 (node status volumesInUse)" in entry["reason"]
    attached = cluster(node("node1"), provisioned_pv("pv-a", "a"), va("pv-a", "node1"))
    result = run(attached, {"node1": facts("node1", devices=["pv-a"])})
    # the pod is gone: this plan detaches it, and the deletion follows the teardown in the same run
    op, = result["deletions"]
    assert op["after_teardown"] is True
    assert ("detach", "node1") in [(s["action"], s["node"]) for s in result["plan"]]
    # a mount the plan does not take away (a node the run cannot tear down on: its facts show a mount it keeps)
    kept = cluster(node("node1"), provisioned_pv("pv-a", "a"), node("node2"))
    result = run(kept, {"node1": facts("node1", global_mounts=["pv-a"]), "node2": facts("node2")},
                 stage="attach_detach")
    assert result["deletions"] == [] and "node node1" in result["blocked"][0]["reason"]


def test_an_untrusted_absence_deletes_nothing():
    # a pod still names the claim the snapshot lacks: the snapshot lost it
    data = cluster(node("node1"), provisioned_pv("pv-a", "a"), pod("ns/web", "node1", ["a"]))
    result = run(data, {"node1": facts("node1")})
    assert result["deletions"] == []
    assert any("yet a pod still names it" in b["reason"] for b in result["blocked"] if b["action"] == "delete")
    # a scoped run deletes nothing
    data = cluster(node("node1"), provisioned_pv("pv-a", "a"))
    result = run(data, {"node1": facts("node1")}, scope=set(["ns/web"]))
    assert result["deletions"] == [] and "@{scope}" in result["blocked"][0]["reason"]
    # the node stage deletes nothing
    assert run(data, {"node1": facts("node1")}, stage="node")["deletions"] == []


def test_the_deletion_guard():
    data = cluster(node("node1"), *[provisioned_pv("pv-%d" % i, "c%d" % i) for i in range(4)])
    result = run(data, {"node1": facts("node1")})
    assert result["deletions"] == [] and result["deletion_guard"]["tripped"] is True
    assert len(result["blocked"]) == 4
    assert "over the limit of 3 (@{max_volume_deletions})" in result["blocked"][0]["reason"]
    assert "@{allow_mass_deletion=true}" in result["blocked"][0]["reason"]
    assert len(run(data, {"node1": facts("node1")}, allow_mass_deletion=True)["deletions"]) == 4
    assert len(run(data, {"node1": facts("node1")}, max_volume_deletions=4)["deletions"]) == 4


def test_a_deleted_claim_no_pod_uses_goes_with_its_volume():
    going = claim("a", deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["kubernetes.io/pvc-protection"])
    held = claim("b", deletionTimestamp="2026-01-01T00:00:00Z",
                 finalizers=["kubernetes.io/pvc-protection", "example.com/backup"])
    used = claim("c", deletionTimestamp="2026-01-01T00:00:00Z", finalizers=["kubernetes.io/pvc-protection"])
    data = cluster(node("node1"), going, held, used, provisioned_pv("pv-a", "a"), provisioned_pv("pv-b", "b"),
                   provisioned_pv("pv-c", "c"), pod("ns/web", "node1", ["c"]))
    result = run(data, {"node1": facts("node1")})
    assert [(r["type"], r.get("pvc") or r.get("pv_name")) for r in result["storage_records"]] == [
        ("claim_released", "ns/a"), ("claim_released", "ns/b"), ("released", "pv-a")]
    assert [op["pv_name"] for op in result["deletions"]] == ["pv-a"]
