# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inline ephemeral CSI volumes (pod.spec.volumes[].csi): desired state, publish_inline, unpublish_inline, and
what the executor records for them (nothing). Kubernetes: csi_plugin.go supportsVolumeLifecycleMode,
csi_mounter.go SetUpAt / makeVolumeHandle, util.go GetUniqueVolumeNameFromSpecWithPod."""

import datetime
import hashlib
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import LOOP, cluster, facts, node, pod  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    ephemeral_volume_handle, inline_volume_name, unique_volume_name)
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
UID = "uid-p"
HANDLE = "csi-" + hashlib.sha256((UID + "scratch").encode()).hexdigest()
UNIQUE = unique_volume_name(LOOP, HANDLE)
POOL = "/var/lib/kubevol/pool"


def run(data, node_facts=None, scope=None, **options):
    opts = PlanOptions(True, 360, (LOOP,), NOW, options.get("max_teardown_fraction", 0.5),
                       options.get("max_teardown_count", 20), options.get("allow_mass_teardown", False),
                       options.get("loop_pools", (POOL,)))
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts, scope)


def ephemeral_driver(modes=("Persistent", "Ephemeral"), name=LOOP):
    spec = {"attachRequired": True}
    if modes is not None:
        spec["volumeLifecycleModes"] = list(modes)
    return {"kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


def inline_pod(key="ns/p", node_name="node1", attributes=None, driver=LOOP, read_only=False, fs_type=None,
               mounted_as="volumeMounts", **kwargs):
    csi = {"driver": driver, "volumeAttributes": {"size": "64Mi"} if attributes is None else attributes}
    if read_only:
        csi["readOnly"] = True
    if fs_type:
        csi["fsType"] = fs_type
    kwargs.setdefault("uid", "uid-" + key.split("/")[1])
    obj = pod(key, node_name, volumes=[{"name": "scratch", "csi": csi}], **kwargs)
    container = obj["spec"]["containers"][0]
    if mounted_as == "volumeMounts":
        container["volumeMounts"].append({"name": "scratch", "mountPath": "/scratch"})
    elif mounted_as == "volumeDevices":
        container["volumeDevices"].append({"name": "scratch", "devicePath": "/dev/x"})
    return obj


def with_ephemeral(node_name, uid=UID, volume="scratch", mounted=True, read_only=False, image=None,
                   pod_dir=True, driver=LOOP):
    """Node facts with one inline ephemeral volume (its pod dir in pod_mounts, and ephemeral_volumes)."""
    f = facts(node_name)
    handle = "csi-" + hashlib.sha256((uid + volume).encode()).hexdigest()
    unique = unique_volume_name(driver, handle)
    path = "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/%s/mount" % (uid, volume)
    if pod_dir:
        f["pod_mounts"].append({"pod_uid": uid, "pv_name": volume, "mode": "Filesystem", "path": path,
                                "mounted": mounted, "read_only": read_only, "device": "/dev/loop7" if mounted else None,
                                "unique_volume_name": unique, "driver": driver, "foreign": driver != LOOP,
                                "uncertain": None, "unsafe": False, "ephemeral": True})
    f["ephemeral_volumes"] = [{"pod_uid": uid, "volume_name": volume, "driver": driver, "volume_handle": handle,
                               "unique_volume_name": unique, "kubernetes_volume_name": inline_volume_name(uid, volume),
                               "path": path, "mounted": mounted, "read_only": read_only,
                               "device": "/dev/loop7" if mounted else None,
                               "image": image if image is not None else POOL + "/" + handle, "size_bytes": 67108864,
                               "foreign": driver != LOOP}]
    return f


def steps(result):
    return [(s["action"], s["target"], s["node"], s["volume"], s["pod"]) for s in result["plan"]]


def reasons(result):
    return [b["reason"] for b in result["blocked"]]


# ---- names -----------------------------------------------------------------------------------------

def test_handle_and_kubernetes_name_as_kubernetes_makes_them():
    assert ephemeral_volume_handle(UID, "scratch") == HANDLE
    assert len(HANDLE) == 68
    assert inline_volume_name(UID, "scratch") == "kubernetes.io/csi/uid-p-scratch"


# ---- publish_inline ----------------------------------------------------------------------------------

def test_ephemeral_driver_publishes_straight_into_the_pod():
    result = run(cluster(node("node1"), ephemeral_driver(), inline_pod()))
    assert steps(result) == [("mount", "pod", "node1", "ns/p/scratch", "ns/p")]
    step = result["plan"][0]
    assert step["ephemeral"] is True and step["unique_volume_name"] == UNIQUE
    assert step["kubernetes_volume_name"] == "kubernetes.io/csi/uid-p-scratch"
    assert step["pod_uid"] == UID and step["pod_read_only"] is False
    item = result["volume_items"]["node1"][UNIQUE]
    assert item["ephemeral"] is True and item["pv_name"] == "scratch" and item["volume_handle"] == HANDLE
    assert item["capacity_bytes"] == 64 << 20 and item["fs_type"] == "ext4"
    assert item["volume_attributes"] == {"size": "64Mi"}
    assert result["blocked"] == [] and result["summary"]["skipped"] == 0
    assert result["desired"]["inline_volumes"] == 1 and result["desired"]["attachments"] == 0


def test_read_only_fs_type_and_pool_are_the_pods():
    result = run(cluster(node("node1"), ephemeral_driver(),
                         inline_pod(attributes={"size": "1Gi", "pool": "/srv/pool"}, read_only=True, fs_type="xfs")),
                 loop_pools=(POOL, "/srv/pool"))
    step = result["plan"][0]
    assert step["pod_read_only"] is True
    item = result["volume_items"]["node1"][UNIQUE]
    assert item["fs_type"] == "xfs" and item["volume_attributes"]["pool"] == "/srv/pool"
    assert item["read_only"] is False  # the device is created read-write; the pod's mount is read-only


def test_published_volume_is_not_planned_again():
    data = cluster(node("node1"), ephemeral_driver(), inline_pod())
    result = run(data, {"node1": with_ephemeral("node1")})
    assert result["plan"] == [] and result["blocked"] == []
    assert result["in_use_repairs"] == []  # never listed in volumesInUse, never repaired into it
    assert result["actual"]["ephemeral_volumes"] == 1 and result["actual"]["pod_mounts"] == 0
    assert result["actual"]["attached"] == 0


def test_a_directory_left_unmounted_is_published_again():
    data = cluster(node("node1"), ephemeral_driver(), inline_pod())
    result = run(data, {"node1": with_ephemeral("node1", mounted=False)})
    assert steps(result) == [("mount", "pod", "node1", "ns/p/scratch", "ns/p")]


def test_unused_inline_volume_is_not_published():
    data = cluster(node("node1"), ephemeral_driver(), inline_pod(mounted_as=None))
    result = run(data)
    assert result["plan"] == [] and result["blocked"] == []


def test_foreign_inline_volume_stays_skipped():
    data = cluster(node("node1"), ephemeral_driver(name="other.csi.io"), inline_pod(driver="other.csi.io"))
    result = run(data)
    assert result["plan"] == [] and result["blocked"] == [] and result["summary"]["skipped"] == 1


def test_unreachable_node_blocks_the_publish():
    result = run(cluster(node("node1"), ephemeral_driver(), inline_pod()),
                 {"node1": facts("node1", reachable=False, error="ssh: timed out")})
    assert result["plan"] == []
    assert reasons(result) == ["node node1 is unreachable (ssh: timed out): make it reachable and run again "
                               "[KV-NODE-UNREACHABLE]"]


BLOCKED = [
    ("CSIDriver without Ephemeral", [ephemeral_driver(modes=("Persistent",))], {"size": "64Mi"},
     'volume mode "Ephemeral" not supported by driver loop.kubevol.io (only supports ["Persistent"])'),
    ("CSIDriver defaults to Persistent", [ephemeral_driver(modes=None)], {"size": "64Mi"},
     'volume mode "Ephemeral" not supported by driver loop.kubevol.io (only supports ["Persistent"])'),
    ("no CSIDriver object", [], {"size": "64Mi"},
     'volume mode "Ephemeral" not supported by driver loop.kubevol.io (no CSIDriver object)'),
    ("no size", [ephemeral_driver()], {}, "has no size: set csi.volumeAttributes.size"),
    ("empty size", [ephemeral_driver()], {"size": ""}, "has no size"),
    ("malformed size", [ephemeral_driver()], {"size": "lots"}, "is not a quantity"),
    ("zero size", [ephemeral_driver()], {"size": "0"}, "must be above zero"),
    ("negative size", [ephemeral_driver()], {"size": "-1Mi"}, "must be above zero"),
]


def fs_group_pod(fs_group=2000, policy=None, **kwargs):
    obj = inline_pod(**kwargs)
    obj["spec"]["securityContext"] = {"fsGroup": fs_group}
    if policy:
        obj["spec"]["securityContext"]["fsGroupChangePolicy"] = policy
    return obj


def fs_group_driver(policy):
    obj = ephemeral_driver()
    if policy:
        obj["spec"]["fsGroupPolicy"] = policy
    return obj


FS_GROUP_CASES = [
    ("File policy", "File", {}, 2000),
    ("default policy, no fsType: skipped", None, {}, None),
    ("default policy with fsType", None, {"fs_type": "ext4"}, 2000),
    ("policy None", "None", {"fs_type": "ext4"}, None),
    ("read-only volume", "File", {"read_only": True}, None),
]


@pytest.mark.parametrize("name,policy,kwargs,expected", FS_GROUP_CASES, ids=[c[0] for c in FS_GROUP_CASES])
def test_fs_group_as_supports_fs_group(name, policy, kwargs, expected):
    """csi_mounter.go supportsFSGroup: an inline volume counts as ReadWriteOnce; the default policy needs fsType."""
    result = run(cluster(node("node1"), fs_group_driver(policy), fs_group_pod(policy="OnRootMismatch", **kwargs)))
    step = result["plan"][0]
    assert step.get("pod_fs_group") == expected
    if expected is not None:
        assert step["pod_fs_group_change_policy"] == "OnRootMismatch"
        [item] = executor.phase_items(result, "mount", "node1")
        assert item["pods"][0]["fs_group"] == 2000 and volume_item(item).pods[0].fs_group == 2000


def test_fs_group_rechecked_on_a_published_volume():
    data = cluster(node("node1"), fs_group_driver("File"), fs_group_pod())
    f = with_ephemeral("node1")
    f["ephemeral_volumes"][0].update(root_gid=0, root_mode="0755")
    result = run(data, {"node1": f})
    assert steps(result) == [("mount", "pod", "node1", "ns/p/scratch", "ns/p")]
    assert "apply fsGroup 2000 of pod ns/p to inline volume scratch" in result["plan"][0]["reason"]
    f["ephemeral_volumes"][0].update(root_gid=2000, root_mode="2775")
    assert run(data, {"node1": f})["plan"] == []


def test_unknown_fs_group_policy_is_blocked():
    result = run(cluster(node("node1"), fs_group_driver("Sometimes"), inline_pod()))
    assert result["plan"] == [] and "unknown spec.fsGroupPolicy 'Sometimes'" in reasons(result)[0]


def test_unknown_fs_type_is_blocked():
    result = run(cluster(node("node1"), ephemeral_driver(), inline_pod(fs_type="vfat")))
    assert result["plan"] == [] and "csi.fsType 'vfat' is not one kubevol formats" in reasons(result)[0]


@pytest.mark.parametrize("name,drivers,attributes,expected", BLOCKED, ids=[c[0] for c in BLOCKED])
def test_blocked_with_kubernetes_words(name, drivers, attributes, expected):
    result = run(cluster(node("node1"), inline_pod(attributes=attributes), *drivers))
    assert result["plan"] == []
    assert len(result["blocked"]) == 1, result["blocked"]
    entry = result["blocked"][0]
    assert expected in entry["reason"], entry["reason"]
    assert entry["node"] == "node1" and entry["pod"] == "ns/p" and entry["volume"] == "scratch"
    assert "inline volume scratch of pod ns/p" in entry["reason"]


def test_lifecycle_error_says_what_to_do():
    result = run(cluster(node("node1"), inline_pod()))
    assert "list Ephemeral in the CSIDriver loop.kubevol.io's spec.volumeLifecycleModes" in reasons(result)[0]


def test_block_use_is_refused():
    result = run(cluster(node("node1"), ephemeral_driver(), inline_pod(mounted_as="volumeDevices")))
    assert result["plan"] == [] and "not volumeDevices" in reasons(result)[0]


# ---- unpublish_inline --------------------------------------------------------------------------------

def test_gone_pod_is_unpublished_and_its_image_named():
    result = run(cluster(node("node1"), ephemeral_driver()), {"node1": with_ephemeral("node1")})
    assert steps(result) == [("unmount", "pod", "node1", "uid-p/scratch", None)]
    step = result["plan"][0]
    assert step["ephemeral"] is True and step["unique_volume_name"] == UNIQUE and step["pod_uid"] == UID
    assert "is gone from the cluster" in step["reason"] and "delete the volume" in step["reason"]
    item = result["volume_items"]["node1"][UNIQUE]
    assert item["ephemeral"] is True and item["volume_handle"] == HANDLE and item["pv_name"] == "scratch"
    assert item["volume_attributes"] == {"pool": POOL}
    # the executor's teardown item: this pod only, no device unmount, no detach record
    items = executor.phase_items(result, "teardown", "node1")
    assert items[0]["pods"] == [{"uid": UID, "name": UID, "read_only": False}]
    assert volume_item(items[0]).ephemeral is True


def test_terminated_pod_is_unpublished():
    data = cluster(node("node1"), ephemeral_driver(), inline_pod(phase="Succeeded"))
    result = run(data, {"node1": with_ephemeral("node1")})
    assert steps(result) == [("unmount", "pod", "node1", "ns/p/scratch", "ns/p")]
    assert "pod ns/p no longer runs on node node1" in result["plan"][0]["reason"]


def test_terminating_pod_gets_no_new_volume_and_keeps_its_own():
    # deletionTimestamp set, a container still running: findAndAddNewPods adds nothing, what it has stays
    data = cluster(node("node1"), ephemeral_driver(), inline_pod(deleted=True, states=["running"]))
    assert run(data)["plan"] == []
    result = run(data, {"node1": with_ephemeral("node1")})
    assert result["plan"] == []
    # its containers stopped: it is terminated, and the volume goes
    data = cluster(node("node1"), ephemeral_driver(), inline_pod(deleted=True, states=["terminated"]))
    assert steps(run(data, {"node1": with_ephemeral("node1")})) == [("unmount", "pod", "node1", "ns/p/scratch",
                                                                     "ns/p")]


def test_record_only_leftover_is_torn_down():
    # a run killed after the pod directory went: only the driver's record names the image
    f = with_ephemeral("node1", mounted=False, pod_dir=False)
    result = run(cluster(node("node1"), ephemeral_driver()), {"node1": f})
    assert steps(result) == [("unmount", "pod", "node1", "uid-p/scratch", None)]
    assert "nothing is mounted" in result["plan"][0]["reason"]


def test_live_pod_keeps_its_volume_even_when_blocked():
    # the CSIDriver lost Ephemeral after the publish: the pod runs on, its volume stays
    data = cluster(node("node1"), ephemeral_driver(modes=("Persistent",)), inline_pod())
    result = run(data, {"node1": with_ephemeral("node1")})
    assert result["plan"] == []
    assert len(result["blocked"]) == 1


def test_pod_outside_scope_is_not_touched():
    data = cluster(node("node1"), ephemeral_driver(), inline_pod(phase="Succeeded"), inline_pod("ns/q", uid="uid-q"))
    result = run(data, {"node1": with_ephemeral("node1")}, scope={"ns/q"})
    assert all(s["pod_uid"] != UID for s in result["plan"])


def test_pod_moved_to_another_node_is_unpublished_on_the_old():
    data = cluster(node("node1"), node("node2"), ephemeral_driver(), inline_pod(node_name="node2"))
    result = run(data, {"node1": with_ephemeral("node1"), "node2": facts("node2")})
    assert steps(result) == [("unmount", "pod", "node1", "ns/p/scratch", "ns/p"),
                             ("mount", "pod", "node2", "ns/p/scratch", "ns/p")]


def test_pod_on_a_node_the_snapshot_does_not_picture_keeps_its_volume_there():
    # node1's Node object is missing from the snapshot: its inline volume is not torn down there, so none is
    # created on node2 for the same pod (a second copy, and the image name is the same)
    data = cluster(node("node2"), ephemeral_driver(), inline_pod(node_name="node2"))
    result = run(data, {"node1": with_ephemeral("node1"), "node2": facts("node2")})
    assert steps(result) == []
    assert any("inline volume scratch is still on node node1" in r for r in reasons(result)), reasons(result)


def test_foreign_ephemeral_facts_are_hands_off():
    f = with_ephemeral("node1", driver="other.csi.io")
    result = run(cluster(node("node1")), {"node1": f})
    assert result["plan"] == [] and result["actual"]["foreign_mounts"] >= 1


def test_foreign_ephemeral_pod_dir_stays_foreign():
    # another driver's inline volume (e.g. a secrets-store CSI driver): in pod_mounts only, hands off
    f = with_ephemeral("node1", driver="other.csi.io")
    f["ephemeral_volumes"] = []
    result = run(cluster(node("node1")), {"node1": f})
    assert result["plan"] == [] and result["actual"]["foreign_mounts"] == 1


def test_teardown_guard_counts_ephemeral_volumes():
    data = cluster(node("node1"), ephemeral_driver())
    f = with_ephemeral("node1")
    other = with_ephemeral("node1", uid="uid-other")
    f["pod_mounts"] += other["pod_mounts"]
    f["ephemeral_volumes"] += other["ephemeral_volumes"]
    result = run(data, {"node1": f}, max_teardown_count=1, allow_mass_teardown=True)
    guard = result["teardown_guard"]
    assert guard["mounted"] == 2 and guard["teardown"] == 2 and guard["allow_mass_teardown"] is True


def test_node_without_picture_keeps_ephemeral_volumes():
    result = run(cluster(node("node2"), ephemeral_driver()), {"node1": with_ephemeral("node1")})
    assert result["plan"] == []
    assert "no Node object node1" in reasons(result)[0]


# ---- the executor records nothing for them ------------------------------------------------------------

def test_no_records_for_publish_or_unpublish():
    publish = run(cluster(node("node1"), ephemeral_driver(), inline_pod()))
    result = {"volumes": [{"pv_name": "scratch", "unique_volume_name": UNIQUE, "changed": True}], "changed": True}
    outcome = executor.task_outcome(publish, ["mount"], {"node1": {"phase_results": {"mount": result}}})
    assert outcome["records"] == [] and outcome["errors"] == []
    assert executor.attach_intents(publish) == []
    teardown = run(cluster(node("node1"), ephemeral_driver()), {"node1": with_ephemeral("node1")})
    outcome = executor.task_outcome(teardown, ["teardown"], {"node1": {"phase_results": {"teardown": result}}})
    assert outcome["records"] == [] and outcome["errors"] == []


def test_failed_publish_is_reported():
    publish = run(cluster(node("node1"), ephemeral_driver(), inline_pod()))
    result = {"failed": True, "msg": "volume scratch: invalid volumeAttributes.pool", "volumes": [],
              "failures": [{"unique_volume_name": UNIQUE, "msg": "invalid volumeAttributes.pool"}]}
    outcome = executor.task_outcome(publish, ["mount"], {"node1": {"phase_results": {"mount": result}}})
    assert outcome["records"] == [] and outcome["errors"][0]["volumes"] == ["scratch"]


# ---- the node's item -----------------------------------------------------------------------------------

def test_item_must_carry_the_pods_own_handle():
    raw = {"pv_name": "scratch", "driver": LOOP, "volume_handle": "pvc-a.img", "ephemeral": True,
           "pods": [{"uid": UID}]}
    with pytest.raises(InvalidInput):
        volume_item(raw)
    raw["volume_handle"] = HANDLE
    assert volume_item(raw).ephemeral is True
    raw["pods"].append({"uid": "other"})
    with pytest.raises(InvalidInput):
        volume_item(raw)


# ---- property: planning again over what the plan leaves plans nothing -------------------------------------

from hypothesis import given, settings, strategies as st  # noqa: E402

NODES = ("n1", "n2")


def _apply(result, node_facts):
    """What the nodes have after every step of the plan succeeded (inline volumes only)."""
    new = dict((n, dict(f, pod_mounts=list(f.get("pod_mounts") or []),
                        ephemeral_volumes=list(f.get("ephemeral_volumes") or [])))
               for n, f in node_facts.items())
    for step in result["plan"]:
        f = new.get(step["node"])
        if f is None or f.get("reachable") is False:
            continue
        assert step.get("ephemeral"), step
        item = result["volume_items"][step["node"]][step["unique_volume_name"]]
        key = (step["pod_uid"], item["pv_name"])
        f["ephemeral_volumes"] = [e for e in f["ephemeral_volumes"] if (e["pod_uid"], e["volume_name"]) != key]
        f["pod_mounts"] = [m for m in f["pod_mounts"] if (m["pod_uid"], m["pv_name"]) != key]
        if step["action"] == "mount":
            done = with_ephemeral(step["node"], uid=step["pod_uid"], volume=item["pv_name"],
                                  read_only=step["pod_read_only"])
            f["ephemeral_volumes"] += done["ephemeral_volumes"]
            f["pod_mounts"] += done["pod_mounts"]
    return new


@st.composite
def inline_worlds(draw):
    objs = [node(n) for n in NODES]
    modes = draw(st.sampled_from([None, ("Persistent",), ("Persistent", "Ephemeral"), ("Ephemeral",)]))
    if modes is not None or draw(st.booleans()):
        objs.append(ephemeral_driver(modes=modes))
    uids = ["uid-p%d" % i for i in range(3)]
    for i in range(draw(st.integers(0, 3))):
        attributes = draw(st.sampled_from([{"size": "64Mi"}, {"size": "1Gi", "pool": POOL}, {}, {"size": "x"}]))
        objs.append(inline_pod("ns/p%d" % i, draw(st.sampled_from(NODES + ("",))), attributes=attributes,
                               read_only=draw(st.booleans()),
                               phase=draw(st.sampled_from(["Running", "Running", "Pending", "Succeeded"]))))
    node_facts = {}
    for n in NODES:
        if draw(st.integers(0, 4)) == 0:
            node_facts[n] = facts(n, reachable=False)
            continue
        f = facts(n)
        f["ephemeral_volumes"] = []
        for uid in draw(st.lists(st.sampled_from(uids + ["gone"]), unique=True, max_size=2)):
            e = with_ephemeral(n, uid=uid, mounted=draw(st.booleans()), read_only=draw(st.booleans()),
                               pod_dir=draw(st.booleans()))
            f["pod_mounts"] += e["pod_mounts"]
            f["ephemeral_volumes"] += e["ephemeral_volumes"]
        node_facts[n] = f
    return cluster(*objs), node_facts


@settings(max_examples=150, deadline=None)
@given(inline_worlds())
def test_plan_never_crashes_and_converges(world):
    data, node_facts = world
    first = run(data, node_facts, allow_mass_teardown=True)
    for step in first["plan"]:
        assert step["ephemeral"] is True and (step["action"], step["target"]) in (("mount", "pod"), ("unmount", "pod"))
    assert executor.attach_intents(first) == []
    second = run(data, _apply(first, node_facts), allow_mass_teardown=True)
    assert second["plan"] == [], second["plan"]


# ---- a handle that is also a PV's ------------------------------------------------------------------------------

def pv_with_handle(name, handle):
    return {"kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                     "csi": {"driver": LOOP, "volumeHandle": handle, "volumeAttributes": {"pool": POOL}}}}


def test_inline_volume_whose_handle_a_pv_names_is_never_published():
    result = run(cluster(node("node1"), ephemeral_driver(), inline_pod(), pv_with_handle("pv-adopted", HANDLE)))
    assert steps(result) == []
    [entry] = result["blocked"]
    assert entry["node"] == "node1" and entry["volume"] == "scratch" and entry["pod"] == "ns/p"
    assert "PV pv-adopted" in entry["reason"] and HANDLE in entry["reason"] and "rename" in entry["reason"]


def test_gone_pods_inline_volume_whose_handle_a_pv_names_is_not_unpublished():
    """Unpublishing deletes the image created for the pod: with a PV naming the same handle, that image is the PV's."""
    result = run(cluster(node("node1"), ephemeral_driver(), pv_with_handle("pv-adopted", HANDLE)),
                 {"node1": with_ephemeral("node1")})
    assert steps(result) == []
    [entry] = result["blocked"]
    assert entry["node"] == "node1" and entry["volume"] == "scratch"
    assert "PV pv-adopted" in entry["reason"] and "unmount it on the node by hand" in entry["reason"]


def test_an_unrelated_pv_does_not_stop_the_unpublish():
    result = run(cluster(node("node1"), ephemeral_driver(), pv_with_handle("pv-other", "other.img")),
                 {"node1": with_ephemeral("node1")})
    assert steps(result) == [("unmount", "pod", "node1", "uid-p/scratch", None)]
