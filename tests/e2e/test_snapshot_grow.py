"""A claim restored from a snapshot of a smaller claim into a larger one gets a filesystem as large as its volume, on an
SSH test node, with kubevol's loop driver and the file store: ext4 grown offline before the stage's mount, xfs grown
with xfs_growfs right after it (as the block CSI drivers' NodeStageVolume: mount-utils NeedResize, then Resize).

In order, on one cluster file:
1. two claims (ext4 64Mi, xfs 300Mi: mkfs.xfs wants 300 MB) provisioned on their pod's node, data written;
2. a snapshot of each taken;
3. a restore of each into a claim twice as large, of an Immediate class: CreateVolume only, no pod yet;
4. a pod that uses them: check mode plans their mounts and changes nothing; the run mounts them grown (``df`` shows
   the larger size) with the data; a second run changes nothing.

The xfs class mounts with ``nouuid``: a restored xfs has its source's UUID, which the kernel refuses to mount twice.
"""
import pytest

from e2e_lib import node_object, write_list
from provision_lib import LOOP, by_name, claim, pod, storage_class, target, volume_name
from snapshot_lib import restore, snapshot, snapshot_class

MiB = 1 << 20
XFS_OPTIONS = {"csi.storage.k8s.io/fstype": "xfs"}
SOURCES = (("esrc", "ext4", 64), ("xsrc", "xfs", 300))


def _classes():
    return [storage_class("loop-ext4", provisioner=LOOP, parameters={"csi.storage.k8s.io/fstype": "ext4"}),
            storage_class("loop-xfs", provisioner=LOOP, parameters=XFS_OPTIONS, mountOptions=["nouuid"]),
            storage_class("loop-ext4-now", provisioner=LOOP, mode="Immediate",
                          parameters={"csi.storage.k8s.io/fstype": "ext4"}),
            storage_class("loop-xfs-now", provisioner=LOOP, mode="Immediate", parameters=XFS_OPTIONS,
                          mountOptions=["nouuid"])]


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("snapgrow", 1)
    cluster.shared = {}
    write_list(cluster.state, [node_object("node1")] + _classes() + [
        claim("esrc", "loop-ext4", size="64Mi"), claim("xsrc", "loop-xfs", size="300Mi"),
        pod("writer", "node1", ["esrc", "xsrc"])])
    yield cluster


def _add(kv, objects):
    write_list(kv.state, kv.cluster()["items"] + objects)


def _df_bytes(kv, path):
    return int(kv.ssh("node1", "df -B1 --output=size %s | tail -1" % path).strip())


def test_sources_provisioned_and_snapshotted(kv):
    run = kv.reconcile()
    sums, sizes = {}, {}
    for name, fs, size in SOURCES:
        path = target("writer", volume_name("apps", name))
        assert kv.mounts("node1")[path]["fstype"] == fs, run.describe()
        sizes[name] = _df_bytes(kv, path)
        assert sizes[name] <= size * MiB
        sums[name] = kv.write_data("node1", path, "data.bin")
    _add(kv, [snapshot_class("loop-snaps", LOOP), snapshot("esnap", "esrc", "loop-snaps"),
              snapshot("xsnap", "xsrc", "loop-snaps")])
    run = kv.reconcile()
    snapshots = by_name(kv.cluster(), "VolumeSnapshot")
    assert all(snapshots[n]["status"]["readyToUse"] for n in ("esnap", "xsnap")), run.describe()
    contents = by_name(kv.cluster(), "VolumeSnapshotContent")
    assert contents["snapcontent-snapuid-esnap"]["spec"]["sourceVolumeMode"] == "Filesystem"
    kv.shared.update(sums=sums, sizes=sizes)


def test_a_restore_into_a_larger_claim_is_grown_when_staged(kv):
    sums = kv.shared.get("sums")
    assert sums, "needs the snapshots"
    _add(kv, [restore("ebig", "loop-ext4-now", "esnap", size="128Mi"),
              restore("xbig", "loop-xfs-now", "xsnap", size="600Mi")])
    run = kv.reconcile()
    pvs = by_name(kv.cluster(), "PersistentVolume")
    assert pvs[volume_name("apps", "ebig")]["spec"]["capacity"]["storage"] == "128Mi", run.describe()
    assert pvs[volume_name("apps", "xbig")]["spec"]["capacity"]["storage"] == "600Mi"
    _add(kv, [pod("reader", "node1", ["ebig", "xbig"])])
    before, mounts = kv.state_bytes(), kv.mounts("node1")
    check = kv.reconcile(check=True)  # the node's check-mode grow is the unit test's (test_expand_stage.py)
    assert kv.state_bytes() == before and kv.mounts("node1") == mounts, check.describe()
    planned = [str(step) for step in check.plan() if step.get("action") == "mount"]
    assert all(any(volume_name("apps", n) in step for step in planned) for n in ("ebig", "xbig")), check.plan()
    run = kv.reconcile()
    for name, source, size in (("ebig", "esrc", 128), ("xbig", "xsrc", 600)):
        path = target("reader", volume_name("apps", name))
        assert path in kv.mounts("node1"), (path, run.describe())
        assert kv.read_sum("node1", path, "data.bin") == sums[source]
        grown = _df_bytes(kv, path)  # the filesystem's size less its metadata: the source's twice, or close
        assert 1.7 * kv.shared["sizes"][source] < grown <= size * MiB, (name, grown, run.describe())
    again = kv.reconcile()
    assert again.changed("node1") == 0, again.describe()
