"""An external CSI driver whose Controller service runs on a host of the inventory, through the role (issue 27).

Three SSH test nodes: the test CSI plugin's controller (Identity and Controller only, with PUBLISH_UNPUBLISH_VOLUME
and EXPAND_VOLUME) runs in node3's mount namespace on its own socket there; node plugins (no CONTROLLER_SERVICE)
run on node1 and node2, each with its own CSI node id; all share one image pool. The operator says
``{controller: node3, controller_socket: <socket>}``. The controller calls run on node3 over its own connection,
in Kubernetes' order, and the nodes never call the Controller service.
"""
import json
import os
import subprocess

import pytest

from e2e_lib import get, items, node_object, taint_out_of_service, write_list
from csi_lib import (DRIVER, MUTATING, SECRET, NodePlugin, _loops_backed_under, _output, pod, target,
                     csi_volume)

CONTROLLER_SOCKET = "/var/lib/kubevol-csi-controller/csi.sock"


class ControllerPlugin(NodePlugin):
    """The test plugin serving the Controller service alone, on node3, at CONTROLLER_SOCKET."""

    def __init__(self, cluster, node, pool):
        NodePlugin.__init__(self, cluster, node, pool)
        self.socket = CONTROLLER_SOCKET


def _mutating(plugin, since=0):
    return [c for c in plugin.calls()[since:] if c["method"] in MUTATING]


def _counts(kv):
    return dict((name, len(plugin.calls())) for name, plugin in kv.plugins.items())


def _new(kv, since):
    """Every mutating call since ``since`` of all plugins, in time order: (plugin, method, request)."""
    calls = [(c["time"], name, c["method"], c["request"]) for name, plugin in kv.plugins.items()
             for c in plugin.calls()[since[name]:] if c["method"] in MUTATING]
    return [(name, method, request) for _t, name, method, request in sorted(calls, key=lambda c: c[0])]


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("csictl", 3)
    pool = os.path.join(cluster.dir, "csi-pool")
    os.makedirs(pool)
    plugins = {}
    try:
        for node in ("node1", "node2"):
            # node plugins: Node service only (no CONTROLLER_SERVICE), their own CSI node ids
            plugins[node] = NodePlugin(cluster, node, pool).start(plugin_caps=[], node_id="csi-" + node)
        plugins["ctl"] = ControllerPlugin(cluster, "node3", pool).start()
        plugins["ctl"].create("vol1", 320 << 20)
        cluster.plugins = plugins
        cluster.shared = {}
        cluster.options = ["-e", json.dumps({"kubevol_driver_options": {
            DRIVER: {"controller": "node3", "controller_socket": CONTROLLER_SOCKET}}})]
        objects = [node_object("node1"), node_object("node2"), node_object("node3"),
                   {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
                    "spec": {"attachRequired": True}}]
        volume = csi_volume("pv-rc", "apps/rc", "vol1", "320Mi", "xfs")
        # the controller's secrets too: each reaches its call only
        volume[0]["spec"]["csi"]["controllerPublishSecretRef"] = {"namespace": "apps", "name": "stage-secret"}
        volume[0]["spec"]["csi"]["controllerExpandSecretRef"] = {"namespace": "apps", "name": "stage-secret"}
        objects += volume + [pod("web", "p-web", "node1", "apps/rc")]
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


def _move(kv, uid, node):
    data = kv.cluster()
    data["items"] = [o for o in data["items"] if o["kind"] != "Pod"] + [pod("web", uid, node, "apps/rc")]
    write_list(kv.state, data["items"])


def test_attach_move_and_expand_with_the_controller_on_its_own_host(kv):
    since = _counts(kv)
    run = kv.reconcile(kv.options + ["-vvv"])
    calls = _new(kv, since)
    assert [(n, m) for n, m, _r in calls] == [("ctl", "ControllerPublishVolume"), ("node1", "NodeStageVolume"),
                                              ("node1", "NodePublishVolume")], (calls, run.describe())
    publish = calls[0][2]
    assert publish["node_id"] == "csi-node1", publish
    va = items(kv.cluster(), "VolumeAttachment")
    assert len(va) == 1 and va[0]["status"]["attached"] is True and va[0]["spec"]["nodeName"] == "node1", va
    # the controller's publish_context: recorded as the attachmentMetadata and handed to NodeStageVolume
    assert calls[1][2]["publish_context"] == va[0]["status"]["attachmentMetadata"], (calls[1][2], va)
    assert va[0]["status"]["attachmentMetadata"]["devicePath"].startswith("/dev/loop")
    secrets = dict((c["method"], c["secrets"]) for p in kv.plugins.values() for c in p.calls())
    assert secrets["ControllerPublishVolume"] == "expected" and secrets["NodeStageVolume"] == "expected", secrets
    assert not [c for p in kv.plugins.values() for c in p.calls() if c["secrets"] == "unexpected"]
    # the node plugins never saw a Controller call
    assert not [c for n in ("node1", "node2") for c in kv.plugins[n].calls() if c["method"].startswith("Controller")]
    total = _output(run)
    path = target("p-web", "pv-rc")
    checksum = kv.write_data("node1", path, "data.bin")

    # converged: a second run changes nothing and makes no mutating call anywhere
    since = _counts(kv)
    again = kv.reconcile(kv.options)
    assert all(again.changed(h) == 0 for h in kv.nodes) and again.plan() == [], again.describe()
    assert _new(kv, since) == []
    total += _output(again)

    # the pod moved: node1's teardown, then the controller's detach and attach, then node2's setup
    _move(kv, "p-web2", "node2")
    since = _counts(kv)
    run = kv.reconcile(kv.options)
    calls = _new(kv, since)
    assert [(n, m) for n, m, _r in calls] == [
        ("node1", "NodeUnpublishVolume"), ("node1", "NodeUnstageVolume"), ("ctl", "ControllerUnpublishVolume"),
        ("ctl", "ControllerPublishVolume"), ("node2", "NodeStageVolume"), ("node2", "NodePublishVolume")], (
        calls, run.describe())
    assert calls[2][2]["node_id"] == "csi-node1" and calls[3][2]["node_id"] == "csi-node2", calls
    path = target("p-web2", "pv-rc")
    assert kv.read_sum("node2", path, "data.bin") == checksum
    assert [v["spec"]["nodeName"] for v in items(kv.cluster(), "VolumeAttachment")] == ["node2"]
    total += _output(run)

    # expansion: the controller grows the image, then node2 the mounted xfs; the claim's capacity recorded
    size = int(kv.ssh("node2", "df -B1 --output=size %s | tail -1" % path))
    data = kv.cluster()
    get(data, "PersistentVolumeClaim", "rc", "apps")["spec"]["resources"]["requests"]["storage"] = "400Mi"
    write_list(kv.state, data["items"])
    since = _counts(kv)
    run = kv.reconcile(kv.options)
    calls = _new(kv, since)
    assert [(n, m) for n, m, _r in calls] == [("ctl", "ControllerExpandVolume"), ("node2", "NodeExpandVolume")], (
        calls, run.describe())
    assert [c["secrets"] for c in kv.plugins["ctl"].calls() if c["method"] == "ControllerExpandVolume"] == ["expected"]
    assert int(kv.ssh("node2", "df -B1 --output=size %s | tail -1" % path)) > size + (60 << 20)
    data = kv.cluster()
    assert get(data, "PersistentVolume", "pv-rc")["spec"]["capacity"]["storage"] == "400Mi"
    assert get(data, "PersistentVolumeClaim", "rc", "apps")["status"]["capacity"]["storage"] == "400Mi"
    total += _output(run)
    again = kv.reconcile(kv.options)
    assert all(again.changed(h) == 0 for h in kv.nodes) and again.plan() == [], again.describe()
    assert SECRET not in total + _output(again)
    kv.shared["moved"] = True


def test_the_controller_socket_gone_fails_naming_host_and_socket(kv):
    """The controller plugin stopped: the pod moved back to node1 is torn down on node2, the controller calls
    fail naming the driver, node3 and the socket, node1 neither stages nor publishes, and node2's attachment stays
    recorded; with the controller back, the next run converges."""
    assert kv.shared.get("moved"), "needs the first test's run"
    kv.plugins["ctl"].stop()
    kv.ssh("node3", "rm -f %s" % CONTROLLER_SOCKET)
    _move(kv, "p-web3", "node1")
    since = _counts(kv)
    run = kv.reconcile(kv.options, expect_rc="nonzero")
    calls = _new(kv, since)
    assert [(n, m) for n, m, _r in calls] == [("node2", "NodeUnpublishVolume"), ("node2", "NodeUnstageVolume")], (
        calls, run.describe())
    text = _output(run)
    assert "node3" in text and CONTROLLER_SOCKET in text and DRIVER in text, run.describe()
    assert [v["spec"]["nodeName"] for v in items(kv.cluster(), "VolumeAttachment")
            if v["status"].get("attached")] == ["node2"], items(kv.cluster(), "VolumeAttachment")
    assert SECRET not in text
    kv.plugins["ctl"].start()
    since = _counts(kv)
    run = kv.reconcile(kv.options)
    assert [(n, m) for n, m, _r in _new(kv, since)] == [
        ("ctl", "ControllerUnpublishVolume"), ("ctl", "ControllerPublishVolume"), ("node1", "NodeStageVolume"),
        ("node1", "NodePublishVolume")], run.describe()
    assert [v["spec"]["nodeName"] for v in items(kv.cluster(), "VolumeAttachment")] == ["node1"]
    assert SECRET not in _output(run)
    # a controller host that is not in the inventory: the plan refuses it, naming the option; nothing is called
    before, since = kv.state_bytes(), _counts(kv)
    bad = ["-e", json.dumps({"kubevol_driver_options": {
        DRIVER: {"controller": "ctl-nowhere", "controller_socket": CONTROLLER_SOCKET}}})]
    run = kv.reconcile(bad, expect_rc="nonzero")
    assert "driver_options[%s].controller" % DRIVER in run.stdout and "ctl-nowhere" in run.stdout, run.describe()
    assert "Traceback" not in run.stdout and kv.state_bytes() == before and _new(kv, since) == []


def test_a_node_shut_down_is_unpublished_by_the_controller_with_the_node_id_its_attachment_kept(kv):
    """node1 is shut down (its mounts gone, its node plugin stopped, the out-of-service taint) and out of the run
    (--limit): its attachment is released by ControllerUnpublishVolume on node3 with the CSI node id the
    VolumeAttachment kept (csi.alpha.kubernetes.io/node-id, as the external-attacher keeps it), before the
    volume is published to node2; the data follows the pod."""
    assert kv.shared.get("moved"), "needs the first test's run"
    kv.reconcile(kv.options)  # the previous test's last state, converged (idempotent when it already is)
    va = items(kv.cluster(), "VolumeAttachment")
    assert [v["spec"]["nodeName"] for v in va] == ["node1"], va
    assert va[0]["metadata"]["annotations"]["csi.alpha.kubernetes.io/node-id"] == "csi-node1", va
    path = target("p-web3", "pv-rc")
    checksum = kv.read_sum("node1", path, "data.bin")
    kv.plugins["node1"].unmount_all()
    kv.plugins["node1"].stop()
    data = kv.cluster()
    taint_out_of_service(data, "node1")
    data["items"] = [o for o in data["items"] if o["kind"] != "Pod"] + [pod("web", "p-web4", "node2", "apps/rc")]
    write_list(kv.state, data["items"])
    since = _counts(kv)
    limited = kv.options + ["--limit", "node2,node3"]
    run = kv.reconcile(limited)
    calls = _new(kv, since)
    assert [(n, m) for n, m, _r in calls] == [
        ("ctl", "ControllerUnpublishVolume"), ("ctl", "ControllerPublishVolume"), ("node2", "NodeStageVolume"),
        ("node2", "NodePublishVolume")], (calls, run.describe())
    assert calls[0][2]["node_id"] == "csi-node1" and calls[1][2]["node_id"] == "csi-node2", calls
    assert [v["spec"]["nodeName"] for v in items(kv.cluster(), "VolumeAttachment")] == ["node2"]
    assert kv.read_sum("node2", target("p-web4", "pv-rc"), "data.bin") == checksum
    assert SECRET not in _output(run)
    since = _counts(kv)
    again = kv.reconcile(limited)
    assert all(again.changed(h) == 0 for h in ("node2", "node3")) and again.plan() == [], again.describe()
    assert _new(kv, since) == []


def test_a_missing_controller_secret_fails_only_its_volume_on_the_controller_host(kv):
    """Two new volumes for pods on node2 in one run: pv-bad's controllerPublishSecretRef names a Secret that does
    not exist, pv-ok's is there. The controller task on node3 publishes pv-ok and never calls anything for pv-bad;
    node2 stages and publishes pv-ok; the run fails naming pv-bad, the reference and node3 (as the external-attacher
    fails only that VolumeAttachment)."""
    assert kv.shared.get("moved"), "needs the first test's run"
    kv.plugins["ctl"].create("vol2", 320 << 20)
    data = kv.cluster()
    good = csi_volume("pv-ok", "apps/ok", "vol2", "320Mi", "xfs")[:2]
    good[0]["spec"]["csi"]["controllerPublishSecretRef"] = {"namespace": "apps", "name": "stage-secret"}
    bad = csi_volume("pv-bad", "apps/bad", "vol3", "320Mi", "xfs")[:2]
    bad[0]["spec"]["csi"]["controllerPublishSecretRef"] = {"namespace": "apps", "name": "missing"}
    base = list(data["items"])
    write_list(kv.state, base + good + bad + [pod("ok", "p-ok", "node2", "apps/ok"),
                                              pod("bad", "p-bad", "node2", "apps/bad")])
    since = _counts(kv)
    limited = kv.options + ["--limit", "node2,node3"]  # node1 is still shut down (the test before)
    run = kv.reconcile(limited, expect_rc="nonzero")
    calls = _new(kv, since)
    assert [(n, m) for n, m, _r in calls] == [("ctl", "ControllerPublishVolume"), ("node2", "NodeStageVolume"),
                                              ("node2", "NodePublishVolume")], (calls, run.describe())
    assert calls[0][2]["volume_id"] == "vol2", calls
    assert target("p-ok", "pv-ok") in kv.mounts("node2")
    text = " ".join(_output(run).split())
    assert "pv-bad" in text and "controllerPublishSecretRef" in text and "apps/missing" in text, run.describe()
    assert "node3" in text and SECRET not in text, run.describe()
    attached = dict((v["spec"]["source"]["persistentVolumeName"], v["status"].get("attached"))
                    for v in items(kv.cluster(), "VolumeAttachment"))
    assert attached.get("pv-ok") is True and not attached.get("pv-bad"), attached
    # the claim gone, what was done stays done: the next run changes nothing
    gone = (("Pod", "bad"), ("PersistentVolume", "pv-bad"), ("PersistentVolumeClaim", "bad"))
    write_list(kv.state, [o for o in kv.cluster()["items"] if (o["kind"], o["metadata"]["name"]) not in gone])
    since = _counts(kv)
    again = kv.reconcile(limited)
    assert all(again.changed(h) == 0 for h in ("node2", "node3")), again.describe()
    assert _new(kv, since) == []
