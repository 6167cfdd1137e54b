"""A pod's volume that a process on the node still uses: the teardown's unmount is refused (EBUSY) and the failure
names that process (pid, command, what it holds) and what to do; once it is gone the next run converges. On a real
SSH test node (node/holders.py reads the node's /proc from the node module's own mount namespace)."""
import re

import pytest

from e2e_lib import bound_volume, node_object, pod_mount_path, running_pod, write_list

NS, CLAIM, PV = "shop", "data", "pv-busy-data"
UID = "b0b0b0b0-0000-4000-8000-00000000000a"


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("busy", 1)
    write_list(cluster.state, [node_object("node1")] + bound_volume(PV, NS, CLAIM)
               + [running_pod(NS, "a", UID, "node1", CLAIM)])
    cluster.reconcile()
    return cluster


def test_a_busy_unmount_names_the_process_holding_the_volume(kv):
    path = pod_mount_path(UID, PV)
    assert path in kv.mounts("node1")
    # a process left behind by the pod: its working directory is in the volume
    kv.ssh("node1", "(cd %s && exec setsid sleep 600) </dev/null >/dev/null 2>&1 &" % path)
    assert kv.edit("delete-pod", "%s/a" % NS) == "changed"
    run = kv.reconcile(expect_rc="nonzero")
    errors = run.report().get("errors") or []
    assert [e["node"] for e in errors] == ["node1"], run.describe()
    msg = errors[0]["msg"]
    held = re.search(r"held by pid (\d+) \(sleep\): working directory %s" % re.escape(path), msg)
    assert held, msg
    assert "stop those processes or move them off %s" % path in msg and "[KV-MOUNT-BUSY]" in msg, msg
    assert path in kv.mounts("node1")  # still mounted: nothing was forced
    kv.ssh("node1", "kill %s" % held.group(1))
    again = kv.reconcile()
    assert path not in kv.mounts("node1"), again.describe()
