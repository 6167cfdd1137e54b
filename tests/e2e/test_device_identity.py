"""Converged means each pod sees its own volume, through the reconcile role on 2 real SSH nodes: the loop device under a
running pod's Block volume is detached outside kubevol (a plain losetup -d) and its number taken by another image;
the next run attaches the volume again and maps its new device at the pod's path (the plan says to restart the pod),
never reporting the stale map as converged; the pod's path then gives the volume's own data and device number, and
the run after it changes nothing."""
import hashlib
import os
import subprocess

import pytest
import yaml

from e2e_lib import KUBELET, bound_volume, node_object, write_list

NS = "db"
PV, CLAIM = "pv-raw", "raw"
UID = "9c9c9c9c-0000-4000-8000-00000000000a"
PATH = "%s/pods/%s/volumeDevices/kubernetes.io~csi/%s" % (KUBELET, UID, PV)


def block_pod():
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": NS, "name": "raw-0", "uid": UID},
            "spec": {"nodeName": "node1", "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": CLAIM}}],
                     "containers": [{"name": "c", "volumeDevices": [{"name": "d", "devicePath": "/dev/xvda"}]}]},
            "status": {"phase": "Running"}}


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("devid", 2)
    pv, pvc = bound_volume(PV, NS, CLAIM)
    pv["spec"]["volumeMode"] = pvc["spec"]["volumeMode"] = "Block"
    pv["spec"]["csi"].pop("fsType")
    write_list(cluster.state, [node_object("node1"), node_object("node2"), pv, pvc, block_pod()])
    cluster.fillers = []
    yield cluster
    for device in cluster.fillers:
        subprocess.run(["losetup", "-d", device], check=False)


def mapped(kv):
    """The "MAJ:MIN" the pod's map path gives on node1 (the bind lives in node1's mount namespace)."""
    major, minor = kv.ssh("node1", "stat -c '%%t %%T' %s" % PATH).split()
    return "%d:%d" % (int(major, 16), int(minor, 16))


def number(device):
    rdev = os.stat(device).st_rdev
    return "%d:%d" % (os.major(rdev), os.minor(rdev))


def wait(kv, expect_rc=0, timeout=2):
    """pod_volumes_wait for the pod: node1's result."""
    book = os.path.join(kv.dir, "wait.yml")
    with open(book, "w") as handle:
        yaml.safe_dump([{"hosts": "nodes", "gather_facts": False, "tasks": [
            {"name": "Wait", "kubevol.volumes.pod_volumes_wait": {
                "cluster_state": kv.state, "pods": ["db/raw-0"], "interval": 1, "timeout": timeout}}]}], handle)
    run = kv.reconcile(playbook=book, expect_rc=expect_rc)
    return dict((host, result) for _name, host, _status, result in run.executions(
        action="kubevol.volumes.pod_volumes_wait"))["node1"]


def head_sum(kv):
    return kv.ssh("node1", "head -c 1048576 %s | sha256sum" % PATH).split()[0]


def test_a_block_volume_detached_outside_kubevol_is_mapped_again_never_converged(kv):
    kv.reconcile()
    [(old, _ino, _ro)] = kv.loops()
    assert mapped(kv) == number(old)
    kv.ssh("node1", "dd if=/dev/urandom of=%s bs=1M count=1 conv=fsync status=none" % PATH)
    mine = head_sum(kv)

    # a plain losetup -d under the running pod, and the kernel gives the number to another image
    subprocess.run(["losetup", "-d", old], check=True)
    filler = os.path.join(kv.dir, "filler.img")
    with open(filler, "wb") as handle:
        handle.write(hashlib.sha256(b"someone else's data").digest() * (1 << 15))
    kv.fillers.append(subprocess.run(["losetup", "-f", "--show", filler], stdout=subprocess.PIPE,
                                     universal_newlines=True, check=True).stdout.strip())
    assert mapped(kv) == number(old)  # the pod's path still holds the old number
    # a pipeline waiting for the pod is told, not answered ready
    result = wait(kv, expect_rc="nonzero")
    [vol] = result["pods"][0]["volumes"]
    assert result["ready"] is False and vol["state"] == "waiting" and "map again" in vol["reason"], result

    run = kv.reconcile()
    steps = [(s["action"], s["target"], s["node"], s["volume"]) for s in run.plan()]
    assert steps == [("attach", "device", "node1", PV), ("mount", "pod", "node1", PV)], run.describe()
    [remap] = [s for s in run.plan() if s["action"] == "mount"]
    assert remap["pod"] == "db/raw-0" and "map again" in remap["reason"], remap
    assert "restart the pod" in remap["reason"] and "KV-BLOCK-REMAPPED" in remap["reason"], remap
    assert any("KV-BLOCK-REMAPPED" in line for line in run.plan_lines()), run.plan_lines()
    assert run.changed("node1"), run.describe()  # not "converged": it attached and mapped again
    [(new, _ino, _ro)] = kv.loops()
    assert number(new) != number(old)
    assert mapped(kv) == number(new)  # the old number is not what the pod's path gives
    assert head_sum(kv) == mine  # the volume's own data, not the filler's
    assert wait(kv, timeout=30)["ready"] is True

    again = kv.reconcile()
    assert again.plan() == [] and all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    assert mapped(kv) == number(new)
