"""Kubernetes parity through the role on 3 real SSH nodes: a Block claim grows where its pod maps it (with the
expansion states recorded on the claim), a terminating pod keeps its volume until its containers stop, and an
expansion marked infeasible is not retried. Each test builds on the one before (module-scoped nodes)."""
import pytest
import yaml

from e2e_lib import MiB, get, pod_device_path, pod_mount_path, pod_uid

DB_POD = "shop/db-0"


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("par", 3)
    cluster.load_example()
    run = cluster.reconcile(["-e", "kubevol_provision=true"])
    assert run.rc == 0, run.describe()
    return cluster


def rewrite(kv, change):
    data = kv.cluster()
    change(data)
    with open(kv.state, "w") as handle:
        yaml.safe_dump(data, handle)


def claim_status(kv, name, namespace="shop"):
    return get(kv.cluster(), "PersistentVolumeClaim", name, namespace)["status"]


def test_block_claim_grows_where_the_pod_maps_it(kv):
    device = pod_device_path(pod_uid(kv.cluster(), DB_POD), "pv-raw-journal")
    assert int(kv.ssh("node1", "blockdev --getsize64 %s" % device)) == 64 * MiB
    head = kv.ssh("node1", "head -c 8M /dev/urandom > /tmp/j && dd if=/tmp/j of=%s bs=1M conv=fsync status=none && "
                           "rm /tmp/j && head -c 8388608 %s | sha256sum" % (device, device)).split()[0]
    kv.edit("resize-claim", "shop/raw-journal", "96Mi")
    run = kv.reconcile()
    assert run.rc == 0, run.describe()
    assert [(s["action"], s["target"]) for s in run.plan() if s["volume"] == "pv-raw-journal"] == [
        ("expand", "controller"), ("expand", "node")]
    assert int(kv.ssh("node1", "blockdev --getsize64 %s" % device)) == 96 * MiB
    assert kv.ssh("node1", "head -c 8388608 %s | sha256sum" % device).split()[0] == head
    status = claim_status(kv, "raw-journal")
    assert status["capacity"]["storage"] == "96Mi"
    assert status["allocatedResources"] == {"storage": "96Mi"}
    assert "allocatedResourceStatuses" not in status  # finished (MarkFSResizeFinished)
    pv = get(kv.cluster(), "PersistentVolume", "pv-raw-journal")
    assert pv["spec"]["capacity"]["storage"] == "96Mi"
    again = kv.reconcile()
    assert again.rc == 0 and all(not again.changed(n) for n in kv.nodes), again.describe()


def test_terminating_pod_keeps_its_volume_until_its_containers_stop(kv):
    writer_mount = pod_mount_path(pod_uid(kv.cluster(), "tools/log-writer"), "pv-shared-logs")

    def terminating(state):
        def change(data):
            pod = get(data, "Pod", "log-writer", "tools")
            pod["metadata"]["deletionTimestamp"] = "2026-11-23T12:00:00Z"
            pod["status"]["containerStatuses"] = [{"name": "writer", "state": {state: {}}}]
        return change

    rewrite(kv, terminating("running"))
    run = kv.reconcile()
    assert run.rc == 0, run.describe()
    assert run.plan() == [] and not run.changed("node3"), run.describe()
    assert writer_mount in kv.mounts("node3")
    rewrite(kv, terminating("terminated"))
    run = kv.reconcile()
    assert run.rc == 0, run.describe()
    # its claim's pod mount, and its inline spool volume (unpublished: the image is deleted)
    assert [(s["action"], s["target"], s["pod"], s["volume"]) for s in run.plan()] == [
        ("unmount", "pod", "tools/log-writer", "pv-shared-logs"),
        ("unmount", "pod", "tools/log-writer", "tools/log-writer/spool")]
    assert writer_mount not in kv.mounts("node3")


def test_infeasible_expansion_is_blocked_until_the_request_is_lowered(kv):
    def infeasible(data):
        pvc = get(data, "PersistentVolumeClaim", "db-data", "shop")
        pvc["spec"]["resources"]["requests"]["storage"] = "100Gi"
        pvc["status"]["allocatedResources"] = {"storage": "100Gi"}
        pvc["status"]["allocatedResourceStatuses"] = {"storage": "ControllerResizeInfeasible"}

    rewrite(kv, infeasible)
    run = kv.reconcile(check=True, expect_rc=None)
    assert not [s for s in run.plan() if s["action"] == "expand"], run.describe()
    assert "lower its spec.resources.requests.storage below 100Gi" in run.stdout, run.describe()
    kv.edit("resize-claim", "shop/db-data", "640Mi")
    run = kv.reconcile()
    assert run.rc == 0, run.describe()
    assert [s["target"] for s in run.plan() if s["action"] == "expand"] == ["controller", "node"]
    status = claim_status(kv, "db-data")
    assert status["capacity"]["storage"] == "640Mi" and "allocatedResourceStatuses" not in status
    assert status["allocatedResources"] == {"storage": "640Mi"}
