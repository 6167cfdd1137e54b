# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A partial, foreign or surprising cluster never costs a running pod its volume.

One case per rule of docs/planner.md "Trust", each naming the Kubernetes source it follows.
"""

import datetime
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, facts, node, pod, pv, pvc, uvn, va  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    DETACH_REQUESTED_AT_ANNOTATION, OUT_OF_SERVICE_TAINT)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import (  # noqa: E402
    PlanOptions, TeardownRefused, plan_cluster)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import StoreError  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.modules import volume_reconcile_plan as plan_module  # noqa: E402

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
OOS = {"key": OUT_OF_SERVICE_TAINT, "value": "nodeshutdown", "effect": "NoExecute"}
EBS = "ebs.csi.aws.com"


def run(data, node_facts=None, **options):
    opts = PlanOptions(options.get("force_detach", True), options.get("max_wait_for_unmount", 360),
                       ("loop.kubevol.io",), NOW, options.get("max_teardown_fraction", 0.5),
                       options.get("max_teardown_count", 20), options.get("allow_mass_teardown", False))
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts)


def steps(result, action=None):
    return [(s["action"], s["target"], s["node"], s["volume"], s["pod"]) for s in result["plan"]
            if action is None or s["action"] == action]


def teardown(result):
    return [s for s in steps(result) if s[0] in ("unmount", "detach")]


def reasons(result):
    return [b["reason"] for b in result["blocked"]]


def converged_node1(*pvs):
    """node1's facts with each PV attached, staged and mounted into pod uid-ns-<pv>."""
    return facts("node1", devices=pvs, global_mounts=pvs, pod_mounts=[("uid-ns-" + p, p) for p in pvs])


# ---- 1. a snapshot must look like a cluster -----------------------------------------------------------

@pytest.mark.parametrize("text, match", [
    ("", "the file is empty"),
    ("\n# only a comment\n", "the file is empty"),
    ("42\n", "document 1 is an int"),
    ("just some words\n", "document 1 is the text 'just some words'"),
    ('{"kind": "List", "items": {"a": 1}}', "items is a dict, not a list"),
    ("items: [1, {kind: Pod}]\nkind: List\nmetadata: {}\n", r"items\[0\] is not a Kubernetes object \(an int\)"),
    ("error: You must be logged in to the server (Unauthorized)\n", "kubectl's error output"),
    ("Error from server (Forbidden): pods is forbidden: User \"x\" cannot list\n", "kubectl's error output"),
    ("Unable to connect to the server: dial tcp 10.0.0.1:6443: i/o timeout\n", "kubectl's error output"),
])
def test_malformed_snapshot_is_a_clean_error_naming_the_file(tmp_path, text, match):
    """kubevol's own rule (no Kubernetes analogue): a file that is not a List is never an empty cluster."""
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    with pytest.raises(StoreError, match=match) as err:
        FileStore(str(path)).load()
    assert str(path) in err.value.msg


def test_zero_byte_file_through_the_planner_module_plans_nothing(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text("")
    params = dict(cluster_source="file", cluster_state=str(path), cluster=None, node_facts={"node1": converged_node1("pv-a")},
                  force_detach=True, max_wait_for_unmount=360, known_drivers=["loop.kubevol.io"], scope=None,
                  max_teardown_fraction=0.5, max_teardown_count=20, allow_mass_teardown=False)
    with pytest.raises(StoreError, match="the file is empty"):
        plan_module.run(params, NOW)


def test_kubectl_json_cut_off_after_an_item_plans_nothing(tmp_path):
    """kubectl's JSON is read object by object (FileStore.stream_items); a file cut off between two objects must not
    plan from the objects read before the cut. Here the cut drops the pods: planned from what came before it, the
    running pod's volume would be unmounted and detached."""
    import json
    full = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   pod("ns/p", "node1", ["a"], uid="uid-ns-pv-a"))
    node_facts = {"node1": converged_node1("pv-a")}
    params = dict(cluster_source="file", cluster=None, node_facts=node_facts, force_detach=True,
                  max_wait_for_unmount=360, known_drivers=["loop.kubevol.io"], scope=None, max_teardown_fraction=0.5,
                  max_teardown_count=20, allow_mass_teardown=False, output="full", table_rows=100)
    text = json.dumps(full, indent=4)
    complete = tmp_path / "complete.json"
    complete.write_text(text)
    assert teardown(plan_module.run(dict(params, cluster_state=str(complete)), NOW)) == []
    before_the_pod = cluster(*full["items"][:-1])
    assert teardown(run(before_the_pod, node_facts))  # what a plan from the objects before the cut would do
    cut = tmp_path / "cut.json"
    cut.write_text(text[:text.index('"kind": "Pod"')])  # kubectl's output, cut off where the pod begins
    with pytest.raises(StoreError, match="invalid") as err:
        plan_module.run(dict(params, cluster_state=str(cut)), NOW)
    assert str(cut) in err.value.msg and "write it again with `kubectl get" in err.value.msg


def test_empty_list_with_a_node_reporting_volumes_tears_nothing_down():
    """reconstruct.go readyToUnmount: the kubelet removes nothing before its pod sources are ready."""
    result = run(cluster(), {"node1": converged_node1("pv-a", "pv-b")})
    assert teardown(result) == []
    assert any("no Node object node1" in r and r.endswith("[KV-NODE-UNKNOWN]") for r in reasons(result))


def test_a_node_missing_from_the_snapshot_is_left_alone_the_others_are_planned():
    data = cluster(node("node2"), bound("pv-a", "ns/a"), bound("pv-b", "ns/b"), pod("ns/q", "node2", ["b"]))
    result = run(data, {"node1": converged_node1("pv-a"), "node2": facts("node2")})
    assert [s for s in steps(result) if s[2] == "node1"] == []
    assert ("attach", "device", "node2", "pv-b", None) in steps(result)
    assert [b["node"] for b in result["blocked"]] == ["node1"]


def test_a_snapshot_without_any_node_object_detaches_nothing():
    data = cluster(bound("pv-a", "ns/a"), va("pv-a", "node1"))
    result = run(data)
    assert steps(result, "detach") == []
    assert any("no Node object at all" in r for r in reasons(result))


# ---- 2. the teardown guard -----------------------------------------------------------------------------

def four_mounted():
    data = [node("node1", attached=[uvn("pv-" + c) for c in "abcd"], in_use=[uvn("pv-" + c) for c in "abcd"])]
    for c in "abcd":
        data.extend(bound("pv-" + c, "ns/" + c))
    return data, {"node1": converged_node1(*["pv-" + c for c in "abcd"])}


def test_guard_trips_when_the_pods_vanish_from_the_snapshot():
    data, node_facts = four_mounted()
    result = run(cluster(*data), node_facts)
    guard = result["teardown_guard"]
    assert guard["tripped"] and guard["mounted"] == 4 and guard["teardown"] == 4
    assert [v["volume"] for v in guard["volumes"]] == ["pv-a", "pv-b", "pv-c", "pv-d"]
    assert guard["volumes"][0]["steps"] == ["unmount/pod", "unmount/device", "detach/device"]


def test_guard_refusal_through_the_module_names_the_teardown_and_the_override(tmp_path):
    data, node_facts = four_mounted()
    params = dict(cluster_source="file", cluster_state=None, cluster=cluster(*data), node_facts=node_facts, force_detach=True,
                  max_wait_for_unmount=360, known_drivers=["loop.kubevol.io"], scope=None,
                  max_teardown_fraction=0.5, max_teardown_count=20, allow_mass_teardown=False)
    with pytest.raises(TeardownRefused) as err:
        plan_module.run(params, NOW)
    msg = err.value.msg
    assert "4 of the 4 volumes mounted now" in msg and "node1 pv-a (unmount/pod" in msg
    assert "allow_mass_teardown=true" in words.say(msg) and "kubevol_allow_mass_teardown=true" in words.say(msg, words.ROLE)
    assert msg.startswith("refusing a mass teardown, so no node was changed: ") and msg.endswith("[KV-MASS-TEARDOWN]")
    assert len(err.value.kwargs["plan"]) == 12  # the plan travels with the failure, for the table
    params["allow_mass_teardown"] = True
    assert len(plan_module.run(params, NOW)["plan"]) == 12


def test_guard_lets_one_volume_move_and_a_minority_teardown_through():
    data, node_facts = four_mounted()
    data = data + [pod("ns/" + c, "node1", [c], uid="uid-ns-pv-" + c) for c in "bcd"]  # pod ns/a is gone: 1 of 4
    assert not run(cluster(*data), node_facts)["teardown_guard"]["tripped"]
    single = [node("node1", attached=[uvn("pv-a")])] + bound("pv-a", "ns/a")
    result = run(cluster(*single), {"node1": converged_node1("pv-a")})
    assert result["teardown_guard"]["teardown"] == 1 and not result["teardown_guard"]["tripped"]


def test_guard_absolute_count():
    data, node_facts = four_mounted()
    data = data + [pod("ns/" + c, "node1", [c], uid="uid-ns-pv-" + c) for c in "cd"]  # 2 of 4: within the fraction
    assert not run(cluster(*data), node_facts)["teardown_guard"]["tripped"]
    assert run(cluster(*data), node_facts, max_teardown_count=1)["teardown_guard"]["tripped"]


# ---- 3. running pods keep their volumes ----------------------------------------------------------------

KEEP_CASES = [
    ("PVC missing", lambda: [pv("pv-a", claim="ns/a")]),
    ("PVC Lost", lambda: [pv("pv-a", claim="ns/a"), pvc("ns/a", "pv-a", phase="Lost")]),
    ("PV missing", lambda: [pvc("ns/a", "pv-a")]),
    ("claimRef uid mismatch", lambda: [pv("pv-a", claim="ns/a", uid="old"), pvc("ns/a", "pv-a")]),
    ("nothing left but the pod", lambda: []),
]


@pytest.mark.parametrize("name, objects", KEEP_CASES, ids=[c[0] for c in KEEP_CASES])
def test_running_pod_keeps_its_mounted_volume_whatever_is_wrong_with_its_claim(name, objects):
    """desired_state_of_world_populator.go findAndRemoveDeletedPods: only a deleted or terminated pod
    loses its volumes; a claim that stops resolving blocks new mounts, never unmounts."""
    node1 = node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")])
    data = cluster(node1, pod("ns/p", "node1", ["a"], uid="uid-ns-pv-a"), *objects())
    result = run(data, {"node1": converged_node1("pv-a")})
    assert teardown(result) == []
    assert any(b["pod"] == "ns/p" for b in result["blocked"]), result["blocked"]


def test_running_pod_keeps_an_attachment_without_node_facts():
    """Without facts the pod's claim still leads to its PV (PVC volumeName or PV claimRef): kept attached."""
    data = cluster(node("node1", attached=[uvn("pv-a")]), pod("ns/p", "node1", ["a"]),
                   pv("pv-a", claim="ns/a"), pvc("ns/a", "pv-a", phase="Lost"))
    assert steps(run(data), "detach") == []


def test_terminated_pod_releases_its_volume():
    """pkg/volume/util/util.go IsPodTerminated: deleted with no container running releases the volume."""
    data = cluster(node("node1", attached=[uvn("pv-a")]), *bound("pv-a", "ns/a"),
                   pod("ns/p", "node1", ["a"], uid="uid-ns-pv-a", deleted=True, states=["terminated"]))
    result = run(data, {"node1": converged_node1("pv-a")})
    assert [s[:2] for s in teardown(result)] == [("unmount", "pod"), ("unmount", "device"), ("detach", "device")]


# ---- 4. foreign drivers are hands-off ------------------------------------------------------------------

def test_foreign_driver_volumes_are_never_planned_blocked_or_torn_down():
    """A kubelet only acts on its own plugins' volumes (operation_executor via the volume plugin manager)."""
    ebs = "kubernetes.io/csi/%s^vol-0abc" % EBS
    node_facts = {"node1": converged_node1("pv-a")}
    node_facts["node1"]["devices"].append({"unique_volume_name": ebs, "driver": EBS, "device": "/dev/nvme1n1"})
    node_facts["node1"]["global_mounts"].append({"unique_volume_name": ebs, "driver": EBS, "pv_name": "pv-ebs",
                                                 "path": "/g/ebs", "mounted": True, "foreign": True})
    node_facts["node1"]["pod_mounts"].append({"pod_uid": "uid-gone", "pv_name": "pv-ebs", "mounted": True,
                                              "unique_volume_name": ebs, "driver": EBS, "foreign": True})
    node_facts["node1"]["pod_mounts"].append({"pod_uid": "uid-gone2", "pv_name": "pv-ebs2", "mounted": True,
                                              "unique_volume_name": None, "driver": EBS, "foreign": True})
    data = cluster(node("node1", attached=[uvn("pv-a"), ebs]), bound("pv-a", "ns/a"),
                   bound("pv-ebs", "ns/e", driver=EBS), pod("ns/a", "node1", ["a"], uid="uid-ns-pv-a"),
                   pod("ns/e", "node1", ["e"]), va("pv-ebs", "node1", driver=EBS))
    result = run(data, node_facts)
    assert result["plan"] == [] and result["blocked"] == []
    assert result["desired"]["foreign_volumes"] == 1 and result["actual"]["foreign_mounts"] == 4


def test_foreign_is_decided_by_known_drivers_too():
    """Facts from an older node module carry no `foreign` key: the planner's known_drivers decides."""
    ebs = "kubernetes.io/csi/%s^vol-0abc" % EBS
    node_facts = facts("node1")
    node_facts["global_mounts"].append({"unique_volume_name": ebs, "pv_name": "pv-ebs", "path": "/g/ebs",
                                        "mounted": True})
    result = run(cluster(node("node1")), {"node1": node_facts})
    assert result["plan"] == [] and result["blocked"] == []


# ---- 5. read-only is per pod ---------------------------------------------------------------------------

def test_staging_is_read_write_when_the_first_pod_is_a_reader():
    """csi_attacher.go MountDevice stages read-write; csi_mounter.go SetUpAt applies the pod's readOnly."""
    data = cluster(node("node1"), bound("pv-a", "ns/a"), pod("ns/r", "node1", ["a"], claim_read_only=["a"]))
    result = run(data, {"node1": facts("node1")})
    stage = [s for s in result["plan"] if (s["action"], s["target"]) == ("mount", "device")][0]
    publish = [s for s in result["plan"] if (s["action"], s["target"]) == ("mount", "pod")][0]
    assert result["volume_items"]["node1"][stage["unique_volume_name"]]["read_only"] is False
    assert executor.phase_items(result, "mount", "node1")[0]["pods"] == [
        {"uid": "uid-ns-r", "name": "ns/r", "read_only": True}]
    assert publish["pod_read_only"] is True


@pytest.mark.parametrize("pv_kwargs", [{"read_only": True}, {"modes": ("ReadOnlyMany",)}])
def test_staging_is_read_only_when_the_pv_is(pv_kwargs):
    data = cluster(node("node1"), bound("pv-a", "ns/a", **pv_kwargs), pod("ns/r", "node1", ["a"]))
    result = run(data, {"node1": facts("node1")})
    stage = [s for s in result["plan"] if s["target"] == "device" and s["action"] == "mount"][0]
    assert result["volume_items"]["node1"][stage["unique_volume_name"]]["read_only"] is True


def test_read_only_staging_left_by_an_older_run_is_remounted_for_a_writer():
    node_facts = facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("uid-ns-r", "pv-a", True)])
    node_facts["global_mounts"][0]["read_only"] = True
    data = cluster(node("node1", attached=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   pod("ns/r", "node1", ["a"], uid="uid-ns-r", claim_read_only=["a"]),
                   pod("ns/w", "node1", ["a"], uid="uid-ns-w"))
    result = run(data, {"node1": node_facts})
    assert steps(result) == [("mount", "device", "node1", "pv-a", None), ("mount", "pod", "node1", "pv-a", "ns/w")]
    assert "remount read-write" in result["plan"][0]["reason"] and "ns/w" in result["plan"][0]["reason"]
    # a reader alone keeps the old staging as it is: nothing to fix
    data = cluster(node("node1", attached=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   pod("ns/r", "node1", ["a"], uid="uid-ns-r", claim_read_only=["a"]))
    assert run(data, {"node1": node_facts})["plan"] == []


def test_a_writers_read_only_bind_is_fixed():
    node_facts = facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[("uid-ns-w", "pv-a", True)])
    data = cluster(node("node1", attached=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   pod("ns/w", "node1", ["a"], uid="uid-ns-w"))
    result = run(data, {"node1": node_facts})
    assert [(s["action"], s["target"], s["reason"]) for s in result["plan"]] == [
        ("mount", "pod", "remount: read-only changed")]
    assert result["plan"][0]["pod_read_only"] is False


# ---- 6. out-of-service and deleted nodes ---------------------------------------------------------------

def moved_to_node2(node1):
    """An RWO volume attached and in use on node1; its pod now runs on node2."""
    return cluster(node1, node("node2"), bound("pv-a", "ns/a"), va("pv-a", "node1"), pod("ns/p", "node2", ["a"]))


def test_out_of_service_unreachable_node_releases_at_once_in_the_records():
    """reconciler.go hasOutOfServiceTaint: detach without waiting, even while mounted."""
    node1 = node("node1", ready=False, attached=[uvn("pv-a")], in_use=[uvn("pv-a")], taints=[OOS])
    result = run(moved_to_node2(node1), {"node1": facts("node1", reachable=False), "node2": facts("node2")})
    detach = [s for s in result["plan"] if s["action"] == "detach"]
    assert len(detach) == 1 and detach[0]["forced"] and detach[0]["record_only"]
    assert "released in the cluster only" in detach[0]["reason"]
    assert ("attach", "device", "node2", "pv-a", None) in steps(result)
    assert result["nodes_out_of_service"] == ["node1"]
    # the executor records it without any node module run, and keeps it out of node1's work
    assert executor.phase_items(result, "teardown", "node1") == []
    assert executor.phase_nodes(result, "teardown") == []
    outcome = executor.task_outcome(result, ["teardown"], {})
    assert [(r["type"], r["node"], r["pv_name"]) for r in outcome["records"]] == [("detached", "node1", "pv-a")]
    assert outcome["errors"] == []
    # and an unreachable out-of-service node is not a failed node
    assert executor.facts_errors({"node1": facts("node1", reachable=False)}, result["nodes_out_of_service"]) == []
    assert len(executor.facts_errors({"node1": facts("node1", reachable=False)}, [])) == 1


def test_out_of_service_reachable_node_is_force_detached_on_the_node():
    node1 = node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")], taints=[OOS])
    node_facts = {"node1": facts("node1", devices=["pv-a"], global_mounts=["pv-a"]), "node2": facts("node2")}
    result = run(moved_to_node2(node1), node_facts)
    detach = [s for s in result["plan"] if s["action"] == "detach"][0]
    assert not detach.get("record_only")
    assert executor.phase_items(result, "teardown", "node1")[0]["detach"] is True


def test_deleted_node_waits_max_wait_for_unmount_then_releases():
    """actual_state_of_world.go AddVolumeNode assumes mounted; reconciler.go force-detaches from an
    unhealthy (here: deleted) node after ReconcilerMaxWaitForUnmountDuration."""
    data = cluster(node("node2"), bound("pv-a", "ns/a"), va("pv-a", "node1"), pod("ns/p", "node2", ["a"]))
    first = run(data, {"node2": facts("node2")})
    assert steps(first, "detach") == [] and [r["node"] for r in first["detach_requests"]] == ["node1"]
    assert any("node node1 has no Node object in the snapshot" in r for r in reasons(first))
    old = (NOW - datetime.timedelta(seconds=400)).strftime("%Y-%m-%dT%H:%M:%SZ")
    data = cluster(node("node2"), bound("pv-a", "ns/a"), pod("ns/p", "node2", ["a"]),
                   va("pv-a", "node1", annotations={DETACH_REQUESTED_AT_ANNOTATION: old}))
    later = run(data, {"node2": facts("node2")})
    detach = [s for s in later["plan"] if s["action"] == "detach"]
    assert len(detach) == 1 and detach[0]["forced"] and detach[0]["record_only"]
    assert ("attach", "device", "node2", "pv-a", None) in steps(later)


# ---- 7. reconstruction is per volume -------------------------------------------------------------------

def uncertain_global(mounted, device="/dev/loop7"):
    return {"unique_volume_name": None, "driver": "loop.kubevol.io", "pv_name": None, "mounted": mounted,
            "path": "/var/lib/kubelet/plugins/kubernetes.io/csi/loop.kubevol.io/%s/globalmount" % ("ab" * 32),
            "device": device if mounted else None, "uncertain": "vol_data.json is not JSON"}


def test_an_unreadable_global_mount_blocks_only_itself_when_mounted():
    """reconstruct_common.go: a volume whose reconstruction failed is handled alone; the rest goes on."""
    node_facts = facts("node1")
    node_facts["global_mounts"].append(uncertain_global(True))
    data = cluster(node("node1"), bound("pv-a", "ns/a"), pod("ns/p", "node1", ["a"]))
    result = run(data, {"node1": node_facts})
    assert ("mount", "pod", "node1", "pv-a", "ns/p") in steps(result)
    assert teardown(result) == [] and not [s for s in result["plan"] if s["action"] == "cleanup"]
    assert any("cannot identify the volume mounted at" in r and "vol_data.json is not JSON" in r
               for r in reasons(result))


def test_an_unidentified_mount_keeps_its_kubevol_device_attached():
    node_facts = facts("node1", devices=["pv-a"])
    node_facts["devices"][0]["device"] = "/dev/loop7"
    node_facts["global_mounts"].append(uncertain_global(True, "/dev/loop7"))
    data = cluster(node("node1", attached=[uvn("pv-a")]), bound("pv-a", "ns/a"))
    assert steps(run(data, {"node1": node_facts}), "detach") == []


def test_a_stale_directory_of_another_shape_is_reported_not_cleaned():
    """volume_detach removes only the two shapes the kubelet's CSI plugin creates (globalmount, pod mount)."""
    node_facts = facts("node1")
    node_facts["pod_mounts"].append({"pod_uid": "uid-gone", "pv_name": "pv-raw", "mounted": False, "mode": "Block",
                                     "path": "/var/lib/kubelet/pods/uid-gone/volumeDevices/kubernetes.io~csi/pv-raw",
                                     "unique_volume_name": None, "uncertain": "no vol_data.json"})
    result = run(cluster(node("node1")), {"node1": node_facts})
    assert result["plan"] == []
    assert any("remove it by hand" in r and "pv-raw" in r for r in reasons(result))


def test_a_stale_unmounted_directory_is_cleaned():
    node_facts = facts("node1")
    node_facts["global_mounts"].append(uncertain_global(False))
    node_facts["pod_mounts"].append({"pod_uid": "uid-gone", "pv_name": "pv-unknown", "mounted": False,
                                     "path": "/var/lib/kubelet/pods/uid-gone/volumes/kubernetes.io~csi/pv-unknown/mount",
                                     "unique_volume_name": None, "uncertain": "no vol_data.json"})
    result = run(cluster(node("node1")), {"node1": node_facts})
    cleanup = [s for s in result["plan"] if s["action"] == "cleanup"]
    assert sorted(s["path"] for s in cleanup) == sorted([uncertain_global(False)["path"],
                                                         node_facts["pod_mounts"][0]["path"]])
    assert sorted(executor.phase_stale_paths(result, "teardown", "node1")) == sorted(s["path"] for s in cleanup)
    assert executor.phase_items(result, "teardown", "node1") == []


def test_an_attachment_on_a_node_without_node_object_blocks_a_second_rwo_attach_until_released():
    """The A/D controller keeps the attachment of a deleted Node in its actual state until it is detached."""
    data = cluster(node("node2"), bound("pv-a", "ns/a"), va("pv-a", "node1"), pod("ns/p", "node2", ["a"]))
    result = run(data, {"node2": facts("node2")})
    assert steps(result, "attach") == []
    assert any(r.startswith('Multi-Attach error for volume "pv-a"') for r in reasons(result))
    # a partial snapshot: node1 reports the device but its Node object is missing
    data = cluster(node("node2"), bound("pv-a", "ns/a"), pod("ns/p", "node2", ["a"]))
    result = run(data, {"node1": converged_node1("pv-a"), "node2": facts("node2")})
    assert steps(result, "attach") == [] and teardown(result) == []


def test_volumes_in_use_that_node_status_lacks_are_repaired():
    """kubelet_node_status.go reports every mounted volume in volumesInUse; a lost record is written again."""
    data = cluster(node("node1", attached=[uvn("pv-a"), uvn("pv-b")], in_use=[uvn("pv-b")]), bound("pv-a", "ns/a"),
                   bound("pv-b", "ns/b"), pod("ns/a", "node1", ["a"], uid="uid-ns-pv-a"),
                   pod("ns/b", "node1", ["b"], uid="uid-ns-pv-b"))
    result = run(data, {"node1": converged_node1("pv-a", "pv-b")})
    assert result["plan"] == []
    assert result["in_use_repairs"] == [{"node": "node1", "unique_volume_names": [uvn("pv-a")], "in_use": True}]
    assert executor.detach_request_records(result) == [
        {"type": "in_use", "node": "node1", "unique_volume_names": [uvn("pv-a")], "in_use": True}]


def test_volumes_in_use_a_node_no_longer_has_mounted_are_removed_but_not_other_drivers():
    """The other direction: an entry for a kubevol volume the reachable node has not mounted is stale; an entry of
    another driver belongs to its own node plugin; a volume this plan mounts is left to its own record."""
    ebs = "kubernetes.io/csi/ebs.csi.aws.com^vol-1"
    data = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a"), uvn("pv-gone"), ebs]),
                   bound("pv-a", "ns/a"), pod("ns/a", "node1", ["a"], uid="uid-ns-pv-a"))
    result = run(data, {"node1": converged_node1("pv-a")})
    assert result["plan"] == []
    assert result["in_use_repairs"] == [{"node": "node1", "unique_volume_names": [uvn("pv-gone")], "in_use": False}]
    # mounted by this very plan: not repaired here (the mount records it)
    data = cluster(node("node1", attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), bound("pv-a", "ns/a"),
                   pod("ns/a", "node1", ["a"], uid="uid-ns-pv-a"))
    result = run(data, {"node1": facts("node1", devices=["pv-a"])})
    assert ("mount", "device", "node1", "pv-a", None) in steps(result) and result["in_use_repairs"] == []


def test_an_unsafe_path_in_node_facts_is_blocked_never_cleaned():
    """A symlink planted at a pod's volume directory (node facts: unsafe) is reported, never acted through."""
    node_facts = facts("node1")
    node_facts["pod_mounts"].append({"pod_uid": "uid-gone", "pv_name": "pv-x", "mode": "Filesystem", "mounted": False,
                                     "path": "/var/lib/kubelet/pods/uid-gone/volumes/kubernetes.io~csi/pv-x/mount",
                                     "unique_volume_name": None, "unsafe": True,
                                     "uncertain": "refusing /var/lib/kubelet/pods/uid-gone: it is a symlink (to /etc)"})
    result = run(cluster(node("node1")), {"node1": node_facts})
    assert result["plan"] == []
    assert [b["reason"] for b in result["blocked"]] == [
        "refusing /var/lib/kubelet/pods/uid-gone: it is a symlink (to /etc) [KV-UNIDENTIFIED]"]


# ---- intent before action (issue: concurrent and killed runs) ------------------------------------------

def test_attach_intents_are_recorded_before_the_attach_and_create_an_unattached_va():
    """csi_attacher.go Attach: the VolumeAttachment exists before the attacher acts."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import RecordApplier
    data = cluster(node("node1"), bound("pv-a", "ns/a"), pod("ns/p", "node1", ["a"]))
    result = run(data, {"node1": facts("node1")})
    (intent,) = executor.attach_intents(result)
    assert intent == {"type": "attach_intent", "node": "node1", "pv_name": "pv-a", "driver": "loop.kubevol.io",
                      "volume_handle": "pv-a.img"}
    failed = {"nodes": {}, "volumes": {uvn("pv-a"): "detach on node0 failed"}}
    assert executor.attach_intents(result, failed) == []
    applier = RecordApplier(data)
    applier.apply_all([intent])
    (created,) = [o for o in data["items"] if o["kind"] == "VolumeAttachment"]
    assert created["status"] == {"attached": False} and created["spec"]["nodeName"] == "node1"
    applier.apply_all([intent])  # idempotent: an attachment already recorded is left as it is
    assert len([o for o in data["items"] if o["kind"] == "VolumeAttachment"]) == 1


def test_no_attach_intent_is_written_for_a_node_outside_the_run():
    """A run limited to node1 (--limit, the play's hosts: the plan task's run_nodes): node2's attach is planned from
    the cluster but no task of this run makes it, so the cluster gets no VolumeAttachment for it."""
    data = cluster(node("node1"), node("node2"), bound("pv-a", "ns/a"), bound("pv-b", "ns/b"),
                   pod("ns/p", "node1", ["a"]), pod("ns/q", "node2", ["b"]))
    result = run(data, {"node1": facts("node1")})
    assert sorted(i["node"] for i in executor.attach_intents(result)) == ["node1", "node2"]  # no run_nodes: all
    result["run_nodes"] = ["node1"]
    assert [(i["node"], i["pv_name"]) for i in executor.attach_intents(result)] == [("node1", "pv-a")]


def test_an_unconfirmed_attachment_counts_for_multi_attach_until_its_node_reports_otherwise():
    """A run killed after node1 attached, before its record: the VA (attached: false) is all the cluster knows."""
    data = cluster(node("node1"), node("node2"), bound("pv-a", "ns/a"), va("pv-a", "node1", attached=False),
                   pod("ns/p", "node2", ["a"]))
    # node1 unreachable: it may hold the volume, node2 must not attach it
    result = run(data, {"node1": facts("node1", reachable=False, error="ssh: timed out"), "node2": facts("node2")})
    assert not [s for s in result["plan"] if s["action"] == "attach"]
    reasons = [b["reason"] for b in result["blocked"] if b["node"] == "node2"]
    assert any("Multi-Attach" in r and "node node1 may hold it" in r and "unreachable" in r for r in reasons), reasons
    # node1 reports the device and no pod uses it there: detached from node1 first, then attached to node2 (the
    # teardown task runs and is recorded before the setup task: a failed detach keeps node2 from attaching)
    result = run(data, {"node1": facts("node1", devices=["pv-a"]), "node2": facts("node2")})
    assert steps(result) == [("detach", "device", "node1", "pv-a", None), ("attach", "device", "node2", "pv-a", None),
                             ("mount", "device", "node2", "pv-a", None), ("mount", "pod", "node2", "pv-a", "ns/p")]
    # node1 reachable and reports no device: not held; its VA is cleaned up and node2 attaches
    result = run(data, {"node1": facts("node1"), "node2": facts("node2")})
    assert ("detach", "device", "node1", "pv-a", None) in steps(result)
    assert ("attach", "device", "node2", "pv-a", None) in steps(result)
