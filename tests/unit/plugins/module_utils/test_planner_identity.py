# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The device identity rule (plan/rules_identity.py): what is mounted or mapped for a volume must be the device
attached for it now (node facts device_mismatch). A Block pod map on another number is mapped again, the pod named
to be restarted; a global mount on another device is blocked, naming the node, the volume and the pods, and nothing
of it is mounted or grown there; the same facts give the same plan on every run."""

import datetime
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, facts, node, pod, uvn  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (  # noqa: E402
    ClusterIndex, cluster_from_data)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.plan_text import blocked_once  # noqa: E402

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0, tzinfo=datetime.timezone.utc)
UID_P, UID_Q = "uid-ns-p", "uid-ns-q"


def run(data, node_facts):
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts,
                        PlanOptions(True, 360, ("loop.kubevol.io",), NOW))


def steps(result):
    return [(s["action"], s["target"], s["node"], s["volume"], s["pod"]) for s in result["plan"]]


def block_map(uid, number="7:3", attached="/dev/loop5", mismatch=True):
    return {"plugin": "kubernetes.io/csi", "pod_uid": uid, "pv_name": "pv-a", "mode": "Block", "mounted": True,
            "path": "/var/lib/kubelet/pods/%s/volumeDevices/kubernetes.io~csi/pv-a" % uid, "read_only": False,
            "device": "/dev/loop3", "unique_volume_name": uvn("pv-a"), "driver": "loop.kubevol.io", "foreign": False,
            "uncertain": None, "unsafe": False, "ephemeral": False, "device_number": number,
            "attached_device": attached, "device_mismatch": mismatch}


def block_cluster():
    return cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]),
                   *bound("pv-a", "ns/a", mode="Block"), pod("ns/p", "node1", ["a"], devices=("a",)))


def test_a_block_map_on_the_volumes_device_is_set_up():
    node_facts = facts("node1", devices=["pv-a"])
    node_facts["pod_mounts"] = [block_map(UID_P, "7:5", mismatch=False)]
    result = run(block_cluster(), {"node1": node_facts})
    assert result["plan"] == [] and result["blocked"] == []


def test_a_block_map_on_another_device_is_mapped_again_and_the_pod_named_to_restart():
    node_facts = facts("node1", devices=["pv-a"])
    node_facts["pod_mounts"] = [block_map(UID_P)]
    result = run(block_cluster(), {"node1": node_facts})
    assert steps(result) == [("mount", "pod", "node1", "pv-a", "ns/p")] and result["blocked"] == []
    [step] = result["plan"]
    assert step["reason"] == (
        "map again: pod ns/p's block device on node node1 is 7:3, and the volume's device now is /dev/loop5; restart "
        "the pod once it is mapped, its containers keep the device they started with [KV-BLOCK-REMAPPED]")
    assert result["actual"]["pod_mounts"] == 1 and result["actual"]["device_mismatches"] == 1


def test_a_block_map_whose_device_went_away_is_attached_then_mapped_again_in_one_run():
    # the device was detached outside kubevol: the node shows no device for the volume; node status still lists it
    node_facts = facts("node1")
    node_facts["pod_mounts"] = [block_map(UID_P, attached=None)]
    result = run(block_cluster(), {"node1": node_facts})
    assert steps(result) == [("attach", "device", "node1", "pv-a", None), ("mount", "pod", "node1", "pv-a", "ns/p")]
    assert "the volume has no device attached now (it is attached first)" in result["plan"][1]["reason"]
    assert run(block_cluster(), {"node1": node_facts})["plan"] == result["plan"]  # the same facts, the same plan


def fs_cluster(*pods, request=None):
    return cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]),
                   *bound("pv-a", "ns/a", **({"request": request} if request else {})), *pods)


def stale_global(node_facts):
    [gm] = node_facts["global_mounts"]
    gm.update(device="/dev/loop3", device_number="7:3", attached_device="/dev/loop5", device_mismatch=True)
    return node_facts


def test_a_global_mount_on_another_device_is_blocked_naming_node_volume_and_pods():
    pods = (pod("ns/p", "node1", ["a"]), pod("ns/q", "node1", ["a"]))
    node_facts = stale_global(facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[(UID_P, "pv-a")]))
    result = run(fs_cluster(*pods, request="2Gi"), {"node1": node_facts})
    # nothing of it is mounted (ns/q's bind would show the stale filesystem), remounted or grown on the node
    assert [s for s in steps(result) if s[2] == "node1" and s[0] != "expand"] == []
    assert not [s for s in result["plan"] if (s["action"], s["target"]) == ("expand", "node")]
    [entry] = [b for b in result["blocked"] if "KV-DEVICE-CHANGED" in b["reason"]]
    assert entry["node"] == "node1" and entry["volume"] == "pv-a" and entry["pod"] is None
    assert entry["reason"] == (
        "volume pv-a on node node1 is blocked: its global mount /g/pv-a is on device /dev/loop3 (7:3), not on the "
        "device attached for it now (/dev/loop5), and kubevol does not swap it under running pods; stop pod(s) "
        "ns/p, ns/q, run the reconcile so that it unmounts the stale mount, then start them again "
        "[KV-DEVICE-CHANGED]")
    assert [b["action"] for b in blocked_once(result) if b["reason"] == entry["reason"]] == ["mount"]
    assert run(fs_cluster(*pods, request="2Gi"), {"node1": node_facts})["blocked"] == result["blocked"]  # stable


def test_a_stale_global_mount_no_pod_uses_is_torn_down_as_any_other():
    node_facts = stale_global(facts("node1", devices=["pv-a"], global_mounts=["pv-a"]))
    result = run(fs_cluster(), {"node1": node_facts})
    assert ("unmount", "device", "node1", "pv-a", None) in steps(result)
    assert not [b for b in result["blocked"] if "KV-DEVICE-CHANGED" in b["reason"]]


def test_a_global_mount_on_the_volumes_device_is_set_up():
    node_facts = facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[(UID_P, "pv-a")])
    node_facts["global_mounts"][0].update(device_number="7:5", attached_device="/dev/loop5", device_mismatch=False)
    result = run(fs_cluster(pod("ns/p", "node1", ["a"])), {"node1": node_facts})
    assert result["plan"] == [] and result["blocked"] == []
