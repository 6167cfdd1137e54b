# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Local and hostPath PVs through plan_cluster: cluster Lists with local/hostPath PVs and node facts as
docs/contracts.md section 2 gives them, and the steps and blocked entries the planner returns (issue 26)."""

import datetime
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import cluster, node, pod, pvc  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (  # noqa: E402
    ClusterIndex, cluster_from_data)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa

NOW = datetime.datetime(2026, 11, 25, 12, 0, 0, tzinfo=datetime.timezone.utc)
LOCAL = "kubernetes.io/local-volume"
HOST_PATH = "kubernetes.io/host-path"
KUBELET = "/var/lib/kubelet"


def labelled(name, labels=None, **kwargs):
    obj = node(name, **kwargs)
    obj["metadata"]["labels"] = dict(labels or {"kubernetes.io/hostname": name})
    return obj


def affinity(*terms):
    return {"required": {"nodeSelectorTerms": list(terms)}}


def on_host(name):
    return {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [name]}]}


def local_pv(name, path="/mnt/disks/d1", claim="ns/a", size="1Gi", mode="Filesystem", node_affinity="node1",
             fs_type=None):
    ns, claim_name = claim.split("/")
    spec = {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": size},
            "claimRef": {"name": claim_name, "namespace": ns, "uid": "uid-" + claim},
            "local": {"path": path}, "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "local-storage",
            "volumeMode": mode}
    if fs_type:
        spec["local"]["fsType"] = fs_type
    if node_affinity is not None:
        spec["nodeAffinity"] = affinity(on_host(node_affinity)) if isinstance(node_affinity, str) else node_affinity
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec,
            "status": {"phase": "Bound"}}


def host_path_pv(name, path="/srv/data", claim="ns/a", size="1Gi", mode="Filesystem", type_=None):
    ns, claim_name = claim.split("/")
    source = {"path": path}
    if type_ is not None:
        source["type"] = type_
    spec = {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": size},
            "claimRef": {"name": claim_name, "namespace": ns, "uid": "uid-" + claim}, "hostPath": source,
            "volumeMode": mode}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec,
            "status": {"phase": "Bound"}}


def run(data, node_facts=None, driver_options=None):
    opts = PlanOptions(True, 360, ("loop.kubevol.io",), NOW, driver_options=driver_options)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts)


def steps(result):
    return [(s["action"], s["target"], s["node"], s["volume"], s["pod"]) for s in result["plan"]]


def reasons(result):
    return [b["reason"] for b in result["blocked"]]


def item_of(result, step):
    return result["volume_items"][step["node"]][step["unique_volume_name"]]


def local_cluster(*pods, pv=None, claim_request="1Gi", claim_capacity=None):
    return cluster(labelled("node1"), labelled("node2"), pv or local_pv("pv-l"),
                   pvc("ns/a", (pv or local_pv("pv-l"))["metadata"]["name"], claim_request, claim_capacity), *pods)


HP_OPTIONS = {HOST_PATH: {"paths": ["/srv"]}}


def host_cluster(*pods, pv=None, claim_request="1Gi", claim_capacity=None):
    pv = pv or host_path_pv("pv-h")
    return cluster(labelled("node1"), pv, pvc("ns/a", pv["metadata"]["name"], claim_request, claim_capacity), *pods)


def facts(node_name, pod_mounts=(), global_mounts=()):
    return {"node_name": node_name, "reachable": True, "error": None, "devices": [],
            "global_mounts": list(global_mounts), "pod_mounts": list(pod_mounts)}


def local_pod_mount(uid, pv_name, mounted=True, mode="Filesystem"):
    where = "volumes" if mode == "Filesystem" else "volumeDevices"
    return {"plugin": LOCAL, "pod_uid": uid, "pv_name": pv_name, "unique_volume_name": "%s/%s" % (LOCAL, pv_name),
            "driver": None, "foreign": False, "mode": mode, "mounted": mounted, "read_only": False,
            "path": "%s/pods/%s/%s/kubernetes.io~local-volume/%s" % (KUBELET, uid, where, pv_name),
            "device": "/dev/sdb" if mounted else None, "uncertain": None, "unsafe": False, "ephemeral": False}


def local_global_mount(pv_name, mounted=True):
    return {"plugin": LOCAL, "unique_volume_name": "%s/%s" % (LOCAL, pv_name), "pv_name": pv_name, "driver": None,
            "volume_handle": pv_name, "path": "%s/plugins/kubernetes.io/local-volume/mounts/%s" % (KUBELET, pv_name),
            "mounted": mounted, "device": "/dev/sdb", "fs_type": "ext4", "fs_size_bytes": 1 << 30,
            "read_only": False, "foreign": False, "uncertain": None, "unsafe": False}


def host_marker(uid, pv_name):
    return {"plugin": HOST_PATH, "pod_uid": uid, "pv_name": pv_name,
            "unique_volume_name": "%s/%s" % (HOST_PATH, pv_name), "driver": None, "foreign": False,
            "mode": "Filesystem", "mounted": False, "published": True, "read_only": False,
            "path": "%s/pods/%s/volumes/kubernetes.io~host-path/%s" % (KUBELET, uid, pv_name), "device": None,
            "uncertain": None, "unsafe": False, "ephemeral": False}


UID = "uid-ns-p"


# ---- local PVs ----------------------------------------------------------------------------------------------

def test_local_pv_is_planned_as_one_pod_mount_step_no_attach():
    result = run(local_cluster(pod("ns/p", "node1", ["a"])))
    assert steps(result) == [("mount", "pod", "node1", "pv-l", "ns/p")]
    assert result["blocked"] == []
    step = result["plan"][0]
    assert step["unique_volume_name"] == "kubernetes.io/local-volume/pv-l"
    item = item_of(result, step)
    assert item["plugin"] == LOCAL and item["driver"] is None and item["volume_handle"] == "pv-l"
    assert item["path"] == "/mnt/disks/d1" and item["fs_type"] == "ext4" and item["mode"] == "Filesystem"
    assert item["capacity_bytes"] == 1 << 30 and item["host_path_type"] == ""
    assert result["desired"]["foreign_volumes"] == 0 and result["desired"]["attachments"] == 0


def test_local_pv_fs_type_and_block_mode():
    pv = local_pv("pv-l", path="/mnt/disks/sdb", mode="Block", fs_type="xfs")
    result = run(local_cluster(pod("ns/p", "node1", ["a"], devices=["a"]), pv=pv))
    assert steps(result) == [("mount", "pod", "node1", "pv-l", "ns/p")]
    item = item_of(result, result["plan"][0])
    assert item["mode"] == "Block" and item["fs_type"] == "xfs"


def test_local_pv_node_affinity_conflict_is_blocked_and_nothing_planned():
    result = run(local_cluster(pod("ns/p", "node2", ["a"])))
    assert steps(result) == []
    [entry] = result["blocked"]
    assert entry["node"] == "node2" and entry["volume"] == "pv-l" and entry["pod"] == "ns/p"
    assert "volume node affinity conflict" in entry["reason"] and "node node2" in entry["reason"]


def test_local_pv_without_node_affinity_is_blocked():
    result = run(local_cluster(pod("ns/p", "node1", ["a"]), pv=local_pv("pv-l", node_affinity=None)))
    assert steps(result) == []
    [reason] = reasons(result)
    assert "Local volume requires node affinity" in reason and "PV pv-l" in reason and "node node1" in reason


@pytest.mark.parametrize("path,words", [
    ("/etc", ["'/etc' is outside the directories allowed for kubernetes.io/local-volume",
              "the paths of @{driver_options[kubernetes.io/local-volume]}", "/mnt/disks", "node node1"]),
    ("mnt/disks/d1", ["is not an absolute path"]),
    ("/mnt/disks/../../etc", ["must not contain '..'"]),
    ("/mnt/disks//d1", ["is not a normalized path", "'/mnt/disks/d1'"]),
    ("/mnt/disks/d1/", ["is not a normalized path"]),
    ("/mnt/disksX", ["is outside the directories"]),
])
def test_local_pv_path_refused(path, words):
    result = run(local_cluster(pod("ns/p", "node1", ["a"]), pv=local_pv("pv-l", path=path)))
    assert steps(result) == []
    [entry] = result["blocked"]
    assert entry["node"] == "node1" and entry["volume"] == "pv-l"
    for word in words:
        assert word in entry["reason"]
    assert "PV pv-l" in entry["reason"]


def test_local_pv_path_allowed_by_driver_options():
    pv = local_pv("pv-l", path="/data/ssd1")
    assert steps(run(local_cluster(pod("ns/p", "node1", ["a"]), pv=pv))) == []
    result = run(local_cluster(pod("ns/p", "node1", ["a"]), pv=pv), driver_options={LOCAL: {"paths": ["/data"]}})
    assert steps(result) == [("mount", "pod", "node1", "pv-l", "ns/p")]


def test_local_pv_mounted_second_run_plans_nothing():
    data = local_cluster(pod("ns/p", "node1", ["a"]))
    result = run(data, {"node1": facts("node1", [local_pod_mount(UID, "pv-l")], [local_global_mount("pv-l")])})
    assert steps(result) == [] and result["blocked"] == []
    assert result["in_use_repairs"] == []  # volumesInUse lists attachable volumes only


def test_local_pv_not_mounted_is_mounted():
    data = local_cluster(pod("ns/p", "node1", ["a"]))
    result = run(data, {"node1": facts("node1", [local_pod_mount(UID, "pv-l", mounted=False)])})
    assert steps(result) == [("mount", "pod", "node1", "pv-l", "ns/p")]


def test_local_pod_gone_unmounts_pod_then_global_mount():
    data = local_cluster()
    result = run(data, {"node1": facts("node1", [local_pod_mount(UID, "pv-l")], [local_global_mount("pv-l")])})
    assert steps(result) == [("unmount", "pod", "node1", "pv-l", None), ("unmount", "device", "node1", "pv-l", None)]
    items = [item_of(result, s) for s in result["plan"]]
    assert all(i["plugin"] == LOCAL and i["path"] == "/mnt/disks/d1" for i in items)
    assert result["plan"][0]["pod_uid"] == UID


def test_local_pod_gone_and_pv_gone_teardown_from_facts_alone():
    data = cluster(labelled("node1"))
    result = run(data, {"node1": facts("node1", [local_pod_mount(UID, "pv-l")], [local_global_mount("pv-l")])})
    assert steps(result) == [("unmount", "pod", "node1", "pv-l", None), ("unmount", "device", "node1", "pv-l", None)]
    item = item_of(result, result["plan"][0])
    assert item["plugin"] == LOCAL and item["driver"] is None and item["volume_handle"] == "pv-l"
    assert item["path"] is None


def test_local_second_pod_keeps_global_mount():
    data = local_cluster(pod("ns/q", "node1", ["a"]))
    result = run(data, {"node1": facts("node1", [local_pod_mount(UID, "pv-l"), local_pod_mount("uid-ns-q", "pv-l",
                                                                                               mounted=False)],
                                       [local_global_mount("pv-l")])})
    assert steps(result) == [("unmount", "pod", "node1", "pv-l", None), ("mount", "pod", "node1", "pv-l", "ns/q")]


def test_local_fs_group_applied():
    p = pod("ns/p", "node1", ["a"])
    p["spec"]["securityContext"] = {"fsGroup": 2000}
    result = run(local_cluster(p))
    assert result["plan"][0]["pod_fs_group"] == 2000


def test_local_expansion_controller_records_node_grows():
    result = run(local_cluster(pod("ns/p", "node1", ["a"]), claim_request="2Gi", claim_capacity="1Gi"),
                 {"node1": facts("node1", [local_pod_mount(UID, "pv-l")], [local_global_mount("pv-l")])})
    assert steps(result) == [("expand", "controller", "node1", "pv-l", None), ("expand", "node", "node1", "pv-l", None)]
    controller = result["plan"][0]
    assert controller["record_only"] is True and "nothing to grow on the controller" in controller["reason"]
    assert controller["size_to"] == 2 << 30


def test_no_attach_for_local_even_on_managed_node_with_csidriver():
    result = run(local_cluster(pod("ns/p", "node1", ["a"])))
    assert all(s[0] != "attach" for s in steps(result))


# ---- hostPath PVs -------------------------------------------------------------------------------------------

def test_host_path_refused_until_operator_allows_paths():
    result = run(host_cluster(pod("ns/p", "node1", ["a"])))
    assert steps(result) == []
    [reason] = reasons(result)
    assert "outside the directories allowed for kubernetes.io/host-path" in reason
    assert "now: none, nothing is allowed" in reason and "node node1" in reason and "'/srv/data'" in reason


def test_host_path_pv_planned_as_pod_step():
    result = run(host_cluster(pod("ns/p", "node1", ["a"]), pv=host_path_pv("pv-h", type_="DirectoryOrCreate")),
                 driver_options=HP_OPTIONS)
    assert steps(result) == [("mount", "pod", "node1", "pv-h", "ns/p")]
    item = item_of(result, result["plan"][0])
    assert item["plugin"] == HOST_PATH and item["path"] == "/srv/data" and item["host_path_type"] == "DirectoryOrCreate"
    assert result["plan"][0]["unique_volume_name"] == "kubernetes.io/host-path/pv-h"


def test_host_path_no_fs_group():
    p = pod("ns/p", "node1", ["a"])
    p["spec"]["securityContext"] = {"fsGroup": 2000}
    result = run(host_cluster(p), driver_options=HP_OPTIONS)
    assert "pod_fs_group" not in result["plan"][0]


def test_host_path_marker_present_is_done():
    result = run(host_cluster(pod("ns/p", "node1", ["a"])), {"node1": facts("node1", [host_marker(UID, "pv-h")])},
                 driver_options=HP_OPTIONS)
    assert steps(result) == [] and result["blocked"] == []
    assert result["teardown_guard"]["mounted"] == 0


def test_host_path_pod_gone_removes_marker():
    result = run(host_cluster(), {"node1": facts("node1", [host_marker(UID, "pv-h")])}, driver_options=HP_OPTIONS)
    assert steps(result) == [("unmount", "pod", "node1", "pv-h", None)]
    assert "remove its hostPath check marker" in result["plan"][0]["reason"]


def test_host_path_block_mode_refused():
    result = run(host_cluster(pod("ns/p", "node1", ["a"], devices=["a"]), pv=host_path_pv("pv-h", mode="Block")),
                 driver_options=HP_OPTIONS)
    assert steps(result) == []
    assert any("volumeMode Block is not supported by the kubernetes.io/host-path plugin" in r for r in reasons(result))


def test_host_path_invalid_type_refused():
    result = run(host_cluster(pod("ns/p", "node1", ["a"]), pv=host_path_pv("pv-h", type_="Dir")),
                 driver_options=HP_OPTIONS)
    assert steps(result) == []
    [reason] = reasons(result)
    assert "spec.hostPath.type: Unsupported value: 'Dir'" in reason and '"DirectoryOrCreate"' in reason


def test_host_path_expansion_refused():
    result = run(host_cluster(pod("ns/p", "node1", ["a"]), claim_request="2Gi", claim_capacity="1Gi"),
                 {"node1": facts("node1", [host_marker(UID, "pv-h")])}, driver_options=HP_OPTIONS)
    assert steps(result) == []
    [reason] = reasons(result)
    assert "didn't find a plugin capable of expanding the volume" in reason and "kubernetes.io/host-path" in reason


def test_host_path_node_affinity_conflict():
    pv = host_path_pv("pv-h")
    pv["spec"]["nodeAffinity"] = affinity(on_host("node9"))
    result = run(host_cluster(pod("ns/p", "node1", ["a"]), pv=pv), driver_options=HP_OPTIONS)
    assert steps(result) == [] and "volume node affinity conflict" in reasons(result)[0]


def test_refused_local_volume_is_not_torn_down_elsewhere():
    """A pod moved to a node where its PV is refused: the old node's mount is the pod's data and stays."""
    pv = local_pv("pv-l", path="/etc")
    result = run(local_cluster(pod("ns/p", "node1", ["a"], uid="uid-new"), pv=pv),
                 {"node2": facts("node2", [local_pod_mount("uid-old", "pv-l")])})
    assert [s for s in steps(result) if s[0] == "unmount"] == []


# ---- convergence: plan, apply as the modules would (simulate.apply_plan), plan again -----------------------

def test_local_and_host_path_converge_and_tear_down():
    from simulate import apply_plan
    local = local_pv("pv-l")
    host = host_path_pv("pv-h", claim="ns/b", type_="Directory")
    objs = [labelled("node1"), labelled("node2"), local, pvc("ns/a", "pv-l"), host, pvc("ns/b", "pv-h")]
    with_pod = cluster(*(objs + [pod("ns/p", "node1", ["a", "b"])]))
    node_facts = {"node1": facts("node1"), "node2": facts("node2")}
    first = run(with_pod, node_facts, HP_OPTIONS)
    assert steps(first) == [("mount", "pod", "node1", "pv-h", "ns/p"), ("mount", "pod", "node1", "pv-l", "ns/p")]
    _cluster, node_facts = apply_plan(first, with_pod, node_facts)
    assert steps(run(with_pod, node_facts, HP_OPTIONS)) == []  # a second run plans nothing
    without_pod = cluster(*objs)
    teardown = run(without_pod, node_facts, HP_OPTIONS)
    assert steps(teardown) == [("unmount", "pod", "node1", "pv-h", None), ("unmount", "pod", "node1", "pv-l", None)]
    _cluster, node_facts = apply_plan(teardown, without_pod, node_facts)
    assert steps(run(without_pod, node_facts, HP_OPTIONS)) == []
