# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A YAML snapshot cut short is never trusted (stores/file_text.py yaml_cut_short_problem).

What an interrupted ``kubectl get ... -o yaml > cluster.yaml`` leaves is a prefix of kubectl's output ending at a
line boundary; inside ``items`` that prefix parses as a smaller List, and a plan from it unmounts and detaches the
volumes of the pods it lost. Every line-boundary prefix of kubectl-ordered files (the real clusters, the example)
is planned through the role's entry point (volume_reconcile_plan, as the action plugin runs it), with node facts
that have every pod's volumes mounted and the teardown guard off: only the whole file is accepted.
"""

import datetime
import os

import pytest
import yaml

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (
    ClusterIndex, MalformedObject, cluster_from_data)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.load import load_cluster_file
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import file_text
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import StoreError
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore
from ansible_collections.kubevol.volumes.plugins.modules import volume_reconcile_plan as plan_module

HERE = os.path.dirname(os.path.abspath(__file__))
REAL_CLUSTERS = os.path.join(HERE, "fixtures", "real-clusters")
EXAMPLE = os.path.join(HERE, "..", "..", "..", "..", "examples", "cluster.yaml")
FILES = sorted(os.path.join(REAL_CLUSTERS, name) for name in os.listdir(REAL_CLUSTERS)) + [EXAMPLE]
NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)


def mounted_facts(data):
    """Node facts with every scheduled pod's claimed CSI volumes attached, staged and mounted into the pod."""
    objects = dict(((o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]), o) for o in data["items"])
    facts = {}
    drivers = set()
    for pod in (o for o in data["items"] if o["kind"] == "Pod" and o["spec"].get("nodeName")):
        node = facts.setdefault(pod["spec"]["nodeName"], {
            "node_name": pod["spec"]["nodeName"], "reachable": True, "error": None, "devices": [],
            "global_mounts": [], "pod_mounts": []})
        for volume in pod["spec"].get("volumes") or ():
            claim = objects.get(("PersistentVolumeClaim", pod["metadata"]["namespace"],
                                 (volume.get("persistentVolumeClaim") or {}).get("claimName")))
            pv = claim and objects.get(("PersistentVolume", None, claim["spec"].get("volumeName")))
            csi = pv and pv["spec"].get("csi")
            if not csi or pv["spec"].get("volumeMode", "Filesystem") != "Filesystem":
                continue
            driver, handle, name = csi["driver"], csi["volumeHandle"], pv["metadata"]["name"]
            drivers.add(driver)
            uvn = unique_volume_name(driver, handle)
            if not any(d["unique_volume_name"] == uvn for d in node["devices"]):
                node["devices"].append({"unique_volume_name": uvn, "driver": driver, "volume_handle": handle,
                                        "device": "/dev/loop0", "size_bytes": 0, "read_only": False})
                node["global_mounts"].append({"unique_volume_name": uvn, "driver": driver, "volume_handle": handle,
                                              "pv_name": name, "path": "/g/" + name, "mounted": True,
                                              "device": "/dev/loop0", "fs_type": "ext4", "fs_size_bytes": None,
                                              "read_only": False})
            node["pod_mounts"].append({"pod_uid": pod["metadata"]["uid"], "pv_name": name, "mode": "Filesystem",
                                       "path": "/p/%s/%s" % (pod["metadata"]["uid"], name), "mounted": True,
                                       "read_only": False, "device": "/dev/loop0", "unique_volume_name": uvn,
                                       "driver": driver})
    return facts, sorted(drivers)


def teardown(result):
    return [s for s in result["plan"] if s["action"] in ("unmount", "detach")]


def trusted_plan(text, node_facts, drivers):
    """What a plan from ``text`` would tear down if it were trusted as it parses (None: it does not parse)."""
    try:
        data = yaml.load(text, Loader=file_text.Loader)
        if not isinstance(data, dict) or not isinstance(data.get("items"), list):
            return None
        cluster = cluster_from_data(data)
    except (yaml.YAMLError, MalformedObject, KubevolError, TypeError, AttributeError, KeyError):
        return None
    options = PlanOptions(True, 360, tuple(drivers), NOW, 0.5, 20, True)
    return teardown(plan_cluster(ClusterIndex(cluster), node_facts, options))


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(f) for f in FILES])
def test_no_line_boundary_prefix_of_a_kubectl_file_is_trusted(tmp_path, path):
    with open(path) as handle:
        text = handle.read()
    node_facts, drivers = mounted_facts(load_cluster_file(path)[1])
    assert node_facts and drivers, "the file has no scheduled pod with a CSI volume: nothing to lose"
    params = dict(cluster_source="file", cluster=None, node_facts=node_facts, force_detach=True,
                  max_wait_for_unmount=360, known_drivers=drivers, scope=None, max_teardown_fraction=0.5,
                  max_teardown_count=20, allow_mass_teardown=True, output="full", table_rows=100)
    # the whole file: accepted, and it tears nothing down (every mounted volume's pod is in it)
    whole = tmp_path / "whole.yaml"
    whole.write_text(text)
    assert teardown(plan_module.run(dict(params, cluster_state=str(whole)), NOW)) == []
    lines = text.splitlines(True)
    cut = tmp_path / "cut.yaml"
    would_tear_down = 0
    for end in range(len(lines)):  # every prefix that stops before the last line
        prefix = "".join(lines[:end])
        if lines[end].startswith("- ") and trusted_plan(prefix, node_facts, drivers):  # cut between two items
            would_tear_down += 1
        cut.write_text(prefix)
        with pytest.raises(StoreError) as err:
            plan_module.run(dict(params, cluster_state=str(cut)), NOW)
        assert str(cut) in err.value.msg, (end, err.value.msg)
        assert err.value.msg.endswith("[KV-CLUSTER-FILE]"), (end, err.value.msg)
    # the refusal is what keeps those volumes: read as they parse, many prefixes would unmount and detach (unless the
    # planner blocks the file's volumes anyway: a handle with '/', as GKE's, is not one path component a node takes)
    handles = [d["volume_handle"] for f in node_facts.values() for d in f["devices"]]
    if all("/" not in h for h in handles):
        assert would_tear_down > 0


def test_a_cut_inside_the_items_is_refused_naming_the_file_and_how_to_write_it(tmp_path):
    with open(EXAMPLE) as handle:
        text = handle.read()
    cut = tmp_path / "cluster.yaml"
    cut.write_text(text[:text.index("kind: Pod")])
    with pytest.raises(StoreError) as err:
        FileStore(str(cut)).load()
    msg = err.value.msg
    assert msg.startswith("cluster store file %s: not trusted as a whole snapshot" % cut)
    assert "its List has no `kind: List` and `metadata:` lines after its `items:` line" in msg  # read from the lines
    assert msg.endswith("and check that kubectl succeeded [KV-CLUSTER-FILE]")
    assert "`kubectl get nodes,pods,pv,pvc,volumeattachments,csidrivers -A -o json > %s`" % cut in msg


@pytest.mark.parametrize("text, match", [
    # a hand-written List in another order: kubectl never writes it, a cut one looks the same
    ("apiVersion: v1\nkind: List\nmetadata: {}\nitems:\n- {kind: Node, metadata: {name: n}}\n",
     "no `kind: List` and `metadata:` lines after its `items:` line"),
    ("apiVersion: v1\nitems: []\nkind: List\n", "no `kind: List` and `metadata:`"),  # no metadata
    ("apiVersion: v1\nitems: []\nkind: List\nmetadata:\n", "no `kind: List` and `metadata:`"),  # metadata cut off
    ("apiVersion: v1\nitems: []\nkind: Li\nmetadata: {}\n",  # the lines are there: the parse decides
     "no `kind: List` and `metadata:` after its `items` \\(its top-level keys are, in order: apiVersion, items, kind, "
     "metadata\\)"),
    ("{apiVersion: v1, kind: List, metadata: {}, items: []}\n",  # flow style: the parse decides
     "its top-level keys are, in order: apiVersion, kind, metadata, items"),
    ("kind: Node\nmetadata: {name: n}\n", r"one object \(kind Node\), not a List"),
    ("- {kind: Node, metadata: {name: n}}\n", "a bare list of objects"),
    # several documents: the one cut between two (the second lost) reads like a whole one
    ("apiVersion: v1\nitems: []\nkind: List\nmetadata: {}\n---\nkind: Node\nmetadata: {name: n}\n",
     "it holds 2 YAML documents"),
    ("apiVersion: v1\nitems: []\nkind: List\nmetadata: {}\n---\n", "it holds 2 YAML documents"),
])
def test_a_yaml_file_that_cannot_show_it_is_whole_is_refused(tmp_path, text, match):
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    with pytest.raises(StoreError, match=match) as err:
        FileStore(str(path)).load()
    assert "not trusted as a whole snapshot" in err.value.msg and str(path) in err.value.msg


@pytest.mark.parametrize("text", [
    "apiVersion: v1\nitems: []\nkind: List\nmetadata:\n  resourceVersion: \"\"\n",
    "---\napiVersion: v1\nitems: []\nkind: List\nmetadata: {}\n",  # one document, opened by ---
    "# a comment\napiVersion: v1\nitems:\n- {kind: Node, metadata: {name: n}}\nkind: NodeList\nmetadata: {}\n",
    '{"apiVersion": "v1", "kind": "List", "metadata": {}, "items": []}',  # JSON: a cut one never parses
])
def test_a_whole_yaml_list_and_any_json_list_are_read(tmp_path, text):
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    assert isinstance(FileStore(str(path)).load()["items"], list)


def test_what_kubevol_writes_stays_in_kubectls_order(tmp_path):
    """FileStore.dumps writes the List's keys sorted, so a file kubevol wrote is accepted again, whatever order
    the List it changed had in memory."""
    store = FileStore(str(tmp_path / "cluster.yaml"))
    text = store.dumps({"kind": "List", "metadata": {"resourceVersion": ""}, "apiVersion": "v1",
                        "items": [{"kind": "Node", "metadata": {"name": "n"}}]}, "yaml")
    assert [line for line in text.splitlines() if not line.startswith((" ", "-"))] == [
        "apiVersion: v1", "items:", "kind: List", "metadata:"]
    assert store.parse(text)[0]["items"] == [{"kind": "Node", "metadata": {"name": "n"}}]
