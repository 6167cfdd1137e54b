# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The claim's resize conditions, as the external-resizer and the kubelet write them (record_claim.py): Resizing
while the controller grows the volume, FileSystemResizePending (what ``kubectl describe pvc`` shows) until the node
grows the filesystem, none after. Record by record, then through the file store and the API store."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

import pytest
import yaml

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import RecordApplier, apply_records
from ansible_collections.kubevol.volumes.plugins.module_utils.records.claim import FS_RESIZE_PENDING_MESSAGE
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import get_store

DRIVER = "loop.kubevol.io"
T1, T2 = "2026-11-25T10:00:00Z", "2026-11-25T10:05:00Z"
CUSTOM = {"type": "ModifyingVolume", "status": "True"}
SIZE = 2 * 2 ** 30


def apply_one(cluster_list, record):
    """One record through the stores' own path (RecordApplier.apply_all, as stores/file.py and stores/kubernetes.py
    apply records): True when it changed something."""
    applier = RecordApplier(cluster_list)
    return bool(applier.apply_all([record]))


def objects():
    return [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-a"},
         "spec": {"capacity": {"storage": "1Gi"}, "csi": {"driver": DRIVER, "volumeHandle": "pv-a.img"}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "prod"},
         "spec": {"volumeName": "pv-a", "resources": {"requests": {"storage": "2Gi"}}},
         "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "conditions": [dict(CUSTOM)]}}]


def claim(cl):
    return [o for o in cl["items"] if o["kind"] == "PersistentVolumeClaim"][0]["status"]


RESIZING = {"type": "Resizing", "status": "True", "lastProbeTime": None, "lastTransitionTime": T1}
PENDING = {"type": "FileSystemResizePending", "status": "True", "lastProbeTime": None, "lastTransitionTime": T2,
           "message": "Waiting for user to (re-)start a pod to finish file system resize of volume on node."}
STEPS = [
    ({"type": "resize_intent", "pvc": "prod/data", "stage": "controller", "capacity": SIZE, "at": T1},
     "ControllerResizeInProgress", [CUSTOM, RESIZING]),
    ({"type": "controller_expanded", "pv_name": "pv-a", "capacity": SIZE, "pvc": "prod/data", "at": T2},
     "NodeResizePending", [CUSTOM, PENDING]),
    ({"type": "resize_intent", "pvc": "prod/data", "stage": "node", "capacity": SIZE, "at": T2},
     "NodeResizeInProgress", [CUSTOM, PENDING]),
    ({"type": "node_expanded", "pvc": "prod/data", "capacity": SIZE}, None, [CUSTOM]),
]


def test_an_expansion_moves_the_conditions_with_the_expansion_state():
    cl = {"apiVersion": "v1", "kind": "List", "items": objects()}
    for record, state, conditions in STEPS:
        assert apply_one(cl, record), record
        status = claim(cl)
        assert (status.get("allocatedResourceStatuses") or {}).get("storage") == state, record
        assert status["conditions"] == conditions, record
        before = copy.deepcopy(cl)
        assert not apply_one(cl, dict(record, at="2030-01-01T00:00:00Z")), record  # a re-run writes nothing
        assert cl == before
    assert claim(cl)["capacity"] == {"storage": "2Gi"}
    assert PENDING["message"] == FS_RESIZE_PENDING_MESSAGE


def test_a_pending_condition_already_there_keeps_its_transition_time_and_replaces_resizing():
    cl = {"apiVersion": "v1", "kind": "List", "items": objects()}
    claim(cl)["conditions"] = [dict(PENDING, lastTransitionTime=T1), dict(RESIZING), CUSTOM]
    apply_one(cl, {"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi", "pvc": "prod/data",
                   "at": T2})
    assert claim(cl)["conditions"] == [dict(PENDING, lastTransitionTime=T1), CUSTOM]
    # a False one is replaced (MergeResizeConditionsOfPVC: another status is a transition)
    cl = {"apiVersion": "v1", "kind": "List", "items": objects()}
    claim(cl)["conditions"] = [dict(PENDING, status="False", lastTransitionTime=T1)]
    apply_one(cl, {"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi", "pvc": "prod/data",
                   "at": T2})
    assert claim(cl)["conditions"] == [PENDING]


def test_without_a_claim_or_a_time_given():
    cl = {"apiVersion": "v1", "kind": "List", "items": objects()}
    apply_one(cl, {"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi"})
    assert claim(cl)["conditions"] == [CUSTOM] and "allocatedResourceStatuses" not in claim(cl)
    apply_one(cl, {"type": "resize_intent", "pvc": "prod/data", "stage": "controller", "capacity": "3Gi"})
    at = claim(cl)["conditions"][1]["lastTransitionTime"]
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", at), at  # metav1.Now(): RFC 3339, seconds, UTC


@pytest.mark.parametrize("at", ["", 1700000000, ["x"]])
def test_a_bad_time_is_refused_before_anything_changes(at):
    cl = {"apiVersion": "v1", "kind": "List", "items": objects()}
    with pytest.raises(InvalidInput) as err:
        apply_records(cl, [{"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi", "pvc": "prod/data",
                            "at": at}])
    assert "records[0].at" in err.value.msg
    assert claim(cl)["conditions"] == [CUSTOM]


def test_through_the_file_store(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects(), "metadata": {"resourceVersion": ""}}))
    store = get_store("file", cluster_state=str(path))
    for record, state, conditions in STEPS:
        assert store.apply([record])["changed"], record
        status = claim(yaml.safe_load(path.read_text()))
        assert (status.get("allocatedResourceStatuses") or {}).get("storage") == state
        assert status["conditions"] == conditions
        assert not store.apply([record])["changed"]


def test_through_the_api_store(tmp_path):
    pytest.importorskip("kubernetes")
    from fakeapi import FakeApiServer, write_kubeconfig
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import KubernetesStore

    api = FakeApiServer(tokens=["t"]).start()
    api.load(objects())
    kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), {"fake": {"server": api.url, "token": "t"}})
    store = KubernetesStore({"kubeconfig": kubeconfig}, environ={}, sleep=lambda s: None)
    status_path = "/api/v1/namespaces/prod/persistentvolumeclaims/data/status"
    try:
        for record, state, conditions in STEPS:
            del api.log[:]
            assert store.apply([record])["changed"], record
            status = api.get("PersistentVolumeClaim", "data", "prod")["status"]
            assert (status.get("allocatedResourceStatuses") or {}).get("storage") == state
            assert status["conditions"] == conditions
            patches = api.requests("PATCH", status_path)
            assert [p["status"] for p in patches] == [200], record
            del api.log[:]
            assert not store.apply([record])["changed"] and api.writes() == []
    finally:
        store.close()
        api.stop()


def test_the_claim_is_marked_even_when_the_pv_already_has_the_capacity():
    """The PV written, the claim not (a conflict on it, a run killed between the two writes): applying the record
    again marks the claim, so that the node grows the filesystem (NodeResizePending), and then changes nothing."""
    cl = {"apiVersion": "v1", "kind": "List", "items": objects()}
    cl["items"][0]["spec"]["capacity"]["storage"] = "2Gi"
    claim(cl)["allocatedResourceStatuses"] = {"storage": "ControllerResizeInProgress"}
    record = {"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi", "pvc": "prod/data", "at": T2}
    assert apply_one(cl, record)
    assert claim(cl)["allocatedResourceStatuses"] == {"storage": "NodeResizePending"}
    assert claim(cl)["conditions"] == [CUSTOM, PENDING]
    assert not apply_one(cl, record)


def test_a_conflict_on_the_claim_after_the_pv_was_written_still_marks_the_claim(tmp_path):
    pytest.importorskip("kubernetes")
    from fakeapi import FakeApiServer, write_kubeconfig
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import KubernetesStore

    api = FakeApiServer(tokens=["t"]).start()
    api.load(objects())

    def kubelet_writes_first(server, request):
        if request["plural"] == "persistentvolumeclaims":
            server.mutate("PersistentVolumeClaim", "data", lambda c: c["metadata"].setdefault("labels", {}).update(x="y"),
                          "prod")
            return True
        return False

    api.hooks.append(kubelet_writes_first)
    kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), {"fake": {"server": api.url, "token": "t"}})
    store = KubernetesStore({"kubeconfig": kubeconfig}, environ={}, sleep=lambda s: None)
    try:
        store.apply([{"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi", "pvc": "prod/data",
                      "at": T2}])
    finally:
        store.close()
        api.stop()
    status_path = "/api/v1/namespaces/prod/persistentvolumeclaims/data/status"
    assert [r["status"] for r in api.requests("PATCH", status_path)] == [409, 200]
    assert [r["status"] for r in api.requests("PATCH", "/api/v1/persistentvolumes/pv-a")] == [200]
    status = api.get("PersistentVolumeClaim", "data", "prod")["status"]
    assert status["allocatedResourceStatuses"] == {"storage": "NodeResizePending"}
    assert status["conditions"] == [CUSTOM, PENDING]
