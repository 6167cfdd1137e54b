# -*- coding: utf-8 -*-
"""Real CSI drivers' volume handles (common/handles.py): any handle the API accepts is planned, sent to the node and
torn down, hashed wherever it names a file, and shown cut in messages; only the loop driver, which names its image
after the handle, refuses a handle that is not one path component, by its own class's rule.

Kubernetes: pkg/apis/core/validation validateCSIPersistentVolumeSource (a handle must only be non-empty),
pkg/volume/csi/csi_attacher.go makeDeviceMountPath (sha256 of the handle) and getAttachmentName."""

import copy
import datetime
import hashlib
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import apply_plan, cluster, csidriver, node, pod, pv, pvc  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (  # noqa: E402
    ClusterIndex, cluster_from_data)
from ansible_collections.kubevol.volumes.plugins.module_utils.common import handles, names  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (  # noqa: E402
    HandleRefused, InvalidInput)
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import CsiFinalError  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import DRIVERS  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import Driver  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.node import facts as node_facts, layout  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.node.mount import MountTable  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.records import record  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import csi as csi_plugin  # noqa: E402

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
LOOP = "loop.kubevol.io"
EXT = "pd.csi.storage.gke.io"
OPTIONS = {EXT: {"controller": "node"}}

# what real drivers' CreateVolume answers, and what the API accepts besides
HANDLES = [
    ("gke-pd", "projects/my-project/zones/us-central1-a/disks/pvc-0b5e8f0a-9c1d-4e2f-8a3b-5c6d7e8f9a0b"),
    ("azure-disk", "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/rg-aks/providers/"
                   "Microsoft.Compute/disks/pvc-6c1a"),
    ("aws-ebs", "vol-0123456789abcdef0"),
    ("nfs", "nfs-server.default.svc.cluster.local#share#pvc-2f1e#"),
    ("ceph-csi", "0001-0009-rook-ceph-0000000000000002-4a3b2c1d-0e9f-11ee-8c5a-0242ac120002"),
    ("topolvm", "5e0c3f1e-2b8f-4f6e-9a51-2d3c4b5a6978"),
    ("128-bytes", "h" * 128),
    ("unicode", u"données/卷-ü"),
    ("spaces", "my volume  with spaces"),
    ("dot-dot", ".."),
    ("control", "tab\there\nnewline"),
]
IDS = [name for name, _handle in HANDLES]
# one safe path component: the loop driver can name an image after these
LOOP_OK = ("aws-ebs", "nfs", "ceph-csi", "topolvm", "128-bytes", "spaces")


def run(data, facts=None, driver=EXT):
    opts = PlanOptions(True, 360, (LOOP, driver), NOW, 0.5, 20, False, ("/var/lib/kubevol/pool",), OPTIONS)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), facts, opts)


def world(handle, driver=EXT, with_pod=True):
    the_pv = pv("pv-a", claim="ns/a", driver=driver)
    the_pv["spec"]["csi"]["volumeHandle"] = handle
    objects = [node("node1"), node("node2"), csidriver(driver), the_pv, pvc("ns/a", "pv-a")]
    if with_pod:
        objects.append(pod("ns/p", "node1", ["a"], uid="uid-p"))
    return cluster(*objects)


def steps(result):
    return [(s["action"], s["target"], s["node"]) for s in result["plan"]]


# ---- the helper that shows a handle ----------------------------------------------------------------------------

def test_a_short_printable_handle_is_shown_as_it_is():
    assert handles.show_handle("vol-0123456789abcdef0") == "vol-0123456789abcdef0"
    assert handles.quote_handle("a b#c/d") == "'a b#c/d'"


def test_a_long_handle_is_cut_with_its_length_and_sha256():
    handle = "projects/my-project/zones/us-central1-a/disks/" + "d" * (4 << 20)  # megabytes
    shown = handles.show_handle(handle)
    digest = hashlib.sha256(handle.encode()).hexdigest()
    assert shown == "%s... (%d characters, sha256 %s)" % (handle[:40], len(handle), digest[:12])
    assert len(shown) < 100


def test_control_characters_are_escaped_and_a_non_string_is_shown_safely():
    assert handles.show_handle("a\x00b\nc") == "a\\x00b\\nc"
    shown = handles.show_handle("\x1b[2J" * 100)
    assert "\x1b" not in shown and shown.startswith("\\x1b[2J") and "(400 characters, sha256 " in shown
    assert handles.show_handle(None) == "None"
    assert handles.show_handle(u"\ud800" * 50).endswith(")")  # a lone surrogate never raises


def test_a_unique_volume_name_is_shown_with_its_handle_cut():
    long_handle = "x" * 1000
    shown = handles.show_volume_name(names.unique_volume_name(EXT, long_handle))
    assert shown.startswith("kubernetes.io/csi/%s^%s..." % (EXT, "x" * 40)) and len(shown) < 150
    assert handles.show_volume_name("kubernetes.io/local-volume/pv-a") == "kubernetes.io/local-volume/pv-a"
    long_pv = "kubernetes.io/local-volume/" + "p" * 253  # a PV name's longest
    assert handles.show_volume_name(long_pv) == long_pv


def test_the_apis_rule_only_empty_or_not_text():
    for name, handle in HANDLES:
        assert handles.handle_problem(handle) is None, name
    assert "non-empty" in handles.handle_problem("")
    assert "non-empty" in handles.handle_problem(None)
    assert "Unicode" in handles.handle_problem(u"a\ud800")


# ---- through the planner, the node's checks and the records ------------------------------------------------------

@pytest.mark.parametrize("handle", [h for _n, h in HANDLES], ids=IDS)
def test_an_external_drivers_handle_is_planned_attached_mounted_grown_and_torn_down(handle):
    data = world(handle)
    result = run(data)
    assert result["blocked"] == [] and steps(result) == [
        ("attach", "device", "node1"), ("mount", "device", "node1"), ("mount", "pod", "node1")]
    unique = names.unique_volume_name(EXT, handle)
    assert all(s["unique_volume_name"] == unique for s in result["plan"])
    # what each node module is given passes the node's own checks: volume_item, then the driver's validate
    items = executor.phase_items(result, "attach", "node1")
    assert [i["volume_handle"] for i in items] == [handle]
    assert [i["volume_handle"] for i in executor.phase_items(result, "mount", "node1")] == [handle]
    ctx = NodeContext(lambda argv, data=None: (0, "", ""), node_name="node1", kubelet_dir="/k",
                      driver_options=OPTIONS)
    assert [i.volume_handle for i in ctx.items(items)] == [handle] and ctx.refused == []
    # hashed wherever it names a file or an object
    digest = hashlib.sha256(handle.encode("utf-8")).hexdigest()
    assert names.device_mount_path("/k", EXT, handle) == "/k/plugins/kubernetes.io/csi/%s/%s/globalmount" % (
        EXT, digest)
    assert names.volume_attachment_name(handle, EXT, "node1") == "csi-" + hashlib.sha256(
        (handle + EXT + "node1").encode("utf-8")).hexdigest()

    # the attachment recorded as the node would report it, the run applied: a second plan changes nothing
    data, facts = apply_plan(result, data, {"node1": {"node_name": "node1", "reachable": True}})
    data["items"] = [o for o in data["items"] if o["kind"] != "VolumeAttachment"]  # the test's stand-in: by the record
    assert record.apply_records(data, [{"type": "attached", "node": "node1", "pv_name": "pv-a", "driver": EXT,
                                        "volume_handle": handle, "device_path": ""}]) is not None
    [va] = [o for o in data["items"] if o["kind"] == "VolumeAttachment"]
    assert va["metadata"]["name"] == names.volume_attachment_name(handle, EXT, "node1")
    again = run(data, facts)
    assert again["plan"] == [] and again["blocked"] == []

    # the claim grown: the controller's and the node's expansion, by the same handle
    grown = copy.deepcopy(data)
    [claim] = [o for o in grown["items"] if o["kind"] == "PersistentVolumeClaim"]
    claim["spec"]["resources"]["requests"]["storage"] = "2Gi"
    expand = run(grown, facts)
    assert expand["blocked"] == [] and steps(expand) == [("expand", "controller", "node1"), ("expand", "node", "node1")]
    assert [i["volume_handle"] for i in executor.phase_items(expand, "expand_node", "node1")] == [handle]

    # the pod gone: unpublished, unstaged and detached by the same handle
    data["items"] = [o for o in data["items"] if o["kind"] != "Pod"]
    teardown = run(data, facts)
    assert teardown["blocked"] == [] and steps(teardown) == [
        ("unmount", "pod", "node1"), ("unmount", "device", "node1"), ("detach", "device", "node1")]
    assert [i["volume_handle"] for i in executor.phase_items(teardown, "teardown", "node1")] == [handle]


@pytest.mark.parametrize("name,handle", HANDLES, ids=IDS)
def test_the_loop_driver_refuses_only_what_it_cannot_name_an_image_after(name, handle):
    result = run(world(handle, driver=LOOP), driver=LOOP)
    if name in LOOP_OK:
        assert result["blocked"] == [] and len(result["plan"]) == 3
        return
    assert result["plan"] == []
    [reason] = [b["reason"] for b in result["blocked"]]
    assert reason.startswith("PersistentVolume pv-a: spec.csi.volumeHandle %s is refused: driver loop.kubevol.io "
                             "names a file after each volume handle, so it refuses a handle that is not one safe path "
                             "component" % handles.quote_handle(handle)), reason
    assert "\n" not in reason and "\t" not in reason


def test_a_loop_pv_with_a_slash_in_its_handle_is_refused_with_a_clear_message():
    [blocked] = run(world("a/b", driver=LOOP), driver=LOOP)["blocked"]
    assert blocked["reason"].startswith(
        "PersistentVolume pv-a: spec.csi.volumeHandle 'a/b' is refused: driver loop.kubevol.io names a file after "
        "each volume handle, so it refuses a handle that is not one safe path component (no '/', '\\', '.' or '..', "
        "NUL or control characters, at most 255 bytes): it would escape its directory; fix the object "
        "[KV-OBJECT-REFUSED]"), blocked["reason"]


def test_the_node_refuses_a_loop_handle_by_the_drivers_rule_naming_volume_node_and_code(tmp_path):
    ctx = NodeContext(lambda argv, data=None: (0, "", ""), node_name="n1", kubelet_dir=str(tmp_path),
                      run_dir=str(tmp_path / "run"))
    assert ctx.items([{"pv_name": "pv-a", "driver": LOOP, "volume_handle": "a/b"}]) == []
    [(item, err)] = ctx.refused
    assert isinstance(err, HandleRefused) and err.code == "KV-HANDLE-REFUSED"
    assert err.msg.startswith("volume pv-a on node n1: volume handle 'a/b' refused: driver loop.kubevol.io names a "
                              "file after each volume handle"), err.msg
    assert err.msg.endswith("give the PV a csi.volumeHandle that is one plain file name [KV-HANDLE-REFUSED]")
    assert err.to_result()["code"] == "KV-HANDLE-REFUSED"


def test_a_megabyte_handle_is_never_whole_in_a_message(tmp_path):
    handle = "x" * (1 << 20)
    result = run(world(handle, driver=LOOP), driver=LOOP)
    assert result["plan"] == [] and all(len(b["reason"]) < 1000 for b in result["blocked"])
    ctx = NodeContext(lambda argv, data=None: (0, "", ""), node_name="n1", kubelet_dir=str(tmp_path),
                      run_dir=str(tmp_path / "run"))
    ctx.items([{"pv_name": "pv-a", "driver": LOOP, "volume_handle": handle}])
    assert len(ctx.refused[0][1].msg) < 1000
    # an external driver's: planned, and the CSI client's error names the volume cut
    assert run(world(handle))["blocked"] == []
    err = CsiFinalError("NodeStageVolume", "/s.sock", "volume %s not found" % handle, code="NOT_FOUND",
                        volume_id=handle, driver=EXT, node="n1")
    assert len(str(err)) < 500 and handles.show_handle(handle) in str(err)


def test_the_planner_asks_the_drivers_class_never_a_rule_of_its_own():
    """A driver class that names files after its handles (HANDLE_IS_FILE_NAME) gets the component rule, any other
    none: the rule is the driver's declaration, not a list of drivers in the planner."""
    class FileDriver(Driver):
        NAME = "files.kubevol.test"
        HANDLE_IS_FILE_NAME = True

    class OpaqueDriver(Driver):
        NAME = "opaque.kubevol.test"

    for cls in (FileDriver, OpaqueDriver):
        DRIVERS.register(cls)
    try:
        assert "not one safe path component" in csi_plugin.handle_refusal(FileDriver.NAME, "a/b")
        assert csi_plugin.handle_refusal(FileDriver.NAME, "a-b") is None
        assert csi_plugin.handle_refusal(OpaqueDriver.NAME, "a/b") is None
        assert csi_plugin.handle_refusal("ebs.csi.aws.com", "a/b") is None  # external: the plugin's business
        assert csi_plugin.handle_refusal(OpaqueDriver.NAME, "") is not None  # the API's rule, for every driver
        assert LOOP in DRIVERS and DRIVERS[LOOP].HANDLE_IS_FILE_NAME
    finally:
        for cls in (FileDriver, OpaqueDriver):
            DRIVERS.unregister(cls.NAME)


def test_the_item_refuses_only_what_the_api_refuses():
    for bad in ("", None, 7):
        with pytest.raises(InvalidInput):
            volume_item({"pv_name": "pv-a", "driver": EXT, "volume_handle": bad})
    for _name, handle in HANDLES:
        assert volume_item({"pv_name": "pv-a", "driver": EXT, "volume_handle": handle}).volume_handle == handle


# ---- node facts identify a global mount by its vol_data.json, never by reversing the hash ------------------------

@pytest.mark.parametrize("handle", [h for _n, h in HANDLES] + ["y" * (2 << 20)], ids=IDS + ["2-MiB"])
def test_facts_identify_a_global_mount_by_its_vol_data(tmp_path, handle):
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir()
    item = volume_item({"pv_name": "pv-a", "driver": EXT, "volume_handle": handle})
    path = names.device_mount_path(str(kubelet), EXT, handle)
    layout.ensure_dir(str(kubelet), path)
    layout.write_vol_data(str(kubelet), os.path.dirname(path), layout.device_vol_data(item))
    ctx = NodeContext(lambda argv, data=None: (0, "", ""), node_name="n1", kubelet_dir=str(kubelet),
                      run_dir=str(tmp_path / "run"), driver_options=OPTIONS)
    [entry] = node_facts.global_mounts(ctx, MountTable([]))
    assert (entry["unique_volume_name"], entry["volume_handle"], entry["uncertain"]) == (
        names.unique_volume_name(EXT, handle), handle, None)
    assert entry["path"] == path and os.path.basename(os.path.dirname(path)) == hashlib.sha256(
        handle.encode("utf-8")).hexdigest()


def test_a_vol_data_naming_another_handle_is_uncertain_and_shown_cut(tmp_path):
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir()
    path = names.device_mount_path(str(kubelet), EXT, "vol-1")
    layout.ensure_dir(str(kubelet), path)
    other = "z" * 5000
    (kubelet / os.path.relpath(os.path.dirname(path), str(kubelet)) / "vol_data.json").write_text(
        json.dumps({"driverName": EXT, "volumeHandle": other, "specVolID": "pv-a"}))
    ctx = NodeContext(lambda argv, data=None: (0, "", ""), node_name="n1", kubelet_dir=str(kubelet),
                      run_dir=str(tmp_path / "run"), driver_options=OPTIONS)
    [entry] = node_facts.global_mounts(ctx, MountTable([]))
    assert entry["unique_volume_name"] is None and "whose sha256 is not the directory name" in entry["uncertain"]
    assert handles.show_handle(other) in entry["uncertain"] and len(entry["uncertain"]) < 500


def test_a_gone_pvs_external_volume_is_detached_by_its_handle():
    """The PV deleted while attached: the detach is planned from node status alone, for a handle with '/' and '#'."""
    handle = "projects/p/zones/z/disks/d#1"
    data = world(handle, with_pod=False)
    unique = names.unique_volume_name(EXT, handle)
    data["items"][0]["status"]["volumesAttached"] = [{"name": unique, "devicePath": ""}]
    data["items"] = [o for o in data["items"] if o["kind"] not in ("PersistentVolume", "PersistentVolumeClaim")]
    facts = {"node1": {"node_name": "node1", "reachable": True, "devices": [
        {"unique_volume_name": unique, "driver": EXT, "volume_handle": handle, "device": None, "size_bytes": None,
         "read_only": False}], "global_mounts": [], "pod_mounts": []}, "node2": {"node_name": "node2",
                                                                                 "reachable": True}}
    result = run(copy.deepcopy(data), facts)
    assert result["blocked"] == [] and steps(result) == [("detach", "device", "node1")]
    [item] = executor.phase_items(result, "teardown", "node1")
    assert item["volume_handle"] == handle and item["pv_name"].startswith("kubevol-gone-")
    volume_item(dict(item))
