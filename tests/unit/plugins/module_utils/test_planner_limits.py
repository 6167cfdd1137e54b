# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet's CSI registration planned from the node facts (plan/registration.py: the CSINode, the topology labels
and the node id annotation, written once) and the CSI volume limit (plan/rules_limits.py: no attach past a node's
allocatable.count, in the scheduler's words; nothing detached for it)."""

import datetime
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import LOOP, bound, cluster, facts, node, pod  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (  # noqa: E402
    ClusterIndex, cluster_from_data)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.registration import storage_view  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import apply_records  # noqa: E402

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
EXT = "csi.kubevol.test"
KEY = "topology.csi.kubevol.test/node"


def run(data, node_facts=None):
    opts = PlanOptions(True, 360, (LOOP, EXT), NOW, 0.5, 20, False, ("/var/lib/kubevol/pool",),
                       {EXT: {"controller": "node"}})
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts)


def registered(name, max_volumes=0, node_id=None):
    f = facts(name)
    f["csi_nodes"] = {EXT: {"node_id": node_id or name, "max_volumes_per_node": max_volumes,
                            "topology": {KEY: name}}}
    return f


def test_registration_is_written_once_and_only_from_facts():
    data = cluster(node("node1"), node("node2"))
    result = run(data, {"node1": registered("node1", 4), "node2": facts("node2")})
    assert result["registrations"] == [{"type": "node_registration", "node": "node1", "driver": EXT,
                                        "node_id": "node1", "topology": {KEY: "node1"}, "max_volumes": 4}]
    apply_records(data, result["registrations"])
    assert run(data, {"node1": registered("node1", 4)})["registrations"] == []  # registered: nothing to write
    # a changed limit, an unanswered plugin (null: the cluster's entry stays), a malformed entry
    assert [r["max_volumes"] for r in run(data, {"node1": registered("node1", 2)})["registrations"]] == [2]
    for entry in (None, {"node_id": ""}, {"node_id": "x", "max_volumes_per_node": -1}, {"node_id": "x", "topology": 3}):
        f = facts("node1")
        f["csi_nodes"] = {EXT: entry}
        assert run(data, {"node1": f})["registrations"] == []
    # no facts, no registration; the cluster's CSINode is what the view shows
    view = storage_view(ClusterIndex(cluster_from_data(data)), None)
    assert view.drivers["node1"][EXT].count == 4 and view.labels["node1"] == {KEY: "node1"} and not view.records


def volumes(count):
    objects, claims = [], []
    for i in range(count):
        objects.extend(bound("pv-%d" % i, "ns/c%d" % i, driver=EXT))
        claims.append("c%d" % i)
    return objects, claims


def test_no_attach_past_the_node_limit_in_the_schedulers_words():
    objects, claims = volumes(3)
    data = cluster(node("node1"), objects, pod("ns/p", "node1", claims))
    result = run(data, {"node1": registered("node1", 2)})
    attached = sorted(s["volume"] for s in result["plan"] if s["action"] == "attach")
    assert attached == ["pv-0", "pv-1"]
    refused = [b for b in result["blocked"] if b["volume"] == "pv-2"]
    assert [b["pod"] for b in refused] == ["ns/p"] and len(refused) == 1  # once, with its pod
    reason = refused[0]["reason"]
    assert reason.startswith("node(s) exceed max volume count: node node1 takes at most 2 volume(s) of driver %s"
                             % EXT)
    assert "pv-2 waits" in reason
    assert not [s for s in result["plan"] if s["volume"] == "pv-2"]  # no mount of it either
    # without a limit (0: none), or for another driver, all three are attached
    assert len([s for s in run(data, {"node1": registered("node1", 0)})["plan"] if s["action"] == "attach"]) == 3


def test_attached_volumes_count_and_nothing_is_detached_for_a_lower_limit():
    objects, claims = volumes(3)
    status = node("node1", attached=["kubernetes.io/csi/%s^pv-0.img" % EXT, "kubernetes.io/csi/%s^pv-1.img" % EXT])
    data = cluster(status, objects, pod("ns/p", "node1", claims))
    seen = registered("node1", 1)
    seen["devices"] = [{"unique_volume_name": "kubernetes.io/csi/%s^pv-%d.img" % (EXT, i), "driver": EXT,
                        "volume_handle": "pv-%d.img" % i, "device": None, "size_bytes": None, "read_only": False}
                       for i in (0, 1)]
    result = run(data, {"node1": seen})
    assert not [s for s in result["plan"] if s["action"] in ("attach", "detach")]
    assert [b["volume"] for b in result["blocked"] if "max volume count" in b["reason"]] == ["pv-2"]
    assert "has 2 attached" in [b for b in result["blocked"] if b["volume"] == "pv-2"][0]["reason"]


def test_the_limit_is_per_node_and_the_loop_driver_has_none():
    objects, claims = volumes(2)
    loop = bound("pv-loop", "ns/cl")
    data = cluster(node("node1"), node("node2"), objects, loop, pod("ns/a", "node1", claims[:1] + ["cl"]),
                   pod("ns/b", "node2", claims[1:]))
    result = run(data, {"node1": registered("node1", 1), "node2": registered("node2", 1)})
    assert sorted((s["node"], s["volume"]) for s in result["plan"] if s["action"] == "attach") == [
        ("node1", "pv-0"), ("node1", "pv-loop"), ("node2", "pv-1")]
    assert not result["blocked"]
