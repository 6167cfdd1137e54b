# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The order records reach the cluster in: a pod moving with its RWO volume, from the planner's plan through
executor.run_step's records to the stores. What the attach/detach controller does (reconciler.go: detach before
attach) is what a reader of the API may see: never one RWO volume attached to two nodes, not even between two
writes of one record step (tests/fakeapi journal.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import sys

import pytest
import yaml

pytest.importorskip("kubernetes")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))

from fakeapi import FakeApiServer, write_kubeconfig  # noqa: E402  (tests/ is on sys.path)
from fakeapi.journal import nodes_per_volume, reporting_nodes  # noqa: E402
from simulate import bound, cluster, csidriver, facts, node, pod, uvn, va  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import volume_attachment_name  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import plan_cluster  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import RecordApplier  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import get_store  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import (  # noqa: E402
    KubernetesStore, write_stages)

DRIVER = "loop.kubevol.io"
TOKEN = "test-token"
OLD_VA = volume_attachment_name("pv-a.img", DRIVER, "node1")
NEW_VA = volume_attachment_name("pv-a.img", DRIVER, "node2")
VAS = "/apis/storage.k8s.io/v1/volumeattachments"


def moved_pod():
    """db-0 was on node1 (its volume still attached and mounted there) and is now scheduled on node2."""
    objects = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), node("node2"),
                      bound("pv-a", "prod/data"), pod("prod/db-0", "node2", claims=["data"], uid="uid-new"),
                      va("pv-a", "node1"), csidriver())
    for obj in objects["items"]:
        obj.setdefault("apiVersion", "storage.k8s.io/v1" if obj["kind"] in ("VolumeAttachment", "CSIDriver") else "v1")
    node_facts = {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("uid-old", "pv-a")]),
                  "node2": facts("node2")}
    return objects, plan_cluster(ClusterIndex(cluster_from_data(copy.deepcopy(objects))), node_facts)


def ran(*phases, **results):
    """A node_phases task result in which each phase's module succeeded."""
    phase_results = dict((phase, {"changed": True}) for phase in phases)
    phase_results.update(results)
    return {"changed": True, "phase_results": phase_results}


ATTACHED = {"changed": True, "volumes": [{"unique_volume_name": uvn("pv-a"), "device_path": "/dev/loop7"}]}


def record_steps(plan):
    """What reconcile_run writes after the plan, after the teardown and after the setup (executor.run_step)."""
    state, first, upcoming = executor.run_step(plan)
    assert [t["name"] for t in upcoming] == ["teardown", "setup"]
    state, teardown, _upcoming = executor.run_step(plan, state, "teardown", {"node1": ran("teardown")})
    state, setup, _upcoming = executor.run_step(plan, state, "setup", {"node2": ran("attach", "mount", attach=ATTACHED)})
    return first, teardown, setup


def test_the_plan_moves_the_volume_and_the_teardown_step_writes_its_records_before_the_intent():
    _objects, plan = moved_pod()
    assert [(s["action"], s["target"], s["node"]) for s in plan["plan"]] == [
        ("unmount", "pod", "node1"), ("unmount", "device", "node1"), ("detach", "device", "node1"),
        ("attach", "device", "node2"), ("mount", "device", "node2"), ("mount", "pod", "node2")]
    _first, teardown, _setup = record_steps(plan)
    assert [(r["type"], r["node"]) for r in teardown] == [("detached", "node1"), ("attach_intent", "node2")]
    assert write_stages(teardown) == [[0], [1]]


@pytest.mark.parametrize("records, stages", [
    ([{"type": "detached"}, {"type": "in_use", "in_use": False}, {"type": "attach_intent"},
      {"type": "resize_intent"}], [[0, 1], [2, 3]]),
    ([{"type": "detach_requested"}, {"type": "in_use", "in_use": True}], [[0, 1]]),
    ([{"type": "in_use", "in_use": False}, {"type": "in_use", "in_use": True}], [[0], [1]]),
    ([{"type": "attached"}, {"type": "in_use", "in_use": True}, {"type": "controller_expanded"}], [[0, 1, 2]]),
    ([{"type": "attached"}, {"type": "detached"}, {"type": "attach_intent"}], [[0, 1], [2]]),
    ([], []),
])
def test_a_stage_ends_where_an_acquiring_record_follows_a_releasing_one(records, stages):
    assert write_stages(records) == stages


@pytest.fixture
def api():
    server = FakeApiServer(tokens=[TOKEN]).start()
    yield server
    server.stop()


def api_store(api, tmp_path):
    kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), {"fake": {"server": api.url, "token": TOKEN}})
    return KubernetesStore({"kubeconfig": kubeconfig}, environ={}, sleep=lambda s: None)


def assert_never_two_nodes(journal):
    for position, entry in enumerate(journal):
        assert all(len(nodes) == 1 for nodes in nodes_per_volume(entry).values()), (position, entry)
        assert all(len(nodes) == 1 for nodes in reporting_nodes(entry).values()), (position, entry)


def test_a_pod_move_through_the_api_deletes_the_old_attachment_before_it_creates_the_new(api, tmp_path):
    objects, plan = moved_pod()
    api.load(objects)
    first, teardown, setup = record_steps(plan)
    store = api_store(api, tmp_path)
    try:
        store.apply(first)
        del api.log[:], api.journal[:]
        result = store.apply(teardown)
        writes = [(r["method"], r["path"], r["status"]) for r in api.writes()]
        assert writes == [("PATCH", "/api/v1/nodes/node1/status", 200),   # RemoveVolumeFromReportAsAttached
                          ("DELETE", VAS + "/" + OLD_VA, 200),             # csi_attacher Detach
                          ("POST", VAS, 201),                              # the intent on node2, only then
                          ("PATCH", VAS + "/%s/status" % NEW_VA, 200)], writes
        assert_never_two_nodes(api.journal)
        assert [c["type"] for c in result["changes"]] == ["detached", "attach_intent"]
        assert api.get("VolumeAttachment", NEW_VA)["status"] == {"attached": False}
        del api.journal[:]
        store.apply(setup)
        assert_never_two_nodes(api.journal)
        assert api.get("VolumeAttachment", OLD_VA) is None
        assert api.get("VolumeAttachment", NEW_VA)["status"]["attached"] is True
        assert api.get("Node", "node2")["status"]["volumesAttached"] == [{"devicePath": "/dev/loop7",
                                                                          "name": uvn("pv-a")}]
        # the setup's VolumeAttachment says attached before node2's status reports the volume
        paths = [r["path"] for r in api.writes()]
        assert paths.index(VAS + "/%s/status" % NEW_VA, 2) < paths.index("/api/v1/nodes/node2/status")
    finally:
        store.close()


def test_a_conflict_in_the_second_stage_rereads_only_it_and_never_undoes_the_first(api, tmp_path):
    objects, plan = moved_pod()
    api.load(objects)
    _first, teardown, _setup = record_steps(plan)

    def create_first(server, request):
        if request["method"] == "POST" and request["plural"] == "volumeattachments":
            # another writer created node2's attachment meanwhile (AlreadyExists): the stage is read again
            server.put({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": NEW_VA},
                        "spec": {"attacher": DRIVER, "nodeName": "node2", "source": {"persistentVolumeName": "pv-a"}}})
            return True
        return False

    api.hooks.append(create_first)
    store = api_store(api, tmp_path)
    try:
        result = store.apply(teardown)
    finally:
        store.close()
    assert [r["status"] for r in api.requests("DELETE")] == [200]  # the first stage written once
    assert [r["status"] for r in api.requests("POST")] == [409]
    assert api.get("VolumeAttachment", OLD_VA) is None and api.get("VolumeAttachment", NEW_VA) is not None
    assert result["changed"] and len(api.requests("GET", "/api/v1/nodes/node1")) == 1  # only the stage re-read
    assert len(api.requests("GET", VAS + "/" + NEW_VA)) == 2


def test_the_file_store_applies_the_same_records_in_the_same_order(tmp_path):
    """The file is one atomic rewrite; the records it applies come in the same order, and no prefix of them holds
    the volume attached to two nodes."""
    objects, plan = moved_pod()
    _first, teardown, _setup = record_steps(plan)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(objects))
    result = get_store("file", cluster_state=str(path)).apply(teardown)
    assert [(c["index"], c["type"]) for c in result["changes"]] == [(0, "detached"), (1, "attach_intent")]
    state = copy.deepcopy(objects)
    applier = RecordApplier(state)
    for position, record in enumerate(teardown):
        applier.apply(record, position)
        applier.finish()
        attachments = [o["spec"]["nodeName"] for o in state["items"]
                       if o["kind"] == "VolumeAttachment" and o["spec"]["source"]["persistentVolumeName"] == "pv-a"]
        assert len(attachments) <= 1, (position, attachments)
    written = yaml.safe_load(path.read_text())
    assert [o["spec"]["nodeName"] for o in written["items"] if o["kind"] == "VolumeAttachment"] == ["node2"]
