"""Hostile node states: a symlink or a file planted inside the kubelet directory never sends a mount or a
write outside it, and one volume's refusal never hides the others' results (they converge in the same call).
Every test checks the real state: findmnt, the directory outside, the files."""
import os

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils import names

VICTIM = "99999999-9999-4999-8999-999999999991"
BYSTANDER = "99999999-9999-4999-8999-999999999992"


def outside(node):
    """A directory outside the kubelet directory standing for /etc: it must not change."""
    path = os.path.join(node.tmp, "outside-etc")
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "passwd"), "w") as handle:
        handle.write("root:x:0:0:root:/root:/bin/sh\n")
    return path


def listing(path):
    return sorted(os.listdir(path))


def plant(node, vol, level, target):
    """A symlink (or, for level 'file', a regular file) where kubevol needs a directory for ``vol``'s pod mount."""
    mount_dir = names.pod_mount_path(node.kubelet_dir, VICTIM, vol["pv_name"])
    planted = {
        "mount": mount_dir,
        "volume dir": os.path.dirname(mount_dir),
        "pod dir": os.path.join(node.kubelet_dir, "pods", VICTIM),
        "global parent": os.path.dirname(names.device_mount_path(node.kubelet_dir, vol["driver"],
                                                                  vol["volume_handle"])),
        "file": mount_dir,
    }[level]
    os.makedirs(os.path.dirname(planted), exist_ok=True)
    if level == "file":
        with open(planted, "w") as handle:
            handle.write("not a directory\n")
    else:
        os.symlink(target, planted)
    return planted


@pytest.mark.parametrize("level", ["mount", "volume dir", "pod dir", "global parent", "file"])
def test_planted_symlink_or_file_is_refused_and_the_other_volumes_converge(node, level):
    etc = outside(node)
    before = listing(etc)
    victim = node.vol("pv-victim", pods=[{"uid": VICTIM}])
    bystander = node.vol("pv-bystander", pods=[{"uid": BYSTANDER}])
    assert node.module("k8s_volume_attach", volumes=[victim, bystander], provision=True)["_rc"] == 0
    planted = plant(node, victim, level, etc)

    res = node.module("node_volume_mount", volumes=[victim, bystander])
    assert res["_rc"] != 0 and res["failed"], res
    what = "a regular file" if level == "file" else "a symlink (to %s)" % etc
    assert "refusing %s on node node1" % planted in res["msg"] and what in res["msg"], res["msg"]
    assert "pv-victim" in res["msg"]
    # structured: node, volume, step for each failed volume; the bystander converged and is reported
    (failure,) = res["failures"]
    assert failure["node"] == "node1" and failure["volume"] == "pv-victim" and failure["msg"]
    assert res["completed"] == ["pv-bystander"] and [v["pv_name"] for v in res["volumes"]] == ["pv-bystander"]
    bystander_mount = names.pod_mount_path(node.kubelet_dir, BYSTANDER, "pv-bystander")
    assert bystander_mount in node.mounts_under()
    # nothing outside changed: no mount there, no file written there
    assert not [m for m in node.mounts() if m["target"].startswith(etc)]
    assert listing(etc) == before
    assert all(not m.startswith(etc) for m in node.mounts_under("/"))
    # check mode refuses the same way and changes nothing
    res = node.module("node_volume_mount", volumes=[victim], check_mode=True)
    assert res["_rc"] != 0 and "refusing %s" % planted in res["msg"], res
    assert listing(etc) == before


def test_node_facts_report_a_symlinked_pod_volume_dir_and_never_follow_it(node):
    etc = outside(node)
    victim = node.vol("pv-victim", pods=[{"uid": VICTIM}])
    plant(node, victim, "volume dir", etc)
    facts = node.module("node_volume_facts")
    assert facts["_rc"] == 0, facts
    assert listing(etc) == ["passwd"]
    (entry,) = [m for m in facts["node_facts"]["pod_mounts"] if m["pod_uid"] == VICTIM]
    assert entry["unsafe"] is True and "a symlink (to %s)" % etc in entry["uncertain"]
    assert entry["unique_volume_name"] is None
