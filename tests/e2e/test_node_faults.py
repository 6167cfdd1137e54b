"""Node-side faults that used to pass silently (issues 25 and 26), on 3 real SSH nodes, chained on one cluster:

1. a driver the nodes have no backend for, declared known: the run fails naming the driver and node, and
   nothing is recorded attached (it was "applied" and recorded attached: true);
2. an image holding xfs under a PV that says ext4: refused naming both types, the image unchanged (sha256),
   the node's other volume mounted (it was mounted as xfs with a warning);
3. a teardown batch of two volumes on one node, one of them still mounted elsewhere on the node: the other one
   is torn down and recorded, the moved pod's empty volumeDevices directory goes (the whole batch failed);
4. a node that is only unreachable, tainted out-of-service, its pod moved: the new node does not adopt its
   loop device but waits (the attach fails naming the holder and since when), the data stays; the returning
   node's cleanup releases the image and the same run attaches it on the new node (it used to adopt the
   device, and the returning node's cleanup detached it under the running pod).
"""
import hashlib
import json
import os

import pytest
import yaml

from e2e_lib import (KUBELET, get, global_mount_path, pod_device_path, pod_mount_path, pod_uid, taint_out_of_service,
                     va_name, vas)

HOSTPATH = "hostpath.csi.k8s.io"
DB_POD, DB_PV, DB_HANDLE = "shop/db-0", "pv-db-data", "pv-db-data.img"
JOURNAL_PV, JOURNAL_HANDLE = "pv-raw-journal", "pv-raw-journal.img"


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("faults", 3)
    cluster.load_example()
    cluster.reconcile()
    cluster.shared = {}
    return cluster


def write_state(kv, data):
    with open(kv.state, "w") as handle:
        yaml.safe_dump(data, handle, sort_keys=False)


def edit_state(kv, change):
    data = kv.cluster()
    change(data)
    write_state(kv, data)
    return data


def claim_objects(name, driver, handle, fs_type, node, uid, size="64Mi"):
    """A PV, its bound PVC and a pod on ``node`` using it."""
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-" + name},
          "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                   "claimRef": {"namespace": "shop", "name": name, "uid": "uid-claim-" + name},
                   "csi": {"driver": driver, "volumeHandle": handle, "fsType": fs_type,
                           "volumeAttributes": {"pool": "/var/lib/kubevol/pool"}}}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"namespace": "shop", "name": name, "uid": "uid-claim-" + name},
           "spec": {"volumeName": "pv-" + name, "resources": {"requests": {"storage": size}}},
           "status": {"phase": "Bound", "capacity": {"storage": size}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "shop", "name": "app-" + name, "uid": uid},
           "spec": {"nodeName": node,
                    "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": name}}],
                    "containers": [{"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]},
           "status": {"phase": "Running", "containerStatuses": [{"name": "c", "state": {"running": {}}}]}}
    return [pv, pvc, pod]


def node_counts(run, node):
    """The report's line for ``node``: "node1: 5 applied, 0 failed, ..."."""
    return [line for line in run.summary_lines() if line.strip().startswith(node + ":")]


def image_sum(kv, handle):
    with open(os.path.join(kv.dir, "pool", handle), "rb") as image:
        digest = hashlib.sha256()
        for block in iter(lambda: image.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def converged(kv):
    before = kv.state_bytes()
    again = kv.reconcile()
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    assert kv.state_bytes() == before


# -- 1. a volume kubevol cannot drive (issue 26) ----------------------------------------------------------

def test_a_known_driver_without_a_backend_fails_and_is_never_recorded_attached(kv):
    saved = kv.state_bytes()
    try:
        uid = "0e850000-0000-4000-8000-0000000000a1"
        edit_state(kv, lambda data: data["items"].extend(
            claim_objects("hp", HOSTPATH, "hp-vol-1", "ext4", "node1", uid)))
        run = kv.reconcile(["-e", json.dumps({"kubevol_known_drivers": [HOSTPATH, "loop.kubevol.io"]})],
                           expect_rc="nonzero")
        planned = [(s["action"], s["target"]) for s in run.plan() if s["volume"] == "pv-hp"]
        assert ("attach", "device") in planned and ("mount", "device") in planned, run.plan()
        errors = run.report().get("errors") or []
        assert [(e["node"], e["phase"]) for e in errors] == [("node1", "attach")], run.report()
        assert HOSTPATH in errors[0]["msg"] and "node1" in errors[0]["msg"] and "no backend" in errors[0]["msg"]
        counts = node_counts(run, "node1")
        assert len(counts) == 1 and " 0 applied, 1 failed" in counts[0], run.summary_lines()  # not "applied"
        records = vas(kv.cluster())
        assert records.get(va_name("hp-vol-1", "node1"), (None, None, False))[2] is False, records
        assert not [p for p in kv.mounts("node1") if "pv-hp" in p]
        blocked = run.report().get("blocked") or []
        assert any(b["volume"] == "pv-hp" and b["action"] == "mount" for b in blocked), blocked
    finally:
        with open(kv.state, "wb") as handle:
            handle.write(saved)


# -- 2. a filesystem of another type than the PV's fsType (issue 25) -------------------------------------

def test_another_filesystem_under_the_pv_is_refused_kept_and_the_others_go_on(kv):
    kv.ssh("node1", "truncate -s 320M /var/lib/kubevol/pool/pv-mixed.img && "
                    "mkfs.xfs -q /var/lib/kubevol/pool/pv-mixed.img")
    before = image_sum(kv, "pv-mixed.img")
    mixed_uid, fine_uid = "0e850000-0000-4000-8000-0000000000b1", "0e850000-0000-4000-8000-0000000000b2"
    edit_state(kv, lambda data: data["items"].extend(
        claim_objects("mixed", "loop.kubevol.io", "pv-mixed.img", "ext4", "node1", mixed_uid, "320Mi")
        + claim_objects("fine", "loop.kubevol.io", "pv-fine.img", "ext4", "node1", fine_uid)))
    run = kv.reconcile(expect_rc="nonzero")
    errors = run.report().get("errors") or []
    assert [(e["node"], e["phase"], e["volumes"]) for e in errors] == [("node1", "mount", ["pv-mixed"])], errors
    assert 'failed to mount the volume as "ext4", it already contains xfs' in errors[0]["msg"], errors
    assert "fsType" in errors[0]["msg"] and "node1" in errors[0]["msg"]
    mounts = kv.mounts("node1")
    assert global_mount_path("pv-mixed.img") not in mounts and not [p for p in mounts if "pv-mixed" in p]
    assert pod_mount_path(fine_uid, "pv-fine") in mounts  # the node's other volume went on
    assert image_sum(kv, "pv-mixed.img") == before  # never formatted, never mounted
    # the PV's fsType fixed, the data is there

    def fix(data):
        get(data, "PersistentVolume", "pv-mixed")["spec"]["csi"]["fsType"] = "xfs"
    edit_state(kv, fix)
    kv.reconcile()
    assert kv.mounts("node1")[global_mount_path("pv-mixed.img")]["fstype"] == "xfs"


# -- 3. one failed volume of a teardown batch (issue 25) ---------------------------------------------------

def test_one_volume_that_cannot_be_torn_down_never_stops_the_others(kv):
    """db-0 (pv-db-data, Filesystem, and pv-raw-journal, Block) moves node1 -> node2; pv-db-data's device is also
    mounted outside kubevol's pod mounts on node1, so its teardown is refused. pv-raw-journal is torn down,
    recorded and attached on node2 all the same."""
    data = kv.cluster()
    old_uid = pod_uid(data, DB_POD)
    db_path = pod_mount_path(old_uid, DB_PV)
    kv.shared["db_sum"] = kv.write_data("node1", db_path, "table.dat")
    kv.ssh("node1", "mkdir -p /mnt/held && mount --bind %s /mnt/held" % global_mount_path(DB_HANDLE))
    try:
        assert kv.edit("move-pod", DB_POD, "node2") == "changed"
        run = kv.reconcile(expect_rc="nonzero")
        errors = run.report().get("errors") or []
        assert [(e["node"], e["phase"], e["volumes"]) for e in errors] == [("node1", "teardown", [DB_PV])], errors
        assert "/mnt/held" in errors[0]["msg"] and "not done" not in errors[0]["msg"], errors
        records = vas(kv.cluster())
        assert va_name(JOURNAL_HANDLE, "node1") not in records
        assert records.get(va_name(JOURNAL_HANDLE, "node2")) == (JOURNAL_PV, "node2", True)
        assert records.get(va_name(DB_HANDLE, "node1")) == (DB_PV, "node1", True)
        assert va_name(DB_HANDLE, "node2") not in records
        mounts = kv.mounts("node1")
        assert not [p for p in mounts if JOURNAL_PV in p] and db_path in mounts
        # the moved pod's Block directory is gone (empty), its volumes directory is not (pv-db-data is there)
        pod_dir = "%s/pods/%s" % (KUBELET, old_uid)
        assert kv.ssh("node1", "ls %s" % pod_dir).split() == ["volumes"]
        new_uid = pod_uid(kv.cluster(), DB_POD)
        assert pod_device_path(new_uid, JOURNAL_PV) in kv.mounts("node2")
    finally:
        kv.ssh("node1", "umount /mnt/held; rmdir /mnt/held", check=False)
    kv.reconcile()
    data = kv.cluster()
    new_path = pod_mount_path(pod_uid(data, DB_POD), DB_PV)
    assert kv.read_sum("node2", new_path, "table.dat") == kv.shared["db_sum"]
    assert kv.ssh("node1", "ls -A %s/pods/%s 2>&1 || true" % (KUBELET, old_uid)).strip() == ""
    converged(kv)
    kv.shared["db_on_node2"] = True


# -- 4. a node that was only unreachable, tainted out-of-service (issue 25) ------------------------------

def unreachable_inventory(kv, node):
    """The inventory with ``node`` on a port nothing listens on: unreachable for the run, alive with its mounts."""
    with open(kv.inventory) as handle:
        inv = yaml.safe_load(handle)
    inv["all"]["children"]["nodes"]["hosts"][node]["ansible_port"] = 9  # discard: refused on loopback
    path = os.path.join(kv.dir, "inventory-%s-down.yml" % node)
    with open(path, "w") as handle:
        yaml.safe_dump(inv, handle)
    return path


def test_an_out_of_service_nodes_device_is_not_adopted_and_its_return_releases_it(kv):
    assert kv.shared.get("db_on_node2"), "needs db-0 on node2"
    data = kv.cluster()
    db_path = pod_mount_path(pod_uid(data, DB_POD), DB_PV)
    checksum = kv.write_data("node2", db_path, "table.dat")
    loops_before = kv.loops()

    edit_state(kv, lambda data: taint_out_of_service(data, "node2"))
    assert kv.edit("move-pod", DB_POD, "node1") == "changed"
    run = kv.reconcile(inventory=unreachable_inventory(kv, "node2"), expect_rc="nonzero")
    detaches = [s for s in run.plan() if s["action"] == "detach" and s["volume"] == DB_PV]
    assert len(detaches) == 1 and detaches[0]["record_only"], run.plan()
    errors = run.report().get("errors") or []
    attach_errors = [e for e in errors if e["node"] == "node1" and e["phase"] == "attach"]
    assert attach_errors and DB_PV in attach_errors[0]["volumes"], errors
    assert "held by node node2 (since 20" in attach_errors[0]["msg"], attach_errors
    assert "kubevol_force_release_holders" in attach_errors[0]["msg"]
    records = vas(kv.cluster())
    assert va_name(DB_HANDLE, "node2") not in records  # the records are released: out of service
    assert records.get(va_name(DB_HANDLE, "node1"), (None, None, False))[2] is False, records
    assert not [p for p in kv.mounts("node1") if DB_PV in p or JOURNAL_PV in p]
    assert kv.loops() == loops_before  # no device adopted, none attached a second time
    assert kv.read_sum("node2", db_path, "table.dat") == checksum  # node2 still has it, untouched

    # node2 comes back (reachable, the taint removed): its cleanup detaches, and the same run attaches on node1
    def back(data):
        node = get(data, "Node", "node2")
        node["spec"].pop("taints", None)
        for cond in node["status"].get("conditions") or []:
            if cond["type"] == "Ready":
                cond["status"] = "True"
    edit_state(kv, back)
    run = kv.reconcile()
    assert not [p for p in kv.mounts("node2") if DB_PV in p or JOURNAL_PV in p], kv.mounts("node2")
    data = kv.cluster()
    new_path = pod_mount_path(pod_uid(data, DB_POD), DB_PV)
    assert kv.read_sum("node1", new_path, "table.dat") == checksum
    records = vas(data)
    assert records.get(va_name(DB_HANDLE, "node1")) == (DB_PV, "node1", True)
    assert va_name(DB_HANDLE, "node2") not in records
    converged(kv)
