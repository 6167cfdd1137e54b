"""Kubernetes local PVs and hostPath PVs through the role, on 2 real SSH test nodes (issue 26).

The nodes' disks: a directory on the host (test nodes share the host's filesystem outside /var/lib, which each
node overlays, so it outlives a node's restart as a disk does) and a loop device this test sets up over an
image in the cluster's directory (every node sees every loop device). The operator allows local volumes under
those two and hostPath volumes under /var/lib/hp (kubevol_driver_options).

1. A directory-backed and a block-device-backed local PV are mounted in the kubelet's layout on node1: the
   directory bind-mounted into the pod, the device formatted (it is blank), mounted at
   plugins/kubernetes.io/local-volume/mounts/<pv> and bind-mounted into the pod. A hostPath DirectoryOrCreate
   PV's directory is created on node2 with the kubelet's mode. Never attached: no VolumeAttachment.
   Refused at plan time, nothing mounted: a pod on node2 using a local PV whose nodeAffinity says node1
   ("volume node affinity conflict"), a local PV whose path is outside the allowed directories.
   Failed on the node, the device kept: a local PV on a device holding a swap signature; a hostPath PV of type
   File whose path is a directory fails with the kubelet's words.
2. A second run changes nothing.
3. The pods deleted: unmounted, the data stays in the directory and on the device; the pods back: the same data.
4. Both nodes restarted (their kubelet directories start empty, their mounts are gone): the next run mounts
   everything again with the data kept, and the run after it changes nothing.
"""
import json
import os
import subprocess

import pytest

from e2e_lib import KUBELET, get, items, node_object, write_list

HP_ROOT = "/var/lib/hp"
HP_DIR = HP_ROOT + "/data"
DIR_FILE = "dir.bin"
BLK_FILE = "blk.bin"


def hostname_node(name):
    node = node_object(name)
    node["metadata"]["labels"] = {"kubernetes.io/hostname": name}
    return node


def affinity(node):
    return {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}


def claimed(pv_name, source, claim, size="64Mi", node_affinity=None):
    """A PV with ``source`` ({"local": ...} or {"hostPath": ...}) and the claim bound to it: [pv, pvc]."""
    namespace, name = claim.split("/")
    uid = "uid-claim-%s-%s" % (namespace, name)
    spec = {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
            "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "local-storage",
            "claimRef": {"namespace": namespace, "name": name, "uid": uid}}
    spec.update(source)
    if node_affinity:
        spec["nodeAffinity"] = node_affinity
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv_name}, "spec": spec,
             "status": {"phase": "Bound"}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"namespace": namespace, "name": name, "uid": uid},
             "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": pv_name, "storageClassName": "local-storage",
                      "resources": {"requests": {"storage": size}}},
             "status": {"phase": "Bound", "capacity": {"storage": size}}}]


def pod(name, uid, node, claim):
    namespace, claim_name = claim.split("/")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": namespace, "name": name, "uid": uid},
            "spec": {"nodeName": node, "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim_name}}],
                     "containers": [{"name": "c", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}]},
            "status": {"phase": "Running"}}


def local_mount(uid, pv):
    return "%s/pods/%s/volumes/kubernetes.io~local-volume/%s" % (KUBELET, uid, pv)


def local_global(pv):
    return "%s/plugins/kubernetes.io/local-volume/mounts/%s" % (KUBELET, pv)


def losetup(*args):
    return subprocess.run(["losetup"] + list(args), stdout=subprocess.PIPE, universal_newlines=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("local", 2)
    cluster.shared = {}
    disks = os.path.join(cluster.dir, "disks")
    os.makedirs(os.path.join(disks, "vol-dir"))
    devices = []
    try:
        for name in ("blk.img", "swap.img"):
            image = os.path.join(cluster.dir, name)
            with open(image, "wb") as handle:
                handle.truncate(64 << 20)
            devices.append(losetup("-f", "--show", image))
        subprocess.run(["mkswap", devices[1]], stdout=subprocess.PIPE, check=True)
        cluster.shared.update(disks=disks, blk=devices[0], swap=devices[1])
        cluster.options = ["-e", json.dumps({"kubevol_driver_options": {
            "kubernetes.io/local-volume": {"paths": [disks, devices[0], devices[1]]},
            "kubernetes.io/host-path": {"paths": [HP_ROOT]}}})]
        objects = [hostname_node("node1"), hostname_node("node2")]
        objects += claimed("pv-dir", {"local": {"path": os.path.join(disks, "vol-dir")}}, "apps/dir",
                           node_affinity=affinity("node1"))
        objects += claimed("pv-blk", {"local": {"path": devices[0], "fsType": "ext4"}}, "apps/blk",
                           node_affinity=affinity("node1"))
        objects += claimed("pv-swap", {"local": {"path": devices[1], "fsType": "ext4"}}, "apps/swap",
                           node_affinity=affinity("node1"))
        objects += claimed("pv-far", {"local": {"path": os.path.join(disks, "vol-dir")}}, "apps/far",
                           node_affinity=affinity("node1"))
        objects += claimed("pv-etc", {"local": {"path": "/etc"}}, "apps/etc", node_affinity=affinity("node1"))
        objects += claimed("pv-hp", {"hostPath": {"path": HP_DIR, "type": "DirectoryOrCreate"}}, "apps/hp")
        objects += claimed("pv-hpfile", {"hostPath": {"path": HP_DIR, "type": "File"}}, "apps/hpfile")
        objects += [pod("dir", "p-dir", "node1", "apps/dir"), pod("blk", "p-blk", "node1", "apps/blk"),
                    pod("swap", "p-swap", "node1", "apps/swap"), pod("far", "p-far", "node2", "apps/far"),
                    pod("etc", "p-etc", "node1", "apps/etc"), pod("hp", "p-hp", "node2", "apps/hp"),
                    pod("hpfile", "p-hpfile", "node2", "apps/hpfile")]
        write_list(cluster.state, objects)
        yield cluster
    finally:
        for device in devices:
            subprocess.run(["losetup", "-d", device], check=False)


def reasons(run):
    """Every blocked entry and error of the run, as text, with what it names."""
    report = run.report()
    return [json.dumps(entry, sort_keys=True) for entry in (report.get("blocked") or []) + (report.get("errors") or [])]


def test_local_and_host_path_volumes_are_set_up_in_the_kubelets_layout(kv):
    swap_before = subprocess.run(["head", "-c", "1048576", kv.shared["swap"]], stdout=subprocess.PIPE,
                                 check=True).stdout
    run = kv.reconcile(kv.options, expect_rc="nonzero")  # pv-swap fails on node1: the run says so
    node1 = kv.mounts("node1")
    # the directory, bind-mounted straight into its pod
    assert local_mount("p-dir", "pv-dir") in node1, (node1, run.describe())
    # the blank device: formatted ext4, mounted at the plugin's global path, bind-mounted into its pod
    assert node1[local_global("pv-blk")]["fstype"] == "ext4", node1
    assert node1[local_global("pv-blk")]["source"] == kv.shared["blk"], node1
    assert node1[local_mount("p-blk", "pv-blk")]["fstype"] == "ext4", node1
    # hostPath: nothing mounted, the directory created with the kubelet's mode
    assert kv.mounts("node2") == {}
    assert kv.ssh("node2", "stat -c %%a %s" % HP_DIR).strip() == "755"
    # never attached: not attachable plugins have no VolumeAttachment and no volumesAttached
    data = kv.cluster()
    assert items(data, "VolumeAttachment") == []
    assert not (get(data, "Node", "node1").get("status") or {}).get("volumesAttached")
    text = "\n".join(reasons(run))
    # refused at plan time, nothing mounted for them
    assert "volume node affinity conflict" in text, text
    assert not [p for p in kv.mounts("node2") if "pv-far" in p]
    assert "pv-etc" in text and "/etc" in text, text
    assert not [p for p in node1 if "pv-etc" in p]
    # the device holding a swap signature is kept, the failure names the volume and the node
    assert "pv-swap" in text and "node1" in text, text
    assert not [p for p in node1 if "pv-swap" in p]
    # hostPath type File on a directory: the kubelet's words, on node2, nothing marked as published
    assert "hostPath type check failed: %s is not a file, it's a directory" % HP_DIR in text or \
        "hostPath type check failed: %s is not a file" % HP_DIR in text, text
    assert "pv-hpfile" in text and "node2" in text, text
    assert kv.ssh("node2", "ls %s/pods/p-hpfile/volumes/kubernetes.io~host-path/ 2>/dev/null || true" % KUBELET).strip() == ""
    assert subprocess.run(["head", "-c", "1048576", kv.shared["swap"]], stdout=subprocess.PIPE,
                          check=True).stdout == swap_before, "the swap device was written to"
    assert "swap" in subprocess.run(["blkid", "-o", "value", "-s", "TYPE", kv.shared["swap"]],
                                    stdout=subprocess.PIPE, universal_newlines=True, check=False).stdout
    kv.shared["dir_sum"] = kv.write_data("node1", local_mount("p-dir", "pv-dir"), DIR_FILE)
    kv.shared["blk_sum"] = kv.write_data("node1", local_mount("p-blk", "pv-blk"), BLK_FILE)
    # the directory's data is the directory's: it lands in the PV's path on the host
    assert os.path.exists(os.path.join(kv.shared["disks"], "vol-dir", DIR_FILE))
    kv.shared["set_up"] = True


def without_failing_volumes(kv):
    """The volumes that cannot be served leave the cluster: what stays must converge with rc 0."""
    data = kv.cluster()
    data["items"] = [o for o in data["items"]
                     if not (o["kind"] == "Pod" and o["metadata"]["name"] in ("swap", "far", "etc", "hpfile"))]
    write_list(kv.state, data["items"])


def test_a_second_run_changes_nothing(kv):
    assert kv.shared.get("set_up"), "needs the first run"
    without_failing_volumes(kv)
    first = kv.reconcile(kv.options)  # the failed pv-swap's pod is gone: nothing left to do but converge
    before = kv.state_bytes()
    again = kv.reconcile(kv.options)
    assert all(again.changed(h) == 0 for h in kv.nodes), (first.describe(), again.describe())
    assert again.node_module_runs() == {}, again.node_module_runs()
    assert again.plan() == [], again.plan()
    assert kv.state_bytes() == before
    kv.shared["converged"] = True


def test_data_is_kept_when_the_pods_go_and_come_back(kv):
    assert kv.shared.get("converged"), "needs the converged cluster"
    data = kv.cluster()
    pods = [o for o in data["items"] if o["kind"] == "Pod" and o["metadata"]["name"] in ("dir", "blk")]
    write_list(kv.state, [o for o in data["items"] if o not in pods])
    # every local volume mounted now goes: the teardown guard asks the operator to say so
    kv.reconcile(kv.options + ["-e", "kubevol_allow_mass_teardown=true"])
    node1 = kv.mounts("node1")
    assert not [p for p in node1 if "local-volume" in p], node1
    # unmounting never touches the PV's directory
    assert os.path.exists(os.path.join(kv.shared["disks"], "vol-dir", DIR_FILE))
    write_list(kv.state, kv.cluster()["items"] + pods)
    kv.reconcile(kv.options)
    assert kv.read_sum("node1", local_mount("p-dir", "pv-dir"), DIR_FILE) == kv.shared["dir_sum"]
    assert kv.read_sum("node1", local_mount("p-blk", "pv-blk"), BLK_FILE) == kv.shared["blk_sum"]
    kv.shared["back"] = True


def test_data_is_kept_across_a_restart_of_the_nodes(kv):
    assert kv.shared.get("back"), "needs the pods back"
    for node in kv.nodes:
        kv.kill_node(node)
    kv.testnodes("up", "2")  # fresh kubelet dirs and /var/lib: rebooted machines; the disks outlive them
    assert kv.mounts("node1") == {}
    kv.reconcile(kv.options)
    node1 = kv.mounts("node1")
    assert node1[local_global("pv-blk")]["fstype"] == "ext4", node1
    assert kv.read_sum("node1", local_mount("p-dir", "pv-dir"), DIR_FILE) == kv.shared["dir_sum"]
    assert kv.read_sum("node1", local_mount("p-blk", "pv-blk"), BLK_FILE) == kv.shared["blk_sum"]
    assert kv.ssh("node2", "stat -c %%a %s" % HP_DIR).strip() == "755"
    again = kv.reconcile(kv.options)
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    assert again.node_module_runs() == {}, again.node_module_runs()
