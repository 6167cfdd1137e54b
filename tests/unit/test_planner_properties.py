# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Properties of the planner over generated clusters and node facts:

1. it never crashes;
2. no RWO volume ends up attached to two nodes after the plan's detaches and attaches;
3. planning again over the state the plan produces (simulate.apply_plan) gives an empty plan.
"""

import datetime
import os
import sys

from hypothesis import given, settings, strategies as st, HealthCheck

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from simulate import apply_plan, bound, cluster, csidriver, facts, node, pod, uvn, va  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    DETACH_REQUESTED_AT_ANNOTATION, OUT_OF_SERVICE_TAINT)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
NODES = ("n1", "n2", "n3")
MODES = st.sampled_from([("ReadWriteOnce",), ("ReadWriteMany",), ("ReadOnlyMany",), ("ReadWriteOncePod",)])


@st.composite
def worlds(draw):
    n_vol = draw(st.integers(1, 4))
    objs = [csidriver()] if draw(st.booleans()) else []
    volumes = []
    for v in range(n_vol):
        size = draw(st.sampled_from([1, 2]))
        request = draw(st.sampled_from([size, size + 1]))
        capacity = draw(st.sampled_from([size, max(size - 1, 1)]))
        objs.extend(bound("pv-%d" % v, "ns/c%d" % v, "%dGi" % size, request="%dGi" % request,
                          capacity="%dGi" % capacity, modes=draw(MODES),
                          mode=draw(st.sampled_from(["Filesystem", "Filesystem", "Block"]))))
        volumes.append(v)
    node_facts = {}
    for name in NODES:
        attached = draw(st.lists(st.sampled_from(volumes), unique=True, max_size=n_vol))
        in_use = draw(st.lists(st.sampled_from(volumes), unique=True, max_size=n_vol))
        taints = [{"key": OUT_OF_SERVICE_TAINT, "effect": "NoExecute"}] if draw(st.integers(0, 5)) == 0 else []
        objs.append(node(name, managed=draw(st.integers(0, 5)) > 0, ready=draw(st.booleans()),
                         attached=[uvn("pv-%d" % v) for v in attached], in_use=[uvn("pv-%d" % v) for v in in_use],
                         taints=taints))
        for v in draw(st.lists(st.sampled_from(volumes), unique=True, max_size=2)):
            annotations = {DETACH_REQUESTED_AT_ANNOTATION: "2026-11-22T11:00:00Z"} if draw(st.booleans()) else None
            objs.append(va("pv-%d" % v, name, attached=draw(st.booleans()), annotations=annotations))
        kind = draw(st.sampled_from(["facts", "facts", "facts", "unreachable"]))
        if kind == "unreachable":
            node_facts[name] = facts(name, reachable=False)
        else:
            node_facts[name] = facts(
                name, devices=["pv-%d" % v for v in draw(st.lists(st.sampled_from(volumes), unique=True))],
                global_mounts=["pv-%d" % v for v in draw(st.lists(st.sampled_from(volumes), unique=True))],
                pod_mounts=[(draw(st.sampled_from(["uid-ns-p0", "uid-ns-p1", "gone"])), "pv-%d" % v,
                             draw(st.booleans()), draw(st.booleans()))
                            for v in draw(st.lists(st.sampled_from(volumes), max_size=3))])
    for p in range(draw(st.integers(0, 4))):
        claims = draw(st.lists(st.sampled_from(volumes), unique=True, max_size=2))
        objs.append(pod("ns/p%d" % p, draw(st.sampled_from(NODES + ("",))), ["c%d" % v for v in claims],
                        phase=draw(st.sampled_from(["Running", "Running", "Pending", "Succeeded"])),
                        read_only_mounts=["c%d" % v for v in claims if draw(st.booleans())]))
    return cluster(*objs), node_facts, draw(st.booleans()), draw(st.sampled_from([0, 360, 100000]))


def run(data, node_facts, force, wait):
    opts = PlanOptions(force, wait, ("loop.kubevol.io",), NOW)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts)


def attached_nodes(data):
    """unique volume name -> nodes whose status lists it."""
    out = {}
    for obj in data["items"]:
        if obj["kind"] == "Node":
            for v in obj["status"]["volumesAttached"]:
                out.setdefault(v["name"], set()).add(obj["metadata"]["name"])
    return out


def exclusive(data):
    return set(uvn(o["metadata"]["name"]) for o in data["items"] if o["kind"] == "PersistentVolume"
               and not ({"ReadWriteMany", "ReadOnlyMany"} & set(o["spec"]["accessModes"])))


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(worlds())
def test_plan_never_crashes_and_orders_phases(world):
    data, node_facts, force, wait = world
    result = run(data, node_facts, force, wait)
    order = ["unmount", "detach", "attach", "mount", "expand"]
    ranks = [order.index(s["action"]) for s in result["plan"]]
    assert ranks == sorted(ranks)
    assert all(set(("node", "volume", "pod", "reason")) <= set(b) for b in result["blocked"])


@SETTINGS
@given(worlds())
def test_no_rwo_attach_while_another_node_holds_it(world):
    data, node_facts, force, wait = world
    before = attached_nodes(data)
    result = run(data, node_facts, force, wait)
    after, _facts = apply_plan(result, data, node_facts)
    holders = attached_nodes(after)
    for step in result["plan"]:
        name = step["unique_volume_name"]
        if step["action"] == "attach" and name in exclusive(data):
            others = holders.get(name, set()) - {step["node"]}
            # a holder that was already attached before the plan and not detached by it is a violation
            assert not (others & before.get(name, set())), (step, holders)
            assert not (others - before.get(name, set())), "two attaches of one RWO volume in one plan"


@SETTINGS
@given(worlds())
def test_replanning_the_planned_state_is_empty(world):
    data, node_facts, force, wait = world
    result = run(data, node_facts, force, wait)
    after, after_facts = apply_plan(result, data, node_facts)
    again = run(after, after_facts, force, wait)
    assert again["plan"] == [], (result["plan"], again["plan"])
