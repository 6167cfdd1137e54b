# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
import json
import os

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (
    ClusterIndex, cluster_from_data, node_is_managed)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.load import load_cluster_file
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError, MalformedObject
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import StoreError

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "examples", "cluster.yaml")


def test_example_cluster_loads_into_read_only_objects():
    cluster, data = load_cluster_file(EXAMPLE)
    assert [n.name for n in cluster.nodes] == ["node1", "node2", "node3"]
    assert all(node_is_managed(n) and n.ready for n in cluster.nodes)
    assert len(cluster.pods) == 4 and len(cluster.persistent_volumes) == 4 and len(cluster.claims) == 4
    assert cluster.csi_drivers[0].attach_required is True
    pv = ClusterIndex(cluster).pv_by_name["pv-db-data"]
    assert pv.capacity_bytes == 512 * 2 ** 20 and pv.csi.fs_type == "xfs" and isinstance(pv.access_modes, tuple)
    with pytest.raises(AttributeError):
        pv.name = "x"


def test_json_yaml_and_dict_agree_a_multidoc_file_is_refused(tmp_path):
    cluster, data = load_cluster_file(EXAMPLE)
    as_json = tmp_path / "cluster.json"
    as_json.write_text(json.dumps(data))
    assert load_cluster_file(str(as_json))[0] == cluster
    multidoc = tmp_path / "cluster-multidoc.yaml"
    multidoc.write_text("\n---\n".join(json.dumps(i) for i in data["items"]))
    with pytest.raises(StoreError, match="it holds 17 YAML documents"):  # cut between two, it still parses
        load_cluster_file(str(multidoc))
    assert cluster_from_data(data["items"]) == cluster  # the same documents handed over as data are read
    assert cluster_from_data(data) == cluster


def test_unknown_kinds_ignored_and_defaults():
    data = {"kind": "List", "items": [{"kind": "Service", "metadata": {"name": "s"}},
                                      {"kind": "CSIDriver", "metadata": {"name": "d"}, "spec": {}},
                                      {"kind": "Node", "metadata": {"name": "n"}}]}
    cluster = cluster_from_data(data)
    assert cluster.csi_drivers[0].attach_required is True
    assert cluster.nodes[0].ready is None and not node_is_managed(cluster.nodes[0])


@pytest.mark.parametrize("obj,field", [
    ({"kind": "PersistentVolume", "metadata": {"name": "pv-a"}, "spec": {"capacity": {"storage": "10GB"}}},
     "spec.capacity.storage"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": {"volumes": [{"x": 1}]}},
     "spec.volumes"),
    ({"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": {}}, "metadata"),
    ({"kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "ns"},
      "spec": {"resources": {"requests": {"storage": "1K"}}}}, "spec.resources.requests.storage"),
    ({"kind": "Node", "metadata": {"name": "n"}, "status": {"volumesAttached": [{"devicePath": "/x"}]}},
     "status.volumesAttached"),
    ({"kind": "VolumeAttachment", "metadata": {"name": "v"}, "spec": {}}, "spec"),
])
def test_malformed_object_names_object_and_field(obj, field):
    with pytest.raises(MalformedObject) as err:
        cluster_from_data({"kind": "List", "items": [obj]})
    assert err.value.kwargs["field"] == field
    assert obj["metadata"]["name"] in err.value.msg


def test_bad_text_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [")
    with pytest.raises(KubevolError) as err:
        load_cluster_file(str(bad))
    assert "invalid YAML" in err.value.msg and str(bad) in err.value.msg


def _corrupt(data, kind, name, path, value):
    obj = [o for o in data["items"] if o["kind"] == kind and o["metadata"]["name"] == name][0]
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


# Fields that used to pass the model and crash later with a raw TypeError (a list or a mapping where Kubernetes has
# a string, used as a key further on). Found by replaying the planner over thousands of corrupted clusters.
@pytest.mark.parametrize("kind,name,path,value,field", [
    ("Pod", "db-0", ["metadata", "namespace"], {"a": 1}, "metadata"),
    ("Pod", "db-0", ["spec", "nodeName"], {"a": 1}, "spec.nodeName"),
    ("Pod", "db-0", ["spec", "containers", 0, "volumeMounts", 0, "name"], ["x"], "spec.containers"),
    ("PersistentVolumeClaim", "db-data", ["metadata", "namespace"], {"a": 1}, "metadata.namespace"),
    ("PersistentVolumeClaim", "db-data", ["spec", "volumeName"], {"a": 1}, "spec.volumeName"),
    ("PersistentVolumeClaim", "db-data", ["spec", "accessModes", 0], {"a": 1}, "spec.accessModes"),
    ("PersistentVolume", "pv-db-data", ["spec", "accessModes", 0], ["ReadWriteOnce"], "spec.accessModes"),
    ("PersistentVolume", "pv-db-data", ["spec", "claimRef", "namespace"], ["shop"], "spec.claimRef"),
    ("PersistentVolume", "pv-db-data", ["spec", "csi", "fsType"], ["xfs"], "spec.csi"),
])
def test_a_field_of_the_wrong_type_is_a_malformed_object_not_a_crash_later(kind, name, path, value, field):
    from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_task
    from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import utc_now
    _cluster, data = load_cluster_file(EXAMPLE)
    _corrupt(data, kind, name, path, value)
    params = dict(cluster_source="file", cluster_state=None, cluster=data, node_facts=None, force_detach=True, max_wait_for_unmount=360,
                  known_drivers=None, scope=None, max_teardown_fraction=0.5, max_teardown_count=20,
                  allow_mass_teardown=False, output="summary", table_rows=100)
    with pytest.raises(MalformedObject) as err:
        plan_task.run(params, utc_now())
    assert err.value.kwargs["field"] == field and name in err.value.msg, err.value.msg


# -- kubectl's JSON List read object by object (load_cluster_file(keep_list=False)) ---------------------------------
REAL_CLUSTERS = os.path.join(os.path.dirname(__file__), "fixtures", "real-clusters")


def _streamed_and_whole(path):
    """Both readings of one file: (streamed cluster or the exception, whole cluster or the exception)."""
    results = []
    for keep_list in (False, True):
        try:
            results.append(load_cluster_file(str(path), keep_list=keep_list)[0])
        except KubevolError as err:
            results.append((type(err).__name__, err.msg))
    return results


def test_kubectl_json_is_streamed_and_reads_as_the_whole_file(tmp_path):
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore
    names = sorted(os.listdir(REAL_CLUSTERS))
    assert len(names) == 4
    for name in names + [None]:
        source = EXAMPLE if name is None else os.path.join(REAL_CLUSTERS, name)
        cluster, data = load_cluster_file(source)
        assert cluster.nodes and cluster.pods and cluster.persistent_volumes and cluster.csi_drivers
        # as kubectl prints it (indented, items before kind) and compact, as the file store writes it
        for dumped in (json.dumps(data, indent=4, sort_keys=True), json.dumps(data, separators=(",", ":"))):
            as_json = tmp_path / "cluster.json"
            as_json.write_text(dumped)
            streamed = list(FileStore(str(as_json)).stream_items(dumped))  # no NotStreamable: really streamed
            assert streamed == data["items"]
            assert load_cluster_file(str(as_json), keep_list=False) == (cluster, None)


@pytest.mark.parametrize("text", [
    '[{"kind": "List", "items": []}]',                          # a list of documents
    '{"kind": "List", "items": null}',                          # null items: an empty cluster
    '{"kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "spec": {}, "items": []}',  # an object, not a List
    '{"items": [], "kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}]}',  # the last items wins
    '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}, {"metadata": {}}]}',  # an item, no kind
    '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}, 7]}',
    '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}',  # cut off
    '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}]} {"kind": "List"}',  # two values
    '{"kind": "List", "items": [{"kind": "PersistentVolume", "metadata": {"name": "pv"}, "spec": '
    '{"capacity": {"storage": "10GB"}}}, {"x": 1}]}',            # a bad quantity, then an item with no kind
    '\ufeff {"kind": "List", "items": [ ] }\n',
    '{"kind": 5, "items": []}',
    '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}},]}',  # trailing commas: not JSON
    '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}, ]}',
    '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}},\n  ]}',
    '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}},  }',
    '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}},',  # cut after a comma
    '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}, ',
    '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}},\t{"kind": "Node", '
    '"metadata": {"name": "m"}} ,\n{"kind": "Node", "metadata": {"name": "o"}}]}',  # any whitespace around commas
    '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "n"}}],}',
    '{}',
    '',
])
def test_any_other_json_is_read_whole_with_the_same_result_or_error(tmp_path, text):
    path = tmp_path / "cluster.json"
    path.write_text(text, encoding="utf-8")
    streamed, whole = _streamed_and_whole(path)
    assert streamed == whole
