"""The records of a claim's life (records/provision.py) on a List, through the file store and through the Kubernetes
API store against the fake API server: the kubelet's CSI registration (CSINode, node labels and node id annotation),
the provisioned PV and the claim bound as the PV controller binds it (never a claim bound elsewhere meanwhile, also
when that happens between the API store's read and its write), release, deletion with the protection finalizers a
real kube-apiserver adds, and new objects placed where kubectl prints them."""
import copy
import json

import pytest
import yaml

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.records.provision import insert_in_kubectl_order
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import apply_records
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore

DRIVER = "csi.kubevol.test"


def node(name, uid="uid-" + "n"):
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid}, "status": {}}


def claim(name="data", uid="u-1", volume_name=None, **extra):
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "fast"}
    if volume_name:
        spec["volumeName"] = volume_name
    meta = {"namespace": "ns", "name": name, "uid": uid}
    meta.update(extra)
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec,
            "status": {"phase": "Pending"}}


def pv(name="pvc-u-1", uid="u-1", claim_name="data"):
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": DRIVER}},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "fast",
                     "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "ns",
                                  "name": claim_name, "uid": uid},
                     "csi": {"driver": DRIVER, "volumeHandle": name}}}


def listing(*objects):
    return {"apiVersion": "v1", "items": [copy.deepcopy(o) for o in objects], "kind": "List",
            "metadata": {"resourceVersion": ""}}


def get(cluster, kind, name):
    return next((o for o in cluster["items"] if o["kind"] == kind and o["metadata"]["name"] == name), None)


def provisioned(uid="u-1", name="data"):
    return {"type": "provisioned", "pvc": "ns/" + name, "claim_uid": uid, "pv": pv(uid=uid, claim_name=name)}


def test_registration_writes_the_csinode_labels_and_node_id_once():
    cluster = listing(node("node1"), {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    record = {"type": "node_registration", "node": "node1", "driver": DRIVER, "node_id": "n1",
              "topology": {"topology.csi.kubevol.test/node": "node1"}, "max_volumes": 3}
    changes = apply_records(cluster, [record])
    assert [c["objects"] for c in changes] == [["Node/node1", "CSINode/node1"]]
    assert [o["kind"] for o in cluster["items"]] == ["Node", "CSINode", "Pod"]  # kubectl's order
    csinode = get(cluster, "CSINode", "node1")
    assert csinode["spec"]["drivers"] == [{"name": DRIVER, "nodeID": "n1", "allocatable": {"count": 3},
                                           "topologyKeys": ["topology.csi.kubevol.test/node"]}]
    assert csinode["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "Node", "name": "node1",
                                                       "uid": "uid-n"}]
    meta = get(cluster, "Node", "node1")["metadata"]
    assert meta["labels"] == {"topology.csi.kubevol.test/node": "node1"}
    assert json.loads(meta["annotations"]["csi.volume.kubernetes.io/nodeid"]) == {DRIVER: "n1"}
    assert apply_records(cluster, [record]) == []  # again: nothing to write
    # another driver is added beside it; a changed limit replaces its own entry in place
    apply_records(cluster, [{"type": "node_registration", "node": "node1", "driver": "other.csi", "node_id": "x"},
                            dict(record, max_volumes=0)])
    assert get(cluster, "CSINode", "node1")["spec"]["drivers"] == [
        {"name": DRIVER, "nodeID": "n1", "topologyKeys": ["topology.csi.kubevol.test/node"]},
        {"name": "other.csi", "nodeID": "x"}]
    assert json.loads(meta["annotations"]["csi.volume.kubernetes.io/nodeid"]) == {DRIVER: "n1", "other.csi": "x"}


def test_a_provisioned_volume_is_bound_as_the_pv_controller_binds():
    cluster = listing(node("node1"), pv("pv-old", uid="u-0", claim_name="old"), claim(),
                      {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"}})
    apply_records(cluster, [{"type": "provisioning_started", "pvc": "ns/data", "driver": DRIVER,
                             "selected_node": "node1"},
                            {"type": "provisioning_uncertain", "pvc": "ns/data", "volume_name": "pvc-u-1"}])
    assert get(cluster, "PersistentVolumeClaim", "data")["metadata"]["annotations"][
        "kubevol.io/provisioning-uncertain"] == "pvc-u-1"
    apply_records(cluster, [provisioned()])  # certain now: the mark goes
    assert [(o["kind"], o["metadata"]["name"]) for o in cluster["items"]] == [
        ("Node", "node1"), ("PersistentVolume", "pv-old"), ("PersistentVolume", "pvc-u-1"),
        ("PersistentVolumeClaim", "data"), ("StorageClass", "fast")]
    made = get(cluster, "PersistentVolume", "pvc-u-1")
    assert made["status"] == {"phase": "Bound"}
    bound = get(cluster, "PersistentVolumeClaim", "data")
    assert bound["spec"]["volumeName"] == "pvc-u-1"
    assert bound["metadata"]["annotations"] == {
        "pv.kubernetes.io/bind-completed": "yes", "pv.kubernetes.io/bound-by-controller": "yes",
        "volume.kubernetes.io/storage-provisioner": DRIVER, "volume.beta.kubernetes.io/storage-provisioner": DRIVER,
        "volume.kubernetes.io/selected-node": "node1"}
    assert bound["status"] == {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]}
    assert apply_records(cluster, [provisioned()]) == []  # idempotent: a second record writes nothing


@pytest.mark.parametrize("change", ["bound elsewhere", "replaced", "gone", "being deleted"])
def test_a_claim_bound_elsewhere_or_gone_is_never_rebound(change):
    other = {"bound elsewhere": claim(volume_name="pv-someone"), "replaced": claim(uid="u-2"),
             "gone": None, "being deleted": claim(deletionTimestamp="2026-01-01T00:00:00Z")}[change]
    cluster = listing(*([node("node1")] + ([other] if other else [])))
    before = copy.deepcopy(other)
    apply_records(cluster, [provisioned()])
    assert get(cluster, "PersistentVolume", "pvc-u-1")["status"] == {"phase": "Released"}
    if other:
        assert get(cluster, "PersistentVolumeClaim", "data") == before


def test_release_deletion_and_a_deleted_claim():
    volume = pv()
    volume["metadata"]["uid"] = "pv-uid-1"
    cluster = listing(volume, claim(finalizers=["kubernetes.io/pvc-protection"], deletionTimestamp="2026-01-01T00:00Z"),
                      claim("held", "u-h", finalizers=["kubernetes.io/pvc-protection", "example.com/keep"],
                            deletionTimestamp="2026-01-01T00:00Z"))
    apply_records(cluster, [{"type": "claim_released", "pvc": "ns/data", "uid": "u-1"},
                            {"type": "claim_released", "pvc": "ns/held", "uid": "u-h"},
                            {"type": "released", "pv_name": "pvc-u-1"}])
    assert get(cluster, "PersistentVolumeClaim", "data") is None
    assert get(cluster, "PersistentVolumeClaim", "held")["metadata"]["finalizers"] == ["example.com/keep"]
    assert get(cluster, "PersistentVolume", "pvc-u-1")["status"] == {"phase": "Released"}
    apply_records(cluster, [{"type": "pv_deleted", "pv_name": "pvc-u-1", "uid": "other-uid"}])
    assert get(cluster, "PersistentVolume", "pvc-u-1") is not None  # another PV of that name is never deleted
    apply_records(cluster, [{"type": "pv_deleted", "pv_name": "pvc-u-1"}])
    assert get(cluster, "PersistentVolume", "pvc-u-1") is None
    assert apply_records(cluster, [{"type": "pv_deleted", "pv_name": "pvc-u-1"}]) == []


@pytest.mark.parametrize("record, field", [
    ({"type": "provisioned", "pvc": "ns/data", "claim_uid": "u", "pv": {"metadata": {}}}, "records[0].pv"),
    ({"type": "provisioned", "pvc": "data", "claim_uid": "u", "pv": pv()}, "records[0].pvc"),
    ({"type": "node_registration", "node": "n", "driver": DRIVER, "node_id": ""}, "records[0].node_id"),
    ({"type": "node_registration", "node": "n", "driver": DRIVER, "node_id": "i", "topology": ["a"]}, "records[0]"),
])
def test_malformed_records_are_refused_before_anything_changes(record, field):
    cluster = listing(node("n"), claim())
    before = copy.deepcopy(cluster)
    with pytest.raises(InvalidInput) as err:
        apply_records(cluster, [{"type": "released", "pv_name": "x"}, record])
    assert field.replace("records[0]", "records[1]") in err.value.msg
    assert cluster == before


def test_kubectl_order():
    items = [{"kind": "Node", "metadata": {"name": "a"}}, {"kind": "ConfigMap", "metadata": {"name": "c"}},
             {"kind": "PersistentVolume", "metadata": {"name": "b"}}, {"kind": "PersistentVolume",
                                                                       "metadata": {"name": "d"}}]
    insert_in_kubectl_order(items, {"kind": "PersistentVolume", "metadata": {"name": "c"}})
    insert_in_kubectl_order(items, {"kind": "Pod", "metadata": {"name": "p", "namespace": "z"}})
    insert_in_kubectl_order(items, {"kind": "VolumeAttachment", "metadata": {"name": "v"}})
    assert [o["metadata"]["name"] for o in items] == ["a", "c", "p", "b", "c", "d", "v"]


def test_the_file_store_writes_them_as_kubectl_does(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(listing(node("node1"), claim())))
    store = FileStore(str(path))
    result = store.apply([{"type": "provisioning_started", "pvc": "ns/data", "driver": DRIVER}, provisioned()])
    assert result["changed"] and sorted(result["diff"]["after"]) == ["PersistentVolume/pvc-u-1",
                                                                     "PersistentVolumeClaim/ns/data"]
    assert "PersistentVolume/pvc-u-1" not in result["diff"]["before"]  # created
    data = yaml.safe_load(path.read_text())
    assert [o["kind"] for o in data["items"]] == ["Node", "PersistentVolume", "PersistentVolumeClaim"]
    assert list(data) == ["apiVersion", "items", "kind", "metadata"]
    assert store.apply([provisioned()])["changed"] is False


# -- the Kubernetes API store ---------------------------------------------------------------------------------------
@pytest.fixture
def api_store(tmp_path):
    from fakeapi import FakeApiServer, write_kubeconfig
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import KubernetesStore
    server = FakeApiServer(tokens=["t"]).start()
    config = write_kubeconfig(str(tmp_path / "kubeconfig"), {"c": {"server": server.url, "token": "t"}})
    store = KubernetesStore({"kubeconfig": config}, environ={}, sleep=lambda s: None)
    try:
        yield server, store
    finally:
        store.close()
        server.stop()


def test_the_api_store_creates_binds_and_deletes_through_the_api(api_store):
    api, store = api_store
    api.load([node("node1"), claim()])
    store.apply([{"type": "node_registration", "node": "node1", "driver": DRIVER, "node_id": "n1",
                  "topology": {"zone": "z1"}, "max_volumes": 2},
                 {"type": "provisioning_started", "pvc": "ns/data", "driver": DRIVER}, provisioned()])
    assert api.get("CSINode", "node1")["spec"]["drivers"][0]["allocatable"] == {"count": 2}
    assert api.get("Node", "node1")["metadata"]["labels"] == {"zone": "z1"}
    made = api.get("PersistentVolume", "pvc-u-1")
    assert made["status"] == {"phase": "Bound"}
    assert made["metadata"]["finalizers"] == ["kubernetes.io/pv-protection"]  # the admission plugin's
    assert api.get("PersistentVolumeClaim", "data", "ns")["spec"]["volumeName"] == "pvc-u-1"
    assert ("POST", "/api/v1/persistentvolumes", 201) in [(r["method"], r["path"], r["status"]) for r in api.log]
    # released, then deleted: the protection finalizer is removed first, or the PV would wait for ever
    store.apply([{"type": "released", "pv_name": "pvc-u-1"}])
    store.apply([{"type": "pv_deleted", "pv_name": "pvc-u-1"}])
    assert api.get("PersistentVolume", "pvc-u-1") is None
    # a claim deleted with kubectl stays, with its finalizer, until kubevol lets it go
    gone = claim("gone", "u-g")
    gone["metadata"]["finalizers"] = ["kubernetes.io/pvc-protection"]
    api.put(gone)
    api.request_delete("PersistentVolumeClaim", "gone", "ns")
    assert api.get("PersistentVolumeClaim", "gone", "ns")["metadata"]["deletionTimestamp"]
    store.apply([{"type": "claim_released", "pvc": "ns/gone", "uid": "u-g"}])
    assert api.get("PersistentVolumeClaim", "gone", "ns") is None


def test_the_api_store_never_rebinds_a_claim_bound_between_its_read_and_its_write(api_store):
    api, store = api_store
    api.load([node("node1"), claim()])

    def bind_elsewhere(server, request):
        if request["method"] == "PATCH" and request["plural"] == "persistentvolumeclaims":
            server.mutate("PersistentVolumeClaim", "data", lambda c: c["spec"].update(volumeName="pv-someone"), "ns")
            return True
        return False

    api.hooks.append(bind_elsewhere)
    store.apply([provisioned()])
    assert api.get("PersistentVolumeClaim", "data", "ns")["spec"]["volumeName"] == "pv-someone"
    assert api.get("PersistentVolume", "pvc-u-1")["status"] == {"phase": "Released"}
    assert [r["status"] for r in api.requests("PATCH") if "persistentvolumeclaims" in r["path"]][0] == 409
