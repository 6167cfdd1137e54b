"""A volume's life from a claim, through the role on 2 SSH test nodes with the file store (issue 40): the test CSI
plugin on each node (topology topology.csi.kubevol.test/node, at most 2 volumes per node, CREATE_DELETE_VOLUME; its
Controller service the node plugin's own, ``controller: node``) and kubevol's loop driver, through the same path.

In order, on one cluster file:
1. check mode shows each CreateVolume under its heading, with the claim and the driver, and changes nothing;
2. one run goes from claims to mounted volumes: a WaitForFirstConsumer claim provisioned on its pod's node (test plugin
   and loop), an Immediate claim in its class's allowedTopologies (node2), the PVs written as the external-provisioner
   writes them, the claims bound, the CSINodes registered; data written;
3. a second run changes nothing;
4. past a node's CSI volume limit the attach waits, in the scheduler's words;
5. a CreateVolume answered DEADLINE_EXCEEDED after the volume was made leaves the claim unbound and the run failed;
   the next run calls it again with the same name: one volume;
6. a snapshot that lost claims (their pods still name them) deletes nothing; one cut short is not read at all;
7. the claims deleted: the volumes torn down and deleted (DeleteVolume, the PV gone; the loop image gone), a Retain
   volume kept, Released, with its data.
"""
import os

import pytest

from e2e_lib import get, write_list
from provision_lib import (
    KEY, LOOP, base_objects, by_name, calls, claim, counts, extra, images, pod, start_plugins, stop_plugins, target,
    volume_name)
from csi_lib import DRIVER


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("prov", 2)
    plugins = {}
    try:
        plugins, pool = start_plugins(cluster)
        cluster.plugins, cluster.csi_pool, cluster.shared = plugins, pool, {}
        objects = base_objects(cluster.nodes) + [
            claim("data", "csi-wffc"), claim("zonal", "csi-node2"), claim("scratch", "loop-wffc", size="320Mi"),
            claim("keep", "loop-retain"),
            pod("web", "node1", ["data"]), pod("api", "node2", ["zonal", "scratch"]), pod("keeper", "node1", ["keep"])]
        write_list(cluster.state, objects)
        yield cluster
    finally:
        stop_plugins(cluster, plugins)


def test_check_mode_shows_each_call_and_changes_nothing(kv):
    before, seen = kv.state_bytes(), counts(kv.plugins)
    run = kv.reconcile(extra() + ["--check"], check=True)
    table = "\n".join(run.plan_lines())
    assert "Provisioning (CreateVolume" in table, table
    for name, driver in (("data", DRIVER), ("zonal", DRIVER), ("scratch", LOOP), ("keep", LOOP)):
        line = [row for row in table.splitlines() if volume_name("apps", name) in row]
        assert line and "CreateVolume" in line[0] and "apps/" + name in line[0] and driver in line[0], table
    assert "Storage: 4 volume(s) to provision, 0 to delete" in table
    assert kv.state_bytes() == before and calls(kv.plugins, seen) == []
    assert images(kv.csi_pool) == [] and not [n for n in os.listdir(os.path.join(kv.dir, "pool"))
                                              if n.startswith("pvc-")]


def test_one_run_from_claims_to_mounted_volumes(kv):
    run = kv.reconcile(extra())
    data = kv.cluster()
    pvs, pvcs = by_name(data, "PersistentVolume"), by_name(data, "PersistentVolumeClaim")
    for name in ("data", "zonal", "scratch", "keep"):
        pv = pvs[volume_name("apps", name)]
        assert pvcs[name]["spec"]["volumeName"] == pv["metadata"]["name"], run.describe()
        assert pvcs[name]["status"]["phase"] == "Bound" and pv["status"]["phase"] == "Bound"
        assert pvcs[name]["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
        assert pv["spec"]["claimRef"]["uid"] == "uid-apps-" + name
    data_pv, zonal_pv = pvs[volume_name("apps", "data")], pvs[volume_name("apps", "zonal")]
    assert data_pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == DRIVER
    assert data_pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete"

    # WaitForFirstConsumer: made on the pod's node; Immediate: in the class's allowedTopologies
    def affinity(pv):
        return pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert affinity(data_pv) == [{"matchExpressions": [{"key": KEY, "operator": "In", "values": ["node1"]}]}]
    assert affinity(zonal_pv) == [{"matchExpressions": [{"key": KEY, "operator": "In", "values": ["node2"]}]}]
    creates = dict((c[2]["name"], c) for c in calls(kv.plugins) if c[1] == "CreateVolume")
    assert creates[volume_name("apps", "data")][0] == "node1"
    assert creates[volume_name("apps", "zonal")][2]["accessibility_requirements"]["requisite"] == [
        {"segments": {KEY: "node2"}}]
    assert pvs[volume_name("apps", "scratch")]["spec"]["csi"]["volumeAttributes"]["pool"] == "/var/lib/kubevol/pool"
    # the kubelet's registration: a CSINode per node, the topology label
    csinodes = by_name(data, "CSINode")
    assert csinodes["node1"]["spec"]["drivers"] == [{"name": DRIVER, "nodeID": "node1", "topologyKeys": [KEY],
                                                     "allocatable": {"count": 2}}]
    assert get(data, "Node", "node2")["metadata"]["labels"][KEY] == "node2"
    # mounted where their pods run, in this same run; data written
    for pod_name, node, name in (("web", "node1", "data"), ("api", "node2", "zonal"), ("api", "node2", "scratch"),
                                 ("keeper", "node1", "keep")):
        mount = target(pod_name, volume_name("apps", name))
        assert mount in kv.mounts(node), (mount, run.describe())
    assert kv.mounts("node2")[target("api", volume_name("apps", "scratch"))]["fstype"] == "xfs"
    kv.shared["keep"] = kv.write_data("node1", target("keeper", volume_name("apps", "keep")), "kept.bin")
    kv.write_data("node1", target("web", volume_name("apps", "data")), "data.bin")
    kv.shared["done"] = True


def test_a_second_run_changes_nothing(kv):
    assert kv.shared.get("done"), "needs the first run"
    before, seen = kv.state_bytes(), counts(kv.plugins)
    again = kv.reconcile(extra())
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    assert kv.state_bytes() == before and calls(kv.plugins, seen) == []


def test_no_attach_past_the_node_csi_volume_limit(kv):
    data = kv.cluster()
    data["items"] += [claim("more1", "csi-wffc"), claim("more2", "csi-wffc"), pod("heavy", "node1", ["more1", "more2"])]
    write_list(kv.state, data["items"])
    run = kv.reconcile(extra())
    report = run.report()
    refused = [b for b in report.get("blocked", []) if "node(s) exceed max volume count" in b["reason"]]
    assert len(refused) == 1 and refused[0]["pod"] == "apps/heavy", run.describe()
    mounted = [name for name in ("more1", "more2") if target("heavy", volume_name("apps", name)) in kv.mounts("node1")]
    assert len(mounted) == 1, (mounted, run.describe())  # node1 had one volume of the driver: one more fits
    # nothing was detached for it: the first volume stays mounted
    assert target("web", volume_name("apps", "data")) in kv.mounts("node1")


def test_an_uncertain_create_volume_is_retried_without_a_second_volume(kv):
    data = kv.cluster()
    data["items"] += [claim("slow", "csi-wffc"), pod("sloth", "node2", ["slow"])]
    write_list(kv.state, data["items"])
    kv.plugins["node2"].configure(fail_after={"CreateVolume": {"code": "DEADLINE_EXCEEDED", "message": "slow disk"}})
    name = volume_name("apps", "slow")
    try:
        failed = kv.reconcile(extra(), expect_rc="nonzero")
    finally:
        kv.plugins["node2"].configure(fail_after={})
    assert "slow disk" in failed.stdout and "calls CreateVolume %s again" % name in failed.stdout, failed.describe()
    data = kv.cluster()
    assert name not in by_name(data, "PersistentVolume")
    slow = by_name(data, "PersistentVolumeClaim")["slow"]
    assert "volumeName" not in slow["spec"]
    assert slow["metadata"]["annotations"]["kubevol.io/provisioning-uncertain"] == name  # recorded on the claim
    assert name + ".img" in images(kv.csi_pool)  # the driver made it before it answered
    seen = counts(kv.plugins)
    kv.reconcile(extra())
    retried = [c for c in calls(kv.plugins, seen) if c[1] == "CreateVolume"]
    assert [(c[0], c[2]["name"], c[3]) for c in retried] == [("node2", name, "OK")]
    assert images(kv.csi_pool).count(name + ".img") == 1
    assert by_name(kv.cluster(), "PersistentVolumeClaim")["slow"]["spec"]["volumeName"] == name
    assert target("sloth", name) in kv.mounts("node2")


def test_a_snapshot_that_lost_claims_deletes_nothing(kv):
    data = kv.cluster()
    full = kv.state_bytes()
    # the claims gone from the snapshot, their pods still there: a pod never outlives its claim's protection
    lost = [o for o in data["items"] if not (o["kind"] == "PersistentVolumeClaim" and
                                             o["metadata"]["name"] in ("data", "zonal"))]
    write_list(kv.state, lost)
    seen = counts(kv.plugins)
    run = kv.reconcile(extra())
    assert not [c for c in calls(kv.plugins, seen) if c[1] == "DeleteVolume"], run.describe()
    held = [b for b in run.report().get("blocked", []) if b.get("action") == "delete"]
    assert sorted(b["volume"] for b in held) == sorted([volume_name("apps", "data"), volume_name("apps", "zonal")])
    assert all("yet a pod still names it" in b["reason"] for b in held)
    assert volume_name("apps", "data") + ".img" in images(kv.csi_pool)
    # a file cut short is not read at all: nothing planned, nothing deleted
    with open(kv.state, "wb") as handle:
        handle.write(full[:full.rindex(b"\nkind: List")])
    seen = counts(kv.plugins)
    kv.reconcile(extra(), expect_rc="nonzero")
    assert calls(kv.plugins, seen) == []
    with open(kv.state, "wb") as handle:
        handle.write(full)


def test_deleted_claims_delete_their_volumes_and_retain_keeps_its_own(kv):
    data = kv.cluster()
    gone_claims = ("data", "scratch", "keep", "more1", "more2", "slow")
    gone_pods = ("web", "api", "keeper", "heavy", "sloth")
    kept = [o for o in data["items"] if not (o["kind"] == "PersistentVolumeClaim" and o["metadata"]["name"] in gone_claims)
            and not (o["kind"] == "Pod" and o["metadata"]["name"] in gone_pods)]
    write_list(kv.state, kept)
    seen = counts(kv.plugins)
    # six volumes torn down at once and five deleted: both guards allowed for this run
    run = kv.reconcile(extra() + ["-e", "kubevol_allow_mass_deletion=true", "-e", "kubevol_allow_mass_teardown=true"])
    deleted = sorted(c[2]["volume_id"] for c in calls(kv.plugins, seen) if c[1] == "DeleteVolume")
    assert deleted == sorted(volume_name("apps", n) for n in ("data", "more1", "more2", "slow")), run.describe()
    data = kv.cluster()
    pvs = by_name(data, "PersistentVolume")
    for name in ("data", "scratch", "more1", "more2", "slow"):
        assert volume_name("apps", name) not in pvs, run.describe()
    assert images(kv.csi_pool) == [volume_name("apps", "zonal") + ".img"]
    loop_pool = os.path.join(kv.dir, "pool")
    assert volume_name("apps", "scratch") not in os.listdir(loop_pool)  # the loop driver's image deleted too
    # Retain: the PV stays, Released, and so does its data
    keep = pvs[volume_name("apps", "keep")]
    assert keep["status"]["phase"] == "Released" and volume_name("apps", "keep") in os.listdir(loop_pool)
    assert not [m for node in kv.nodes for m in kv.mounts(node) if volume_name("apps", "data") in m]
    again = kv.reconcile(extra())
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
