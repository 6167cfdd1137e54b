"""Snapshots, restores and clones with the Kubernetes API store against the fake API server, on 2 SSH test nodes:
the same steps as test_snapshots.py (file store), the VolumeSnapshotContents POSTed and the VolumeSnapshots' status
written through their status subresource, no snapshot-controller: kubevol takes, binds and deletes them itself, with
the snapshot-controller's finalizers: written on the snapshots and contents it binds, removed when a deleted snapshot
(``kubectl delete``: only marked, as kube-apiserver does with finalizers) has its content deleted or kept.
"""

import pytest

from provision_lib import api_store_cluster, counts, target, volume_name
from snapshot_lib import (
    first_objects, loop_snapshots, plugin_snapshots, restore_objects, snapshot_calls, snapshot_objects)

TOKEN = "kubevol-e2e-token"
SNAPSHOT_FINALIZERS = ["snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection",
                       "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection"]
CONTENT_FINALIZER = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"


@pytest.fixture(scope="module")
def kv(make_cluster):
    yield from api_store_cluster(make_cluster("snapapi", 2), lambda cluster: first_objects(cluster.nodes), TOKEN)


def test_a_snapshots_life_through_the_api(kv):
    api = kv.api
    run = kv.reconcile(kv.options)
    sums = dict((name, kv.write_data("node1", target("writer", volume_name("apps", name)), "data.bin"))
                for name in ("src", "lsrc"))
    # the snapshots taken: contents POSTed, the snapshots' status through their subresource
    api.load(snapshot_objects())
    run = kv.reconcile(kv.options)
    for name in ("snap", "lsnap", "kept"):
        status = (api.get("VolumeSnapshot", name, "apps") or {}).get("status") or {}
        assert status.get("readyToUse") is True, run.describe()
        content = api.get("VolumeSnapshotContent", "snapcontent-snapuid-" + name)
        assert content["status"]["snapshotHandle"] == "snapshot-snapuid-" + name
        assert content["metadata"]["finalizers"] == [CONTENT_FINALIZER]
        assert content["spec"]["sourceVolumeMode"] == "Filesystem"
        assert api.get("VolumeSnapshot", name, "apps")["metadata"]["finalizers"] == SNAPSHOT_FINALIZERS
    source = api.get("PersistentVolumeClaim", "src", "apps")["metadata"]
    assert "snapshot.storage.kubernetes.io/pvc-as-source-protection" not in (source.get("finalizers") or [])
    writes = [(r["method"], r["path"]) for r in api.writes() if "volumesnapshot" in r["path"]]
    assert ("POST", "/apis/snapshot.storage.k8s.io/v1/volumesnapshotcontents") in writes
    assert ("PATCH", "/apis/snapshot.storage.k8s.io/v1/namespaces/apps/volumesnapshots/snap/status") in writes
    # restored and cloned, with the data
    api.load(restore_objects())
    seen = counts(kv.plugins)
    run = kv.reconcile(kv.options)
    assert len(snapshot_calls(kv.plugins, seen)) == 2, run.describe()  # the restore and the clone (CSI plugin)
    for pod_name, node, name, source in (("reader", "node2", "restored", "src"),
                                         ("reader", "node2", "lrestored", "lsrc"), ("cloner", "node1", "clone", "src")):
        path = target(pod_name, volume_name("apps", name))
        assert kv.read_sum(node, path, "data.bin") == sums[source], run.describe()
    # the snapshots deleted as kubectl deletes them: held by their finalizers, marked; Delete goes with its copy,
    # Retain keeps its content, and every snapshot goes once kubevol removed its finalizers
    for name in ("snap", "lsnap", "kept"):
        api.request_delete("VolumeSnapshot", name, "apps")
        assert api.get("VolumeSnapshot", name, "apps")["metadata"]["deletionTimestamp"]
    seen = counts(kv.plugins)
    run = kv.reconcile(kv.options)
    assert [(c[1], c[2]["snapshot_id"]) for c in snapshot_calls(kv.plugins, seen)] == [
        ("DeleteSnapshot", "snapshot-snapuid-snap")], run.describe()
    assert api.get("VolumeSnapshotContent", "snapcontent-snapuid-snap") is None
    assert api.get("VolumeSnapshotContent", "snapcontent-snapuid-lsnap") is None
    assert api.get("VolumeSnapshotContent", "snapcontent-snapuid-kept") is not None
    assert [api.get("VolumeSnapshot", name, "apps") for name in ("snap", "lsnap", "kept")] == [None] * 3, \
        run.describe()
    assert plugin_snapshots(kv.csi_pool) == ["snapshot-snapuid-kept.img"] and loop_snapshots(kv.dir) == []
    again = kv.reconcile(kv.options)
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
