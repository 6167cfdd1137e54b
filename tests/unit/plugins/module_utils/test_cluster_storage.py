"""The cluster model's storage kinds (cluster/storage.py) and the claim and PV fields provisioning reads, from a List
as kubectl prints it and from the Kubernetes API store (the fake API server, with and without the snapshot CRDs)."""
import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import cluster_from_data
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.storage import (
    CSINodeDriver, csinode_driver, default_class)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import MalformedObject

OBJECTS = [
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
     "metadata": {"name": "fast", "creationTimestamp": "2026-01-02T00:00:00Z",
                  "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
     "provisioner": "csi.kubevol.test", "parameters": {"csi.storage.k8s.io/fstype": "xfs", "tier": "gold"},
     "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer", "mountOptions": ["noatime"],
     "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}]},
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "plain"},
     "provisioner": "loop.kubevol.io"},
    {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": "node1"},
     "spec": {"drivers": [{"name": "csi.kubevol.test", "nodeID": "n1", "topologyKeys": ["zone"],
                           "allocatable": {"count": 4}}, {"name": "other", "nodeID": "o1"}]}},
    {"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass", "metadata": {"name": "snaps"},
     "driver": "csi.kubevol.test", "deletionPolicy": "Retain", "parameters": {"a": "b"}},
    {"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
     "metadata": {"namespace": "ns", "name": "s1", "uid": "su1"},
     "spec": {"source": {"persistentVolumeClaimName": "data"}, "volumeSnapshotClassName": "snaps"},
     "status": {"boundVolumeSnapshotContentName": "snapcontent-su1", "readyToUse": True, "restoreSize": "1Gi"}},
    {"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
     "metadata": {"name": "snapcontent-su1"},
     "spec": {"driver": "csi.kubevol.test", "deletionPolicy": "Delete", "source": {"volumeHandle": "pvc-1"},
              "volumeSnapshotRef": {"namespace": "ns", "name": "s1", "uid": "su1"}},
     "status": {"snapshotHandle": "snapshot-su1", "readyToUse": True, "restoreSize": 1073741824}},
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
     "metadata": {"namespace": "ns", "name": "restored", "uid": "c1", "annotations": {"a": "b"},
                  "deletionTimestamp": "2026-01-03T00:00:00Z"},
     "spec": {"storageClassName": "", "volumeMode": "Block", "selector": {"matchLabels": {"x": "y"}},
              "dataSource": {"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "s1"},
              "resources": {"requests": {"storage": "1Gi"}}}},
    {"apiVersion": "v1", "kind": "PersistentVolume",
     "metadata": {"name": "pvc-1", "annotations": {"pv.kubernetes.io/provisioned-by": "csi.kubevol.test"}},
     "spec": {"persistentVolumeReclaimPolicy": "Delete", "storageClassName": "fast",
              "csi": {"driver": "csi.kubevol.test", "volumeHandle": "pvc-1"}},
     "status": {"phase": "Released"}},
]


def test_every_storage_kind_and_the_new_fields_are_read():
    cluster = cluster_from_data({"kind": "List", "items": OBJECTS})
    fast, plain = cluster.storage_classes
    assert (fast.provisioner, fast.reclaim_policy, fast.binding_mode, fast.mount_options, fast.is_default) == (
        "csi.kubevol.test", "Retain", "WaitForFirstConsumer", ("noatime",), True)
    assert fast.parameters == (("csi.storage.k8s.io/fstype", "xfs"), ("tier", "gold"))
    assert fast.allowed_topologies == ((("zone", ("a", "b")),),)
    # the API server's defaults
    assert (plain.reclaim_policy, plain.binding_mode, plain.is_default) == ("Delete", "Immediate", False)
    assert default_class(cluster.storage_classes) is fast
    node1, = cluster.csi_nodes
    assert csinode_driver(node1, "csi.kubevol.test") == CSINodeDriver("csi.kubevol.test", "n1", ("zone",), 4)
    assert csinode_driver(node1, "other").count is None and csinode_driver(node1, "absent") is None
    snap_class, = cluster.snapshot_classes
    assert (snap_class.driver, snap_class.deletion_policy) == ("csi.kubevol.test", "Retain")
    assert snap_class.parameters == (("a", "b"),)
    snapshot, = cluster.snapshots
    assert (snapshot.source_claim, snapshot.bound_content, snapshot.ready_to_use, snapshot.restore_size_bytes) == (
        "data", "snapcontent-su1", True, 1 << 30)
    content, = cluster.snapshot_contents
    assert (content.snapshot_ref, content.source_volume_handle, content.snapshot_handle,
            content.restore_size_bytes) == (("ns", "s1", "su1"), "pvc-1", "snapshot-su1", 1 << 30)
    pvc, = cluster.claims
    assert (pvc.storage_class, pvc.volume_mode, pvc.data_source, pvc.has_selector, pvc.annotations) == (
        "", "Block", ("snapshot.storage.k8s.io", "VolumeSnapshot", "s1"), True, (("a", "b"),))
    assert pvc.deletion_timestamp == "2026-01-03T00:00:00Z"
    pv, = cluster.persistent_volumes
    assert (pv.reclaim_policy, pv.storage_class, pv.phase) == ("Delete", "fast", "Released")
    assert dict(pv.annotations) == {"pv.kubernetes.io/provisioned-by": "csi.kubevol.test"}


def test_unset_fields_keep_kubernetes_defaults():
    cluster = cluster_from_data({"kind": "List", "items": [
        {"kind": "PersistentVolumeClaim", "metadata": {"namespace": "ns", "name": "c", "uid": "u"}, "spec": {}},
        {"kind": "PersistentVolume", "metadata": {"name": "p"}, "spec": {}}]})
    assert (cluster.claims[0].storage_class, cluster.claims[0].data_source) == (None, None)  # None: unset
    assert (cluster.persistent_volumes[0].reclaim_policy, cluster.persistent_volumes[0].phase) == ("Retain", "")


@pytest.mark.parametrize("obj, field", [
    ({"kind": "StorageClass", "metadata": {"name": "x"}}, "provisioner"),
    ({"kind": "StorageClass", "metadata": {"name": "x"}, "provisioner": "p", "volumeBindingMode": "Later"},
     "volumeBindingMode"),
    ({"kind": "CSINode", "metadata": {"name": "n"}, "spec": {"drivers": [{"name": "d", "allocatable": {"count": -1}}]}},
     "count"),
    ({"kind": "VolumeSnapshotContent", "metadata": {"name": "c"}, "spec": {"driver": "d"},
      "status": {"restoreSize": "1Gi"}}, "restoreSize"),
])
def test_a_malformed_object_is_refused_naming_it(obj, field):
    with pytest.raises(MalformedObject) as err:
        cluster_from_data({"kind": "List", "items": [obj]})
    assert obj["kind"] in err.value.msg and field in err.value.msg


@pytest.mark.parametrize("snapshots", [True, False])
def test_the_api_store_lists_them(tmp_path, snapshots):
    from fakeapi import FakeApiServer, write_kubeconfig
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import KubernetesStore
    server = FakeApiServer(tokens=["t"]).start()
    server.serve_snapshots = snapshots
    server.load([o for o in OBJECTS if snapshots or not o["apiVersion"].startswith("snapshot.")])
    config = write_kubeconfig(str(tmp_path / "k"), {"c": {"server": server.url, "token": "t"}})
    store = KubernetesStore({"kubeconfig": config}, environ={})
    try:
        cluster = cluster_from_data(store.load())
    finally:
        store.close()
        server.stop()
    assert [c.name for c in cluster.storage_classes] == ["fast", "plain"]
    assert [n.name for n in cluster.csi_nodes] == ["node1"]
    assert [s.name for s in cluster.snapshots] == (["s1"] if snapshots else [])  # no CRD: no snapshot, no error
    assert len(cluster.snapshot_contents) == len(cluster.snapshot_classes) == (1 if snapshots else 0)
