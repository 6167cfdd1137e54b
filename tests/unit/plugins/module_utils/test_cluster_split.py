# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A big kubectl JSON List read by two processes (cluster/load_split.py, its flat forms cluster/flat.py): a real fork
and pipe, with the size threshold lowered. The model is the one-process read's, class for class; a guess inside an
item, a child that fails, dies or hangs, and a malformed object leave the one-process result or error; no child is
left behind."""

import copy
import json
import marshal
import os
import time

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster import flat, load_split
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.load import load_cluster_file
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import Cluster, cluster_from_data
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError

HERE = os.path.dirname(__file__)
REAL_CLUSTERS = os.path.join(HERE, "fixtures", "real-clusters")
EXAMPLE = os.path.join(HERE, "..", "..", "..", "..", "examples", "cluster.yaml")
STYLES = {"kubectl": dict(indent=4, sort_keys=True), "compact": dict(separators=(",", ":")), "dump": {}}


def _inline_csi_pod(index):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": "ns", "name": "inline-%d" % index, "uid": "uid-inline-%d" % index},
            "spec": {"nodeName": "node-%d" % (index % 3),
                     "volumes": [{"name": "secrets", "csi": {
                         "driver": "secrets-store.csi.k8s.io", "readOnly": True, "fsType": "ext4",
                         "volumeAttributes": {"secretProviderClass": "vault", "b": "2"},
                         "nodePublishSecretRef": {"name": "creds"}}}, {"name": "tmp", "emptyDir": {}}],
                     "containers": [{"name": "c", "volumeMounts": [
                         {"name": "secrets", "mountPath": "/s", "readOnly": True}]}]},
            "status": {"phase": "Running"}}


def _tainted_node(index):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "tainted-%d" % index, "labels": {"zone": "a", "disk": "ssd"}},
            "spec": {"taints": [{"key": "node.kubernetes.io/out-of-service", "effect": "NoExecute"},
                                {"key": "k", "value": "v", "effect": "NoSchedule"}]},
            "status": {"conditions": [{"type": "Ready", "status": "False"}],
                       "volumesAttached": [{"name": "kubernetes.io/csi/d^h-%d" % index, "devicePath": "/dev/x"}],
                       "volumesInUse": ["kubernetes.io/csi/d^h-%d" % index]}}


def _local_pv(index):
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "local-%d" % index},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "local": {"path": "/mnt/d"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-1"]}]}]}}},
            "status": {"phase": "Available"}}


def _items():
    """Every kind the model reads: the real clusters' and the example's objects, renamed into several copies so the
    List is long, with Pods that have inline CSI volumes, tainted Nodes and local PVs among them."""
    sources = [os.path.join(REAL_CLUSTERS, name) for name in sorted(os.listdir(REAL_CLUSTERS))] + [EXAMPLE]
    base = []
    for source in sources:
        base.extend(load_cluster_file(source)[1]["items"])
    items = []
    for copy_index in range(6):
        for obj in base:
            obj = copy.deepcopy(obj)
            obj.setdefault("apiVersion", "v1")  # kubectl writes it first in every item: where the child may start
            obj["metadata"]["name"] = "%s-%d" % (obj["metadata"]["name"], copy_index)
            items.append(obj)
        items.extend([_inline_csi_pod(copy_index), _tainted_node(copy_index), _local_pv(copy_index)])
    return items


def _write(tmp_path, items, style):
    path = tmp_path / ("cluster-%s.json" % style)
    path.write_text(json.dumps({"apiVersion": "v1", "items": items, "kind": "List", "metadata": {}}, **STYLES[style]))
    return str(path)


def _same(one, other):
    """Equal, and of the same class all the way down (namedtuples compare equal to plain tuples)."""
    if type(one) is not type(other):
        return False
    if isinstance(one, tuple):
        return len(one) == len(other) and all(_same(a, b) for a, b in zip(one, other))
    return one == other


@pytest.fixture
def splits(monkeypatch):
    """The split on for any size and CPU count; each SplitRead made, with its child's pid."""
    made = []
    start = load_split.SplitRead.start.__func__

    def spy(cls, text):
        split = start(cls, text)
        made.append((split, split._pid if split is not None else None))
        return split

    monkeypatch.setattr(load_split, "SPLIT_MIN_CHARS", 0)
    monkeypatch.setattr(load_split, "usable_cpus", lambda: 2)
    monkeypatch.setattr(load_split, "usable_memory", lambda: None)
    monkeypatch.setattr(load_split.SplitRead, "start", classmethod(spy))
    return made


def _one_process(path, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(load_split, "usable_cpus", lambda: 1)
        try:
            return load_cluster_file(path, keep_list=False)[0]
        except KubevolError as err:
            return (type(err).__name__, err.msg)


def _started(splits):
    return [(split, pid) for split, pid in splits if split is not None]


def _gone(pid):
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no child of this process by that pid


def test_flat_forms_cross_marshal_and_come_back_class_for_class():
    model = cluster_from_data({"kind": "List", "items": _items()})
    flat_seen = dict((slot, 0) for slot in flat.CODECS)
    for slot, (to_flat, from_flat) in flat.CODECS.items():
        for obj in model[slot]:
            form = to_flat(obj)
            if form is None:
                continue
            flat_seen[slot] += 1
            assert _same(from_flat(marshal.loads(marshal.dumps(form, 2))), obj), obj
    assert all(flat_seen.values()), flat_seen
    # an inline CSI volume's source and a tainted node's taints and attachments are namedtuples too
    assert any(volume.csi is not None for pod in model.pods for volume in pod.volumes)
    assert any(node.taints and node.volumes_attached for node in model.nodes)
    # a PV with a node affinity (or an in-tree source) has no flat form: it crosses as its List item
    assert any(pv.node_affinity is not None for pv in model.persistent_volumes)
    assert all(flat.CODECS[Cluster._fields.index("persistent_volumes")][0](pv) is None
               for pv in model.persistent_volumes if pv.node_affinity is not None or pv.source is not None)


@pytest.mark.parametrize("style", sorted(STYLES))
def test_two_processes_read_the_model_one_process_reads(tmp_path, monkeypatch, splits, style):
    path = _write(tmp_path, _items(), style)
    alone = _one_process(path, monkeypatch)
    cluster, data = load_cluster_file(path, keep_list=False)
    assert data is None and _same(cluster, alone)
    (split, pid), = _started(splits)
    assert split is not None and split.buckets is not None  # the child's part was taken over
    assert any(split.buckets[Cluster._fields.index("pods")])
    _gone(pid)


def test_a_guess_inside_an_item_is_dropped(tmp_path, monkeypatch, splits):
    items = _items()
    # two owner references, each starting with apiVersion as kubectl writes them: `}, {"apiVersion":` inside an item
    victim = [obj for obj in items if obj["kind"] == "Pod"][-3]
    victim["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "uid": "1"},
                                             {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "b", "uid": "2"}]
    path = _write(tmp_path, items, "dump")
    text = open(path).read()
    inside = text.index('{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "b"')
    monkeypatch.setattr(load_split, "SPLIT_AT", (inside - 8) / float(len(text)))
    cluster = load_cluster_file(path, keep_list=False)[0]
    (split, pid), = _started(splits)
    assert split.at == inside and split.buckets is None  # the loop passed the guess: the child's work dropped
    assert _same(cluster, _one_process(path, monkeypatch))
    _gone(pid)


def test_a_malformed_object_in_the_childs_part_gives_the_one_process_error(tmp_path, monkeypatch, splits):
    items = _items()
    [obj for obj in items if obj["kind"] == "PersistentVolume"][-1]["spec"]["capacity"]["storage"] = "10GB"
    path = _write(tmp_path, items, "kubectl")
    with pytest.raises(KubevolError) as err:
        load_cluster_file(path, keep_list=False)
    assert (type(err.value).__name__, err.value.msg) == _one_process(path, monkeypatch)
    assert "10GB" in err.value.msg
    (split, pid), = _started(splits)
    assert open(path).read().index('"10GB"') > split.at  # in the child's part, and met again by this process
    assert split.buckets is None
    _gone(pid)


def _dies(text, at, write_fd):
    os._exit(3)


def _hangs(text, at, write_fd):
    time.sleep(60)
    os._exit(0)


def _garbles(text, at, write_fd):
    os.write(write_fd, b"\xe9 not marshal")
    os._exit(0)


@pytest.mark.parametrize("child", [_dies, _hangs, _garbles])
def test_a_child_that_dies_hangs_or_garbles_leaves_the_reading_to_this_process(tmp_path, monkeypatch, splits, child):
    path = _write(tmp_path, _items(), "kubectl")
    monkeypatch.setattr(load_split, "_child", child)
    monkeypatch.setattr(load_split, "MIN_PATIENCE", 0.5)
    started = time.monotonic()
    cluster = load_cluster_file(path, keep_list=False)[0]
    assert time.monotonic() - started < 30  # the hanging child was not waited for
    assert _same(cluster, _one_process(path, monkeypatch))
    (split, pid), = _started(splits)
    assert split.buckets is None
    _gone(pid)


def test_one_cpu_little_memory_yaml_or_a_small_file_reads_in_one_process(tmp_path, monkeypatch):
    path = _write(tmp_path, _items(), "kubectl")
    text = open(path).read()
    assert load_split.usable_cpus() >= 1 and load_split.usable_memory() > 0  # this machine's, as the kernel says
    monkeypatch.setattr(load_split, "usable_cpus", lambda: 1)
    assert load_split.SplitRead.start(text) is None
    monkeypatch.setattr(load_split, "usable_cpus", lambda: 2)
    assert len(text) < load_split.SPLIT_MIN_CHARS and load_split.SplitRead.start(text) is None
    monkeypatch.setattr(load_split, "SPLIT_MIN_CHARS", 0)
    assert load_split.SplitRead.start(open(EXAMPLE).read()) is None  # YAML: parsed whole, no child
    monkeypatch.setattr(load_split, "usable_memory", lambda: load_split.MEMORY_PER_CHAR * len(text) - 1)
    assert load_split.SplitRead.start(text) is None
