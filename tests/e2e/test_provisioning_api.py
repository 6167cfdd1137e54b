"""A volume's life from a claim with the Kubernetes API store (kubevol_cluster_source=kubernetes) against the fake API
server, on 2 SSH test nodes: the same role and the same calls as with the file store (test_provisioning.py), the
objects written through the API as kube-apiserver keeps them (a PV created gets the pv-protection finalizer, a claim
deleted with kubectl waits on its pvc-protection finalizer), and no kube-controller-manager: kubevol lets the deleted
claim go, deletes the volume and its PV through their finalizers.

1. one run: a WaitForFirstConsumer claim of the test CSI plugin and an Immediate claim of the loop driver provisioned,
   bound, mounted, data written; the CSINodes and the PVs POSTed; a second run writes nothing to them;
2. the pod deleted and its claim deleted as kubectl deletes it: the claim's finalizer removed, the volume torn down and
   deleted (DeleteVolume), the PV gone from the API; a Retain volume's PV kept, Released.
"""
import os

import pytest

from provision_lib import (
    LOOP, api_store_cluster, base_objects, calls, claim, counts, images, pod, storage_class, target, volume_name)

TOKEN = "kubevol-e2e-token"
PROTECTION = "kubernetes.io/pvc-protection"


def objects(cluster):
    protected = [claim("data", "csi-wffc"), claim("keep", "loop-retain")]
    for obj in protected:
        obj["metadata"]["finalizers"] = [PROTECTION]  # as the StorageObjectInUseProtection admission adds it
    return base_objects(cluster.nodes) + [storage_class("loop-now", provisioner=LOOP, mode="Immediate")] + \
        protected + [claim("now", "loop-now", size="320Mi"), pod("web", "node1", ["data", "now"]),
                     pod("keeper", "node2", ["keep"])]


@pytest.fixture(scope="module")
def kv(make_cluster):
    yield from api_store_cluster(make_cluster("provapi", 2), objects, TOKEN)


def _writes(api, *plurals):
    return [(r["method"], r["path"]) for r in api.writes() if any("/%s" % p in r["path"] for p in plurals)]


def test_provisioned_bound_and_mounted_through_the_api(kv):
    api = kv.api
    run = kv.reconcile(kv.options)
    for name in ("data", "now", "keep"):
        pv_name = volume_name("apps", name)
        pv = api.get("PersistentVolume", pv_name)
        assert pv is not None and pv["status"]["phase"] == "Bound", run.describe()
        assert "kubernetes.io/pv-protection" in pv["metadata"]["finalizers"]  # created through the API
        bound = api.get("PersistentVolumeClaim", name, "apps")
        assert bound["spec"]["volumeName"] == pv_name and bound["status"]["phase"] == "Bound"
    assert ("POST", "/api/v1/persistentvolumes") in _writes(api, "persistentvolumes")
    assert api.get("CSINode", "node1")["spec"]["drivers"][0]["nodeID"] == "node1"
    assert [c[2]["name"] for c in calls(kv.plugins) if c[1] == "CreateVolume"] == [volume_name("apps", "data")]
    assert volume_name("apps", "now") in os.listdir(os.path.join(kv.dir, "pool"))
    for pod_name, node, name in (("web", "node1", "data"), ("web", "node1", "now"), ("keeper", "node2", "keep")):
        assert target(pod_name, volume_name("apps", name)) in kv.mounts(node), run.describe()
    kv.write_data("node2", target("keeper", volume_name("apps", "keep")), "kept.bin")
    # a second run writes none of them again
    del api.log[:]
    again = kv.reconcile(kv.options)
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    assert _writes(api, "persistentvolumes", "persistentvolumeclaims", "csinodes", "volumeattachments", "/nodes") == []
    kv.shared["up"] = True


def test_claims_deleted_with_kubectl_go_with_their_volumes_without_a_controller_manager(kv):
    assert kv.shared.get("up"), "needs the first run"
    api = kv.api
    for name in ("web", "keeper"):
        api.delete("Pod", name, "apps")
    for name in ("data", "now", "keep"):
        api.request_delete("PersistentVolumeClaim", name, "apps")
    assert api.get("PersistentVolumeClaim", "data", "apps")["metadata"]["deletionTimestamp"]  # held by its finalizer
    seen = counts(kv.plugins)
    run = kv.reconcile(kv.options + ["-e", "kubevol_allow_mass_teardown=true"])  # every mounted volume goes
    assert [c[2]["volume_id"] for c in calls(kv.plugins, seen) if c[1] == "DeleteVolume"] == [
        volume_name("apps", "data")], run.describe()
    for name in ("data", "now", "keep"):
        assert api.get("PersistentVolumeClaim", name, "apps") is None, run.describe()
    for name in ("data", "now"):
        assert api.get("PersistentVolume", volume_name("apps", name)) is None, run.describe()
    assert volume_name("apps", "data") + ".img" not in images(kv.csi_pool)
    assert volume_name("apps", "now") not in os.listdir(os.path.join(kv.dir, "pool"))
    kept = api.get("PersistentVolume", volume_name("apps", "keep"))
    assert kept["status"]["phase"] == "Released" and volume_name("apps", "keep") in os.listdir(
        os.path.join(kv.dir, "pool"))
    assert not [m for node in kv.nodes for m in kv.mounts(node) if "pvc-uid-apps" in m]
    again = kv.reconcile(kv.options)
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
