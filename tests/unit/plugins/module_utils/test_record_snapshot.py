# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The snapshot records (records/snapshot.py) and the content a CreateSnapshot answer makes (provision/snapshot.py):
the VolumeSnapshotContent written where kubectl prints it with the answer in its status, the VolumeSnapshot's status
bound to it, a pre-provisioned snapshot bound, a content deleted; each applied twice changes nothing the second
time."""

import copy

from ansible_collections.kubevol.volumes.plugins.module_utils.provision.snapshot import nanoseconds, snapshot_created
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import apply_records

AS_SOURCE = "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection"
BOUND = "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection"
CONTENT_FINALIZER = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"
PVC_FINALIZER = "snapshot.storage.kubernetes.io/pvc-as-source-protection"

GROUP = "snapshot.storage.k8s.io/v1"
OP = {"op": "create_snapshot", "driver": "loop.kubevol.io", "snapshot": "ns/snap", "snapshot_uid": "s-1",
      "name": "snapshot-s-1", "content_name": "snapcontent-s-1", "source_volume_id": "pvc-1", "class_name": "snaps",
      "deletion_policy": "Delete", "secret_ref": "ns/creds"}
ANSWER = {"snapshot_id": "snapshot-s-1", "size_bytes": 335544320, "creation_time": "2026-11-28T18:00:01.5Z",
          "ready_to_use": True}


def the_list():
    return {"kind": "List", "items": [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pvc-1"}},
        {"apiVersion": GROUP, "kind": "VolumeSnapshotClass", "metadata": {"name": "snaps"}, "driver": "x"},
        {"apiVersion": GROUP, "kind": "VolumeSnapshot", "metadata": {"namespace": "ns", "name": "snap", "uid": "s-1"},
         "spec": {"source": {"persistentVolumeClaimName": "data"}}},
        {"apiVersion": GROUP, "kind": "VolumeSnapshot", "metadata": {"namespace": "ns", "name": "pre", "uid": "s-2"},
         "spec": {"source": {"volumeSnapshotContentName": "pre-content"}}},
        {"apiVersion": GROUP, "kind": "VolumeSnapshotContent", "metadata": {"name": "pre-content"},
         "spec": {"driver": "x", "deletionPolicy": "Retain", "source": {"snapshotHandle": "h-9"},
                  "volumeSnapshotRef": {"namespace": "ns", "name": "pre"}}}]}


def test_a_created_snapshot_writes_its_content_and_binds_the_snapshot():
    record = snapshot_created(OP, ANSWER)
    assert nanoseconds("2026-11-28T18:00:01.5Z") == 1795888801500000000
    data = the_list()
    changes = apply_records(data, [record])
    assert changes and [o["kind"] for o in data["items"]] == [
        "PersistentVolume", "VolumeSnapshotClass", "VolumeSnapshot", "VolumeSnapshot", "VolumeSnapshotContent",
        "VolumeSnapshotContent"]  # kubectl's order: contents after snapshots, sorted by name
    content = data["items"][-1]
    assert content["metadata"] == {"name": "snapcontent-s-1", "annotations": {
        "snapshot.storage.kubernetes.io/deletion-secret-name": "creds",
        "snapshot.storage.kubernetes.io/deletion-secret-namespace": "ns"}, "finalizers": [CONTENT_FINALIZER]}
    assert content["spec"]["source"] == {"volumeHandle": "pvc-1"}
    assert content["spec"]["volumeSnapshotRef"]["uid"] == "s-1" and content["spec"]["deletionPolicy"] == "Delete"
    assert content["status"] == {"snapshotHandle": "snapshot-s-1", "readyToUse": True, "restoreSize": 335544320,
                                 "creationTime": 1795888801500000000}
    assert data["items"][2]["status"] == {"boundVolumeSnapshotContentName": "snapcontent-s-1", "readyToUse": True,
                                          "restoreSize": "320Mi", "creationTime": "2026-11-28T18:00:01Z"}
    assert data["items"][2]["metadata"]["finalizers"] == [AS_SOURCE, BOUND]
    again = copy.deepcopy(data)
    assert apply_records(again, [record]) == [] and again == data


def test_a_snapshot_gone_meanwhile_keeps_only_the_content():
    data = the_list()
    del data["items"][2]
    apply_records(data, [snapshot_created(OP, ANSWER)])
    assert [o["metadata"]["name"] for o in data["items"] if o["kind"] == "VolumeSnapshotContent"] == [
        "pre-content", "snapcontent-s-1"]


def test_a_pre_provisioned_snapshot_is_bound_and_a_content_deleted():
    data = the_list()
    record = {"type": "snapshot_bound", "snapshot": "ns/pre", "snapshot_uid": "s-2", "content_name": "pre-content",
              "snapshot_handle": "h-9", "restore_size": None}
    apply_records(data, [record])
    pre, content = data["items"][3], data["items"][4]
    assert pre["status"] == {"boundVolumeSnapshotContentName": "pre-content", "readyToUse": True}
    assert content["spec"]["volumeSnapshotRef"]["uid"] == "s-2"
    assert content["status"] == {"snapshotHandle": "h-9", "readyToUse": True}
    assert pre["metadata"]["finalizers"] == [AS_SOURCE, BOUND]
    assert content["metadata"]["finalizers"] == [CONTENT_FINALIZER]
    assert apply_records(data, [record]) == []
    apply_records(data, [{"type": "snapshot_content_deleted", "content_name": "pre-content"}])
    assert not [o for o in data["items"] if o["kind"] == "VolumeSnapshotContent"]
    assert apply_records(data, [{"type": "snapshot_content_deleted", "content_name": "pre-content"}]) == []


def test_the_source_claim_is_protected_until_the_snapshot_is_ready():
    data = the_list()
    data["items"].insert(1, {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {
        "namespace": "ns", "name": "data", "finalizers": ["kubernetes.io/pvc-protection"]}})
    op = dict(OP, claim="ns/data")
    apply_records(data, [snapshot_created(op, dict(ANSWER, ready_to_use=False))])
    claim = data["items"][1]
    assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection", PVC_FINALIZER]
    apply_records(data, [snapshot_created(op, ANSWER)])  # a later run finds it ready
    assert claim["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    assert apply_records(data, [snapshot_created(op, ANSWER)]) == []


def test_a_snapshot_being_deleted_goes_once_its_finalizers_are_removed():
    data = the_list()
    apply_records(data, [snapshot_created(OP, ANSWER)])
    snap = data["items"][2]
    snap["metadata"]["deletionTimestamp"] = "2026-11-28T19:00:00Z"
    # DeleteSnapshot done: the content goes, then the snapshot's finalizers (none other left: it goes too)
    apply_records(data, [{"type": "snapshot_content_deleted", "content_name": "snapcontent-s-1",
                          "snapshot": "ns/snap", "snapshot_uid": "s-1"}])
    assert [o["metadata"]["name"] for o in data["items"] if o["kind"].startswith("VolumeSnapshot")] == [
        "snaps", "pre", "pre-content"]
    # Retain: released alone, someone else's finalizer stays and holds it
    pre = data["items"][2]
    pre["metadata"].update(deletionTimestamp="2026-11-28T19:00:00Z", finalizers=[AS_SOURCE, BOUND, "example.com/x"])
    apply_records(data, [{"type": "snapshot_released", "snapshot": "ns/pre", "snapshot_uid": "s-2"}])
    assert pre["metadata"]["finalizers"] == ["example.com/x"] and pre in data["items"]
    content = data["items"][3]
    content["metadata"].update(deletionTimestamp="2026-11-28T19:00:00Z", finalizers=[CONTENT_FINALIZER])
    apply_records(data, [{"type": "snapshot_content_released", "content_name": "pre-content"}])
    assert content not in data["items"]
    # not being deleted: nothing is released
    data = the_list()
    apply_records(data, [snapshot_created(OP, ANSWER)])
    assert apply_records(data, [{"type": "snapshot_released", "snapshot": "ns/snap", "snapshot_uid": "s-1"}]) == []
