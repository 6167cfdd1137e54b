# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile names, quantities and pools are blocked at plan time (plan_validation), one case each: nothing of the
volume is planned (no attach step, so no VolumeAttachment intent is recorded), the blocked entry names the object,
the field, the value and the rule, and a pod that moved keeps its volume on the old node."""

import datetime
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, facts, node, pod, pv, pvc, uvn  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names, words  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_task import argspec, run as run_task  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.validation import safe_repr  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
POOL = "/var/lib/kubevol/pool"


def run(data, node_facts=None, pools=(POOL,)):
    opts = PlanOptions(True, 360, ("loop.kubevol.io",), NOW, 0.5, 20, False, tuple(pools))
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts)


def steps(result):
    return [(s["action"], s["target"], s["node"], s["volume"]) for s in result["plan"]]


def reasons(result):
    return [b["reason"] for b in result["blocked"]]


def world(pv_name="pv-a", handle=None, claim="a", pod_uid="uid-p", node_name="node1", attributes=None,
          capacity="1Gi", request="1Gi", mount_options=None, volume_mode="Filesystem"):
    """node1, node2, one PV bound to claim ns/<claim> and a running pod using it, with one field made hostile."""
    the_pv = pv(pv_name, capacity, claim="ns/" + claim, mode=volume_mode)
    the_pv["spec"]["csi"]["volumeHandle"] = handle or "pv-a.img"
    if attributes is not None:
        the_pv["spec"]["csi"]["volumeAttributes"] = attributes
    if mount_options is not None:
        the_pv["spec"]["mountOptions"] = mount_options
    return cluster(node("node1"), node("node2"), the_pv, pvc("ns/" + claim, pv_name, request=request),
                   pod("ns/p", node_name, [claim], uid=pod_uid))


def assert_blocked_before_anything(result, *fragments):
    """Nothing planned at all (no attach: no VolumeAttachment intent), one blocked entry naming every fragment."""
    assert result["plan"] == [], result["plan"]
    matching = [r for r in reasons(result) if all(f in r for f in fragments)]
    assert matching, (fragments, reasons(result))
    return matching[0]


def test_a_safe_world_is_planned():
    """The baseline the cases below change one field of."""
    assert steps(run(world())) == [("attach", "device", "node1", "pv-a"), ("mount", "device", "node1", "pv-a"),
                                   ("mount", "pod", "node1", "pv-a")]


def test_pv_named_dot_dot_slash_x_is_blocked():
    reason = assert_blocked_before_anything(run(world(pv_name="../x")), "PersistentVolume ../x", "metadata.name",
                                            "'../x'", "it would escape its directory")
    assert reason.endswith("; fix the object [KV-OBJECT-REFUSED]")


@pytest.mark.parametrize("uid", ["../../../../tmp/evil", "a/b", "..", "uid\x00x"])
def test_pod_uid_with_slash_dot_dot_or_nul_is_blocked(uid):
    result = run(world(pod_uid=uid))
    assert_blocked_before_anything(result, "Pod ns/p", "metadata.uid", safe_repr(uid))
    assert all("\x00" not in r for r in reasons(result))  # the value is shown escaped


@pytest.mark.parametrize("field,kwargs,value", [
    ("metadata.name", {"pv_name": "pv\x00a"}, "pv\x00a"),
    ("spec.csi.volumeHandle", {"handle": "a\x00.img"}, "a\x00.img"),
    ("spec.csi.volumeHandle", {"handle": "../../etc/passwd"}, "../../etc/passwd"),
    ("spec.csi.volumeAttributes.pool", {"attributes": {"pool": POOL + "\x00"}}, POOL + "\x00"),
])
def test_nul_and_escaping_pv_fields_are_blocked(field, kwargs, value):
    assert_blocked_before_anything(run(world(**kwargs)), "PersistentVolume", field, safe_repr(value))


def test_nul_in_a_claim_name_is_blocked():
    assert_blocked_before_anything(run(world(claim="a\x00b")), "PersistentVolumeClaim", "metadata.name",
                                   safe_repr("a\x00b"))


def test_nul_in_a_volume_attribute_is_blocked():
    assert_blocked_before_anything(run(world(attributes={"pool": POOL, "x": "y\x00"})),
                                   "spec.csi.volumeAttributes.x", "NUL is not allowed")


def test_negative_request_is_blocked():
    assert_blocked_before_anything(run(world(request="-1Gi")), "PersistentVolumeClaim ns/a",
                                   "spec.resources.requests.storage", "-1073741824", "must not be negative")


def test_negative_pv_capacity_is_blocked():
    assert_blocked_before_anything(run(world(capacity="-1Gi")), "PersistentVolume pv-a", "spec.capacity.storage",
                                   "must not be negative")


def test_unparsable_quantity_refuses_the_file_naming_object_and_field():
    with pytest.raises(Exception) as err:
        run(world(request="lots"))
    assert "PersistentVolumeClaim" in str(err.value) and "spec.resources.requests.storage" in str(err.value)


@pytest.mark.parametrize("option", ["rw,exec", "", "a\nb"])
def test_bad_mount_option_is_blocked(option):
    assert_blocked_before_anything(run(world(mount_options=[option])), "spec.mountOptions", safe_repr(option))


def test_unknown_volume_mode_is_blocked():
    result = run(world(volume_mode="Weird"))
    assert result["plan"] == []
    assert any("spec.volumeMode" in r and "must be Filesystem or Block" in r for r in reasons(result))


def test_pod_on_a_node_name_with_a_slash_is_blocked():
    data = world(node_name="../node1")
    data["items"].append(node("../node1"))
    assert_blocked_before_anything(run(data), "Pod ns/p", "spec.nodeName", "'../node1'")


@pytest.mark.parametrize("pool,rule", [
    ("/tmp/kubevol-e2e-app", "keeps loop images only in /var/lib/kubevol/pool"),
    ("/var/lib/kubevol/pool/", "must be a normalized path"),
    ("/var/lib/kubevol/other/../pool", "must be a normalized path"),
    ("//var/lib/kubevol/pool", "must be a normalized path"),
    ("var/lib/kubevol/pool", "must be an absolute path"),
])
def test_pool_outside_the_operators_pools_is_blocked(pool, rule):
    assert_blocked_before_anything(run(world(attributes={"pool": pool})), "PersistentVolume pv-a",
                                   "spec.csi.volumeAttributes.pool", repr(pool), rule)


def test_pool_in_the_operators_pools_is_planned_and_a_missing_pool_is_the_default():
    assert run(world(attributes={"pool": "/srv/pool"}), pools=(POOL, "/srv/pool"))["plan"]
    assert run(world(attributes={}))["plan"]
    assert_blocked_before_anything(run(world(attributes={}), pools=("/srv/pool",)), "'/var/lib/kubevol/pool'")


def test_loop_pools_option_must_be_absolute():
    with pytest.raises(InvalidInput) as err:  # a SettingRefused
        run(world(), pools=("relative/pool",))
    # the pools are the loop driver's in driver_options (loop_pools is only their deprecated spelling)
    assert words.say(err.value.msg, words.ROLE) == ('the pools of kubevol_driver_options["loop.kubevol.io"] '
                                                    "'relative/pool' is refused: it must be an absolute path, as "
                                                    "every pool [KV-SETTING]")


def test_inline_volume_with_a_pool_outside_or_a_hostile_name_is_blocked():
    inline = {"name": "scratch", "csi": {"driver": "loop.kubevol.io",
                                         "volumeAttributes": {"size": "64Mi", "pool": "/etc"}}}
    driver = {"kind": "CSIDriver", "metadata": {"name": "loop.kubevol.io"},
              "spec": {"attachRequired": True, "volumeLifecycleModes": ["Persistent", "Ephemeral"]}}
    the_pod = pod("ns/p", "node1", volumes=[inline])
    the_pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/s"}]
    result = run(cluster(node("node1"), driver, the_pod))
    assert result["plan"] == [] and any("spec.csi.volumeAttributes.pool '/etc'" in r for r in reasons(result))
    inline["csi"]["volumeAttributes"]["pool"] = POOL
    inline["name"] = the_pod["spec"]["containers"][0]["volumeMounts"][0]["name"] = "scr\x01atch"
    result = run(cluster(node("node1"), driver, the_pod))
    assert result["plan"] == [] and any("spec.volumes[].name" in r for r in reasons(result))


# ---- a pod move never costs the old node its volume while the new node's setup is refused ---------------------------

def moved(**kwargs):
    """The pod (a new uid) is now on node2; node1 still has the volume attached, staged and mounted into the old pod."""
    data = world(node_name="node2", **kwargs)
    pv_name = kwargs.get("pv_name", "pv-a")
    data["items"][0] = node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")])
    node_facts = {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("uid-old", "pv-a")]),
                  "node2": facts("node2")}
    node_facts["node1"]["global_mounts"][0]["pv_name"] = pv_name
    node_facts["node1"]["pod_mounts"][0]["pv_name"] = pv_name
    return data, node_facts


def test_a_pod_move_tears_down_the_old_node_when_the_new_one_can_set_it_up():
    data, node_facts = moved()
    actions = steps(run(data, node_facts))
    assert ("detach", "device", "node1", "pv-a") in actions and ("attach", "device", "node2", "pv-a") in actions


@pytest.mark.parametrize("kwargs", [{"attributes": {"pool": "/srv/gone"}}, {"pod_uid": "../../x"},
                                    {"request": "-1Gi"}, {"mount_options": ["a,b"]}])
def test_a_pod_move_keeps_the_old_nodes_volume_when_the_new_nodes_setup_is_refused(kwargs):
    data, node_facts = moved(**kwargs)
    result = run(data, node_facts)
    assert result["plan"] == [], steps(result)  # nothing unmounted or detached on node1, nothing set up on node2
    assert any("is refused" in r for r in reasons(result))


# ---- the planner's last pass: a step built from node facts that a node would refuse ---------------------------------

def test_a_planted_pod_directory_with_a_control_character_is_not_unmounted_and_its_volume_stays():
    """A pod uid that only the node facts carry (a directory name with a newline) reaches no node module; the
    device unmount and the detach that would follow it are dropped too."""
    data = cluster(node("node1", attached=[uvn("pv-a")]), *bound("pv-a", "ns/a"))
    node_facts = {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("uid\nx", "pv-a")])}
    result = run(data, node_facts)
    assert result["plan"] == [], steps(result)
    # blocked where the planner meets it (the orphan rule names the directory the node modules would refuse), or by
    # the last pass over the plan: either way nothing reaches a node and the volume stays attached and mounted
    assert any("pod uid 'uid\\nx'" in r or "directory 'pv-a' of pod 'uid\\nx'" in r for r in reasons(result)), \
        reasons(result)


def test_every_planned_item_builds_on_the_node():
    """The node's own volume_item accepts every item of a plan the planner let through (hostile case mixed in)."""
    data = world()
    data["items"].extend(bound("../x", "ns/x") + [pod("ns/q", "node1", ["x"])])
    result = run(data)
    assert steps(result)
    for phase in phases.NAMES:
        for node_name in result["by_node"]:
            for raw in executor.phase_items(result, phase, node_name):
                item = volume_item(raw)
                names.check_pool(item.attributes.get("pool"), (POOL,))


def test_the_module_takes_driver_options_loop_pools():
    spec = argspec()["driver_options"]
    assert spec["type"] == "dict" and spec["default"] == {}
    params = dict((k, v.get("default")) for k, v in argspec().items())
    params.update(cluster=world(attributes={"pool": "/srv/pool"}),
                  driver_options={"loop.kubevol.io": {"pools": [POOL, "/srv/pool"]}})
    assert run_task(params, NOW)["plan"]
    params["driver_options"] = {}  # the default pool only
    result = run_task(params, NOW)
    assert result["plan"] == [] and any("/srv/pool" in b["reason"] for b in result["blocked"])


def test_the_module_still_takes_the_deprecated_loop_pools():
    spec = argspec()["loop_pools"]
    assert "default" not in spec and spec["removed_in_version"] == "2.0.0"
    assert spec["removed_from_collection"] == "kubevol.volumes"
    params = dict((k, v.get("default")) for k, v in argspec().items())
    params.update(cluster=world(attributes={"pool": "/srv/pool"}), loop_pools=[POOL, "/srv/pool"])
    assert run_task(params, NOW)["plan"]
    params["loop_pools"] = [POOL]
    result = run_task(params, NOW)
    assert result["plan"] == [] and any("/srv/pool" in b["reason"] for b in result["blocked"])
    # both, with different pools: which one was meant cannot be known
    params["driver_options"] = {"loop.kubevol.io": {"pools": ["/srv/pool"]}}
    with pytest.raises(InvalidInput) as err:
        run_task(params, NOW)
    assert "loop_pools" in err.value.msg and "driver_options" in err.value.msg


def test_the_module_refuses_an_unknown_driver_options_key():
    params = dict((k, v.get("default")) for k, v in argspec().items())
    params.update(cluster=world(), driver_options={"loop.kubevol.oi": {"pools": [POOL]}})
    with pytest.raises(InvalidInput) as err:
        run_task(params, NOW)
    assert "loop.kubevol.oi" in err.value.msg and "kubernetes.io/local-volume" in err.value.msg
