"""An external CSI driver through the role, on 2 real SSH test nodes (issue 27).

The test CSI plugin (tests/csiplugin/plugin.py) runs inside each node's mount namespace (nsenter into the node's
sshd), serving Identity, Node and Controller on ``<kubelet>/plugins/<driver>/csi.sock`` with
PUBLISH_UNPUBLISH_VOLUME (ControllerPublishVolume attaches a loop device over an image in a pool both nodes see)
and STAGE_UNSTAGE_VOLUME. The operator names the driver in ``kubevol_driver_options`` with ``controller: node``;
the cluster file has its CSIDriver (attachRequired), a PV with a nodeStageSecretRef to a Secret, the claim and a
pod on node1.

1. One run: ControllerPublishVolume, NodeStageVolume, NodePublishVolume; the VolumeAttachment's
   attachmentMetadata is the publish_context; data written lands on the volume; the secret reaches the plugin
   and appears nowhere in the run's output or results.
2. A second run changes nothing and calls no mutating CSI method.
3. The pod deleted: NodeUnpublishVolume, NodeUnstageVolume, ControllerUnpublishVolume, in that order; the
   VolumeAttachment is gone.
"""
import json
import os
import subprocess

import pytest

from csi_lib import (DRIVER, MUTATING, SECRET, NodePlugin, _loops_backed_under, _output, _syslog, csi_volume, pod,
                     target, without_duplicates)
from e2e_lib import KUBELET, get, items, node_object, write_list


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("csiext", 2)
    pool = os.path.join(cluster.dir, "csi-pool")
    os.makedirs(pool)
    plugins = {}
    try:
        for node in cluster.nodes:
            plugins[node] = NodePlugin(cluster, node, pool).start()
        plugins["node1"].create("vol1", 64 << 20)
        cluster.plugins = plugins
        cluster.shared = {}
        cluster.options = ["-e", json.dumps({"kubevol_driver_options": {DRIVER: {"controller": "node"}}})]
        objects = [node_object("node1"), node_object("node2"),
                   {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
                    "spec": {"attachRequired": True, "podInfoOnMount": True}}]
        objects += csi_volume("pv-ext", "apps/ext", "vol1")
        web = pod("web", "p-web", "node1", "apps/ext")
        web["spec"]["serviceAccountName"] = "web-sa"
        objects += [web]
        write_list(cluster.state, objects)
        yield cluster
    finally:
        for plugin in plugins.values():
            plugin.stop()
            plugin.unmount_all()
        for device in _loops_backed_under(pool):
            subprocess.run(["losetup", "-d", device], check=False)
        left = _loops_backed_under(pool)
        assert not left, "loop devices left behind: %s" % left


def test_attach_stage_publish_and_data_written(kv):
    run = kv.reconcile(kv.options + ["-vvv"])  # every task's arguments and results printed: no secret among them
    calls = kv.plugins["node1"].methods()
    mutating = [m for m in calls if m in MUTATING]
    assert mutating == ["ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"], (mutating, run.describe())
    mounts = kv.mounts("node1")
    assert target("p-web", "pv-ext") in mounts, (mounts, run.describe())
    assert mounts[target("p-web", "pv-ext")]["fstype"] == "ext4"
    kv.shared["sum"] = kv.write_data("node1", target("p-web", "pv-ext"), "data.bin")
    data = kv.cluster()
    vas = items(data, "VolumeAttachment")
    assert len(vas) == 1 and vas[0]["status"]["attached"] is True, vas
    device = vas[0]["status"]["attachmentMetadata"]["devicePath"]
    assert device.startswith("/dev/loop"), vas
    stage = [c for c in kv.plugins["node1"].calls() if c["method"] == "NodeStageVolume"]
    # the nodeStageSecretRef's Secret reached the plugin (and NodeStageVolume only), and no output has it
    assert [c["secrets"] for c in stage] == ["expected"], stage
    assert stage[0]["request"]["secrets"] == {"password": "<redacted>"}
    assert all(c["secrets"] == "none" for c in kv.plugins["node1"].calls() if c["method"] != "NodeStageVolume")
    assert SECRET not in _output(run)
    assert SECRET not in _syslog(kv, "node1")
    # the CSIDriver's podInfoOnMount: the pod's own fields in NodePublishVolume's volume_context (csi_mounter.go)
    publish = [c for c in kv.plugins["node1"].calls() if c["method"] == "NodePublishVolume"]
    context = publish[0]["request"].get("volume_context") or publish[0]["request"].get("volumeContext") or {}
    assert {k: context.get(k) for k in ("csi.storage.k8s.io/pod.name", "csi.storage.k8s.io/pod.namespace",
                                        "csi.storage.k8s.io/pod.uid", "csi.storage.k8s.io/serviceAccount.name",
                                        "csi.storage.k8s.io/ephemeral")} == {
        "csi.storage.k8s.io/pod.name": "web", "csi.storage.k8s.io/pod.namespace": "apps",
        "csi.storage.k8s.io/pod.uid": "p-web", "csi.storage.k8s.io/serviceAccount.name": "web-sa",
        "csi.storage.k8s.io/ephemeral": "false"}, publish[0]["request"]
    kv.shared["device"] = device
    kv.shared["set_up"] = True


def test_a_second_run_changes_nothing(kv):
    assert kv.shared.get("set_up"), "needs the first run"
    before_calls = len(kv.plugins["node1"].calls())
    before = kv.state_bytes()
    again = kv.reconcile(kv.options)
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    assert again.plan() == [], again.plan()
    assert kv.state_bytes() == before
    assert not [m for m in kv.plugins["node1"].methods(before_calls) if m in MUTATING]
    assert SECRET not in _output(again)
    kv.shared["converged"] = True


def test_pod_deleted_unpublish_unstage_detach_in_order(kv):
    assert kv.shared.get("converged"), "needs the converged cluster"
    data = kv.cluster()
    data["items"] = [o for o in data["items"] if o["kind"] != "Pod"]
    write_list(kv.state, data["items"])
    since = len(kv.plugins["node1"].calls())
    run = kv.reconcile(kv.options)
    mutating = [m for m in kv.plugins["node1"].methods(since) if m in MUTATING]
    assert mutating == ["NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume"], (
        mutating, run.describe())
    assert kv.mounts("node1") == {}
    assert items(kv.cluster(), "VolumeAttachment") == []
    assert get(kv.cluster(), "Node", "node1")["status"].get("volumesAttached") in (None, [])
    assert SECRET not in _output(run)
    assert _loops_backed_under(kv.plugins["node1"].pool) == []


def test_the_pod_moved_to_another_node_finds_its_data(kv):
    """An attachable driver's volume follows its pod: node2's plugin publishes the same image (the pool both
    nodes see) and the data written on node1 is there."""
    assert kv.shared.get("converged"), "needs the converged cluster"
    data = kv.cluster()
    data["items"] = [o for o in data["items"] if o["kind"] != "Pod"] + [pod("web", "p-web2", "node2", "apps/ext")]
    write_list(kv.state, data["items"])
    since1, since2 = len(kv.plugins["node1"].calls()), len(kv.plugins["node2"].calls())
    run = kv.reconcile(kv.options)
    assert [m for m in kv.plugins["node2"].methods(since2) if m in MUTATING] == [
        "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"], run.describe()
    assert not [m for m in kv.plugins["node1"].methods(since1) if m in MUTATING]
    assert kv.read_sum("node2", target("p-web2", "pv-ext"), "data.bin") == kv.shared["sum"]
    vas = items(kv.cluster(), "VolumeAttachment")
    assert [va["spec"]["nodeName"] for va in vas] == ["node2"], vas
    assert SECRET not in _output(run)
    again = kv.reconcile(kv.options)
    assert all(again.changed(h) == 0 for h in kv.nodes) and again.plan() == [], again.describe()
    kv.shared["moved"] = True


def test_expansion_controller_then_node_with_the_claims_capacity_recorded(kv):
    """xfs (online grow works here; ext4's needs CAP_SYS_RESOURCE): ControllerExpandVolume grows the image, then
    NodeExpandVolume grows the mounted filesystem; the PV's and the PVC's capacity are recorded."""
    assert kv.shared.get("moved"), "needs the moved pod's run"
    kv.plugins["node2"].create("vol2", 320 << 20)
    data = kv.cluster()
    objects = without_duplicates(data["items"] + csi_volume("pv-grow", "apps/grow", "vol2", "320Mi", "xfs")
                                 + [pod("grow", "p-grow", "node2", "apps/grow")])
    write_list(kv.state, objects)
    run = kv.reconcile(kv.options)
    path = target("p-grow", "pv-grow")
    assert kv.mounts("node2")[path]["fstype"] == "xfs", run.describe()
    size = int(kv.ssh("node2", "df -B1 --output=size %s | tail -1" % path))
    data = kv.cluster()
    get(data, "PersistentVolumeClaim", "grow", "apps")["spec"]["resources"]["requests"]["storage"] = "400Mi"
    write_list(kv.state, data["items"])
    since = len(kv.plugins["node2"].calls())
    run = kv.reconcile(kv.options)
    mutating = [m for m in kv.plugins["node2"].methods(since) if m in MUTATING]
    assert mutating == ["ControllerExpandVolume", "NodeExpandVolume"], (mutating, run.describe())
    grown = int(kv.ssh("node2", "df -B1 --output=size %s | tail -1" % path))
    assert grown > size + (60 << 20), (size, grown)
    data = kv.cluster()
    assert get(data, "PersistentVolume", "pv-grow")["spec"]["capacity"]["storage"] == "400Mi"
    assert get(data, "PersistentVolumeClaim", "grow", "apps")["status"]["capacity"]["storage"] == "400Mi"
    assert SECRET not in _output(run)
    again = kv.reconcile(kv.options)
    assert all(again.changed(h) == 0 for h in kv.nodes) and again.plan() == [], again.describe()


def block_pod(name, uid, node, claim):
    obj = pod(name, uid, node, claim)
    obj["spec"]["containers"][0] = {"name": "c", "volumeDevices": [{"name": "d", "devicePath": "/dev/xvda"}]}
    return obj


def test_block_mode_through_the_same_calls(kv):
    """volumeMode Block: NodeStageVolume with a block capability at the kubelet's block staging directory, then
    NodePublishVolume binds the device onto the pod's volumeDevices file; the pod deleted: unpublish, unstage,
    detach."""
    assert kv.shared.get("moved"), "needs the moved pod's run"
    kv.plugins["node2"].create("vol3", 32 << 20)
    data = kv.cluster()
    objects = without_duplicates(data["items"] + csi_volume("pv-blk", "apps/blk", "vol3", "32Mi", mode="Block")
                                 + [block_pod("blk", "p-blk", "node2", "apps/blk")])
    write_list(kv.state, objects)
    since = len(kv.plugins["node2"].calls())
    run = kv.reconcile(kv.options)
    calls = kv.plugins["node2"].calls()[since:]
    assert [c["method"] for c in calls if c["method"] in MUTATING] == [
        "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"], run.describe()
    stage = [c for c in calls if c["method"] == "NodeStageVolume"][0]["request"]
    assert "block" in stage["volume_capability"], stage
    device_file = "%s/pods/p-blk/volumeDevices/kubernetes.io~csi/pv-blk" % KUBELET
    assert device_file in kv.mounts("node2"), run.describe()
    kv.ssh("node2", "printf block-data | dd of=%s bs=512 conv=notrunc,fsync status=none" % device_file)
    assert kv.ssh("node2", "head -c 10 %s" % device_file) == "block-data"
    again = kv.reconcile(kv.options)
    assert all(again.changed(h) == 0 for h in kv.nodes) and again.plan() == [], again.describe()
    data = kv.cluster()
    data["items"] = [o for o in data["items"] if not (o["kind"] == "Pod" and o["metadata"]["name"] == "blk")]
    write_list(kv.state, data["items"])
    since = len(kv.plugins["node2"].calls())
    run = kv.reconcile(kv.options)
    assert [m for m in kv.plugins["node2"].methods(since) if m in MUTATING] == [
        "NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume"], run.describe()
    assert device_file not in kv.mounts("node2")
    assert kv.ssh("node2", "ls %s/plugins/kubernetes.io/csi/volumeDevices/staging/ 2>/dev/null || true"
                  % KUBELET).strip() == ""
    assert SECRET not in _output(run)


def test_an_interrupted_unstage_leaves_the_volume_uncertain_never_absent(kv):
    """NodeUnstageVolume answers UNAVAILABLE (non-final: the plugin may have done it): the volume fails as
    uncertain, its VolumeAttachment stays and ControllerUnpublishVolume is not called; once the plugin answers
    again the next run unstages and detaches it."""
    assert kv.shared.get("moved"), "needs the moved pod's run"
    data = kv.cluster()
    assert get(data, "Pod", "grow", "apps") is not None
    data["items"] = [o for o in data["items"] if not (o["kind"] == "Pod" and o["metadata"]["name"] == "grow")]
    write_list(kv.state, data["items"])
    node2 = kv.plugins["node2"]
    node2.configure(fail={"NodeUnstageVolume": {"code": "UNAVAILABLE", "message": "try again"}})
    since = len(node2.calls())
    run = kv.reconcile(kv.options, expect_rc="nonzero")
    assert [m for m in node2.methods(since) if m in MUTATING] == ["NodeUnpublishVolume", "NodeUnstageVolume"]
    assert "uncertain" in run.stdout.lower() and "pv-grow" in run.stdout, run.describe()
    vas = [va for va in items(kv.cluster(), "VolumeAttachment")
           if va["spec"]["source"]["persistentVolumeName"] == "pv-grow"]
    assert vas and vas[0]["status"]["attached"] is True, vas
    node2.configure(fail={})
    since = len(node2.calls())
    run = kv.reconcile(kv.options)
    assert [m for m in node2.methods(since) if m in MUTATING] == ["NodeUnstageVolume", "ControllerUnpublishVolume"], \
        run.describe()
    assert not [va for va in items(kv.cluster(), "VolumeAttachment")
                if va["spec"]["source"]["persistentVolumeName"] == "pv-grow"]


def test_check_mode_makes_only_read_only_calls(kv):
    """--check for a new external volume: the plan is shown, the plugin gets read-only calls only (Probe,
    GetPluginInfo, capabilities, NodeGetInfo), nothing is mounted and the cluster file is unchanged."""
    assert kv.shared.get("moved"), "needs the moved pod's run"
    kv.plugins["node1"].create("vol5", 32 << 20)
    data = kv.cluster()
    write_list(kv.state, without_duplicates(data["items"] + csi_volume("pv-chk", "apps/chk", "vol5", "32Mi")
                                            + [pod("chk", "p-chk", "node1", "apps/chk")]))
    before = kv.state_bytes()
    since = len(kv.plugins["node1"].calls())
    run = kv.reconcile(kv.options, check=True)
    assert kv.state_bytes() == before, run.describe()
    assert not [m for m in kv.plugins["node1"].methods(since) if m in MUTATING], run.describe()
    assert not [p for p in kv.mounts("node1") if "pv-chk" in p]
    real = kv.reconcile(kv.options)
    assert target("p-chk", "pv-chk") in kv.mounts("node1"), real.describe()


def test_a_plugin_whose_stage_mounts_nothing_is_staged_once_and_unstaged_at_teardown(kv):
    """csi-driver-host-path's NodeStageVolume only records the volume: nothing is mounted at the staging path, so the
    mount table cannot say that it is staged. The node's own record of the NodeStageVolume (as the kubelet's actual
    state of world keeps it) makes a second run change nothing, and the teardown still calls NodeUnstageVolume
    before ControllerUnpublishVolume."""
    assert kv.shared.get("moved"), "needs the moved pod's run"
    kv.plugins["node1"].configure(stage_records_only=True)
    kv.plugins["node1"].create("vol6", 32 << 20)
    data = kv.cluster()
    write_list(kv.state, without_duplicates(data["items"] + csi_volume("pv-rec", "apps/rec", "vol6", "32Mi")
                                            + [pod("rec", "p-rec", "node1", "apps/rec")]))
    since = len(kv.plugins["node1"].calls())
    run = kv.reconcile(kv.options)
    assert [m for m in kv.plugins["node1"].methods(since) if m in MUTATING] == [
        "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"], run.describe()
    staging = [p for p in kv.mounts("node1") if p.endswith("/globalmount")]
    assert target("p-rec", "pv-rec") in kv.mounts("node1") and not [p for p in staging if "pv-rec" in p]
    since = len(kv.plugins["node1"].calls())
    again = kv.reconcile(kv.options)
    assert all(again.changed(h) == 0 for h in kv.nodes) and again.plan() == [], again.describe()
    assert not [m for m in kv.plugins["node1"].methods(since) if m in MUTATING]
    data = kv.cluster()
    write_list(kv.state, [o for o in data["items"] if not (o["kind"] == "Pod" and o["metadata"]["name"] == "rec")])
    since = len(kv.plugins["node1"].calls())
    run = kv.reconcile(kv.options)
    assert [m for m in kv.plugins["node1"].methods(since) if m in MUTATING] == [
        "NodeUnpublishVolume", "NodeUnstageVolume", "ControllerUnpublishVolume"], run.describe()
    kv.plugins["node1"].configure(stage_records_only=False)
