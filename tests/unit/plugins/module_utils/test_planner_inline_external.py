# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inline ephemeral CSI volumes of an external CSI driver: the plan (no attach, no stage, a publish into the pod)
and the NodePublishVolume request built for them. Kubernetes: csi_mounter.go SetUpAt, makeVolumeHandle,
getPodInfoAttrs; csi_plugin.go supportsVolumeLifecycleMode."""

import datetime
import hashlib
import os
import sys
from types import SimpleNamespace

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import LOOP, cluster, facts, node, pod  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (  # noqa: E402
    ClusterIndex, cluster_from_data)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    ephemeral_volume_handle, inline_volume_name, unique_volume_name)
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external import requests as req  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
EXT = "csi.kubevol.test"
OPTS = {EXT: {"controller": "node"}}
UID = "uid-p"
# csi_mounter.go makeVolumeHandle: fmt.Sprintf("csi-%x", sha256.Sum256([]byte(fmt.Sprintf("%s%s", podUID, name))))
HANDLE = "csi-" + hashlib.sha256((UID + "certs").encode()).hexdigest()
UNIQUE = unique_volume_name(EXT, HANDLE)


def run(data, node_facts=None):
    opts = PlanOptions(True, 360, (LOOP, EXT), NOW, 0.5, 20, False, ("/var/lib/kubevol/pool",), OPTS)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts)


def driver_object(modes=("Ephemeral",), pod_info=True):
    spec = {"attachRequired": False, "podInfoOnMount": pod_info}
    if modes is not None:
        spec["volumeLifecycleModes"] = list(modes)
    return {"kind": "CSIDriver", "metadata": {"name": EXT}, "spec": spec}


def ext_pod(attributes=None, secret="tls-key", read_only=True, fs_type=None, mounted_as="volumeMounts"):
    csi = {"driver": EXT, "volumeAttributes": {"issuer": "ca"} if attributes is None else attributes,
           "readOnly": read_only}
    if secret is not None:
        csi["nodePublishSecretRef"] = {"name": secret}
    if fs_type:
        csi["fsType"] = fs_type
    obj = pod("apps/p", "node1", uid=UID, volumes=[{"name": "certs", "csi": csi}])
    obj["spec"]["serviceAccountName"] = "robot"
    container = obj["spec"]["containers"][0]
    if mounted_as == "volumeMounts":
        container["volumeMounts"].append({"name": "certs", "mountPath": "/certs"})
    else:
        container["volumeDevices"].append({"name": "certs", "devicePath": "/dev/x"})
    return obj


def ext_facts(mounted=True, uid=UID):
    f = facts("node1")
    handle = ephemeral_volume_handle(uid, "certs")
    path = "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/certs/mount" % uid
    entry = {"pod_uid": uid, "volume_name": "certs", "driver": EXT, "volume_handle": handle,
             "unique_volume_name": unique_volume_name(EXT, handle), "kubernetes_volume_name":
             inline_volume_name(uid, "certs"), "path": path, "mounted": mounted, "read_only": True,
             "device": None, "image": None, "size_bytes": None}
    f["pod_mounts"].append(dict(entry, pv_name="certs", mode="Filesystem", foreign=False, uncertain=None,
                                unsafe=False, ephemeral=True))
    f["ephemeral_volumes"] = [entry]
    return f


def test_the_handle_is_the_kubelets():
    assert ephemeral_volume_handle(UID, "certs") == HANDLE


def test_an_external_drivers_inline_volume_is_published_into_the_pod():
    result = run(cluster(node("node1"), driver_object(), ext_pod()))
    assert result["blocked"] == []
    assert [(s["action"], s["target"], s["node"]) for s in result["plan"]] == [("mount", "pod", "node1")]
    step = result["plan"][0]
    assert step["ephemeral"] is True and step["unique_volume_name"] == UNIQUE
    assert step["pod_read_only"] is True and step["pod_service_account"] == "robot"
    assert "NodePublishVolume of driver %s" % EXT in step["reason"]
    item = result["volume_items"]["node1"][UNIQUE]
    assert item["volume_handle"] == HANDLE and item["pv_name"] == "certs" and item["capacity_bytes"] is None
    assert item["volume_attributes"] == {"issuer": "ca"} and item["fs_type"] == ""
    assert item["pod_info_on_mount"] is True
    assert item["secret_refs"] == {"node_publish": "apps/tls-key"}  # the pod's namespace: a reference, no value
    assert result["desired"]["attachments"] == 0


def test_no_secret_ref_no_pod_info_and_the_inline_fs_type():
    result = run(cluster(node("node1"), driver_object(pod_info=False), ext_pod(secret=None, fs_type="xfs")))
    item = result["volume_items"]["node1"][UNIQUE]
    assert "secret_refs" not in item and "pod_info_on_mount" not in item and item["fs_type"] == "xfs"
    assert "pod_service_account" not in result["plan"][0]


def test_published_volume_plans_nothing_and_a_gone_pod_is_unpublished():
    data = cluster(node("node1"), driver_object(), ext_pod())
    again = run(data, {"node1": ext_facts()})
    assert again["plan"] == [] and again["blocked"] == []
    gone = run(cluster(node("node1"), driver_object()), {"node1": ext_facts()})
    assert [(s["action"], s["target"], s["ephemeral"]) for s in gone["plan"]] == [("unmount", "pod", True)]
    item = gone["volume_items"]["node1"][UNIQUE]
    assert item["volume_handle"] == HANDLE and item["ephemeral"] is True


def test_a_csidriver_without_ephemeral_is_refused_with_kubernetes_words():
    for modes, words in ((("Persistent",), '(only supports ["Persistent"])'),
                         (None, '(only supports ["Persistent"])')):
        result = run(cluster(node("node1"), driver_object(modes=modes), ext_pod()))
        assert result["plan"] == []
        assert len(result["blocked"]) == 1
        reason = result["blocked"][0]["reason"]
        assert ('volume mode "Ephemeral" not supported by driver %s %s' % (EXT, words)) in reason
        assert "apps/p" in reason and "certs" in reason


def test_a_block_use_and_a_nameless_secret_ref_are_refused():
    result = run(cluster(node("node1"), driver_object(), ext_pod(mounted_as="volumeDevices")))
    assert result["plan"] == [] and "not volumeDevices" in result["blocked"][0]["reason"]
    result = run(cluster(node("node1"), driver_object(), ext_pod(secret="")))
    assert result["plan"] == [] and "nodePublishSecretRef has no name" in result["blocked"][0]["reason"]


def test_the_node_accepts_the_item_and_builds_the_kubelets_request():
    result = run(cluster(node("node1"), driver_object(), ext_pod()))
    raw = dict(result["volume_items"]["node1"][UNIQUE], secrets={"node_publish": {"key": "s3cret"}},
               pods=[{"uid": UID, "name": "apps/p", "read_only": True, "service_account": "robot"}])
    ctx = NodeContext(lambda *a, **k: None, node_name="node1", kubelet_dir="/var/lib/kubelet", driver_options=OPTS)
    (item,) = ctx.items([raw])
    assert ctx.refused == [] and item.ephemeral and item.fs_type == ""
    pod_ = item.pods[0]
    context = req.volume_context(item, pod_, item.pod_info_on_mount)
    assert context == {"issuer": "ca", "csi.storage.k8s.io/ephemeral": "true",
                       "csi.storage.k8s.io/pod.name": "p", "csi.storage.k8s.io/pod.namespace": "apps",
                       "csi.storage.k8s.io/pod.uid": UID, "csi.storage.k8s.io/serviceAccount.name": "robot"}
    target = "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/certs/mount" % UID
    mode = req.node_access_mode(req.access_modes(item), False)
    request = req.node_publish(item, target, "", {}, req.volume_capability(item, mode), True,
                               req.secrets(item, "node_publish"), context)
    assert request == {"volume_id": HANDLE, "target_path": target, "readonly": True,
                       "volume_capability": {"mount": {"fs_type": ""}, "access_mode": {"mode": "SINGLE_NODE_WRITER"}},
                       "secrets": {"key": "s3cret"}, "volume_context": context}
    assert "s3cret" not in repr(item)


def test_inline_secret_missing_is_refused_naming_pod_volume_and_ref(tmp_path):
    import yaml
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.secrets import SecretUnavailable
    from ansible_collections.kubevol.volumes.plugins.module_utils.run.csi_secrets import secrets_by_volume
    state = tmp_path / "cluster.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "items": [], "kind": "List", "metadata": {}}))
    item = {"pv_name": "certs", "driver": EXT, "volume_handle": HANDLE, "ephemeral": True,
            "secret_refs": {"node_publish": "apps/tls-key"}, "pods": [{"uid": UID, "name": "apps/p"}]}
    ready, [(_item, err)] = secrets_by_volume([item], {"cluster_source": "file", "cluster_state": str(state)})
    assert ready == [] and isinstance(err, SecretUnavailable)
    msg = err.msg
    assert "pod apps/p" in msg and "inline volume certs" in msg and "csi.nodePublishSecretRef" in msg
    assert "apps/tls-key" in msg and "PersistentVolume" not in msg


def test_inline_volume_object_fields():
    from ansible_collections.kubevol.volumes.plugins.module_utils.plan.inline import inline_volume
    index = SimpleNamespace(csidriver_by_name={EXT: SimpleNamespace(
        name=EXT, attach_required=False, lifecycle_modes=("Ephemeral",), fs_group_policy="File",
        pod_info_on_mount=False)}, pv_by_unique_name={})
    p = SimpleNamespace(namespace="ns", name="p", uid="u1", fs_group=None, fs_group_change_policy=None,
                        service_account="")
    volume = SimpleNamespace(name="v", driver=EXT, csi=SimpleNamespace(
        driver=EXT, volume_attributes=(("a", "b"),), fs_type="", read_only=False, secret_refs=()))
    iv = inline_volume(index, (EXT,), p, "n1", volume, ("Filesystem", False))
    assert iv.external and iv.capacity_bytes is None and iv.volume_attributes == (("a", "b"),)
    assert iv.volume_handle == ephemeral_volume_handle("u1", "v") and iv.secret_ref is None
