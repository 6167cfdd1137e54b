"""Snapshots, restores and clones through the role on 2 SSH test nodes with the file store (issue 40): the test CSI
plugin (CREATE_DELETE_SNAPSHOT, CLONE_VOLUME: a snapshot is a sparse copy of the volume's image in its pool) and
kubevol's loop driver (a sparse copy under its pool's snapshots/), through the same path.

In order, on one cluster file:
1. WaitForFirstConsumer claims provisioned on their pod's node, data written;
2. check mode shows each CreateSnapshot under its heading and changes nothing; the run takes them: the contents
   written with spec.source.volumeHandle, sourceVolumeMode and their status, the snapshots bound and ready, both
   with the snapshot-controller's finalizers;
3. a claim restored from each snapshot and a clone of a claim: CreateVolume with the content source, mounted on
   their pods' nodes with the data; a second run changes nothing;
4. a cluster file cut short is not read: no snapshot deleted;
5. the snapshots deleted: DeleteSnapshot for the Delete ones (the copies gone, the contents gone), the Retain one's
   content and copy kept;
6. that copy imported as a pre-provisioned snapshot (a content with spec.source.snapshotHandle): bound without
   CreateSnapshot, then restored with the data.
"""

import pytest

from e2e_lib import write_list
from provision_lib import by_name, counts, extra, target, volume_name
from provision_lib import pod, stop_plugins
from snapshot_lib import (
    first_objects, loop_snapshots, plugin_snapshots, restore, restore_objects, snapshot, snapshot_calls,
    snapshot_objects)
from csi_lib import DRIVER


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("snap", 2)
    plugins = {}
    try:
        from provision_lib import start_plugins
        plugins, pool = start_plugins(cluster)
        cluster.plugins, cluster.csi_pool, cluster.shared = plugins, pool, {}
        write_list(cluster.state, first_objects(cluster.nodes))
        yield cluster
    finally:
        stop_plugins(cluster, plugins)


def _add(kv, objects):
    data = kv.cluster()
    write_list(kv.state, data["items"] + objects)


def test_claims_provisioned_and_data_written(kv):
    run = kv.reconcile(extra())
    for name in ("src", "lsrc"):
        assert target("writer", volume_name("apps", name)) in kv.mounts("node1"), run.describe()
    kv.shared["sums"] = dict((name, kv.write_data("node1", target("writer", volume_name("apps", name)), "data.bin"))
                             for name in ("src", "lsrc"))


def test_snapshots_taken_as_the_snapshotter_takes_them(kv):
    assert kv.shared.get("sums"), "needs the first run"
    _add(kv, snapshot_objects())
    before, seen = kv.state_bytes(), counts(kv.plugins)
    check = kv.reconcile(extra() + ["--check"], check=True)
    table = "\n".join(check.plan_lines())
    assert "Snapshots (CreateSnapshot" in table, table
    for name, driver in (("snap", DRIVER), ("lsnap", "loop.kubevol.io"), ("kept", DRIVER)):
        line = [row for row in table.splitlines() if "snapcontent-snapuid-" + name in row]
        assert line and "CreateSnapshot" in line[0] and driver in line[0], table
    assert kv.state_bytes() == before and snapshot_calls(kv.plugins, seen) == []
    run = kv.reconcile(extra())
    made = [(c[1], c[2]["name"], c[2]["source_volume_id"]) for c in snapshot_calls(kv.plugins, seen)]
    assert sorted(made) == [("CreateSnapshot", "snapshot-snapuid-" + n, volume_name("apps", "src"))
                            for n in ("kept", "snap")], run.describe()
    assert plugin_snapshots(kv.csi_pool) == ["snapshot-snapuid-kept.img", "snapshot-snapuid-snap.img"]
    assert loop_snapshots(kv.dir) == ["snapshot-snapuid-lsnap"]
    data = kv.cluster()
    snapshots, contents = by_name(data, "VolumeSnapshot"), by_name(data, "VolumeSnapshotContent")
    for name, source in (("snap", "src"), ("lsnap", "lsrc"), ("kept", "src")):
        status = snapshots[name]["status"]
        assert status["readyToUse"] is True
        assert status["boundVolumeSnapshotContentName"] == "snapcontent-snapuid-" + name
        assert status["restoreSize"] == "64Mi" and status["creationTime"].endswith("Z")
        content = contents["snapcontent-snapuid-" + name]
        assert content["spec"]["source"] == {"volumeHandle": volume_name("apps", source)}
        assert content["spec"]["volumeSnapshotRef"]["uid"] == "snapuid-" + name
        assert content["status"]["snapshotHandle"] == "snapshot-snapuid-" + name
        assert content["status"]["restoreSize"] == 64 << 20 and content["status"]["readyToUse"] is True
        # the snapshot-controller's finalizers, as it writes them; spec.sourceVolumeMode, as it writes it
        assert content["metadata"]["finalizers"] == [
            "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"]
        assert snapshots[name]["metadata"]["finalizers"] == [
            "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection",
            "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection"]
        assert content["spec"]["sourceVolumeMode"] == "Filesystem"
    assert contents["snapcontent-snapuid-kept"]["spec"]["deletionPolicy"] == "Retain"
    kv.shared["snapped"] = True


def test_restored_and_cloned_claims_have_the_data(kv):
    assert kv.shared.get("snapped"), "needs the snapshots"
    _add(kv, restore_objects())
    seen = counts(kv.plugins)
    run = kv.reconcile(extra())
    sources = dict((c[2]["name"], c[2]["volume_content_source"]) for c in snapshot_calls(kv.plugins, seen))
    assert sources == {volume_name("apps", "restored"): {"snapshot": {"snapshot_id": "snapshot-snapuid-snap"}},
                       volume_name("apps", "clone"): {"volume": {"volume_id": volume_name("apps", "src")}}}, \
        run.describe()
    sums = kv.shared["sums"]
    for pod_name, node, name, source in (("reader", "node2", "restored", "src"), ("reader", "node2", "lrestored",
                                                                                  "lsrc"),
                                         ("cloner", "node1", "clone", "src")):
        path = target(pod_name, volume_name("apps", name))
        assert path in kv.mounts(node), (path, run.describe())
        assert kv.read_sum(node, path, "data.bin") == sums[source]
    again = kv.reconcile(extra())
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    kv.shared["restored"] = True


def test_a_cluster_file_cut_short_deletes_no_snapshot(kv):
    assert kv.shared.get("restored"), "needs the restores"
    data = kv.cluster()
    full = kv.state_bytes()
    kept = [o for o in data["items"] if o["kind"] != "VolumeSnapshot"]
    write_list(kv.state, kept)
    cut = kv.state_bytes()
    with open(kv.state, "wb") as handle:
        handle.write(cut[:cut.rindex(b"\nkind: List")])
    seen = counts(kv.plugins)
    kv.reconcile(extra(), expect_rc="nonzero")
    assert snapshot_calls(kv.plugins, seen) == []
    assert len(plugin_snapshots(kv.csi_pool)) == 2 and loop_snapshots(kv.dir) == ["snapshot-snapuid-lsnap"]
    with open(kv.state, "wb") as handle:
        handle.write(full)


def test_deleted_snapshots_go_by_their_deletion_policy(kv):
    assert kv.shared.get("restored"), "needs the restores"
    data = kv.cluster()
    write_list(kv.state, [o for o in data["items"] if o["kind"] != "VolumeSnapshot"])
    seen = counts(kv.plugins)
    run = kv.reconcile(extra())
    deleted = [(c[1], c[2]["snapshot_id"]) for c in snapshot_calls(kv.plugins, seen)]
    assert deleted == [("DeleteSnapshot", "snapshot-snapuid-snap")], run.describe()
    assert plugin_snapshots(kv.csi_pool) == ["snapshot-snapuid-kept.img"] and loop_snapshots(kv.dir) == []
    contents = by_name(kv.cluster(), "VolumeSnapshotContent")
    assert sorted(contents) == ["snapcontent-snapuid-kept"]  # Retain
    again = kv.reconcile(extra())
    assert all(again.changed(h) == 0 for h in kv.nodes) and snapshot_calls(kv.plugins, seen)[1:] == [], \
        again.describe()


def test_a_retained_snapshot_imported_as_pre_provisioned_is_bound_and_restored(kv):
    assert kv.shared.get("restored"), "needs the restores"
    imported = {"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
                "metadata": {"name": "imported"},
                "spec": {"driver": DRIVER, "deletionPolicy": "Retain",
                         "source": {"snapshotHandle": "snapshot-snapuid-kept"},
                         "volumeSnapshotRef": {"namespace": "apps", "name": "imported"}}}
    wanted = snapshot("imported", None, None)
    wanted["spec"] = {"source": {"volumeSnapshotContentName": "imported"}}
    _add(kv, [imported, wanted, restore("reimport", "csi-wffc", "imported"), pod("late", "node2", ["reimport"])])
    seen = counts(kv.plugins)
    run = kv.reconcile(extra(), expect_rc=None)  # the restore waits for the snapshot bound in this run
    assert snapshot_calls(kv.plugins, seen) == [], run.describe()
    status = by_name(kv.cluster(), "VolumeSnapshot")["imported"]["status"]
    assert status == {"boundVolumeSnapshotContentName": "imported", "readyToUse": True}
    assert "is not ready to use" in "\n".join(b["reason"] for b in run.report().get("blocked", []))
    run = kv.reconcile(extra())
    assert [(c[1], c[2]["volume_content_source"]) for c in snapshot_calls(kv.plugins, seen)] == [
        ("CreateVolume", {"snapshot": {"snapshot_id": "snapshot-snapuid-kept"}})], run.describe()
    path = target("late", volume_name("apps", "reimport"))
    assert kv.read_sum("node2", path, "data.bin") == kv.shared["sums"]["src"]
