# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, KubevolError, MalformedObject
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (
    DETACH_REQUESTED_AT_ANNOTATION,
    unique_volume_name,
    volume_attachment_name,
)
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import (
    ObjectNotFound,
    RecordApplier,
    apply_records,
)
from ansible_collections.kubevol.volumes.plugins.module_utils.records.claim import is_resize_condition

DRIVER = "loop.kubevol.io"


def apply_one(cluster_list, record):
    """One record through the stores' own path (RecordApplier.apply_all, as stores/file.py and stores/kubernetes.py
    apply records): True when it changed something."""
    applier = RecordApplier(cluster_list)
    return bool(applier.apply_all([record]))


def node(name, **status):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": dict(status)}


def pv(name, capacity="1Gi"):
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": capacity}, "csi": {"driver": DRIVER, "volumeHandle": name + ".img"}}}


def pvc(namespace, name, status=None):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": namespace},
            "spec": {"volumeName": "pv-a"}, "status": status or {"phase": "Bound", "capacity": {"storage": "1Gi"}}}


def cluster(*items):
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def vol(kind="attached", node_name="node1", pv_name="pv-a", **extra):
    record = {"type": kind, "node": node_name, "pv_name": pv_name, "driver": DRIVER, "volume_handle": pv_name + ".img"}
    if kind == "attached":
        record["device_path"] = "/dev/loop3"
    record.update(extra)
    return record


def find(cl, kind, name):
    found = [o for o in cl["items"] if o["kind"] == kind and o["metadata"]["name"] == name]
    return found[0] if found else None


UVN_A = unique_volume_name(DRIVER, "pv-a.img")
VA_A = volume_attachment_name("pv-a.img", DRIVER, "node1")


class TestAttached:
    def test_creates_volume_attachment_and_node_status(self):
        cl = cluster(node("node1"), pv("pv-a"))
        assert apply_one(cl, vol()) is True
        va = find(cl, "VolumeAttachment", VA_A)
        assert va == {
            "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": VA_A},
            "spec": {"attacher": DRIVER, "nodeName": "node1", "source": {"persistentVolumeName": "pv-a"}},
            "status": {"attached": True, "attachmentMetadata": {"devicePath": "/dev/loop3"}},
        }
        assert VA_A.startswith("csi-") and len(VA_A) == 68
        assert find(cl, "Node", "node1")["status"]["volumesAttached"] == [{"devicePath": "/dev/loop3", "name": UVN_A}]

    def test_idempotent(self):
        cl = cluster(node("node1"), pv("pv-a"))
        apply_one(cl, vol())
        snapshot = copy.deepcopy(cl)
        assert apply_one(cl, vol()) is False
        assert cl == snapshot

    def test_sorted_and_no_duplicates(self):
        cl = cluster(node("node1", volumesAttached=[{"name": "kubernetes.io/csi/z^z", "devicePath": ""}]))
        apply_records(cl, [vol(pv_name="pv-b"), vol(pv_name="pv-a"), vol(pv_name="pv-a")])
        names = [e["name"] for e in find(cl, "Node", "node1")["status"]["volumesAttached"]]
        assert names == sorted(names) and len(names) == 3

    def test_updates_existing_va_and_clears_detach_request(self):
        existing = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                    "metadata": {"name": VA_A, "annotations": {DETACH_REQUESTED_AT_ANNOTATION: "2026-01-01T00:00:00Z"},
                                 "finalizers": ["external-attacher/loop-kubevol-io"]},
                    "spec": {"attacher": DRIVER, "nodeName": "node1", "source": {"persistentVolumeName": "pv-a"}},
                    "status": {"attached": False, "attachError": {"message": "boom"}}}
        cl = cluster(node("node1"), existing)
        assert apply_one(cl, vol(device_path="/dev/loop7")) is True
        va = find(cl, "VolumeAttachment", VA_A)
        assert "annotations" not in va["metadata"]
        assert va["metadata"]["finalizers"] == ["external-attacher/loop-kubevol-io"]
        assert va["status"] == {"attached": True, "attachmentMetadata": {"devicePath": "/dev/loop7"}}

    def test_no_device_path_is_recorded_empty(self):
        cl = cluster(node("node1"))
        assert apply_one(cl, vol(device_path=None)) is True
        assert find(cl, "VolumeAttachment", VA_A)["status"]["attachmentMetadata"] == {"devicePath": ""}
        assert apply_one(cl, vol(device_path="")) is False

    def test_device_path_change_updates_node_entry(self):
        cl = cluster(node("node1"))
        apply_one(cl, vol())
        assert apply_one(cl, vol(device_path="/dev/loop9")) is True
        assert find(cl, "Node", "node1")["status"]["volumesAttached"] == [{"devicePath": "/dev/loop9", "name": UVN_A}]

    def test_missing_node_names_the_node(self):
        cl = cluster(pv("pv-a"))
        with pytest.raises(ObjectNotFound) as err:
            apply_one(cl, vol(node_name="node9"))
        assert "node9" in str(err.value) and "Node" in str(err.value)
        assert isinstance(err.value, KubevolError)
        # one sentence, ending with its code, which the result carries too (docs/errors.md KV-OBJECT-MISSING)
        assert err.value.msg.endswith(" [KV-OBJECT-MISSING]") and err.value.msg.count("[KV-") == 1, err.value.msg
        assert ". " not in err.value.msg and "deleted since the plan" in err.value.msg
        result = err.value.to_result()
        assert result["code"] == "KV-OBJECT-MISSING" and result["kind"] == "Node" and result["name"] == "node9"


class TestDetached:
    def test_deletes_va_and_node_entries(self):
        cl = cluster(node("node1"), node("node2"))
        apply_records(cl, [vol(), vol(node_name="node2"),
                           {"type": "in_use", "node": "node1", "unique_volume_names": [UVN_A], "in_use": True}])
        assert apply_one(cl, vol("detached")) is True
        assert find(cl, "VolumeAttachment", VA_A) is None
        status = find(cl, "Node", "node1")["status"]
        assert "volumesAttached" not in status and "volumesInUse" not in status
        # the attachment to node2 stays
        assert find(cl, "VolumeAttachment", volume_attachment_name("pv-a.img", DRIVER, "node2")) is not None

    def test_absent_is_noop(self):
        cl = cluster(node("node1"))
        snapshot = copy.deepcopy(cl)
        assert apply_one(cl, vol("detached")) is False
        assert apply_one(cl, vol("detached", node_name="gone")) is False
        assert cl == snapshot

    def test_detach_then_attach_in_one_batch(self):
        cl = cluster(node("node1"))
        apply_one(cl, vol())
        changes = apply_records(cl, [vol("detached"), vol(device_path="/dev/loop5")])
        assert len(changes) == 2
        vas = [o for o in cl["items"] if o["kind"] == "VolumeAttachment"]
        assert len(vas) == 1 and vas[0]["status"]["attachmentMetadata"]["devicePath"] == "/dev/loop5"


class TestInUse:
    def test_add_remove_sorted_dedup(self):
        cl = cluster(node("node1", volumesInUse=["kubernetes.io/csi/x^b"]))
        rec = {"type": "in_use", "node": "node1", "unique_volume_names": ["kubernetes.io/csi/x^c", "kubernetes.io/csi/x^a",
                                                                          "kubernetes.io/csi/x^a"], "in_use": True}
        assert apply_one(cl, rec) is True
        assert find(cl, "Node", "node1")["status"]["volumesInUse"] == ["kubernetes.io/csi/x^a", "kubernetes.io/csi/x^b",
                                                                       "kubernetes.io/csi/x^c"]
        assert apply_one(cl, rec) is False
        rec = dict(rec, in_use=False)
        assert apply_one(cl, rec) is True
        assert find(cl, "Node", "node1")["status"]["volumesInUse"] == ["kubernetes.io/csi/x^b"]
        assert apply_one(cl, rec) is False

    def test_missing_node(self):
        cl = cluster()
        rec = {"type": "in_use", "node": "nodeX", "unique_volume_names": [UVN_A], "in_use": True}
        with pytest.raises(ObjectNotFound, match="nodeX"):
            apply_one(cl, rec)
        assert apply_one(cl, dict(rec, in_use=False)) is False


class TestExpansion:
    def test_controller_expanded(self):
        cl = cluster(pv("pv-a"))
        rec = {"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi"}
        assert apply_one(cl, rec) is True
        assert find(cl, "PersistentVolume", "pv-a")["spec"]["capacity"] == {"storage": "2Gi"}
        assert apply_one(cl, rec) is False

    def test_controller_expanded_missing_pv(self):
        with pytest.raises(ObjectNotFound, match="pv-z"):
            apply_one(cluster(), {"type": "controller_expanded", "pv_name": "pv-z", "capacity": "2Gi"})

    def test_node_expanded_mark_fs_resize_finished(self):
        status = {
            "phase": "Bound",
            "capacity": {"storage": "1Gi"},
            "allocatedResources": {"storage": "2Gi"},
            "allocatedResourceStatuses": {"storage": "NodeResizePending"},
            "conditions": [
                {"type": "FileSystemResizePending", "status": "True"},
                {"type": "Resizing", "status": "True"},
                {"type": "ControllerResizeError", "status": "True"},
                {"type": "NodeResizeError", "status": "True"},
                {"type": "ModifyVolumeError", "status": "True"},
                {"type": "SomeVendorResizeFailed", "status": "True"},
            ],
        }
        cl = cluster(pvc("prod", "data", status))
        rec = {"type": "node_expanded", "pvc": "prod/data", "capacity": "2Gi"}
        assert apply_one(cl, rec) is True
        got = find(cl, "PersistentVolumeClaim", "data")["status"]
        assert got["capacity"] == {"storage": "2Gi"}
        assert "allocatedResourceStatuses" not in got
        assert got["allocatedResources"] == {"storage": "2Gi"}  # the kubelet never writes allocatedResources
        assert got["conditions"] == [{"type": "ModifyVolumeError", "status": "True"}]
        assert apply_one(cl, rec) is False

    def test_node_expanded_keeps_other_allocated_statuses_and_drops_empty_conditions(self):
        status = {"capacity": {"storage": "1Gi"},
                  "allocatedResourceStatuses": {"storage": "NodeResizeInProgress", "example.com/iops": "X"},
                  "conditions": [{"type": "FileSystemResizePending", "status": "True"}]}
        cl = cluster(pvc("prod", "data", status))
        apply_one(cl, {"type": "node_expanded", "pvc": "prod/data", "capacity": 2147483648})
        got = find(cl, "PersistentVolumeClaim", "data")["status"]
        assert got == {"capacity": {"storage": "2Gi"}, "allocatedResourceStatuses": {"example.com/iops": "X"}}

    def test_same_value_other_spelling_is_noop(self):
        cl = cluster(pv("pv-a", "1Gi"), pvc("prod", "data"))
        assert apply_one(cl, {"type": "controller_expanded", "pv_name": "pv-a", "capacity": "1024Mi"}) is False
        assert apply_one(cl, {"type": "controller_expanded", "pv_name": "pv-a", "capacity": 1073741824}) is False
        assert apply_one(cl, {"type": "node_expanded", "pvc": "prod/data", "capacity": "1024Mi"}) is False
        assert find(cl, "PersistentVolume", "pv-a")["spec"]["capacity"]["storage"] == "1Gi"

    def test_node_expanded_missing_pvc(self):
        with pytest.raises(ObjectNotFound, match="prod/nope"):
            apply_one(cluster(pvc("prod", "data")), {"type": "node_expanded", "pvc": "prod/nope", "capacity": "2Gi"})

    def test_resize_condition_predicate(self):
        for t in ("Resizing", "FileSystemResizePending", "ControllerResizeError", "NodeResizeError", "XResizY"):
            assert is_resize_condition(t)
        for t in ("ModifyingVolume", "ModifyVolumeError", "Ready", None):
            assert not is_resize_condition(t)


class TestDetachRequest:
    def test_set_keeps_first_then_clear(self):
        cl = cluster(node("node1"))
        apply_one(cl, vol())
        first = vol("detach_requested", requested_at="2026-01-01T00:00:00Z")
        assert apply_one(cl, first) is True
        assert apply_one(cl, vol("detach_requested", requested_at="2026-02-02T00:00:00Z")) is False
        va = find(cl, "VolumeAttachment", VA_A)
        assert va["metadata"]["annotations"] == {DETACH_REQUESTED_AT_ANNOTATION: "2026-01-01T00:00:00Z"}
        assert apply_one(cl, vol("detach_request_cleared")) is True
        assert "annotations" not in va["metadata"]
        assert apply_one(cl, vol("detach_request_cleared")) is False

    def test_planner_shape_names_the_va(self):
        """contracts.md: detach_requests are {name, node, volume, requested_at}."""
        cl = cluster(node("node1"))
        apply_one(cl, vol())
        req = {"name": VA_A, "node": "node1", "volume": "pv-a", "requested_at": "2026-01-01T00:00:00Z"}
        changes = apply_records(cl, [dict(req, type="detach_requested")])
        assert changes[0]["volume"] == "pv-a"
        va = find(cl, "VolumeAttachment", VA_A)
        assert va["metadata"]["annotations"] == {DETACH_REQUESTED_AT_ANNOTATION: "2026-01-01T00:00:00Z"}
        clear = {"type": "detach_request_cleared", "name": VA_A, "node": "node1", "volume": "pv-a"}
        assert apply_one(cl, clear) is True and "annotations" not in va["metadata"]

    def test_absent_va_is_noop(self):
        cl = cluster(node("node1"))
        assert apply_one(cl, vol("detach_requested", requested_at="2026-01-01T00:00:00Z")) is False
        assert apply_one(cl, vol("detach_request_cleared")) is False


class TestValidation:
    @pytest.mark.parametrize("record, field", [
        ({"type": "teleported"}, "type"),
        ("attached", "records[1]"),
        ({"type": "attached", "node": "node1"}, "pv_name"),
        (dict(vol(), device_path=5), "device_path"),
        ({"type": "detach_requested", "node": "node1", "requested_at": "2026-01-01T00:00:00Z"}, "driver"),
        (dict(vol("detach_request_cleared"), name="csi-0000"), "does not match"),
        ({"type": "in_use", "node": "n", "unique_volume_names": "x", "in_use": True}, "unique_volume_names"),
        ({"type": "in_use", "node": "n", "unique_volume_names": [], "in_use": "yes"}, "in_use"),
        ({"type": "controller_expanded", "pv_name": "pv-a", "capacity": "lots"}, "capacity"),
        ({"type": "controller_expanded", "pv_name": "pv-a", "capacity": "-1Gi"}, "capacity"),
        ({"type": "controller_expanded", "pv_name": "pv-a", "capacity": True}, "capacity"),
        ({"type": "node_expanded", "pvc": "data", "capacity": "1Gi"}, "pvc"),
    ])
    def test_invalid(self, record, field):
        cl = cluster(node("node1"), pv("pv-a"))
        snapshot = copy.deepcopy(cl)
        with pytest.raises(InvalidInput) as err:
            apply_records(cl, [vol(), record])
        assert field in str(err.value)
        assert cl == snapshot  # validated before anything was applied

    def test_not_a_list(self):
        with pytest.raises(MalformedObject):
            apply_one({"kind": "List"}, vol())


def test_diff_and_summaries():
    cl = cluster(node("node1"), pv("pv-a"))
    applier = RecordApplier(cl)
    changes = applier.apply_all([vol(), vol(), {"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi"}])
    assert [c["index"] for c in changes] == [0, 2]
    assert changes[0]["objects"] == ["VolumeAttachment/" + VA_A, "Node/node1"]
    diff = applier.diff()
    assert sorted(diff["before"]) == ["Node/node1", "PersistentVolume/pv-a"]
    assert sorted(diff["after"]) == ["Node/node1", "PersistentVolume/pv-a", "VolumeAttachment/" + VA_A]
    assert diff["before"]["PersistentVolume/pv-a"]["spec"]["capacity"]["storage"] == "1Gi"


def test_other_kinds_kept():
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "y"}}
    cl = cluster(other, node("node1"))
    apply_records(cl, [vol(), vol("detached")])
    assert cl["items"] == [other, node("node1")]


def test_many_records_on_a_big_list():
    """10,000 records on a List with 150,000 pods: one index, no scan per record."""
    nodes = ["node%03d" % i for i in range(100)]
    items = [node(n) for n in nodes]
    items += [pv("pv-%05d" % i) for i in range(10000)]
    items += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p%06d" % i, "namespace": "ns%d" % (i % 50)},
               "spec": {"nodeName": nodes[i % 100]}} for i in range(150000)]
    cl = cluster(*items)
    records = []
    for i in range(5000):
        records.append(vol(node_name=nodes[i % 100], pv_name="pv-%05d" % i))
        records.append({"type": "in_use", "node": nodes[i % 100],
                        "unique_volume_names": [unique_volume_name(DRIVER, "pv-%05d.img" % i)], "in_use": True})
    changes = apply_records(cl, records)
    assert len(changes) == 10000
    detach = [vol("detached", node_name=nodes[i % 100], pv_name="pv-%05d" % i) for i in range(0, 10000, 2)]
    assert len(apply_records(cl, detach)) == 2500
    assert sum(1 for o in cl["items"] if o["kind"] == "VolumeAttachment") == 2500
    status = find(cl, "Node", "node001")["status"]  # odd volumes: none detached
    assert len(status["volumesAttached"]) == 50 and len(status["volumesInUse"]) == 50
    assert [e["name"] for e in status["volumesAttached"]] == sorted(status["volumesInUse"])
    assert "volumesAttached" not in find(cl, "Node", "node000")["status"]  # even volumes: all detached
