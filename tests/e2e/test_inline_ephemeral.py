"""An inline ephemeral CSI volume through the reconcile role on a real SSH node: published into its pod,
written and read back, left alone by a second run, unpublished (image deleted) when the pod is gone.
Nothing is recorded in the cluster for it (no VolumeAttachment, no volumesAttached or volumesInUse)."""
import hashlib
import os

import pytest
import yaml

from e2e_lib import DRIVER, MiB, items, node_status, pod_mount_path

UID = "0e0e0e0e-0000-4000-8000-00000000e001"
HANDLE = "csi-" + hashlib.sha256((UID + "scratch").encode()).hexdigest()  # csi_mounter.go makeVolumeHandle


INLINE = {"driver": DRIVER, "fsType": "ext4", "volumeAttributes": {"size": "64Mi"}}


def cluster_file(with_pod=True):
    managed = {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}
    objs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1", "annotations": managed},
             "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
             "spec": {"attachRequired": True, "volumeLifecycleModes": ["Persistent", "Ephemeral"]}}]
    if with_pod:
        objs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"namespace": "jobs", "name": "scratchy", "uid": UID},
                     "spec": {"nodeName": "node1",
                              "volumes": [{"name": "scratch", "csi": INLINE}],
                              "containers": [{"name": "c", "image": "busybox",
                                              "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}]},
                     "status": {"phase": "Running", "containerStatuses": [{"name": "c", "state": {"running": {}}}]}})
    return {"apiVersion": "v1", "items": objs, "kind": "List", "metadata": {"resourceVersion": ""}}  # kubectl's order


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("eph", 1)
    with open(cluster.state, "w") as handle:
        yaml.safe_dump(cluster_file(), handle)
    return cluster


def assert_nothing_recorded(kv):
    data = kv.cluster()
    assert items(data, "VolumeAttachment") == []
    assert node_status(data, "node1") == ([], [])  # (volumesAttached, volumesInUse)


def test_published_written_read_back_and_second_run_quiet(kv):
    run = kv.reconcile()
    plan = [(s["action"], s["target"], s.get("ephemeral")) for s in run.plan()]
    assert plan == [("mount", "pod", True)], run.describe()
    target = pod_mount_path(UID, "scratch")
    mounts = kv.mounts("node1")
    assert list(mounts) == [target], mounts  # no global mount
    assert mounts[target]["fstype"] == "ext4" and mounts[target]["source"].startswith("/dev/loop")
    image = os.path.join(kv.dir, "pool", HANDLE)
    assert os.path.getsize(image) == 64 * MiB
    assert len(kv.loops()) == 1
    assert_nothing_recorded(kv)

    digest = kv.write_data("node1", target, "data", size="4M")
    assert kv.read_sum("node1", target, "data") == digest

    again = kv.reconcile()
    assert again.plan() == [] and again.node_module_runs() == {}, again.describe()
    assert kv.read_sum("node1", target, "data") == digest
    assert_nothing_recorded(kv)


def test_pod_gone_check_mode_then_unpublished(kv):
    with open(kv.state, "w") as handle:
        yaml.safe_dump(cluster_file(with_pod=False), handle)
    before = kv.snapshot()
    check = kv.reconcile(check=True)
    assert [(s["action"], s["target"], s.get("ephemeral")) for s in check.plan()] == [("unmount", "pod", True)]
    assert kv.snapshot() == before

    run = kv.reconcile()
    assert [(s["action"], s["target"]) for s in run.plan()] == [("unmount", "pod")], run.describe()
    assert kv.mounts("node1") == {}
    assert not os.path.exists(os.path.join(kv.dir, "pool", HANDLE))
    assert kv.loops() == []
    assert kv.ssh("node1", "ls /var/lib/kubelet/pods/%s/volumes 2>/dev/null || true" % UID).strip() == ""
    assert_nothing_recorded(kv)

    again = kv.reconcile()
    assert again.plan() == [] and again.node_module_runs() == {}, again.describe()
