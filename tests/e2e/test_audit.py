"""playbooks/audit.yml on 2 real SSH nodes: planted leaks are found (an image no PV names holding a filesystem, an
orphan pod directory of a gone pod, a VolumeAttachment of a deleted PV, a run lock whose process is dead); without the
flag, and in check mode with it, nothing changes (state file, the nodes' kubelet trees, the pool); with
kubevol_audit_clean=true only the safe ones go (the empty orphan directory, the stale VolumeAttachment, the dead
lock) and the image, a non-empty orphan directory and a mounted one stay, the mount mounted. A second cleaning run
changes nothing."""
import hashlib
import json
import os
import socket
import subprocess

import pytest

from e2e_lib import (KUBELET, REPO, bound_volume, node_object, require_compat_python, running_pod, va_name, vas,
                     write_list)

NS = "shop"
PV, CLAIM, UID_A = "pv-audit-keep", "data", "a0d17000-0000-4000-8000-00000000000a"
GONE_EMPTY = "a0d17000-0000-4000-8000-0000000000e1"   # a gone pod's tree of empty directories: cleanable
GONE_FILES = "a0d17000-0000-4000-8000-0000000000f2"   # a gone pod's directory holding a file: kept
GONE_MOUNT = "a0d17000-0000-4000-8000-0000000000d3"   # a gone pod's directory with a mount under it: kept, mounted
LEAKED = "leaked-audit.img"
DELETED_PV = "pv-audit-deleted"
AUDIT = os.path.join(REPO, "playbooks", "audit.yml")


def objects():
    return ([node_object("node1"), node_object("node2")] + bound_volume(PV, NS, CLAIM)
            + [running_pod(NS, "a", UID_A, "node1", CLAIM)])


def write(kv, items):
    write_list(kv.state, items)


def stale_va(node_name):
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
            "metadata": {"name": va_name(DELETED_PV + ".img", node_name)},
            "spec": {"attacher": "loop.kubevol.io", "nodeName": node_name,
                     "source": {"persistentVolumeName": DELETED_PV}},
            "status": {"attached": True, "attachmentMetadata": {"devicePath": "/dev/loop99"}}}


def dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def audit(kv, clean=False, check=False, expect_rc=0, python=None):
    extra = ["-e", "kubevol_hosts=nodes"] + (["-e", "kubevol_audit_clean=true"] if clean else [])
    run = kv.reconcile(playbook=AUDIT, extra=extra, check=check, expect_rc=expect_rc, python=python)
    nodes = dict((host, result) for _n, host, _s, result in run.executions(name="Audit each node"))
    [cluster] = [result for _n, _h, _s, result in run.executions(name="Audit the cluster")]
    return run, nodes, cluster


def by(findings, kind, where=None):
    return [f for f in findings if f["kind"] == kind and (where is None or f["where"] == where)]


def pool_sums(kv):
    """Each image's size, and the unmounted leaked image's sha256 (a mounted filesystem's own writes, ext4's lazy
    inode table init, reach its image: the volume's is compared by size)."""
    pool = os.path.join(kv.dir, "pool")
    out = {}
    for name in sorted(os.listdir(pool)):
        path = os.path.join(pool, name)
        if os.path.isfile(path):
            out[name] = os.stat(path).st_size
            if name == LEAKED:
                with open(path, "rb") as handle:
                    out[name] = (out[name], hashlib.sha256(handle.read()).hexdigest())
    return out


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("audit", 2)
    write(cluster, objects())
    cluster.reconcile()  # the kept volume: attached, mounted for pod a on node1, recorded
    pods = KUBELET + "/pods"
    cluster.ssh("node1", " && ".join([
        # an image no PV names, with a filesystem
        "truncate -s 64M /var/lib/kubevol/pool/%s" % LEAKED, "mkfs.ext4 -q -F /var/lib/kubevol/pool/%s" % LEAKED,
        "mkdir -p %s/%s/volumes/kubernetes.io~csi/pv-gone/mount %s/%s/plugins" % (pods, GONE_EMPTY, pods, GONE_EMPTY),
        "mkdir -p %s/%s/volumes/kubernetes.io~empty-dir/cache %s/%s/volumes/kubernetes.io~csi/pv-x/mount"
        % (pods, GONE_FILES, pods, GONE_FILES),
        "echo keep > %s/%s/volumes/kubernetes.io~empty-dir/cache/data.txt" % (pods, GONE_FILES),
        "mkdir -p %s/%s/volumes/kubernetes.io~empty-dir/scratch" % (pods, GONE_MOUNT),
        "mount -t tmpfs -o size=1m audit-tmpfs %s/%s/volumes/kubernetes.io~empty-dir/scratch" % (pods, GONE_MOUNT),
    ]))
    data = cluster.cluster()
    data["items"].append(stale_va("node1"))
    write(cluster, data["items"])
    lock = {"holder": "dead-run", "host": socket.gethostname(), "pid": dead_pid(), "pid_start": None,
            "since": "2026-11-25T00:00:00.000000Z", "renewed": "2099-01-01T00:00:00.000000Z", "duration": 600}
    with open(cluster.state + ".run-lock", "w") as handle:
        json.dump(lock, handle)
    yield cluster
    cluster.ssh("node1", "umount %s/%s/volumes/kubernetes.io~empty-dir/scratch" % (pods, GONE_MOUNT), check=False)


def unchanged_state(kv):
    with open(kv.state + ".run-lock", "rb") as handle:
        lock = handle.read()
    return kv.state_bytes(), lock, kv.snapshot(), pool_sums(kv)


def test_the_audit_finds_the_planted_leaks_and_changes_nothing(kv):
    before = unchanged_state(kv)
    run, nodes, cluster = audit(kv)
    assert unchanged_state(kv) == before, run.describe()
    assert not any(r.get("changed") for r in list(nodes.values()) + [cluster]), run.describe()
    findings = cluster["findings"]
    [image] = by(findings, "leaked_image", "/var/lib/kubevol/pool/" + LEAKED)[:1]
    assert image["content"] == "filesystem" and image["content_detail"] == "ext4", image
    assert image["size_bytes"] == 64 * 1024 * 1024 and 0 < image["allocated_bytes"] < image["size_bytes"], image
    assert not image["cleanable"] and "never deletes an image" in image["action"], image
    assert not by(findings, "leaked_image", "/var/lib/kubevol/pool/%s.img" % PV)  # a PV names it
    [empty] = by(findings, "orphan_pod_dir", "%s/pods/%s" % (KUBELET, GONE_EMPTY))
    assert empty["node"] == "node1" and empty["cleanable"] and "is not bound to node node1" in empty["why"], empty
    [files] = by(findings, "orphan_pod_dir", "%s/pods/%s" % (KUBELET, GONE_FILES))
    assert not files["cleanable"] and "data.txt" in files["why"], files
    [mounted] = by(findings, "orphan_pod_dir", "%s/pods/%s" % (KUBELET, GONE_MOUNT))
    assert not mounted["cleanable"] and "still mounted" in mounted["why"], mounted
    assert not by(findings, "orphan_pod_dir", "%s/pods/%s" % (KUBELET, UID_A))  # a live pod's
    [va] = by(findings, "stale_volume_attachment", "VolumeAttachment/" + va_name(DELETED_PV + ".img", "node1"))
    assert va["cleanable"] and "its PV %s no longer exists" % DELETED_PV in va["why"], va
    assert not by(findings, "stale_volume_attachment", "VolumeAttachment/" + va_name(PV + ".img", "node1"))
    [lock] = by(findings, "stale_run_lock")
    assert lock["cleanable"] and "is gone" in lock["why"] and lock["where"] == kv.state + ".run-lock", lock
    assert any(line.startswith("node1 leaked_image /var/lib/kubevol/pool/" + LEAKED) for line in cluster["report"])
    # check mode with the flag: the same report, nothing changed
    run, _nodes, cluster = audit(kv, clean=True, check=True)
    assert unchanged_state(kv) == before, run.describe()
    assert by(cluster["findings"], "stale_run_lock") and not any(f["cleaned"] for f in cluster["findings"])


def test_the_flag_cleans_only_what_is_safe(kv):
    sums = pool_sums(kv)
    run, nodes, cluster = audit(kv, clean=True)
    assert nodes["node1"]["changed"] and cluster["changed"], run.describe()
    pods = KUBELET + "/pods"
    listing = kv.ssh("node1", "cd %s && find . | sort" % pods)
    assert "./%s" % GONE_EMPTY not in listing, listing  # the empty tree is gone, rmdir by rmdir
    assert "./%s/volumes/kubernetes.io~empty-dir/cache/data.txt" % GONE_FILES in listing  # a file is kept
    assert "./%s/volumes/kubernetes.io~csi/pv-x/mount" % GONE_FILES not in listing  # its empty dirs went
    assert "%s/%s/volumes/kubernetes.io~empty-dir/scratch" % (pods, GONE_MOUNT) in kv.ssh("node1", "findmnt -rn -o TARGET")
    assert pool_sums(kv) == sums  # no image is touched: the leaked one and the volume's
    assert not os.path.exists(kv.state + ".run-lock")
    data = kv.cluster()
    assert va_name(DELETED_PV + ".img", "node1") not in vas(data)
    assert vas(data)[va_name(PV + ".img", "node1")] == (PV, "node1", True)  # the live volume's record stays
    findings = cluster["findings"]
    assert by(findings, "stale_run_lock")[0]["cleaned"]
    assert by(findings, "stale_volume_attachment")[0]["cleaned"]
    assert by(findings, "orphan_pod_dir", "%s/%s" % (pods, GONE_EMPTY))[0]["cleaned"]
    assert not by(findings, "leaked_image")[0]["cleaned"]
    # a second cleaning run finds the leaks it must not clean and changes nothing
    before = kv.state_bytes(), kv.snapshot()
    run, nodes, cluster = audit(kv, clean=True)
    assert (kv.state_bytes(), kv.snapshot()) == before, run.describe()
    assert not any(r.get("changed") for r in list(nodes.values()) + [cluster]), run.describe()
    kinds = set(f["kind"] for f in cluster["findings"])
    assert kinds == {"leaked_image", "orphan_pod_dir"}, cluster["report"]


def test_a_gone_pods_mounted_volume_is_reported_never_unmounted_and_contradicting_status_is_cleaned(kv):
    from e2e_lib import global_mount_path, node_status, unique_name
    data = kv.cluster()
    data["items"] = [o for o in data["items"] if not (o["kind"] == "Pod" and o["metadata"]["name"] == "a")]
    ghost = unique_name("ghost.img")
    for obj in data["items"]:
        if obj["kind"] == "Node" and obj["metadata"]["name"] == "node2":
            obj["status"]["volumesInUse"] = [ghost]
            # listed attached (and so in use too) with no device: the detached record clears both
            obj["status"]["volumesAttached"] = [{"name": unique_name("ghost2.img"), "devicePath": "/dev/loop98"}]
            obj["status"]["volumesInUse"].append(unique_name("ghost2.img"))
    write(kv, data["items"])
    mounts = kv.mounts("node1")
    assert "%s/pods/%s/volumes/kubernetes.io~csi/%s/mount" % (KUBELET, UID_A, PV) in mounts
    run, _nodes, cluster = audit(kv, clean=True)
    assert kv.mounts("node1") == mounts, run.describe()  # nothing is unmounted by the audit
    findings = cluster["findings"]
    [orphan] = by(findings, "orphaned_pod_volume", "%s/pods/%s/volumes/kubernetes.io~csi/%s" % (KUBELET, UID_A, PV))
    assert not orphan["cleanable"] and "pod %s is gone from the cluster" % UID_A in orphan["why"], orphan
    assert "run the reconcile" in orphan["action"]
    [unused] = by(findings, "unused_global_mount", global_mount_path(PV + ".img"))
    assert not unused["cleanable"] and unused["node"] == "node1", unused
    [pod_dir] = by(findings, "orphan_pod_dir", "%s/pods/%s" % (KUBELET, UID_A))
    assert not pod_dir["cleanable"] and "still mounted" in pod_dir["why"], pod_dir
    [in_use] = by(findings, "status_in_use_not_mounted")
    assert in_use["unique_volume_name"] == ghost, findings
    [attached] = by(findings, "status_attached_no_device")
    assert attached["unique_volume_name"] == unique_name("ghost2.img"), findings
    assert in_use["node"] == attached["node"] == "node2" and in_use["cleaned"] and attached["cleaned"], findings
    after = kv.cluster()
    assert node_status(after, "node2") == ([], [])
    assert node_status(after, "node1") == ([unique_name(PV + ".img")], [unique_name(PV + ".img")])
    assert vas(after)[va_name(PV + ".img", "node1")] == (PV, "node1", True)  # the mounted volume's record stays


def test_the_audit_runs_on_the_oldest_controller(kv):
    """ansible-core 2.19 on Python 3.11: the same findings, read only."""
    python = require_compat_python()
    before = kv.state_bytes(), kv.snapshot()
    run, _nodes, cluster = audit(kv, python=python)
    assert (kv.state_bytes(), kv.snapshot()) == before, run.describe()
    kinds = set(f["kind"] for f in cluster["findings"])
    assert {"leaked_image", "orphan_pod_dir", "orphaned_pod_volume", "unused_global_mount"} <= kinds, cluster["report"]
