# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inline ephemeral CSI volumes (pod.spec.volumes[].csi): their names, desired state and publish_inline, the node's
item, a handle that is also a PV's. Kubernetes: csi_plugin.go supportsVolumeLifecycleMode, csi_mounter.go SetUpAt /
makeVolumeHandle, util.go GetUniqueVolumeNameFromSpecWithPod. unpublish_inline: test_planner_inline_unpublish.py."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import LOOP, cluster, facts, node  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    ephemeral_volume_handle, inline_volume_name)
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item  # noqa: E402
from planner_inline_lib import (  # noqa: E402
    HANDLE, POOL, UID, UNIQUE, ephemeral_driver, inline_pod, reasons, run, steps, with_ephemeral)


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
