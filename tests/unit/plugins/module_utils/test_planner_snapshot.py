# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Snapshots, restores and clones in the plan (plan/rules_snapshot.py, provision/content_source.py): which
VolumeSnapshots get CreateSnapshot and with what, which pre-provisioned ones are bound, which contents get
DeleteSnapshot (Delete) or are kept (Retain, an untrusted absence), and which claims are restored or cloned with a
content source or refused, as the external-snapshotter and the external-provisioner decide it."""

import datetime
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import LOOP, cluster, facts, node  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (  # noqa: E402
    ClusterIndex, cluster_from_data)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.provision_text import (  # noqa: E402
    storage_line, storage_lines)

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
EXT = "csi.kubevol.test"
GROUP = "snapshot.storage.k8s.io"
NODES = {"node1": facts("node1")}


def run(data, node_facts=None, scope=None, **extra):
    node_facts = NODES if node_facts is None else node_facts
    opts = PlanOptions(True, 360, (LOOP, EXT), NOW, 0.5, 20, False, ("/var/lib/kubevol/pool",),
                       {EXT: {"controller": "node"}}, **extra)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts, scope)


def storage_class(name="fast", provisioner=LOOP):
    return {"kind": "StorageClass", "metadata": {"name": name}, "provisioner": provisioner,
            "volumeBindingMode": "Immediate", "reclaimPolicy": "Delete"}


def bound(name="data", size="1Gi", cls="fast", driver=LOOP):
    """A bound claim and its PV."""
    pv = {"kind": "PersistentVolume", "metadata": {"name": "pv-" + name},
          "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                   "persistentVolumeReclaimPolicy": "Delete",
                   "claimRef": {"namespace": "ns", "name": name, "uid": "u-" + name},
                   "csi": {"driver": driver, "volumeHandle": "pv-%s.img" % name,
                           "volumeAttributes": {"pool": "/var/lib/kubevol/pool"}}},
          "status": {"phase": "Bound"}}
    pvc = {"kind": "PersistentVolumeClaim", "metadata": {"namespace": "ns", "name": name, "uid": "u-" + name},
           "spec": {"volumeName": "pv-" + name, "storageClassName": cls, "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": size}}},
           "status": {"phase": "Bound", "capacity": {"storage": size}}}
    return [pv, pvc]


def snapshot_class(name="snaps", driver=LOOP, policy="Delete", default=False, **parameters):
    obj = {"apiVersion": GROUP + "/v1", "kind": "VolumeSnapshotClass", "metadata": {"name": name}, "driver": driver,
           "deletionPolicy": policy, "parameters": parameters}
    if default:
        obj["metadata"]["annotations"] = {"snapshot.storage.kubernetes.io/is-default-class": "true"}
    return obj


def snapshot(name="snap", claim="data", cls="snaps", status=None, **source):
    spec = {"source": source or {"persistentVolumeClaimName": claim}}
    if cls:
        spec["volumeSnapshotClassName"] = cls
    return {"apiVersion": GROUP + "/v1", "kind": "VolumeSnapshot",
            "metadata": {"namespace": "ns", "name": name, "uid": "s-" + name}, "spec": spec, "status": status or {}}


def content(name, snap="snap", uid=None, driver=LOOP, policy="Delete", handle="h1", size=1 << 30, **source):
    return {"apiVersion": GROUP + "/v1", "kind": "VolumeSnapshotContent", "metadata": {"name": name},
            "spec": {"driver": driver, "deletionPolicy": policy, "source": source or {"volumeHandle": "pv-data.img"},
                     "volumeSnapshotRef": {"namespace": "ns", "name": snap, "uid": uid if uid is not None
                                           else "s-" + snap}},
            "status": {"snapshotHandle": handle, "readyToUse": True, "restoreSize": size} if handle else {}}


def ready(name="snap", size="1Gi"):
    """A snapshot taken, and its content."""
    return [snapshot(name, status={"boundVolumeSnapshotContentName": "snapcontent-s-" + name, "readyToUse": True,
                                   "restoreSize": size}),
            content("snapcontent-s-" + name, name, handle="snapshot-s-" + name)]


def restore_claim(name="restored", size="1Gi", kind="VolumeSnapshot", source="snap", cls="fast"):
    ref = {"kind": kind, "name": source}
    if kind == "VolumeSnapshot":
        ref["apiGroup"] = GROUP
    return {"kind": "PersistentVolumeClaim", "metadata": {"namespace": "ns", "name": name, "uid": "u-" + name},
            "spec": {"storageClassName": cls, "accessModes": ["ReadWriteOnce"], "dataSource": ref,
                     "resources": {"requests": {"storage": size}}},
            "status": {"phase": "Pending"}}


def creates(result, op="create_snapshot"):
    return [each for each in result["provisioning"] if each["op"] == op]


def test_a_snapshot_of_a_bound_claim_gets_create_snapshot():
    secret = {"csi.storage.k8s.io/snapshotter-secret-name": "${volumesnapshot.name}-creds",
              "csi.storage.k8s.io/snapshotter-secret-namespace": "${volumesnapshot.namespace}", "tier": "gold"}
    data = cluster(node("node1"), storage_class(), *bound(), snapshot_class(**secret), snapshot())
    result = run(data)
    op, = creates(result)
    assert (op["host"], op["driver"], op["name"], op["content_name"], op["source_volume_id"], op["snapshot"],
            op["claim"]) == ("node1", LOOP, "snapshot-s-snap", "snapcontent-s-snap", "pv-data.img", "ns/snap",
                             "ns/data")
    assert op["parameters"] == {"tier": "gold"} and op["secret_ref"] == "ns/snap-creds"
    assert op["deletion_policy"] == "Delete" and result["blocked"] == []
    lines = "\n".join(storage_lines(result))
    assert "Snapshots (CreateSnapshot" in lines and "snapcontent-s-snap" in lines and LOOP in lines
    assert storage_line(result) == ("Storage: 0 volume(s) to provision, 0 to delete; 1 snapshot(s) to take, "
                                    "0 to delete")
    # the default class of the driver when the snapshot names none; taken once: a ready snapshot is left alone
    data = cluster(node("node1"), *bound(), snapshot_class(default=True), snapshot(cls=None))
    assert [op["class_name"] for op in creates(run(data))] == ["snaps"]
    data = cluster(node("node1"), *(bound() + ready()), snapshot_class())
    assert creates(run(data)) == [] and run(data)["blocked"] == []
    # the plan made again after the provisioning takes no snapshot
    data = cluster(node("node1"), *bound(), snapshot_class(), snapshot())
    assert creates(run(data, provisioning=False)) == []


def test_snapshots_it_refuses_or_leaves_alone():
    unbound = {"kind": "PersistentVolumeClaim", "metadata": {"namespace": "ns", "name": "later", "uid": "u-later"},
               "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}},
               "status": {"phase": "Pending"}}
    data = cluster(node("node1"), *bound(), unbound, snapshot_class(), snapshot_class("other", driver=EXT),
                   snapshot_class("bad", **{"csi.storage.k8s.io/bogus": "x"}),
                   snapshot("a", cls="missing"), snapshot("b", cls="other"), snapshot("c", claim="later"),
                   snapshot("d", cls=None), snapshot("e", cls="bad"))
    result = run(data)
    assert creates(result) == []
    reasons = dict((b["reason"].split(":")[0], b["reason"]) for b in result["blocked"])
    assert "VolumeSnapshotClass missing does not exist" in reasons["VolumeSnapshot ns/a"]
    assert "is of driver %s" % EXT in reasons["VolumeSnapshot ns/b"]
    assert "not bound" in reasons["VolumeSnapshot ns/c"]
    assert "no default class" in reasons["VolumeSnapshot ns/d"]
    assert "csi.storage.k8s.io/bogus" in reasons["VolumeSnapshot ns/e"]
    assert all("[KV-SNAPSHOT]" in reasons[k] for k in ("VolumeSnapshot ns/a", "VolumeSnapshot ns/b",
                                                       "VolumeSnapshot ns/d", "VolumeSnapshot ns/e"))
    # a volume of a driver kubevol does not drive: its own snapshotter's
    data = cluster(node("node1"), *bound(driver="other.csi"), snapshot_class(driver="other.csi"), snapshot())
    assert creates(run(data)) == [] and run(data)["blocked"] == []


def test_a_pre_provisioned_snapshot_is_bound_without_create_snapshot():
    pre = snapshot("pre", volumeSnapshotContentName="pre-content")
    data = cluster(node("node1"), snapshot_class(), pre,
                   content("pre-content", "pre", uid="", handle=None, snapshotHandle="snap-17"))
    result = run(data)
    assert creates(result) == []
    record, = [r for r in result["storage_records"] if r["type"] == "snapshot_bound"]
    assert (record["snapshot"], record["content_name"], record["snapshot_handle"]) == ("ns/pre", "pre-content",
                                                                                       "snap-17")
    wrong = cluster(node("node1"), pre, content("pre-content", "someone-else", handle=None, snapshotHandle="x"))
    assert "bound to another snapshot" in run(wrong)["blocked"][0]["reason"]


def test_restore_and_clone_get_their_content_source():
    data = cluster(node("node1"), storage_class(), *(bound() + ready()), snapshot_class(),
                   restore_claim(size="2Gi"), restore_claim("clone", kind="PersistentVolumeClaim", source="data"))
    result = run(data)
    made = dict((op["claim"], op) for op in creates(result, "create_volume"))
    assert made["ns/restored"]["request"]["content_source"] == {"snapshot": {"snapshot_id": "snapshot-s-snap"}}
    assert made["ns/clone"]["request"]["content_source"] == {"volume": {"volume_id": "pv-data.img"}}
    assert "from VolumeSnapshot ns/snap" in made["ns/restored"]["reason"]
    assert "from claim ns/data" in made["ns/clone"]["reason"] and result["blocked"] == []


def test_restores_and_clones_it_refuses():
    not_ready = snapshot("pending", status={"readyToUse": False})
    theirs = [snapshot("theirs", status={"boundVolumeSnapshotContentName": "c-theirs", "readyToUse": True,
                                         "restoreSize": "1Gi"}), content("c-theirs", "theirs", driver=EXT)]
    data = cluster(node("node1"), storage_class(), *(bound() + ready() + theirs), snapshot_class(), not_ready,
                   restore_claim("small", size="512Mi"), restore_claim("early", source="pending"),
                   restore_claim("cross", source="theirs"),
                   restore_claim("tiny-clone", size="1Mi", kind="PersistentVolumeClaim", source="data"),
                   restore_claim("nowhere", kind="PersistentVolumeClaim", source="absent"))
    result = run(data)
    assert creates(result, "create_volume") == []
    reasons = dict((b["reason"].split(":")[0], b["reason"]) for b in result["blocked"])
    assert "less than the 1073741824 bytes of its dataSource VolumeSnapshot ns/snap" in reasons["claim ns/small"]
    assert "is not ready to use" in reasons["claim ns/early"]
    assert "taken by driver %s" % EXT in reasons["claim ns/cross"]
    assert "of its dataSource claim ns/data" in reasons["claim ns/tiny-clone"]
    assert "does not exist" in reasons["claim ns/nowhere"]
    assert all(r.endswith("[KV-CONTENT-SOURCE]") for r in reasons.values())


def _with_mode(objects, mode):
    for obj in objects:
        if obj["kind"] in ("PersistentVolume", "PersistentVolumeClaim"):
            obj["spec"]["volumeMode"] = mode
    return objects


def test_restores_and_clones_into_another_volume_mode_are_refused():
    # the content says its source was Block: a Filesystem claim needs the content's permission
    snap, taken = ready()
    taken["spec"]["sourceVolumeMode"] = "Block"
    data = cluster(node("node1"), storage_class(), *(_with_mode(bound(), "Block") + [snap, taken]),
                   snapshot_class(), restore_claim(), restore_claim("clone", kind="PersistentVolumeClaim",
                                                                    source="data"))
    result = run(data)
    assert creates(result, "create_volume") == []
    reasons = dict((b["reason"].split(":")[0], b["reason"]) for b in result["blocked"])
    restore = reasons["claim ns/restored"]
    assert "(volumeMode Filesystem) cannot be restored from VolumeSnapshot ns/snap, a snapshot of a Block volume" \
        in restore
    assert 'lacks the annotation snapshot.storage.kubernetes.io/allow-volume-mode-change: "true"' in restore
    assert "set the claim's volumeMode to Block" in restore and restore.endswith("[KV-CONTENT-SOURCE]")
    clone = reasons["claim ns/clone"]
    assert "(volumeMode Filesystem) cannot be cloned from claim ns/data, a Block volume" in clone
    assert "set the claim's volumeMode to Block" in clone and clone.endswith("[KV-CONTENT-SOURCE]")
    # "false" or no boolean: refused, naming the value; "true" (or a Go ParseBool true): restored
    for value, words in (("false", '"false"'), ("yes", '"yes", which is no boolean')):
        taken["metadata"]["annotations"] = {"snapshot.storage.kubernetes.io/allow-volume-mode-change": value}
        blocked = run(cluster(node("node1"), storage_class(), snap, taken, snapshot_class(), restore_claim()))
        assert words in blocked["blocked"][0]["reason"], blocked["blocked"]
    for value in ("true", "1", "True"):
        taken["metadata"]["annotations"] = {"snapshot.storage.kubernetes.io/allow-volume-mode-change": value}
        allowed = run(cluster(node("node1"), storage_class(), snap, taken, snapshot_class(), restore_claim()))
        assert [op["claim"] for op in creates(allowed, "create_volume")] == ["ns/restored"], allowed["blocked"]
    # the same mode, or a content that does not say (taken before the field): restored; a Block clone of Block
    taken["metadata"].pop("annotations")
    same = run(cluster(node("node1"), storage_class(), snap, taken, snapshot_class(),
                       *_with_mode([restore_claim()], "Block")))
    assert [op["claim"] for op in creates(same, "create_volume")] == ["ns/restored"], same["blocked"]
    taken["spec"].pop("sourceVolumeMode")
    unsaid = run(cluster(node("node1"), storage_class(), snap, taken, snapshot_class(), restore_claim()))
    assert [op["claim"] for op in creates(unsaid, "create_volume")] == ["ns/restored"], unsaid["blocked"]
    block_clone = run(cluster(node("node1"), storage_class(), *_with_mode(bound() + [restore_claim(
        "clone", kind="PersistentVolumeClaim", source="data")], "Block")))
    assert [op["claim"] for op in creates(block_clone, "create_volume")] == ["ns/clone"], block_clone["blocked"]


def test_the_content_written_carries_the_source_volume_mode():
    from ansible_collections.kubevol.volumes.plugins.module_utils.provision.snapshot import snapshot_created

    for mode in ("Filesystem", "Block"):
        op, = creates(run(cluster(node("node1"), *_with_mode(bound(), mode), snapshot_class(), snapshot())))
        assert op["source_volume_mode"] == mode
        record = snapshot_created(op, {"snapshot_id": "snapshot-s-snap", "size_bytes": 1 << 30,
                                       "ready_to_use": True})
        assert record["content"]["spec"]["sourceVolumeMode"] == mode


def test_a_content_whose_snapshot_is_gone_is_deleted_by_its_policy():
    data = cluster(node("node1"), content("c-del", "gone-1"), content("c-keep", "gone-2", policy="Retain"),
                   content("c-other", "gone-3", driver="other.csi"), *ready())
    result = run(data)
    op, = result["deletions"]
    assert (op["op"], op["host"], op["content_name"], op["snapshot_id"], op["snapshot"]) == (
        "delete_snapshot", "node1", "c-del", "h1", "ns/gone-1")
    assert "Snapshot deletion (DeleteSnapshot" in "\n".join(storage_lines(result))
    # a snapshot replaced under its name (another uid) leaves its old content to be deleted too
    replaced = cluster(node("node1"), content("c-old", "snap", uid="old-uid"), snapshot())
    assert [op["content_name"] for op in run(replaced)["deletions"]] == ["c-old"]


def test_an_untrusted_absence_deletes_no_snapshot_and_the_guard_counts_them():
    gone = [content("c-%d" % i, "gone-%d" % i) for i in range(4)]
    scoped = run(cluster(node("node1"), *gone), scope=set())
    assert scoped["deletions"] == [] and all("scoped" in b["reason"] for b in scoped["blocked"])
    # a claim that still restores from the snapshot: the snapshot of the cluster lost it
    kept = run(cluster(node("node1"), storage_class(), gone[0], restore_claim(source="gone-0")))
    assert kept["deletions"] == [] and "still restore from snapshot ns/gone-0" in "\n".join(
        b["reason"] for b in kept["blocked"])
    guarded = run(cluster(node("node1"), *gone))
    assert guarded["deletions"] == [] and guarded["deletion_guard"]["tripped"]
    assert "deletion guard: this run would delete 4 volumes and snapshots" in guarded["blocked"][0]["reason"]
    assert len(run(cluster(node("node1"), *gone), allow_mass_deletion=True)["deletions"]) == 4


def _deleting(obj, *finalizers):
    obj["metadata"].update(deletionTimestamp="2026-11-28T19:00:00Z", finalizers=list(finalizers))
    return obj


def test_snapshots_being_deleted_are_released_once_their_content_goes_or_stays():
    held = ("snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection",
            "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection")
    content_held = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"

    def taken(name, policy):
        snap, its_content = ready(name)
        its_content["spec"]["deletionPolicy"] = policy
        return [_deleting(snap, *held), its_content]
    data = cluster(node("node1"), *(taken("del", "Delete") + taken("keep", "Retain")))
    result = run(data)
    # Delete: DeleteSnapshot, whose record releases the snapshot after the call; Retain: released now
    op, = result["deletions"]
    assert (op["content_name"], op["snapshot"], op["snapshot_uid"]) == ("snapcontent-s-del", "ns/del", "s-del")
    released = [r for r in result["storage_records"] if r["type"].endswith("_released")]
    assert released == [{"type": "snapshot_released", "snapshot": "ns/keep", "snapshot_uid": "s-keep"}]
    # a claim still restores from it: held (volumesnapshot-as-source-protection); a scoped run releases nothing
    restoring = run(cluster(node("node1"), storage_class(), *taken("keep", "Retain"),
                            restore_claim(source="keep")))
    assert not [r for r in restoring["storage_records"] if r["type"].endswith("_released")]
    scoped = run(cluster(node("node1"), *taken("keep", "Retain")), scope=set())
    assert not [r for r in scoped["storage_records"] if r["type"].endswith("_released")]
    # a content being deleted whose snapshot is gone and that stays on the storage (Retain): its finalizer removed
    kept = _deleting(content("c-keep", "gone", policy="Retain"), content_held)
    result = run(cluster(node("node1"), kept))
    assert [r for r in result["storage_records"] if r["type"].endswith("_released")] == [
        {"type": "snapshot_content_released", "content_name": "c-keep"}] and result["deletions"] == []
