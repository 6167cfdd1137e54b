# -*- coding: utf-8 -*-
"""The registry serves a CSI driver configured in driver_options with ExternalCsiDriver (issue 27)."""

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils import drivers
from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, UnknownDriver
from ansible_collections.kubevol.volumes.plugins.module_utils.common.volume_attachment import attached_volume_attachment
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.driver import (
    OPTIONS, ExternalCsiDriver)
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import (
    DEFAULT_KNOWN_DRIVERS, known_drivers_of)
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import RecordApplier
from ansible_collections.kubevol.volumes.plugins.module_utils.run.outcome import _records_for

HOSTPATH = "hostpath.csi.k8s.io"
OPTS = {HOSTPATH: {"controller": "node"}}


def test_get_driver_serves_a_configured_name_only():
    cls = drivers.get_driver(HOSTPATH, driver_options=OPTS)
    assert issubclass(cls, ExternalCsiDriver) and cls.NAME == HOSTPATH
    assert drivers.get_driver("loop.kubevol.io", driver_options=OPTS) is drivers.DRIVERS["loop.kubevol.io"]
    with pytest.raises(UnknownDriver) as err:
        drivers.get_driver(HOSTPATH, volume="pv-a")
    assert HOSTPATH in err.value.msg
    assert drivers.driver_names(OPTS) == sorted(["loop.kubevol.io", HOSTPATH])
    assert drivers.is_external(HOSTPATH, OPTS) and not drivers.is_external("loop.kubevol.io", OPTS)


def test_node_context_passes_driver_options():
    ctx = NodeContext(lambda *a, **k: None, node_name="n1", kubelet_dir="/var/lib/kubelet",
                      driver_options={HOSTPATH: {"controller": "node", "socket": "/run/csi.sock", "timeout": 5}})
    assert ctx.knows(HOSTPATH) and ctx.is_external(HOSTPATH) and not ctx.is_external("loop.kubevol.io")
    assert HOSTPATH in [d.NAME for d in ctx.all_drivers()]
    assert ctx.driver_settings(HOSTPATH) == {"controller": "node", "socket": "/run/csi.sock", "timeout": 5}
    plain = NodeContext(lambda *a, **k: None, node_name="n1", kubelet_dir="/var/lib/kubelet")
    assert not plain.knows(HOSTPATH)


def test_validate_checks_external_entries_with_the_drivers_spec():
    assert driver_options.validate(OPTS) == OPTS
    for bad in ({HOSTPATH: {"controller": "elsewhere"}}, {HOSTPATH: {"socket": "relative.sock"}},
                {HOSTPATH: {"controller": "node", "timeout": -1}}, {HOSTPATH: {"controller": "node", "pools": []}}):
        with pytest.raises(InvalidInput):
            driver_options.validate(bad)
    with pytest.raises(InvalidInput) as err:
        driver_options.validate({HOSTPATH: {"timeout": 5}})  # neither socket nor controller: not configured
    assert "controller: node" in err.value.msg
    assert set(driver_options.FALLBACK_EXTERNAL_OPTIONS) == set(OPTIONS)


def test_planner_knows_configured_drivers():
    assert known_drivers_of(None, OPTS) == tuple(sorted(DEFAULT_KNOWN_DRIVERS + (HOSTPATH,)))
    assert known_drivers_of(["loop.kubevol.io"], OPTS) == ("loop.kubevol.io",)
    assert known_drivers_of(None, {"kubernetes.io/local-volume": {"paths": ["/mnt"]}}) == DEFAULT_KNOWN_DRIVERS


def test_publish_context_is_the_attachment_metadata():
    va = attached_volume_attachment(HOSTPATH, "h1", "n1", "pv-a", "", metadata={"devicePath": "/dev/loop9", "k": "v"})
    assert va["status"] == {"attached": True, "attachmentMetadata": {"devicePath": "/dev/loop9", "k": "v"}}


def test_attach_record_carries_the_publish_context_into_the_volume_attachment():
    item = {"pv_name": "pv-a", "driver": HOSTPATH, "volume_handle": "h1"}
    outcome = {"device": "", "attachment_metadata": {"devicePath": "/dev/loop9", "k": "v"}}
    records = _records_for("attach", "n1", item, outcome, [])
    assert records[0]["attachment_metadata"] == {"devicePath": "/dev/loop9", "k": "v"}
    cl = {"apiVersion": "v1", "kind": "List",
          "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {}}]}
    assert RecordApplier(cl).apply_all(records)
    va = [o for o in cl["items"] if o["kind"] == "VolumeAttachment"][0]
    assert va["status"] == {"attached": True, "attachmentMetadata": {"devicePath": "/dev/loop9", "k": "v"}}
    assert not RecordApplier(cl).apply_all(records)  # the same publish_context again: nothing changes
    changed = [dict(records[0], attachment_metadata={"k": "w"})]
    assert RecordApplier(cl).apply_all(changed)
    va = [o for o in cl["items"] if o["kind"] == "VolumeAttachment"][0]
    assert va["status"]["attachmentMetadata"] == {"k": "w"}


def test_secret_refs_travel_in_the_plan_and_secrets_only_to_the_node(tmp_path):
    import base64
    import yaml
    from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import CSI_SECRET_REFS
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.secrets import (
        SECRET_REFS, SecretUnavailable)
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item
    from ansible_collections.kubevol.volumes.plugins.module_utils.run.csi_secrets import secrets_by_volume

    assert CSI_SECRET_REFS == SECRET_REFS
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "apps", "name": "s1"},
              "data": {"password": base64.b64encode(b"hunter2").decode()}}
    state = tmp_path / "cluster.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "items": [secret], "kind": "List", "metadata": {}}))
    store = {"cluster_source": "file", "cluster_state": str(state)}
    item = {"pv_name": "pv-a", "driver": HOSTPATH, "volume_handle": "h1", "secret_refs": {"node_stage": "apps/s1"}}
    plain = {"pv_name": "pv-b", "driver": HOSTPATH, "volume_handle": "h2"}
    got, refused = secrets_by_volume([item, plain], store)
    assert refused == []
    assert got[0]["secrets"] == {"node_stage": {"password": "hunter2"}} and got[1] is plain
    assert "secrets" not in item  # the plan's item is left as it was
    vol = volume_item(dict(got[0], secret_refs=None))
    assert vol.secrets["node_stage"]["password"] == "hunter2"
    assert "hunter2" not in repr(vol) and "hunter2" not in str(vol.secrets)
    hash(vol)
    ready, [(_item, err)] = secrets_by_volume([dict(item, secret_refs={"node_stage": "apps/missing"}), plain], store)
    assert ready == [plain] and isinstance(err, SecretUnavailable)  # the other volume is not held back
    assert "apps/missing" in err.msg and "pv-a" in err.msg


def test_inline_ephemeral_volumes_of_an_external_driver_are_served_on_the_node():
    from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import ephemeral_volume_handle
    ctx = NodeContext(lambda *a, **k: None, node_name="n1", kubelet_dir="/var/lib/kubelet", driver_options=OPTS)
    valid = ctx.items([{"pv_name": "v", "driver": HOSTPATH, "volume_handle": ephemeral_volume_handle("u1", "v"),
                        "ephemeral": True, "pods": [{"uid": "u1"}]}])
    assert ctx.refused == [] and [item.pv_name for item in valid] == ["v"] and valid[0].ephemeral


def test_setup_phases_secrets_are_masked():
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.setup_args import secret_values
    params = {"attach": {"volumes": [{"pv_name": "a", "secrets": {"node_stage": {"password": "hunter2"}}}]},
              "mount": {"volumes": [{"pv_name": "b"}]}, "expand_node": None}
    assert secret_values(params) == {"hunter2"}


def test_pod_info_on_mount_travels_from_the_csidriver_to_the_node_item():
    """A CSIDriver with podInfoOnMount: the item says so, each pod step names the pod's service account, and the
    node's item carries both (csi_mounter.go getPodInfoAttrs reads them from the pod)."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item
    from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import known_drivers_of
    from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster
    from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_view import phase_items

    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-a"},
          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                   "claimRef": {"namespace": "apps", "name": "c", "uid": "cu"},
                   "csi": {"driver": HOSTPATH, "volumeHandle": "h1"}}, "status": {"phase": "Bound"}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"namespace": "apps", "name": "c", "uid": "cu"},
           "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv-a", "resources": {"requests": {"storage": "1Gi"}}},
           "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "apps", "name": "web", "uid": "p1"},
           "spec": {"nodeName": "node1", "serviceAccountName": "web-sa",
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}}],
                    "containers": [{"name": "c", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}]},
           "status": {"phase": "Running"}}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1", "annotations": {
        "volumes.kubernetes.io/controller-managed-attach-detach": "true"}}, "status": {"conditions": [
            {"type": "Ready", "status": "True"}]}}
    driver = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": HOSTPATH},
              "spec": {"attachRequired": False, "podInfoOnMount": True}}
    index = ClusterIndex(cluster_from_data({"apiVersion": "v1", "kind": "List", "items": [node, pod, pv, pvc, driver]}))
    driver_options = {HOSTPATH: {"controller": "node"}}
    options = PlanOptions(known_drivers=known_drivers_of(None, driver_options), driver_options=driver_options)
    result = plan_cluster(index, {"node1": {"node_name": "node1", "reachable": True}}, options)
    mount = [s for s in result["plan"] if (s["action"], s["target"]) == ("mount", "pod")]
    assert mount and mount[0]["pod_service_account"] == "web-sa", (result["plan"], result["blocked"], result.get("desired"))
    items = phase_items(result, "mount", "node1")
    assert items[0]["pod_info_on_mount"] is True and items[0]["pods"][0]["service_account"] == "web-sa", items
    vol = volume_item(items[0])
    assert vol.pod_info_on_mount and vol.pods[0].service_account == "web-sa"
