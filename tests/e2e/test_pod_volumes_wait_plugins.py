"""kubevol.volumes.pod_volumes_wait waits for what the node shows, for local and hostPath volumes too, on 2 real SSH
nodes: a pod whose local (node1) or hostPath (node2) volume nothing has set up yet times out, naming the volume and
the step a reconcile would still run, also a pod added to the cluster file after a reconcile; once the reconcile
mounted the local directory into the pod and checked the hostPath for it, the wait succeeds. Volumes kubevol does not
set up (a secret) are listed as not waited for, never as ready. The wait takes the role's driver_options."""
import json
import os

import pytest
import yaml

from e2e_lib import write_list

NS = "apps"
HP_ROOT = "/var/lib/hp-wait"  # under each node's own /var/lib overlay
UIDS = {"lv": "8b8b8b8b-0000-4000-8000-00000000000a", "lv2": "8b8b8b8b-0000-4000-8000-00000000000b",
        "hp": "8b8b8b8b-0000-4000-8000-00000000000c", "hp2": "8b8b8b8b-0000-4000-8000-00000000000d"}


def node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name},
                         "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def claimed(pv_name, source, claim, node_affinity=None):
    uid = "uid-claim-%s-%s" % (NS, claim)
    spec = {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
            "persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": NS, "name": claim, "uid": uid}}
    spec.update(source)
    if node_affinity:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": [node_affinity]}]}]}}
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name}, "spec": spec,
             "status": {"phase": "Bound"}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"namespace": NS, "name": claim, "uid": uid},
             "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": pv_name,
                      "resources": {"requests": {"storage": "64Mi"}}},
             "status": {"phase": "Bound", "capacity": {"storage": "64Mi"}}}]


def pod(name, node_name, claim):
    """A running pod whose container mounts the claim at /d and a secret at /s."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": NS, "name": name, "uid": UIDS[name]},
            "spec": {"nodeName": node_name,
                     "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}},
                                 {"name": "s", "secret": {"secretName": "token"}}],
                     "containers": [{"name": "c", "volumeMounts": [{"name": "d", "mountPath": "/d"},
                                                                   {"name": "s", "mountPath": "/s"}]}]},
            "status": {"phase": "Running"}}


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("waitplug", 2)
    disks = os.path.join(cluster.dir, "disks")
    os.makedirs(os.path.join(disks, "vol-lv"))
    cluster.driver_options = {"kubernetes.io/local-volume": {"paths": [disks]},
                              "kubernetes.io/host-path": {"paths": [HP_ROOT]}}
    cluster.options = ["-e", json.dumps({"kubevol_driver_options": cluster.driver_options})]
    cluster.objects = ([node("node1"), node("node2")]
                       + claimed("pv-lv", {"local": {"path": os.path.join(disks, "vol-lv")}}, "lv",
                                 node_affinity="node1")
                       + claimed("pv-hp", {"hostPath": {"path": HP_ROOT + "/data", "type": "DirectoryOrCreate"}},
                                 "hp")
                       + [pod("lv", "node1", "lv"), pod("hp", "node2", "hp")])
    write_list(cluster.state, cluster.objects)
    return cluster


def wait(kv, pods, expect_rc=0, timeout=3, **args):
    book = os.path.join(kv.dir, "wait.yml")
    args.setdefault("driver_options", kv.driver_options)
    with open(book, "w") as handle:
        yaml.safe_dump([{"hosts": "nodes", "gather_facts": False, "tasks": [
            {"name": "Wait for the pods' volumes", "kubevol.volumes.pod_volumes_wait": dict(
                {"cluster_state": kv.state, "interval": 1, "timeout": timeout, "pods": pods}, **args)}]}], handle)
    run = kv.reconcile(playbook=book, expect_rc=expect_rc)
    return run, dict((host, result) for _name, host, _status, result in run.executions(
        action="kubevol.volumes.pod_volumes_wait"))


def volumes(result, pod_key):
    [entry] = [p for p in result["pods"] if p["pod"] == pod_key]
    return entry, dict((v["volume"], v) for v in entry["volumes"])


SECRET = {"volume": "s", "pv": None, "state": "not_waited", "reason": "secret volume: not one kubevol sets up"}


def test_before_any_reconcile_the_wait_times_out_for_the_local_and_the_host_path_volume(kv):
    run, results = wait(kv, ["apps/lv", "apps/hp"], expect_rc="nonzero")
    entry, vols = volumes(results["node1"], "apps/lv")
    assert results["node1"]["ready"] is False and entry["ready"] is False, run.describe()
    assert vols["d"]["state"] == "waiting" and vols["d"]["pv"] == "pv-lv", vols
    assert vols["d"]["reason"].startswith("a reconcile would still run: mount/pod"), vols
    assert vols["s"] == SECRET  # listed, never a ready mount
    msg = results["node1"]["msg"]
    assert msg.startswith("volumes not ready after") and "apps/lv volume d (PV pv-lv) on node node1:" in msg, msg
    assert "volume s" not in msg
    entry, vols = volumes(results["node2"], "apps/hp")
    assert results["node2"]["ready"] is False and vols["d"]["state"] == "waiting", run.describe()
    assert "apps/hp volume d (PV pv-hp) on node node2:" in results["node2"]["msg"]
    # nothing was set up by waiting: no mount, no directory of the hostPath
    assert kv.mounts("node1") == {} and kv.ssh("node2", "test -e %s/data && echo yes || echo no" % HP_ROOT).strip() \
        == "no"


def test_without_the_roles_driver_options_the_wait_says_what_the_plan_refuses(kv):
    _run, results = wait(kv, ["apps/lv"], expect_rc="nonzero", driver_options={})
    _entry, vols = volumes(results["node1"], "apps/lv")
    assert "outside the directories allowed" in vols["d"]["reason"], vols
    # checked as the role checks them: an unknown name fails the task at once, naming it
    run, results = wait(kv, ["apps/lv"], expect_rc="nonzero", timeout=60,
                        driver_options={"kubernetes.io/local-volum": {"paths": ["/mnt"]}})
    assert "driver_options" in results["node1"]["msg"] and "kubernetes.io/local-volum" in results["node1"]["msg"], \
        run.describe()
    assert "polls" not in results["node1"]


def test_once_the_reconcile_set_them_up_the_wait_succeeds(kv):
    kv.reconcile(kv.options)
    run, results = wait(kv, ["apps/lv", "apps/hp"], timeout=30)
    for host, key in (("node1", "apps/lv"), ("node2", "apps/hp")):
        entry, vols = volumes(results[host], key)
        assert results[host]["ready"] is True and entry["ready"] is True, run.describe()
        assert vols["d"]["state"] == "ready" and vols["d"]["reason"] is None, vols
        assert vols["s"] == SECRET
    assert "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~local-volume/pv-lv" % UIDS["lv"] in kv.mounts("node1")


def test_a_pod_added_to_the_cluster_file_without_a_reconcile_waits_until_one_ran(kv):
    data = kv.cluster()
    write_list(kv.state, data["items"] + [pod("lv2", "node1", "lv"), pod("hp2", "node2", "hp")])
    run, results = wait(kv, ["apps/lv", "apps/lv2", "apps/hp", "apps/hp2"], expect_rc="nonzero")
    ready = dict((p["pod"], p["ready"]) for host in ("node1", "node2") for p in results[host]["pods"])
    assert ready == {"apps/lv": True, "apps/lv2": False, "apps/hp": True, "apps/hp2": False}, run.describe()
    for host, key in (("node1", "apps/lv2"), ("node2", "apps/hp2")):
        _entry, vols = volumes(results[host], key)
        assert vols["d"]["state"] == "waiting" and "mount/pod" in vols["d"]["reason"], vols
        assert "%s volume d" % key in results[host]["msg"]
    kv.reconcile(kv.options)
    run, results = wait(kv, ["apps/lv", "apps/lv2", "apps/hp", "apps/hp2"], timeout=30)
    assert results["node1"]["ready"] is True and results["node2"]["ready"] is True, run.describe()
