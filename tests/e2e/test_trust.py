"""Trust, on 3 real SSH nodes: a partial, foreign or surprising cluster never costs a running pod its volume.

Chained on one converged example cluster; every case writes data first and checks it by sha256 after:
a 0-byte and an empty snapshot, a snapshot missing a node, the teardown guard, a foreign driver's
volumes, read-only per pod, and (last, it kills node2) an out-of-service node whose volume moves.
"""
import contextlib
import hashlib
import json

import pytest
import yaml

from e2e_lib import (KUBELET, get, global_mount_path, pod_mount_path, pod_uid, taint_out_of_service, va_name,
                     vas)

DB_POD, DB_PV, DB_HANDLE = "shop/db-0", "pv-db-data", "pv-db-data.img"
EBS = "ebs.csi.aws.com"


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("trust", 3)
    cluster.load_example()
    cluster.reconcile()
    cluster.shared = {}
    data = cluster.cluster()
    cluster.shared["db_path"] = pod_mount_path(pod_uid(data, DB_POD), DB_PV)
    cluster.shared["db_sum"] = cluster.write_data("node1", cluster.shared["db_path"], "table.dat")
    logs = pod_mount_path(pod_uid(data, "tools/log-writer"), "pv-shared-logs")
    cluster.shared["logs_path"] = logs
    cluster.shared["logs_sum"] = cluster.write_data("node3", logs, "app.log")
    return cluster


def write_state(kv, data):
    with open(kv.state, "w") as handle:
        yaml.safe_dump(data, handle)  # sorted keys: kubectl's order, so the file shows that it is whole


@contextlib.contextmanager
def state_restored(kv):
    """Run a case on a changed snapshot, then put the state file back as it was."""
    saved = kv.state_bytes()
    try:
        yield
    finally:
        with open(kv.state, "wb") as handle:
            handle.write(saved)


def edit_state(kv, change):
    data = kv.cluster()
    change(data)
    write_state(kv, data)
    return data


def remove(data, kind, name, namespace=None):
    obj = get(data, kind, name, namespace)
    data["items"].remove(obj)
    return obj


def assert_untouched(kv, before):
    after = kv.snapshot()
    for node in kv.nodes:
        assert after[node]["mounts"] == before[node]["mounts"], node
    assert after["loops"] == before["loops"]
    assert kv.read_sum("node1", kv.shared["db_path"], "table.dat") == kv.shared["db_sum"]
    assert kv.read_sum("node3", kv.shared["logs_path"], "app.log") == kv.shared["logs_sum"]


def no_teardown(run):
    return [s for s in run.plan() if s["action"] in ("unmount", "detach")] == []


# -- 1. a snapshot must look like a cluster ---------------------------------------------------------

@pytest.mark.parametrize("check", [False, True], ids=["run", "check"])
def test_zero_byte_snapshot_fails_clearly_and_touches_nothing(kv, check):
    before = kv.snapshot()
    with state_restored(kv):
        open(kv.state, "w").close()  # what `kubectl get ... > cluster.yaml` leaves when kubectl failed
        run = kv.reconcile(check=check, expect_rc="nonzero")
        assert "the file is empty" in run.stdout and kv.state in run.stdout, run.describe()
        assert run.node_module_runs() == {}
        assert kv.state_bytes() == b""
        assert_untouched(kv, before)


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_snapshot_cut_short_before_the_pods_fails_clearly_and_touches_nothing(kv, fmt):
    """What an interrupted `kubectl get ... -o yaml > cluster.yaml` leaves: kubectl's output cut at a line boundary
    inside the items, here where the pods begin. Read as it parses it would unmount and detach every running pod's
    volume; the teardown guard is off, so only the refusal of the cut file keeps them."""
    before = kv.snapshot()
    with state_restored(kv):
        if fmt == "yaml":
            text = kv.state_bytes().decode()  # kubevol wrote it back in kubectl's order
            marker = "\n- apiVersion: v1\n  kind: Pod\n"
        else:
            text = json.dumps(kv.cluster(), indent=4, sort_keys=True)  # as `kubectl get ... -o json` prints it
            marker = '\n        {\n            "apiVersion": "v1",\n            "kind": "Pod",'
        assert marker in text
        cut = text[:text.index(marker) + 1]
        with open(kv.state, "w") as handle:
            handle.write(cut)
        run = kv.reconcile(["-e", "kubevol_allow_mass_teardown=true"], expect_rc="nonzero")
        expected = "not trusted as a whole snapshot" if fmt == "yaml" else "invalid JSON"
        assert expected in run.stdout and kv.state in run.stdout and "[KV-CLUSTER-FILE]" in run.stdout, \
            run.describe()
        assert run.node_module_runs() == {}
        assert kv.state_bytes() == cut.encode()
        assert_untouched(kv, before)


def test_empty_list_tears_nothing_down(kv):
    before = kv.snapshot()
    with state_restored(kv):
        write_state(kv, {"apiVersion": "v1", "items": [], "kind": "List", "metadata": {"resourceVersion": ""}})
        run = kv.reconcile()
        assert run.plan() == [] and run.node_module_runs() == {}, run.describe()
        table = "\n".join(run.plan_lines())
        for node in kv.nodes:
            assert "no Node object %s" % node in table, table
        assert_untouched(kv, before)


def test_snapshot_missing_a_node_leaves_that_node_alone(kv):
    """node3's Node object is missing and its pods now point at node1: node3 keeps its volume (it is not
    pictured) and node1 does not get a second attachment of the RWO volume."""
    before = kv.snapshot()

    def change(data):
        remove(data, "Node", "node3")
        for name in ("log-writer", "log-reader"):
            get(data, "Pod", name, "tools")["spec"]["nodeName"] = "node1"
    with state_restored(kv):
        edit_state(kv, change)
        run = kv.reconcile()
        assert no_teardown(run) and not [s for s in run.plan() if s["volume"] == "pv-shared-logs"], run.describe()
        blocked = (run.result("Plan the operations") or {}).get("blocked") or []
        assert any(b["node"] == "node3" and "no Node object node3" in b["reason"] for b in blocked), blocked
        assert any(b["volume"] == "pv-shared-logs" and b["reason"].startswith("Multi-Attach error") for b in blocked)
        assert_untouched(kv, before)


# -- 2. the teardown guard ----------------------------------------------------------------------------

def test_teardown_guard_refuses_then_allows(kv):
    before = kv.snapshot()
    removed = {}

    def change(data):
        for ref in (DB_POD, "shop/web-0"):
            namespace, name = ref.split("/")
            removed[ref] = remove(data, "Pod", name, namespace)
    edit_state(kv, change)
    state = kv.state_bytes()
    for check in (True, False):
        run = kv.reconcile(check=check, expect_rc="nonzero")
        assert "refusing a mass teardown" in run.stdout, run.describe()
        assert "kubevol_allow_mass_teardown=true" in run.stdout
        assert "node1 pv-db-data (unmount/pod, unmount/device, detach/device)" in run.stdout
        assert run.node_module_runs() == {}
        assert kv.state_bytes() == state
        assert_untouched(kv, before)

    run = kv.reconcile(["-e", "kubevol_allow_mass_teardown=true"])
    assert sorted(run.node_module_runs()) == ["node1", "node2"], run.node_module_runs()
    assert not [p for p in kv.mounts("node1") if DB_PV in p]

    # the pods come back: the same data is there
    edit_state(kv, lambda data: data["items"].extend(removed.values()))
    kv.reconcile()
    assert kv.read_sum("node1", kv.shared["db_path"], "table.dat") == kv.shared["db_sum"]
    again = kv.reconcile()
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()


# -- 4. foreign drivers are hands-off -----------------------------------------------------------------

def foreign_objects(uid):
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-ebs"},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                   "claimRef": {"namespace": "shop", "name": "ebs-data", "uid": "uid-ebs-claim"},
                   "csi": {"driver": EBS, "volumeHandle": "vol-0abc", "fsType": "ext4"}}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"namespace": "shop", "name": "ebs-data", "uid": "uid-ebs-claim"},
           "spec": {"volumeName": "pv-ebs", "resources": {"requests": {"storage": "1Gi"}}},
           "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "shop", "name": "ebs-app", "uid": uid},
           "spec": {"nodeName": "node1", "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "ebs-data"}}],
                    "containers": [{"name": "c", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}]},
           "status": {"phase": "Running", "containerStatuses": [{"name": "c", "state": {"running": {}}}]}}
    va = {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
          "metadata": {"name": "csi-" + hashlib.sha256(("vol-0abc" + EBS + "node1").encode()).hexdigest()},
          "spec": {"attacher": EBS, "nodeName": "node1", "source": {"persistentVolumeName": "pv-ebs"}},
          "status": {"attached": True}}
    return pv, pvc, pod, va


def test_foreign_driver_volumes_are_left_alone(kv):
    """node1 also runs an EBS volume the real kubelet manages (a tmpfs stands in for the disk): kubevol
    plans nothing for it, and when its pod goes and db-0 moves away the EBS mounts stay, untouched."""
    uid = "0e850000-0000-4000-8000-0000000000eb"
    gdir = "%s/plugins/kubernetes.io/csi/%s/%s" % (KUBELET, EBS, hashlib.sha256(b"vol-0abc").hexdigest())
    pdir = "%s/pods/%s/volumes/kubernetes.io~csi/pv-ebs" % (KUBELET, uid)
    kv.ssh("node1", " && ".join([
        "mkdir -p %s/globalmount %s/mount" % (gdir, pdir),
        "echo '%s' > %s/vol_data.json" % (json.dumps({"driverName": EBS, "volumeHandle": "vol-0abc",
                                                      "specVolID": "pv-ebs"}), gdir),
        "echo '%s' > %s/vol_data.json" % (json.dumps({"driverName": EBS, "volumeHandle": "vol-0abc",
                                                      "specVolID": "pv-ebs", "nodeName": "node1"}), pdir),
        "mount -t tmpfs -o size=8m ebs %s/globalmount" % gdir,
        "mount --bind %s/globalmount %s/mount" % (gdir, pdir),
    ]))
    ebs_sum = kv.write_data("node1", pdir + "/mount", "ebs.dat")
    pv, pvc, pod, va = foreign_objects(uid)

    def add(data):
        data["items"].extend([pv, pvc, pod, va])
        status = get(data, "Node", "node1").setdefault("status", {})
        status.setdefault("volumesAttached", []).append({"name": "kubernetes.io/csi/%s^vol-0abc" % EBS,
                                                         "devicePath": "/dev/nvme1n1"})
    edit_state(kv, add)
    run = kv.reconcile()
    assert run.plan() == [] and run.node_module_runs() == {}, run.describe()
    assert (run.result("Plan the operations") or {})["desired"]["foreign_volumes"] == 1

    # the EBS pod is gone and db-0 moves to node2: only kubevol's own volumes move
    edit_state(kv, lambda data: remove(data, "Pod", "ebs-app", "shop"))
    assert kv.edit("move-pod", DB_POD, "node2") == "changed"
    run = kv.reconcile()
    assert not [s for s in run.plan() if "ebs" in (s["volume"] or "")], run.plan()
    mounts = kv.mounts("node1")
    assert gdir + "/globalmount" in mounts and pdir + "/mount" in mounts
    assert kv.read_sum("node1", pdir + "/mount", "ebs.dat") == ebs_sum
    data = kv.cluster()
    kv.shared["db_path"] = pod_mount_path(pod_uid(data, DB_POD), DB_PV)
    assert kv.read_sum("node2", kv.shared["db_path"], "table.dat") == kv.shared["db_sum"]
    assert not [p for p in mounts if DB_PV in p]
    assert va["metadata"]["name"] in vas(data)  # the foreign record is not kubevol's to remove
    again = kv.reconcile()
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    kv.ssh("node1", "umount %s/mount && umount %s/globalmount" % (pdir, gdir))


# -- 5. read-only is per pod --------------------------------------------------------------------------

def ro_objects():
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-notes"},
          "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                   "claimRef": {"namespace": "shop", "name": "notes", "uid": "uid-notes-claim"},
                   "csi": {"driver": "loop.kubevol.io", "volumeHandle": "pv-notes.img", "fsType": "ext4",
                           "volumeAttributes": {"pool": "/var/lib/kubevol/pool"}}}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"namespace": "shop", "name": "notes", "uid": "uid-notes-claim"},
           "spec": {"volumeName": "pv-notes", "resources": {"requests": {"storage": "64Mi"}}},
           "status": {"phase": "Bound", "capacity": {"storage": "64Mi"}}}
    return pv, pvc


def notes_pod(name, uid, read_only):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "shop", "name": name, "uid": uid},
            "spec": {"nodeName": "node2",
                     "volumes": [{"name": "n", "persistentVolumeClaim": {"claimName": "notes", "readOnly": read_only}}],
                     "containers": [{"name": "c", "volumeMounts": [{"name": "n", "mountPath": "/n"}]}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "c", "state": {"running": {}}}]}}


def test_read_only_is_per_pod(kv):
    reader_uid, writer_uid = "0e850000-0000-4000-8000-00000000000a", "0e850000-0000-4000-8000-00000000000b"
    gpath = global_mount_path("pv-notes.img")
    reader, writer = pod_mount_path(reader_uid, "pv-notes"), pod_mount_path(writer_uid, "pv-notes")
    edit_state(kv, lambda data: data["items"].extend(list(ro_objects()) + [notes_pod("reader", reader_uid, True)]))
    kv.reconcile()
    mounts = kv.mounts("node2")
    assert "rw" in mounts[gpath]["options"], mounts[gpath]  # staged read-write although the first pod reads
    assert "ro" in mounts[reader]["options"]

    edit_state(kv, lambda data: data["items"].append(notes_pod("writer", writer_uid, False)))
    kv.reconcile()
    notes_sum = kv.write_data("node2", writer, "notes.txt")  # the writer really writes
    assert kv.read_sum("node2", reader, "notes.txt") == notes_sum
    assert kv.ssh("node2", "touch %s/x 2>&1 || echo refused" % reader).strip().endswith("refused")

    # an older kubevol left the staging read-only and the writer's bind read-only: fixed, data intact
    kv.ssh("node2", "mount -o remount,ro %s && mount -o remount,bind,ro %s" % (gpath, writer))
    run = kv.reconcile()
    assert [(s["action"], s["target"]) for s in run.plan()] == [("mount", "device"), ("mount", "pod")], run.plan()
    mounts = kv.mounts("node2")
    assert "rw" in mounts[gpath]["options"] and "rw" in mounts[writer]["options"] and "ro" in mounts[reader]["options"]
    kv.ssh("node2", "echo more >> %s/notes.txt.2 && sync" % writer)
    assert kv.read_sum("node2", writer, "notes.txt") == notes_sum
    again = kv.reconcile()
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()


# -- 6. an out-of-service node (last: it kills node2) ----------------------------------------------------

def test_out_of_service_node_releases_its_volume_and_the_volume_moves(kv):
    """node2 (db-0 with its RWO xfs volume) dies; the operator taints it out-of-service and the pod is
    rescheduled to node1: the attachment is released in the records at once, and the unreachable out-of-service
    node does not fail the run. The storage keeps node2's hold: node1 does not adopt node2's device and waits,
    naming node2. The operator, knowing node2 is gone for good (its devices gone), releases its holds
    (kubevol_force_release_holders): the volume moves and the data is there."""
    data = kv.cluster()
    kv.shared["web_path"] = pod_mount_path(pod_uid(data, "shop/web-0"), "pv-web-content")
    kv.shared["web_sum"] = kv.write_data("node2", kv.shared["web_path"], "index.html")
    kv.kill_node("node2")

    edit_state(kv, lambda data: taint_out_of_service(data, "node2"))
    assert kv.edit("move-pod", DB_POD, "node1") == "changed"
    run = kv.reconcile(expect_rc="nonzero")
    detaches = [s for s in run.plan() if s["action"] == "detach" and s["volume"] == DB_PV]
    assert len(detaches) == 1 and detaches[0]["record_only"] and detaches[0]["forced"], run.plan()
    errors = run.report().get("errors") or []
    assert [(e["node"], e["phase"]) for e in errors] == [("node1", "attach")], errors
    assert "held by node node2 (since" in errors[0]["msg"], errors
    assert va_name(DB_HANDLE, "node2") not in vas(kv.cluster())
    # a forced release of a node whose device still backs the image: still refused, never adopted
    force = ["-e", json.dumps({"kubevol_force_release_holders": ["node2"]})]
    run = kv.reconcile(force, expect_rc="nonzero")
    assert "already backs image" in run.report()["errors"][0]["msg"], run.report()
    assert DB_HANDLE in kv.power_off_devices("node2")
    run = kv.reconcile(force)
    data = kv.cluster()
    records = vas(data)
    assert va_name(DB_HANDLE, "node2") not in records
    assert records.get(va_name(DB_HANDLE, "node1")) == (DB_PV, "node1", True)
    path = pod_mount_path(pod_uid(data, DB_POD), DB_PV)
    assert kv.read_sum("node1", path, "table.dat") == kv.shared["db_sum"]
    attached = [e["name"] for e in (get(data, "Node", "node2").get("status") or {}).get("volumesAttached") or []]
    assert not [n for n in attached if DB_HANDLE in n], attached
    # what still runs on node2 (web-0, the notes pods) stays recorded there, blocked, not torn down
    blocked = run.report().get("blocked") or []
    assert any(b["node"] == "node2" and "unreachable" in b["reason"] for b in blocked), blocked
    assert records.get(va_name("pv-web-content.img", "node2")) == ("pv-web-content", "node2", True)


def test_deleted_node_releases_after_max_wait_for_unmount(kv):
    """node2 is deleted from the cluster and from the inventory; web-0 is rescheduled to node1. Its RWO
    volume stays node2's (Multi-Attach) until max_wait_for_unmount has passed since the detach was first
    requested, then it is released in the records (node2 has no host) and follows its pod."""
    def change(data):
        remove(data, "Node", "node2")
    edit_state(kv, change)
    assert kv.edit("move-pod", "shop/web-0", "node1") == "changed"
    limit = ["--limit", "node1,node3"]
    run = kv.reconcile(limit)
    assert not [s for s in run.plan() if s["volume"] == "pv-web-content"], run.plan()
    blocked = run.report().get("blocked") or (run.result("Plan the operations") or {}).get("blocked") or []
    assert any(b["volume"] == "pv-web-content" and b["reason"].startswith("Multi-Attach error") for b in blocked)
    assert any("node node2 has no Node object in the snapshot" in b["reason"] for b in blocked), blocked
    data = kv.cluster()
    web_va = get(data, "VolumeAttachment", va_name("pv-web-content.img", "node2"))
    assert web_va["metadata"]["annotations"].get("kubevol.io/detach-requested-at"), web_va

    run = kv.reconcile(limit + ["-e", "kubevol_max_wait_for_unmount=0",
                                "-e", json.dumps({"kubevol_force_release_holders": ["node2"]})])
    detach = [s for s in run.plan() if s["action"] == "detach" and s["volume"] == "pv-web-content"]
    assert len(detach) == 1 and detach[0]["record_only"] and detach[0]["forced"], run.plan()
    data = kv.cluster()
    records = vas(data)
    assert va_name("pv-web-content.img", "node2") not in records
    assert records.get(va_name("pv-web-content.img", "node1")) == ("pv-web-content", "node1", True)
    path = pod_mount_path(pod_uid(data, "shop/web-0"), "pv-web-content")
    assert kv.read_sum("node1", path, "index.html") == kv.shared["web_sum"]
