"""Hostile node states through the reconcile role, on 3 real SSH nodes: a symlink planted inside a node's
kubelet directory, a regular file where a mount point belongs, a PV that points its pool at an
application's directory, a PV named ../x and a pod uid that climbs out of the kubelet directory. Each is
refused with the path, pool or name named, nothing outside changes (checked by listing and sha256), and every
other volume still converges in the same run. The pool and the names are refused by the planner, before any
VolumeAttachment intent is recorded or any node touched (plan_validation).
"""
import pytest
import yaml

from e2e_lib import get, node_status, pod_mount_path, vas

VICTIM_UID = "99999999-9999-4999-8999-000000000001"
BYSTANDER_UID = "99999999-9999-4999-8999-000000000002"
APP_UID = "99999999-9999-4999-8999-000000000003"
OUTSIDE = "/tmp/kubevol-e2e-outside-etc"
APP_DIR = "/tmp/kubevol-e2e-app"


def volume(name, node, pod_uid, pool=None, handle=None):
    """A bound PV/PVC pair and a running pod that mounts it on ``node``."""
    claim, claim_uid = "claim-" + name, "uid-claim-" + name
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
          "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                   "claimRef": {"namespace": "shop", "name": claim, "uid": claim_uid},
                   "csi": {"driver": "loop.kubevol.io", "volumeHandle": handle or name + ".img", "fsType": "ext4",
                           "volumeAttributes": {"pool": pool or "/var/lib/kubevol/pool"}}},
          "status": {"phase": "Bound"}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"namespace": "shop", "name": claim, "uid": claim_uid},
           "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": name,
                    "resources": {"requests": {"storage": "64Mi"}}},
           "status": {"phase": "Bound", "capacity": {"storage": "64Mi"}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "shop", "name": "app-" + name, "uid": pod_uid},
           "spec": {"nodeName": node, "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}],
                    "containers": [{"name": "c", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}]},
           "status": {"phase": "Running"}}
    return [pv, pvc, pod]


def add(kv, objects):
    data = kv.cluster()
    data["items"].extend(objects)
    with open(kv.state, "w") as handle:
        yaml.safe_dump(data, handle)  # sorted keys: kubectl's order, so the file shows that it is whole


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("hostile", 3)
    cluster.load_example()
    cluster.reconcile()
    return cluster


@pytest.fixture(scope="module", autouse=True)
def scratch(kv):
    """The directories these tests create outside the kubelet directory, removed afterwards."""
    yield
    for node in kv.nodes:
        kv.ssh(node, "rm -rf %s %s" % (OUTSIDE, APP_DIR), check=False)


def outside_listing(kv, node):
    return kv.ssh(node, "find %s -printf '%%y %%s %%p\\n' | sort; sha256sum %s/passwd" % (OUTSIDE, OUTSIDE))


@pytest.mark.parametrize("what", ["symlink", "file"])
def test_a_planted_symlink_or_file_is_refused_and_the_rest_converges(kv, what):
    name = "pv-victim-" + what
    victim_uid = VICTIM_UID[:-2] + ("11" if what == "symlink" else "12")
    bystander_uid = BYSTANDER_UID[:-2] + ("21" if what == "symlink" else "22")
    kv.ssh("node1", "mkdir -p %s && echo 'root:x:0:0:root:/root:/bin/sh' > %s/passwd" % (OUTSIDE, OUTSIDE))
    before = outside_listing(kv, "node1")
    volume_dir = pod_mount_path(victim_uid, name).rsplit("/", 1)[0]
    if what == "symlink":
        kv.ssh("node1", "mkdir -p %s && ln -s %s %s" % (volume_dir.rsplit("/", 1)[0], OUTSIDE, volume_dir))
        expected = "refusing %s on node node1: it is a symlink (to %s)" % (volume_dir, OUTSIDE)
    else:
        kv.ssh("node1", "mkdir -p %s && echo data > %s/mount" % (volume_dir, volume_dir))
        expected = "refusing %s/mount on node node1: it is a regular file" % volume_dir
    add(kv, volume(name, "node1", victim_uid) + volume("pv-bystander-" + what, "node1", bystander_uid))

    run = kv.reconcile(expect_rc="nonzero")
    assert expected in run.stdout, run.describe()
    errors = run.report().get("errors") or []
    assert [(e["node"], e["volumes"]) for e in errors] == [("node1", [name])], errors
    # the bystander on the same node converged in the same run; nothing outside the kubelet dir changed
    assert pod_mount_path(bystander_uid, "pv-bystander-" + what) in kv.mounts("node1")
    assert outside_listing(kv, "node1") == before
    assert OUTSIDE not in kv.ssh("node1", "findmnt -rn -o TARGET")

    # once the planted path is removed by hand, the next run converges
    kv.ssh("node1", "rm -f %s; rm -f %s/mount" % (volume_dir, volume_dir))
    kv.reconcile()
    assert pod_mount_path(victim_uid, name) in kv.mounts("node1")
    assert outside_listing(kv, "node1") == before


def plan_blocked(run):
    return (run.result("Plan the operations") or {}).get("blocked") or []


def recorded(kv):
    """What the state file records of attachments: the VolumeAttachments and every Node's volumesAttached."""
    data = kv.cluster()
    return vas(data), dict((node, node_status(data, node)) for node in kv.nodes)


def test_a_pv_pointing_its_pool_at_an_application_directory_is_blocked_at_plan_time(kv):
    """The pool is checked against the operator's pools (kubevol_driver_options) by the planner: blocked before any
    intent is recorded, and no node runs anything for it (the node's own check stays as the last line)."""
    kv.ssh("node2", "mkdir -p %s && for i in $(seq 300000); do echo \"2026-11-23 request $i served\"; done > %s/app.log"
           % (APP_DIR, APP_DIR))
    before = kv.ssh("node2", "sha256sum %s/app.log" % APP_DIR)
    add(kv, volume("pv-app", "node2", APP_UID, pool=APP_DIR, handle="app.log"))
    records, snap = recorded(kv), kv.snapshot()
    run = kv.reconcile()
    blocked = plan_blocked(run)
    assert any(b["volume"] == "pv-app" and "PersistentVolume pv-app: spec.csi.volumeAttributes.pool '%s' is refused: "
               "the operator keeps loop images only in /var/lib/kubevol/pool" % APP_DIR in b["reason"]
               for b in blocked), run.describe()
    assert not [s for s in run.plan() if s["volume"] == "pv-app"]
    assert recorded(kv) == records  # no VolumeAttachment intent, no volumesAttached entry
    assert kv.snapshot() == snap  # no mount, directory, image or loop device on any node
    assert kv.ssh("node2", "sha256sum %s/app.log" % APP_DIR) == before
    assert "app.log" not in kv.ssh("node2", "losetup -a || true")
    # the rest of the cluster is unaffected: the example's volumes are all still where their pods are
    data = kv.cluster()
    assert get(data, "Pod", "db-0", "shop")["spec"]["nodeName"] in kv.nodes


ESCAPE = "/tmp/kubevol-e2e-escape"


def test_a_pv_named_dot_dot_and_a_pod_uid_that_climbs_out_are_blocked_before_anything_is_recorded(kv):
    """A PV named ../x and a pod whose uid climbs out of the kubelet directory: blocked in the plan, naming the
    object, the field and the value; nothing recorded in the state file and nothing created on any node."""
    kv.ssh("node3", "rm -rf %s" % ESCAPE, check=False)
    hostile_pv = volume("escape-pv", "node3", "99999999-9999-4999-8999-000000000031", handle="escape-pv.img")
    hostile_pv[0]["metadata"]["name"] = hostile_pv[1]["spec"]["volumeName"] = "../x"
    hostile_uid = volume("escape-uid", "node3", "../../../../tmp/kubevol-e2e-escape/uid", handle="escape-uid.img")
    add(kv, hostile_pv + hostile_uid)
    records, snap = recorded(kv), kv.snapshot()
    run = kv.reconcile()
    reasons = [b["reason"] for b in plan_blocked(run)]
    assert any("PersistentVolume ../x: metadata.name '../x' is refused: it would escape its directory" in r
               for r in reasons), run.describe()
    assert any("Pod shop/app-escape-uid: metadata.uid '../../../../tmp/kubevol-e2e-escape/uid' is refused" in r
               for r in reasons), run.describe()
    assert not [s for s in run.plan() if s["volume"] in ("../x", "escape-uid")], run.plan()
    assert recorded(kv) == records
    assert kv.snapshot() == snap
    assert kv.ssh("node3", "test -e %s && echo yes || echo no" % ESCAPE).strip() == "no"
    assert not [name for name, _size in kv.snapshot()["pool"] if name.startswith("escape-")]
