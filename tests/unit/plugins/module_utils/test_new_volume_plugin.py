# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A new volume plugin is one file plus one registry line (issue 26, docs/architecture.md "Where a new volume plugin
or CSI driver goes"): a small in-tree plugin of NFS's shape (pkg/volume/nfs/nfs.go: kubernetes.io/nfs, spec.nfs,
not attachable, no Block mode), defined here and added to the registry for these tests only, is planned, refused
and served by the generic code with no other change: the cluster model parses its PV source, the planner refuses
what its class says it cannot do and turns its PV into items, node items name it, and the node phases reach its
node methods."""

from collections import namedtuple

import pytest

from test_planner_plugins import cluster, facts, item_of, labelled, pod, pvc, reasons, run, steps

from ansible_collections.kubevol.volumes.plugins.module_utils import volume
from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options
from ansible_collections.kubevol.volumes.plugins.module_utils.node import plugin_ops
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.step_refusals import _item_problems
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import NODE, VolumePlugin

NFS = "kubernetes.io/nfs"
NFSSource = namedtuple("NFSSource", "server path read_only")


class ToyNFSPlugin(VolumePlugin):
    """The whole toy plugin: class data, its PV source, its plan-time rule, its item fields, its node operations."""
    NAME = NFS
    DIR = "kubernetes.io~nfs"
    SPEC_KEY = "nfs"
    KIND = "nfs"
    BLOCK = False  # nfs.go is no BlockVolumePlugin
    FS_GROUP = False
    calls = []

    @classmethod
    def parse_source(cls, raw):
        if not isinstance(raw, dict):
            raise TypeError("spec.nfs must be a mapping")
        return NFSSource(raw.get("server") or "", raw.get("path") or "", bool(raw.get("readOnly")))

    @classmethod
    def refusals(cls, pv, driver_options):
        if not pv.source.server:  # validation.go validateNFSVolumeSource
            return ["PV %s: spec.nfs.server: Required value; nothing is mounted on %s" % (pv.name, NODE)]
        return []

    @classmethod
    def spec_fields(cls, source):
        return None, "", "nfs"  # no node path for the allowed-directory check: the export is the server's

    @classmethod
    def node_setup(cls, ctx, item):
        cls.calls.append(("setup", item.pv_name, item.unique_name))
        return {"pv_name": item.pv_name, "changed": True}

    @classmethod
    def node_teardown(cls, ctx, item, force=False):
        cls.calls.append(("teardown", item.pv_name, force))
        return {"pv_name": item.pv_name, "changed": True}


@pytest.fixture
def toy(monkeypatch):
    """The one registry line, for this test only (monkeypatch takes it out again)."""
    monkeypatch.setitem(volume.registry(), NFS, ToyNFSPlugin)
    ToyNFSPlugin.calls = []
    return ToyNFSPlugin


def nfs_pv(name="pv-n", server="nfs.example", mode="Filesystem"):
    spec = {"accessModes": ["ReadWriteMany"], "capacity": {"storage": "1Gi"},
            "claimRef": {"name": "a", "namespace": "ns", "uid": "uid-ns/a"},
            "nfs": {"server": server, "path": "/exports/a"}, "volumeMode": mode}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec,
            "status": {"phase": "Bound"}}


def nfs_cluster(*pods, pv=None):
    pv = pv or nfs_pv()
    return cluster(labelled("node1"), pv, pvc("ns/a", pv["metadata"]["name"]), *pods)


def test_without_its_line_the_planner_leaves_an_nfs_pv_alone():
    result = run(nfs_cluster(pod("ns/p", "node1", ["a"])))
    assert steps(result) == [] and result["blocked"] == []


def test_with_its_line_the_planner_plans_its_pv_as_any_in_tree_plugin(toy):
    result = run(nfs_cluster(pod("ns/p", "node1", ["a"])))
    assert steps(result) == [("mount", "pod", "node1", "pv-n", "ns/p")]  # no attach: its class is not ATTACHABLE
    assert result["blocked"] == []
    step = result["plan"][0]
    assert step["unique_volume_name"] == "kubernetes.io/nfs/pv-n"  # the class's unique-name rule
    item = item_of(result, step)
    assert (item["plugin"], item["driver"], item["volume_handle"], item["path"], item["fs_type"]) == (
        NFS, None, "pv-n", None, "nfs")
    assert list(_item_problems(item, ())) == []  # the item the planner hands a node passes the plan's own item check


def test_what_its_class_says_it_cannot_do_is_refused(toy):
    result = run(nfs_cluster(pod("ns/p", "node1", ["a"], devices=["a"]), pv=nfs_pv(mode="Block")))
    assert steps(result) == []
    [reason] = reasons(result)
    assert "spec.volumeMode Block is not supported by the kubernetes.io/nfs plugin" in reason
    assert "node node1" in reason and "Use volumeMode Filesystem" in reason
    result = run(nfs_cluster(pod("ns/p", "node1", ["a"]), pv=nfs_pv(server="")))
    assert steps(result) == [] and "spec.nfs.server: Required value" in reasons(result)[0]


def test_a_pod_gone_is_torn_down_from_its_facts(toy):
    mount = {"plugin": NFS, "pod_uid": "uid-ns-p", "pv_name": "pv-n", "unique_volume_name": NFS + "/pv-n",
             "driver": None, "foreign": False, "mode": "Filesystem", "mounted": True, "read_only": False,
             "path": "/var/lib/kubelet/pods/uid-ns-p/volumes/kubernetes.io~nfs/pv-n", "device": "nfs.example:/a",
             "uncertain": None, "unsafe": False, "ephemeral": False}
    result = run(cluster(labelled("node1")), {"node1": facts("node1", [mount])})
    assert steps(result) == [("unmount", "pod", "node1", "pv-n", None)]
    assert item_of(result, result["plan"][0])["plugin"] == NFS


def test_the_node_serves_its_items_through_its_methods(toy):
    item = volume_item({"pv_name": "pv-n", "plugin": NFS, "pods": [{"uid": "u1"}]})
    assert item.unique_name == "kubernetes.io/nfs/pv-n" and not item.csi
    assert plugin_ops.mount(None, item) == {"pv_name": "pv-n", "changed": True}
    plugin_ops.unmount(None, item, force=True)
    assert toy.calls == [("setup", "pv-n", "kubernetes.io/nfs/pv-n"), ("teardown", "pv-n", True)]
    assert plugin_ops.expand_node(None, item)["skipped"] == "nfs volumes are not expandable"
    assert driver_options.validate({NFS: {}}) == {NFS: {}}  # its driver_options entry: its class's OPTIONS


def test_a_node_refuses_a_plugin_the_registry_does_not_have():
    """The node modules' item check is the registry's (no choices list elsewhere): without its line, an item of the
    toy plugin fails before anything runs, naming the plugins the node has."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
    with pytest.raises(InvalidInput) as err:
        volume_item({"pv_name": "pv-n", "plugin": NFS})
    assert "kubernetes.io/csi, kubernetes.io/local-volume, kubernetes.io/host-path" in err.value.msg
