# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubernetesStore against a fake API server (tests/fakeapi) through the real kubernetes client: reads, record writes,
conflicts with a concurrent writer, the run lock's Lease. Auth and options: test_kubernetes_auth.py; errors:
test_kubernetes_errors.py; the fixtures: conftest.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

pytest.importorskip("kubernetes")


from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    DETACH_REQUESTED_AT_ANNOTATION, NODE_EXPANSION_PENDING_ANNOTATION, volume_attachment_name)
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import ObjectNotFound, RecordApplier  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import (  # noqa: E402
    KubernetesApiError, KubernetesStore)
from kubestore_lib import DRIVER, NO_ENV, UVN_A, VA_A, attached_record  # noqa: E402


# -- reads -----------------------------------------------------------------------------------------
def test_load_shape_matches_the_file_store(store):
    cluster = store().load()
    assert cluster["kind"] == "List" and cluster["apiVersion"] == "v1"
    by_name = dict((o["metadata"]["name"], o) for o in cluster["items"])
    assert "pending-0" not in by_name  # unscheduled pods are not listed
    assert by_name["web-0"]["kind"] == "Pod" and by_name["web-0"]["apiVersion"] == "v1"
    assert by_name[DRIVER]["apiVersion"] == "storage.k8s.io/v1"
    assert all(o["metadata"]["resourceVersion"] for o in cluster["items"])


def test_paging_1200_pods(store, api):
    api.load([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p-%04d" % i, "namespace": "bulk"},
               "spec": {"nodeName": "node%d" % (1 + i % 2)}} for i in range(1200)])
    del api.log[:]
    cluster = store().load()
    pods = [o for o in cluster["items"] if o["kind"] == "Pod"]
    assert len(pods) == 1201
    assert len({(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}) == 1201
    pod_requests = api.requests("GET", "/api/v1/pods")
    assert len(pod_requests) == 3
    assert all(r["query"]["limit"] == "500" and r["query"]["fieldSelector"] == "spec.nodeName!=" for r in pod_requests)
    assert "continue" not in pod_requests[0]["query"] and pod_requests[1]["query"]["continue"]
    del api.log[:]
    store(page_size=1000).load()
    assert len(api.requests("GET", "/api/v1/pods")) == 2


def test_page_size_must_be_positive(kubeconfig):
    with pytest.raises(InvalidInput, match="page_size"):
        KubernetesStore({"kubeconfig": kubeconfig}, page_size=0, environ=NO_ENV)


# -- writes ----------------------------------------------------------------------------------------
def same_as_file_store(api, records):
    """What record.py computes on the whole List before the apply: the API must end up the same."""
    cluster = {"apiVersion": "v1", "kind": "List", "items": [copy.deepcopy(o) for k in
                                                             ("Node", "PersistentVolume", "PersistentVolumeClaim",
                                                              "VolumeAttachment") for o in api.list(k)]}
    RecordApplier(cluster).apply_all(records)
    return cluster


def strip(obj):
    obj = copy.deepcopy(obj)
    for key in ("resourceVersion", "uid", "creationTimestamp"):
        obj["metadata"].pop(key, None)
    return obj


def assert_api_matches(api, expected):
    for obj in expected["items"]:
        got = api.get(obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
        assert got is not None, obj["metadata"]["name"]
        assert strip(got) == strip(obj)
    vas = {o["metadata"]["name"] for o in api.list("VolumeAttachment")}
    assert vas == {o["metadata"]["name"] for o in expected["items"] if o["kind"] == "VolumeAttachment"}


def test_attached_creates_the_va_and_sets_status_and_node_status(store, api):
    records = [attached_record(), {"type": "in_use", "node": "node1", "unique_volume_names": [UVN_A], "in_use": True}]
    expected = same_as_file_store(api, records)
    del api.log[:]
    result = store().apply(records)
    assert result["changed"] is True and [c["type"] for c in result["changes"]] == ["attached", "in_use"]
    assert_api_matches(api, expected)
    va = api.get("VolumeAttachment", VA_A)
    assert va["status"] == {"attached": True, "attachmentMetadata": {"devicePath": "/dev/loop3"}}
    assert va["spec"] == {"attacher": DRIVER, "nodeName": "node1", "source": {"persistentVolumeName": "pv-a"}}
    node = api.get("Node", "node1")
    assert node["status"]["volumesAttached"] == [{"devicePath": "/dev/loop3", "name": UVN_A}]
    assert node["status"]["volumesInUse"] == [UVN_A]
    assert node["status"]["conditions"] == [{"type": "Ready", "status": "True"}]  # untouched
    writes = [(r["method"], r["path"]) for r in api.writes()]
    assert writes == [("POST", "/apis/storage.k8s.io/v1/volumeattachments"),
                      ("PATCH", "/apis/storage.k8s.io/v1/volumeattachments/%s/status" % VA_A),
                      ("PATCH", "/api/v1/nodes/node1/status")]
    assert "VolumeAttachment/" + VA_A in result["diff"]["after"] and "VolumeAttachment/" + VA_A not in result["diff"]["before"]
    # idempotent: nothing to write the second time
    del api.log[:]
    again = store().apply(records)
    assert again["changed"] is False and again["changes"] == [] and api.writes() == []


def test_detached_deletes_the_va_with_a_precondition_and_cleans_the_node(store, api):
    store().apply([attached_record(), {"type": "in_use", "node": "node1", "unique_volume_names": [UVN_A], "in_use": True}])
    records = [{"type": "detached", "node": "node1", "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img"}]
    expected = same_as_file_store(api, records)
    del api.log[:]
    result = store().apply(records)
    assert result["changed"]
    assert api.get("VolumeAttachment", VA_A) is None
    assert "volumesAttached" not in api.get("Node", "node1")["status"]
    assert "volumesInUse" not in api.get("Node", "node1")["status"]
    assert_api_matches(api, expected)
    writes = [(r["method"], r["path"]) for r in api.writes()]
    assert writes == [("PATCH", "/api/v1/nodes/node1/status"),
                      ("DELETE", "/apis/storage.k8s.io/v1/volumeattachments/" + VA_A)]
    assert "VolumeAttachment/" + VA_A in result["diff"]["before"]
    assert store().apply(records)["changed"] is False


def test_controller_and_node_expanded(store, api):
    records = [{"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi"},
               {"type": "node_expanded", "pvc": "prod/data-a", "capacity": 2 * 1024 ** 3}]
    expected = same_as_file_store(api, records)
    del api.log[:]
    result = store().apply(records)
    assert result["changed"]
    assert_api_matches(api, expected)
    assert api.get("PersistentVolume", "pv-a")["spec"]["capacity"] == {"storage": "2Gi"}
    pvc = api.get("PersistentVolumeClaim", "data-a", "prod")
    assert pvc["status"]["capacity"] == {"storage": "2Gi"}
    assert "allocatedResourceStatuses" not in pvc["status"]
    assert pvc["status"]["conditions"] == [{"type": "Custom", "status": "True"}]
    assert pvc["spec"]["resources"]["requests"]["storage"] == "2Gi"
    writes = [(r["method"], r["path"]) for r in api.writes()]
    assert writes == [("PATCH", "/api/v1/persistentvolumes/pv-a"),
                      ("PATCH", "/api/v1/namespaces/prod/persistentvolumeclaims/data-a/status")]
    # 2Gi == 2048Mi: no write
    del api.log[:]
    assert not store().apply([{"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2048Mi"}])["changed"]
    assert api.writes() == []


def test_node_expansion_pending_then_finished(store, api):
    """A pending node-side grow: the claim's status (NodeResizeError beside FileSystemResizePending) and its
    kubevol.io/node-expansion-pending annotation, written as the file store writes them; MarkFSResizeFinished
    clears both."""
    pending = [{"type": "node_expansion_pending", "pvc": "prod/data-a", "capacity": 2 * 1024 ** 3,
                "node_name": "node1", "reason": "OnlineExpansionFailed", "message": "resize2fs exited 1",
                "pods": ["u-1"], "offline": True, "at": "2026-11-30T11:00:00Z"}]
    expected = same_as_file_store(api, pending)
    del api.log[:]
    assert store().apply(pending)["changed"]
    assert_api_matches(api, expected)
    pvc = api.get("PersistentVolumeClaim", "data-a", "prod")
    assert NODE_EXPANSION_PENDING_ANNOTATION in pvc["metadata"]["annotations"]
    assert [c["type"] for c in pvc["status"]["conditions"]] == ["FileSystemResizePending", "Custom", "NodeResizeError"]
    assert pvc["status"]["allocatedResourceStatuses"] == {"storage": "NodeResizeInProgress"}
    assert sorted((r["method"], r["path"]) for r in api.writes()) == [
        ("PATCH", "/api/v1/namespaces/prod/persistentvolumeclaims/data-a"),
        ("PATCH", "/api/v1/namespaces/prod/persistentvolumeclaims/data-a/status")]
    assert store().apply(pending)["changed"] is False
    finished = [{"type": "node_expanded", "pvc": "prod/data-a", "capacity": 2 * 1024 ** 3}]
    expected = same_as_file_store(api, finished)
    assert store().apply(finished)["changed"]
    assert_api_matches(api, expected)
    pvc = api.get("PersistentVolumeClaim", "data-a", "prod")
    assert NODE_EXPANSION_PENDING_ANNOTATION not in (pvc["metadata"].get("annotations") or {})
    assert pvc["status"]["conditions"] == [{"type": "Custom", "status": "True"}]


def test_detach_request_annotations(store, api):
    store().apply([attached_record()])
    requested = {"type": "detach_requested", "name": VA_A, "node": "node1", "volume": "pv-a",
                 "requested_at": "2024-05-01T10:00:00Z"}
    del api.log[:]
    assert store().apply([requested])["changed"]
    va = api.get("VolumeAttachment", VA_A)
    assert va["metadata"]["annotations"] == {DETACH_REQUESTED_AT_ANNOTATION: "2024-05-01T10:00:00Z"}
    assert [(r["method"], r["path"]) for r in api.writes()] == [
        ("PATCH", "/apis/storage.k8s.io/v1/volumeattachments/" + VA_A)]
    # the first request time is kept
    later = dict(requested, requested_at="2024-05-01T11:00:00Z")
    assert not store().apply([later])["changed"]
    assert store().apply([{"type": "detach_request_cleared", "name": VA_A, "node": "node1"}])["changed"]
    assert "annotations" not in api.get("VolumeAttachment", VA_A)["metadata"]


def test_missing_object_fails_before_any_write(store, api):
    del api.log[:]
    with pytest.raises(ObjectNotFound) as err:
        store().apply([attached_record(), {"type": "controller_expanded", "pv_name": "pv-nope", "capacity": "1Gi"}])
    assert "pv-nope" in err.value.msg
    assert api.writes() == []


def test_check_mode_writes_nothing(store, api):
    del api.log[:]
    result = store().apply([attached_record()], check_mode=True)
    assert result["changed"] and result["diff"]["after"]
    assert api.writes() == [] and api.get("VolumeAttachment", VA_A) is None


# -- conflicts -------------------------------------------------------------------------------------
def test_conflict_from_a_concurrent_writer_loses_neither_change(store, api):
    store().apply([attached_record()])

    def concurrent_writer(server, request):
        if request["plural"] == "nodes" and request["method"] == "PATCH":
            # another controller (the kubelet) reports a volume in use between our read and our write
            server.mutate("Node", "node1", lambda n: n["status"].update(volumesInUse=["kubernetes.io/csi/other^x"]))
            return True  # once
        return False

    api.hooks.append(concurrent_writer)
    del api.log[:]
    result = store().apply([{"type": "in_use", "node": "node1", "unique_volume_names": [UVN_A], "in_use": True}])
    assert result["changed"]
    node = api.get("Node", "node1")
    assert node["status"]["volumesInUse"] == sorted(["kubernetes.io/csi/other^x", UVN_A])  # both changes kept
    assert node["status"]["volumesAttached"] == [{"devicePath": "/dev/loop3", "name": UVN_A}]
    statuses = [r["status"] for r in api.requests("PATCH", "/api/v1/nodes/node1/status")]
    assert statuses == [409, 200]
    assert len(api.requests("GET", "/api/v1/nodes/node1")) == 2  # re-read before the retry


def test_conflict_on_delete_and_on_create_is_retried(store, api):
    store().apply([attached_record()])

    def annotate(server, request):
        if request["method"] == "DELETE":
            server.mutate("VolumeAttachment", VA_A, lambda v: v["metadata"].setdefault("labels", {}).update(x="y"))
            return True
        return False

    api.hooks.append(annotate)
    store().apply([{"type": "detached", "node": "node1", "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img"}])
    assert api.get("VolumeAttachment", VA_A) is None
    assert [r["status"] for r in api.requests("DELETE")] == [409, 200]

    def create_first(server, request):
        if request["method"] == "POST":
            server.put({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": VA_A},
                        "spec": {"attacher": DRIVER, "nodeName": "node1", "source": {"persistentVolumeName": "pv-a"}}})
            return True
        return False

    api.hooks.append(create_first)
    del api.log[:]
    assert store().apply([attached_record()])["changed"]
    va = api.get("VolumeAttachment", VA_A)
    assert va["status"]["attached"] is True
    assert [r["status"] for r in api.writes()][0] == 409


def test_endless_conflicts_give_up_clearly(store, api):
    def always(server, request):
        server.mutate("Node", "node1", lambda n: n["metadata"].setdefault("labels", {}).update(bump=str(server.rv)))
        return False

    api.hooks.append(always)
    with pytest.raises(KubernetesApiError) as err:
        store().apply([{"type": "in_use", "node": "node1", "unique_volume_names": [UVN_A], "in_use": True}])
    assert "conflict" in err.value.msg and "Node/node1" in err.value.msg and "retry" in err.value.msg
    assert len(api.requests("PATCH")) == 6


# -- the run lock: a coordination.k8s.io/v1 Lease -------------------------------------------------------
def test_run_lock_is_a_lease_taken_renewed_and_released(store, api):
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
    first, second = store(), store()
    alive = {"host": "controller-a", "pid": None, "pid_start": None}
    taken = first.acquire_run_lock("run-a", 60, 0, who=alive)
    assert taken["location"] == "Lease kube-system/kubevol-reconcile" and taken["took_over"] is None
    lease = api.get("Lease", "kubevol-reconcile", "kube-system")
    assert lease["spec"]["holderIdentity"] == "run-a" and lease["spec"]["leaseDurationSeconds"] == 60
    assert lease["metadata"]["annotations"]["kubevol.io/run-host"] == "controller-a"
    with pytest.raises(run_lock.RunLocked) as err:
        second.acquire_run_lock("run-b", 60, 0, who=alive)
    assert "holder run-a" in err.value.msg and "host controller-a" in err.value.msg
    first.renew_run_lock("run-a", 60)
    with pytest.raises(run_lock.RunLockLost):
        second.renew_run_lock("run-b", 60)
    assert second.release_run_lock("run-b") is False  # not its lock: left alone
    assert first.release_run_lock("run-a") is True
    assert not api.get("Lease", "kubevol-reconcile", "kube-system")["spec"].get("holderIdentity")
    assert second.acquire_run_lock("run-b", 60, 0, who=alive)["took_over"] is None


def test_an_expired_lease_is_taken_over(store, api):
    import datetime
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
    who = {"host": "elsewhere", "pid": None, "pid_start": None}

    def long_ago():
        return datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    store().acquire_run_lock("dead-run", 60, 0, who=who, now=long_ago)
    taken = store().acquire_run_lock("new-run", 60, 0, who=who)
    assert taken["took_over"]["holder"] == "dead-run" and "expired" in taken["took_over"]["reason"]
    lease = api.get("Lease", "kubevol-reconcile", "kube-system")
    assert lease["spec"]["holderIdentity"] == "new-run" and lease["spec"]["leaseTransitions"] == 1


def test_attach_intent_creates_an_unattached_va_once(store, api):
    """The intent before the attach: a VolumeAttachment with attached: false, left alone when one exists."""
    intent = {"type": "attach_intent", "node": "node1", "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img"}
    out = store().apply([intent])
    assert out["changed"]
    name = volume_attachment_name("pv-a.img", DRIVER, "node1")
    va = api.get("VolumeAttachment", name)
    assert va["status"] == {"attached": False} and va["spec"]["nodeName"] == "node1"
    assert store().apply([intent])["changed"] is False
    store().apply([attached_record()])
    assert api.get("VolumeAttachment", name)["status"]["attached"] is True
    assert store().apply([intent])["changed"] is False  # an attached VA is never set back
    assert api.get("VolumeAttachment", name)["status"]["attached"] is True
