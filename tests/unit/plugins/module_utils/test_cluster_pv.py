# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster/pv.py: spec.local, spec.hostPath and spec.nodeAffinity of PVs, parsed, validated as the API server
validates them (ValidateVolumeNodeAffinity, ValidateNodeSelector) and matched as nodeaffinity.go matches them."""

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import node_affinity, node_matches
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import MalformedObject


def pv_list(spec):
    return {"apiVersion": "v1",
            "items": [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"}, "spec": spec}],
            "kind": "List", "metadata": {"resourceVersion": ""}}


def one_pv(spec):
    return cluster_from_data(pv_list(spec)).persistent_volumes[0]


def test_local_and_host_path_sources():
    pv = one_pv({"capacity": {"storage": "1Gi"}, "local": {"fsType": "xfs", "path": "/mnt/disks/a"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}})
    # the in-tree plugin's source, as its class parses it (volume/local.py LocalSource)
    assert pv.source_kind == "local" and pv.source.path == "/mnt/disks/a" and pv.source.fs_type == "xfs"
    assert type(pv.source).__name__ == "LocalSource" and pv.csi is None
    assert node_matches(pv.node_affinity, "n1", {"kubernetes.io/hostname": "n1"})
    assert not node_matches(pv.node_affinity, "n2", {"kubernetes.io/hostname": "n2"})
    hp = one_pv({"hostPath": {"path": "/srv/x", "type": "Directory"}})
    assert hp.source_kind == "hostPath" and hp.source.path == "/srv/x" and hp.source.type == "Directory"
    assert type(hp.source).__name__ == "HostPathSource" and hp.node_affinity is None
    assert one_pv({"hostPath": {"path": "/srv/x"}}).source.type == ""
    assert one_pv({"local": {"path": "/mnt/disks/a"}}).source.fs_type == ""
    assert one_pv({"nfs": {"path": "/", "server": "s"}}).source is None  # no plugin of kubevol's serves it


def test_index_knows_local_and_host_path_unique_names():
    data = pv_list({"local": {"path": "/mnt/disks/a"}})
    data["items"].append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv2"},
                          "spec": {"hostPath": {"path": "/srv"}}})
    index = ClusterIndex(cluster_from_data(data))
    assert index.pv_by_unique_name["kubernetes.io/local-volume/pv1"].name == "pv1"
    assert index.pv_by_unique_name["kubernetes.io/host-path/pv2"].name == "pv2"


def test_node_labels_are_read():
    data = {"apiVersion": "v1", "items": [{"apiVersion": "v1", "kind": "Node",
                                           "metadata": {"labels": {"zone": "a"}, "name": "n1"}}],
            "kind": "List", "metadata": {}}
    assert cluster_from_data(data).nodes[0].labels == (("zone", "a"),)


@pytest.mark.parametrize("spec,field,words", [
    ({"local": {"path": ""}}, "spec.local", "path must be a non-empty string"),
    ({"local": "x"}, "spec.local", "must be a mapping"),
    ({"hostPath": {"path": 3}}, "spec.hostPath", "path must be a non-empty string"),
    ({"hostPath": {"path": "/x", "type": ["a"]}}, "spec.hostPath", "type must be a string"),
    ({"local": {"path": "/a"}, "nodeAffinity": {}}, "spec.nodeAffinity", "must specify required node constraints"),
    ({"local": {"path": "/a"}, "nodeAffinity": {"required": {"nodeSelectorTerms": []}}}, "spec.nodeAffinity",
     "must have at least one node selector term"),
    ({"local": {"path": "/a"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "k", "operator": "Near", "values": ["a"]}]}]}}}, "spec.nodeAffinity",
     "nodeSelectorTerms[0].matchExpressions[0].operator 'Near' is not a valid operator"),
    ({"local": {"path": "/a"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "k", "operator": "In"}]}]}}}, "spec.nodeAffinity", "must be specified when operator is In or NotIn"),
    ({"local": {"path": "/a"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "k", "operator": "Exists", "values": ["a"]}]}]}}}, "spec.nodeAffinity", "may not be specified"),
    ({"local": {"path": "/a"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "k", "operator": "Gt", "values": ["x"]}]}]}}}, "spec.nodeAffinity", "must be a single integer"),
    ({"local": {"path": "/a"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.uid", "operator": "In", "values": ["a"]}]}]}}}, "spec.nodeAffinity",
     "the only field a node selector supports is metadata.name"),
    ({"local": {"path": "/a"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "Exists"}]}]}}}, "spec.nodeAffinity", "is not a valid operator"),
    ({"local": {"path": "/a"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}]}}}, "spec.nodeAffinity",
     "must have one element"),
])
def test_malformed_pv_refused_naming_pv_and_field(spec, field, words):
    with pytest.raises(MalformedObject) as exc:
        cluster_from_data(pv_list(spec))
    assert exc.value.kwargs["name"] == "pv1" and exc.value.kwargs["field"] == field
    assert words in exc.value.kwargs["reason"], exc.value.kwargs["reason"]


def terms(*expressions, fields=()):
    return node_affinity({"required": {"nodeSelectorTerms": [
        {"matchExpressions": list(expressions), "matchFields": list(fields)}]}})


@pytest.mark.parametrize("expression,labels,expected", [
    ({"key": "zone", "operator": "In", "values": ["a", "b"]}, {"zone": "b"}, True),
    ({"key": "zone", "operator": "In", "values": ["a"]}, {"zone": "c"}, False),
    ({"key": "zone", "operator": "In", "values": ["a"]}, {}, False),
    ({"key": "zone", "operator": "NotIn", "values": ["a"]}, {"zone": "c"}, True),
    ({"key": "zone", "operator": "NotIn", "values": ["a"]}, {}, True),  # a missing label is not in the set
    ({"key": "zone", "operator": "NotIn", "values": ["a"]}, {"zone": "a"}, False),
    ({"key": "ssd", "operator": "Exists"}, {"ssd": ""}, True),
    ({"key": "ssd", "operator": "Exists"}, {}, False),
    ({"key": "ssd", "operator": "DoesNotExist"}, {}, True),
    ({"key": "ssd", "operator": "DoesNotExist"}, {"ssd": "1"}, False),
    ({"key": "disks", "operator": "Gt", "values": ["2"]}, {"disks": "3"}, True),
    ({"key": "disks", "operator": "Gt", "values": ["2"]}, {"disks": "2"}, False),
    ({"key": "disks", "operator": "Gt", "values": ["2"]}, {"disks": "x"}, False),
    ({"key": "disks", "operator": "Gt", "values": ["2"]}, {}, False),
    ({"key": "disks", "operator": "Lt", "values": ["2"]}, {"disks": "-1"}, True),
    ({"key": "disks", "operator": "Lt", "values": ["2"]}, {"disks": "2"}, False),
])
def test_match_expressions(expression, labels, expected):
    assert node_matches(terms(expression), "n1", labels) is expected


def test_match_fields_terms_or_and_empty_term():
    by_name = terms(fields=[{"key": "metadata.name", "operator": "In", "values": ["n1"]}])
    assert node_matches(by_name, "n1", {}) and not node_matches(by_name, "n2", {})
    not_name = terms(fields=[{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}])
    assert node_matches(not_name, "n2", {}) and not node_matches(not_name, "n1", {})
    both = terms({"key": "zone", "operator": "In", "values": ["a"]},
                 fields=[{"key": "metadata.name", "operator": "In", "values": ["n1"]}])
    assert node_matches(both, "n1", {"zone": "a"}) and not node_matches(both, "n1", {"zone": "b"})
    ored = node_affinity({"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}})
    assert node_matches(ored, "n", {"zone": "b"}) and not node_matches(ored, "n", {"zone": "c"})
    # nodeaffinity.go: a term without requirements matches no node
    assert not node_matches(node_affinity({"required": {"nodeSelectorTerms": [{}]}}), "n1", {})
