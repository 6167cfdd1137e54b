"""Inline ephemeral CSI volumes (pod.spec.volumes[].csi) of an external CSI driver, through the role on a real SSH
test node (csi_mounter.go SetUpAt, TearDownAt).

The test CSI plugin (tests/csiplugin/plugin.py, ephemeral.py) runs in the node's mount namespace; its CSIDriver
lists Ephemeral and says podInfoOnMount. A pod's inline volume names a nodePublishSecretRef in its namespace.

0. Check mode: no mutating call, nothing changed.
1. One run: NodePublishVolume only (no attach, no stage), volume_id = csi-sha256(pod uid + volume name), the
   inline volumeAttributes plus the pod's info (ephemeral "true"), the Secret's data (reaching the plugin,
   nowhere in the output); the plugin's volume is at the pod's path; data the pod writes lands in it;
   vol_data.json says Ephemeral; nothing is recorded in the cluster.
2. A second run changes nothing and makes no mutating call.
3. A pod whose nodePublishSecretRef names a missing Secret: refused naming the pod, the volume and the ref;
   NodePublishVolume never called for it, and called for another pod's volume on the same node in the same run.
4. The pod deleted: NodeUnpublishVolume; the pod's directory and the plugin's volume are gone.
5. A CSIDriver without Ephemeral: refused with Kubernetes' words; nothing called.
"""
import base64
import hashlib
import json
import os

import pytest

from e2e_lib import KUBELET, items, node_object, write_list
from csi_lib import DRIVER, MUTATING, NodePlugin, _output, _syslog

SECRET = "Inl1ne-s3cret-e2e-value"
UID = "0e0e0e0e-0000-4000-8000-0000000ce001"
HANDLE = "csi-" + hashlib.sha256((UID + "certs").encode()).hexdigest()  # csi_mounter.go makeVolumeHandle
TARGET = "%s/pods/%s/volumes/kubernetes.io~csi/certs/mount" % (KUBELET, UID)


def csidriver(modes=("Ephemeral",)):
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
            "spec": {"attachRequired": False, "podInfoOnMount": True, "volumeLifecycleModes": list(modes)}}


def inline_pod(name, uid, secret="pub-secret", volume="certs"):
    csi = {"driver": DRIVER, "volumeAttributes": {"issuer": "ca", "file.greeting": "hello from the driver"},
           "nodePublishSecretRef": {"name": secret}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "apps", "name": name, "uid": uid},
            "spec": {"nodeName": "node1", "serviceAccountName": "web-sa", "volumes": [{"name": volume, "csi": csi}],
                     "containers": [{"name": "c", "volumeMounts": [{"name": volume, "mountPath": "/certs"}]}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "c", "state": {"running": {}}}]}}


def secret():
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "apps", "name": "pub-secret"},
            "data": {"token": base64.b64encode(SECRET.encode()).decode()}}


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("csieph", 1)
    pool = os.path.join(cluster.dir, "csi-pool")
    os.makedirs(pool)
    plugin = NodePlugin(cluster, "node1", pool)
    try:
        plugin.start(controller_caps=["CREATE_DELETE_VOLUME"], expected_secrets={"token": SECRET})
        cluster.plugin = plugin
        cluster.shared = {}
        cluster.options = ["-e", json.dumps({"kubevol_driver_options": {DRIVER: {"controller": "node"}}})]
        write_list(cluster.state, [node_object("node1"), csidriver(), secret(), inline_pod("web", UID)])
        yield cluster
    finally:
        plugin.stop()
        plugin.unmount_all()


def _volume_dir(kv, handle=HANDLE):
    """Where the plugin keeps the inline volume it created (its state directory, seen from the host too)."""
    return os.path.join(kv.plugin.dir, "state", "ephemeral", handle)


def test_check_mode_calls_nothing_mutating_and_changes_nothing(kv):
    before = kv.snapshot()
    check = kv.reconcile(kv.options, check=True)
    assert [(s["action"], s["target"], s.get("ephemeral")) for s in check.plan()] == [("mount", "pod", True)]
    assert not [m for m in kv.plugin.methods() if m in MUTATING], kv.plugin.methods()
    assert kv.snapshot() == before and kv.mounts("node1") == {}


def test_published_by_the_driver_with_the_kubelets_request(kv):
    run = kv.reconcile(kv.options + ["-vvv"])  # every task's arguments and results printed: no secret among them
    calls = kv.plugin.calls()
    assert [c["method"] for c in calls if c["method"] in MUTATING] == ["NodePublishVolume"], run.describe()
    plan = [(s["action"], s["target"], s.get("ephemeral")) for s in run.plan()]
    assert plan == [("mount", "pod", True)], run.describe()
    (publish,) = [c for c in calls if c["method"] == "NodePublishVolume"]
    request = publish["request"]
    assert request["volume_id"] == HANDLE and request["target_path"] == TARGET, request
    assert "staging_target_path" not in request and not request.get("readonly"), request
    assert request["volume_capability"]["access_mode"] == {"mode": "SINGLE_NODE_WRITER"}, request
    assert "mount" in request["volume_capability"], request  # a mount volume; the inline fsType unset: ""
    assert request["volume_context"] == {
        "issuer": "ca", "file.greeting": "hello from the driver",
        "csi.storage.k8s.io/ephemeral": "true", "csi.storage.k8s.io/pod.name": "web",
        "csi.storage.k8s.io/pod.namespace": "apps", "csi.storage.k8s.io/pod.uid": UID,
        "csi.storage.k8s.io/serviceAccount.name": "web-sa"}, request
    # the nodePublishSecretRef's Secret, read from the pod's namespace, reached the plugin and no output has it
    assert publish["secrets"] == "expected" and request["secrets"] == {"token": "<redacted>"}, publish
    assert SECRET not in _output(run) and SECRET not in _syslog(kv, "node1")

    mounts = kv.mounts("node1")
    assert list(mounts) == [TARGET], mounts  # no staging mount, no global mount
    assert kv.ssh("node1", "cat %s/greeting" % TARGET) == "hello from the driver"  # the driver's own content
    digest = kv.write_data("node1", TARGET, "data.bin", size="1M")
    with open(os.path.join(_volume_dir(kv), "data.bin"), "rb") as handle:  # the pod's data is in the driver's volume
        assert hashlib.sha256(handle.read()).hexdigest() == digest
    data = json.loads(kv.ssh("node1", "cat %s" % os.path.join(os.path.dirname(TARGET), "vol_data.json")))
    assert data["volumeLifecycleMode"] == "Ephemeral" and data["volumeHandle"] == HANDLE, data
    assert data["driverName"] == DRIVER and data["specVolID"] == "certs", data
    cluster = kv.cluster()
    assert items(cluster, "VolumeAttachment") == []
    status = [o for o in items(cluster, "Node") if o["metadata"]["name"] == "node1"][0]["status"]
    assert not status.get("volumesAttached") and not status.get("volumesInUse"), status
    kv.shared["digest"] = digest
    kv.shared["published"] = True


def test_a_second_run_changes_nothing(kv):
    assert kv.shared.get("published"), "needs the first run"
    since = len(kv.plugin.calls())
    before = kv.snapshot()
    state = kv.state_bytes()
    again = kv.reconcile(kv.options)
    assert again.plan() == [] and all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    assert not [m for m in kv.plugin.methods(since) if m in MUTATING], kv.plugin.methods(since)
    assert kv.state_bytes() == state
    assert kv.snapshot() == before
    assert kv.read_sum("node1", TARGET, "data.bin") == kv.shared["digest"]
    kv.shared["converged"] = True


def test_a_missing_secret_is_refused_naming_the_ref_and_fails_only_its_volume(kv):
    """The kubelet fails only the volume whose Secret is missing: the node's other volume in the same node task
    (pod apps/fresh, its Secret there) is published in that run all the same."""
    assert kv.shared.get("converged"), "needs the converged cluster"
    uid = "0e0e0e0e-0000-4000-8000-0000000ce002"
    fresh_uid = "0e0e0e0e-0000-4000-8000-0000000ce004"
    fresh_target = "%s/pods/%s/volumes/kubernetes.io~csi/certs/mount" % (KUBELET, fresh_uid)
    objects = [node_object("node1"), csidriver(), secret(), inline_pod("web", UID), inline_pod("fresh", fresh_uid),
               inline_pod("lost", uid, secret="no-such-secret")]
    write_list(kv.state, objects)
    since = len(kv.plugin.calls())
    run = kv.reconcile(kv.options, expect_rc=None)
    assert run.rc != 0, run.describe()
    text = _output(run)
    assert "inline volume certs of pod apps/lost" in text and "apps/no-such-secret" in text, run.describe()
    assert "csi.nodePublishSecretRef" in text and "does not exist" in text, run.describe()
    assert "node1" in text, run.describe()
    # the refused volume was never sent; the other one was published in the same run
    assert [m for m in kv.plugin.methods(since) if m in MUTATING] == ["NodePublishVolume"], kv.plugin.methods(since)
    assert fresh_target in kv.mounts("node1")
    assert kv.ssh("node1", "ls %s/pods/%s 2>/dev/null || true" % (KUBELET, uid)).strip() == ""
    assert SECRET not in text
    write_list(kv.state, objects[:-1])
    again = kv.reconcile(kv.options)
    assert again.plan() == [], again.describe()  # apps/fresh was recorded as done: nothing left to do
    write_list(kv.state, objects[:-2])
    since = len(kv.plugin.calls())
    kv.reconcile(kv.options)
    assert [m for m in kv.plugin.methods(since) if m in MUTATING] == ["NodeUnpublishVolume"]
    assert list(kv.mounts("node1")) == [TARGET]


def test_a_failed_publish_is_undone_and_an_uncertain_one_kept_for_the_next_run(kv):
    """csi_mounter.go SetUpAt: a final error removes the directory it made (removeMountDir); a non-final one is an
    uncertain mount: vol_data.json stays, node facts report it, and the next run publishes it again."""
    assert kv.shared.get("converged"), "needs the converged cluster"
    uid = "0e0e0e0e-0000-4000-8000-0000000ce003"
    vol_dir = "%s/pods/%s/volumes/kubernetes.io~csi/certs" % (KUBELET, uid)
    base = [node_object("node1"), csidriver(), secret(), inline_pod("web", UID)]
    write_list(kv.state, base + [inline_pod("flaky", uid)])
    try:
        kv.plugin.configure(fail={"NodePublishVolume": {"code": "INTERNAL", "message": "injected final failure"}})
        run = kv.reconcile(kv.options, expect_rc=None)
        assert run.rc != 0, run.describe()
        text = _output(run)
        assert "volume certs on node node1: inline volume of pod apps/flaky" in text, run.describe()
        assert "injected final failure" in text, run.describe()
        assert "node1" in text and DRIVER in text
        assert kv.ssh("node1", "ls %s 2>/dev/null || true" % vol_dir).strip() == ""  # removed again

        kv.plugin.configure(fail={"NodePublishVolume": {"code": "UNAVAILABLE", "message": "injected timeout"}})
        run = kv.reconcile(kv.options, expect_rc=None)
        assert run.rc != 0 and "injected timeout" in _output(run), run.describe()
        data = json.loads(kv.ssh("node1", "cat %s/vol_data.json" % vol_dir))  # kept: the driver may have made it
        assert data["volumeLifecycleMode"] == "Ephemeral", data
    finally:
        kv.plugin.configure(fail={})
    since = len(kv.plugin.calls())
    run = kv.reconcile(kv.options)
    assert [m for m in kv.plugin.methods(since) if m in MUTATING] == ["NodePublishVolume"], run.describe()
    assert "%s/mount" % vol_dir in kv.mounts("node1")
    write_list(kv.state, base)
    since = len(kv.plugin.calls())
    run = kv.reconcile(kv.options)
    assert [m for m in kv.plugin.methods(since) if m in MUTATING] == ["NodeUnpublishVolume"], run.describe()
    assert kv.ssh("node1", "ls %s 2>/dev/null || true" % vol_dir).strip() == ""
    assert list(kv.mounts("node1")) == [TARGET]


def test_pod_deleted_unpublished_and_the_driver_deletes_its_volume(kv):
    assert kv.shared.get("converged"), "needs the converged cluster"
    write_list(kv.state, [node_object("node1"), csidriver(), secret()])
    since = len(kv.plugin.calls())
    check = kv.reconcile(kv.options, check=True)
    assert [(s["action"], s["target"], s.get("ephemeral")) for s in check.plan()] == [("unmount", "pod", True)]
    assert not [m for m in kv.plugin.methods(since) if m in MUTATING], kv.plugin.methods(since)
    assert list(kv.mounts("node1")) == [TARGET]
    run = kv.reconcile(kv.options)
    calls = [c for c in kv.plugin.calls()[since:] if c["method"] in MUTATING]
    assert [c["method"] for c in calls] == ["NodeUnpublishVolume"], run.describe()
    assert calls[0]["request"] == {"volume_id": HANDLE, "target_path": TARGET}, calls
    assert kv.mounts("node1") == {}
    assert kv.ssh("node1", "ls %s/pods/%s/volumes 2>/dev/null || true" % (KUBELET, UID)).strip() == ""
    assert not os.path.exists(_volume_dir(kv))  # NodeUnpublishVolume deleted the ephemeral volume
    assert SECRET not in _output(run)
    again = kv.reconcile(kv.options)
    assert again.plan() == [] and all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    kv.shared["torn_down"] = True


def test_a_csidriver_without_ephemeral_is_refused_and_nothing_called(kv):
    assert kv.shared.get("torn_down"), "needs the torn-down cluster"
    write_list(kv.state, [node_object("node1"), csidriver(modes=("Persistent",)), secret(), inline_pod("web", UID)])
    since = len(kv.plugin.calls())
    run = kv.reconcile(kv.options)  # a blocked volume is reported, the run itself succeeds
    words = 'volume mode "Ephemeral" not supported by driver %s (only supports ["Persistent"])' % DRIVER
    assert words in "\n".join(run.plan_lines()), run.describe()
    assert "apps/web" in "\n".join(run.plan_lines()), run.describe()
    assert run.plan() == [], run.describe()
    assert not [m for m in kv.plugin.methods(since) if m in MUTATING], kv.plugin.methods(since)
    assert kv.mounts("node1") == {}
    assert SECRET not in _output(run)
