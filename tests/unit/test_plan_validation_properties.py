# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Properties of plan-time validation over generated clusters with hostile values in every name, quantity and pool
field (PV name, volume handle, volumeAttributes, pool, capacity, mount options, volumeMode, claim name and request,
pod uid, nodeName; pod uids and PV names in node facts):

1. whatever the planner emits, the node accepts: for every step, the node's own VolumeItem builds from the plan's
   item (node/volume.py volume_item, through executor.phase_items as node_phases builds it) and the loop driver's
   pool and handle check (drivers/loop.py LoopDriver.validate, the node's own code) does not raise;
2. a hostile object's volume gets no setup step (no attach: no VolumeAttachment intent) and a blocked entry;
3. a pod move never tears down the old node's volume when the new node's setup is refused.
"""

import datetime
import os
import sys

from hypothesis import given, settings, strategies as st, HealthCheck

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from simulate import cluster, facts, node, pod, pv, pvc  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop import LoopDriver  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import MalformedObject  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
LOOP = "loop.kubevol.io"
POOLS = ("/var/lib/kubevol/pool", "/srv/kubevol-test-pool")
NODES = ("n1", "n2")
SETUP = ("attach", "mount", "expand")

HOSTILE_NAMES = ["../x", "a/b", "..", ".", "x\x00y", "a\nb", "tab\there", "a\\b", "", "x" * 256, "\x7f",
                 "../../../../tmp/kubevol"]
HOSTILE_POOLS = ["/etc", "/var/lib/kubevol/pool/", "/var/lib/kubevol/../kubevol/pool", "//var/lib/kubevol/pool",
                 "var/lib/kubevol/pool", "/var/lib/kubevol/pool\x00", "/tmp", "/var/lib/kubevol/pool/../../.."]
HOSTILE_QUANTITIES = ["-1", "-1Gi", "-512Mi"]
HOSTILE_OPTIONS = ["rw,exec", "", "a\nb", "x\x00"]
SAFE = st.text("abcdefghij0123456789-.", min_size=1, max_size=8).filter(lambda s: s not in (".", "..")
                                                                        and s[0].isalnum())


def maybe(draw, safe, hostile):
    """A safe value most of the time, a hostile one sometimes; (value, hostile?)."""
    if draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(hostile)), True
    return draw(safe), False


@st.composite
def volumes(draw, index):
    """One PV, its claim and its hostile-or-not fields: (objects, claim name, unique name, hostile?)."""
    hostile = False
    pv_name, h = maybe(draw, SAFE.map(lambda s: "pv-%d-%s" % (index, s)), HOSTILE_NAMES)
    hostile |= h
    handle, h = maybe(draw, SAFE.map(lambda s: "h-%d-%s.img" % (index, s)), HOSTILE_NAMES)
    hostile |= h
    claim, h = maybe(draw, SAFE.map(lambda s: "c-%d-%s" % (index, s)), HOSTILE_NAMES)
    hostile |= h
    pool, h = maybe(draw, st.sampled_from(POOLS + ("",)), HOSTILE_POOLS)
    hostile |= h
    capacity, h = maybe(draw, st.sampled_from(["1Gi", "2Gi", "0"]), HOSTILE_QUANTITIES)
    hostile |= h
    request, h = maybe(draw, st.sampled_from(["1Gi", "2Gi"]), HOSTILE_QUANTITIES)
    hostile |= h
    options, h = maybe(draw, st.sampled_from([[], ["noatime"], ["ro", "noexec"]]),
                       [[o] for o in HOSTILE_OPTIONS])
    hostile |= h
    mode, h = maybe(draw, st.sampled_from(["Filesystem", "Block"]), ["Weird", "filesystem"])
    hostile |= h
    attributes = {"pool": pool} if pool else {}
    if draw(st.integers(0, 5)) == 0:
        attributes[draw(st.sampled_from(["k\x00", "k"]))] = "v\x00"
        hostile = True
    the_pv = pv(pv_name, capacity, modes=(draw(st.sampled_from(["ReadWriteOnce", "ReadWriteMany"])),), mode=mode)
    the_pv["spec"]["claimRef"] = {"namespace": "ns", "name": claim, "uid": "uid-claim-%d" % index}
    the_pv["spec"]["csi"]["volumeHandle"] = handle
    the_pv["spec"]["csi"]["volumeAttributes"] = attributes
    the_pv["spec"]["mountOptions"] = options
    the_pvc = pvc("ns/c", pv_name, request=request, uid="uid-claim-%d" % index)
    the_pvc["metadata"]["name"] = claim
    return [the_pv, the_pvc], claim, unique_volume_name(LOOP, handle), hostile


@st.composite
def worlds(draw):
    objs = []
    hostile_uniques = set()
    hostile_claims = set()
    claims = []
    for index in range(draw(st.integers(1, 3))):
        volume_objs, claim, unique, hostile = draw(volumes(index))
        objs.extend(volume_objs)
        claims.append(claim)
        if hostile:
            hostile_uniques.add(unique)
            hostile_claims.add(claim)
    nodes = list(NODES)
    if draw(st.integers(0, 4)) == 0:
        nodes.append(draw(st.sampled_from(HOSTILE_NAMES[:3])))  # a Node object named like a path
    objs.extend(node(n) for n in nodes)
    hostile_pods = {}
    for index in range(draw(st.integers(1, 3))):
        uid, h = maybe(draw, SAFE.map(lambda s: "uid-%d-%s" % (index, s)), HOSTILE_NAMES)
        used = draw(st.lists(st.sampled_from(claims), unique=True, min_size=1, max_size=2))
        node_name = draw(st.sampled_from(nodes))
        h |= node_name not in NODES
        key = "ns/p%d" % index
        objs.append(pod(key, node_name, used))
        objs[-1]["metadata"]["uid"] = uid
        if h:
            hostile_pods[key] = "hostile"
        elif hostile_claims & set(used):
            hostile_pods[key] = "uses a hostile volume"
    node_facts = {}
    for name in NODES:
        if draw(st.booleans()):
            uid = draw(st.sampled_from(["uid-0-a", "gone", "x\ny", "\x01"]))
            node_facts[name] = facts(name, pod_mounts=[(uid, draw(st.sampled_from(["pv-0-a", "p\tv"])))])
        else:
            node_facts[name] = facts(name)
    return cluster(*objs), node_facts, hostile_uniques, hostile_pods


def run(data, node_facts):
    """The plan, or None when the whole file is refused as malformed (an empty name): then nothing is planned, and
    the error names the object and the field."""
    opts = PlanOptions(True, 360, (LOOP,), NOW, 0.5, 20, True, POOLS)
    try:
        index = ClusterIndex(cluster_from_data(data))
    except MalformedObject as err:
        assert err.kwargs["kind"] and err.kwargs["field"], err.msg
        return None
    return plan_cluster(index, node_facts, opts)


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(worlds())
def test_whatever_is_planned_the_node_accepts(world):
    data, node_facts, hostile_uniques, hostile_pods = world
    result = run(data, node_facts)
    if result is None:
        return
    for phase in phases.NAMES:
        for node_name in result["by_node"]:
            driver = LoopDriver(None, "/var/lib/kubelet", node_name, {"loop_pools": list(POOLS)})
            for raw in executor.phase_items(result, phase, node_name):
                item = volume_item(raw)  # the node module's own check: raises on anything it refuses
                driver.validate(item)  # the loop driver's pool and handle check (the node's code)
    for step in result["plan"]:
        if step["action"] in SETUP:
            assert step["unique_volume_name"] not in hostile_uniques, step
            assert hostile_pods.get(step["pod"]) != "hostile", step
    for key in hostile_pods:  # each pod with a hostile value, or using a hostile volume, is blocked
        assert any(b["pod"] == key or b["pod"] is None for b in result["blocked"]), (key, result["blocked"])


@st.composite
def moves(draw):
    """One volume set up on n1 for a pod that now runs on n2, with one hostile field or none."""
    field = draw(st.sampled_from([None, "pv_name", "handle", "pool", "capacity", "request", "options", "uid",
                                  "attributes"]))
    value = {
        None: None, "pv_name": draw(st.sampled_from(HOSTILE_NAMES)), "handle": draw(st.sampled_from(HOSTILE_NAMES)),
        "pool": draw(st.sampled_from(HOSTILE_POOLS)), "capacity": draw(st.sampled_from(HOSTILE_QUANTITIES)),
        "request": draw(st.sampled_from(HOSTILE_QUANTITIES)), "options": [draw(st.sampled_from(HOSTILE_OPTIONS))],
        "uid": draw(st.sampled_from(HOSTILE_NAMES)), "attributes": {"pool": POOLS[0], "x": "\x00"},
    }[field]
    pv_name = value if field == "pv_name" else "pv-a"
    handle = value if field == "handle" else "pv-a.img"
    the_pv = pv(pv_name, value if field == "capacity" else "1Gi", claim="ns/a")
    the_pv["spec"]["csi"]["volumeHandle"] = handle
    the_pv["spec"]["csi"]["volumeAttributes"] = (value if field == "attributes"
                                                 else {"pool": value if field == "pool" else POOLS[0]})
    the_pv["spec"]["mountOptions"] = value if field == "options" else []
    unique = unique_volume_name(LOOP, handle)
    old = node("n1", attached=[unique], in_use=[unique])
    the_pod = pod("ns/p", "n2", ["a"])
    the_pod["metadata"]["uid"] = value if field == "uid" else "uid-new"
    data = cluster(old, node("n2"), the_pv, pvc("ns/a", pv_name, request=value if field == "request" else "1Gi"),
                   the_pod)
    on_n1 = facts("n1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("uid-old", "pv-a")])
    for entry in on_n1["devices"] + on_n1["global_mounts"] + on_n1["pod_mounts"]:
        entry["unique_volume_name"] = unique
    return data, {"n1": on_n1, "n2": facts("n2")}, unique, field is not None


@SETTINGS
@given(moves())
def test_a_pod_move_keeps_the_old_nodes_volume_while_the_new_nodes_setup_is_refused(move):
    data, node_facts, unique, hostile = move
    result = run(data, node_facts)
    if result is None:
        assert hostile
        return
    mine = [(s["action"], s["target"], s["node"]) for s in result["plan"] if s["unique_volume_name"] == unique]
    if hostile:
        assert mine == [], mine  # nothing torn down on n1, nothing set up on n2
        assert any("refused" in b["reason"] for b in result["blocked"]), result["blocked"]
    else:
        assert ("detach", "device", "n1") in mine and ("attach", "device", "n2") in mine, mine
