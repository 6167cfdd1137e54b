"""Expansion as Kubernetes does it, on 2 real SSH nodes: an ext4 volume grown while mounted cannot grow here (online
resize2fs needs CAP_SYS_RESOURCE, which this machine's root lacks), so its grow is pending, not failed.

Chained: converge -> two ext4 claims grow (and an xfs one, and new volumes are added): the run exits 0, the ext4
claims are left FileSystemResizePending with the reason, everything else is done -> the next run changes nothing and
does not try the same grows -> one pod restarts (new uid), the other moves to node2: both grow offline at their next
mount, and their claims say so -> a last run changes nothing.
"""
import json
import os

import pytest

from e2e_lib import (bound_volume, get, node_object, pod_mount_path, running_pod, write_list)

MiB = 1024 * 1024
ANNOTATION = "kubevol.io/node-expansion-pending"
DB_UID, LOGS_UID, WEB_UID, NEW_UID = ("aaaaaaaa-0000-4000-8000-00000000000%d" % i for i in range(1, 5))
RESTARTED_UID = "aaaaaaaa-0000-4000-8000-000000000009"
CAP_SYS_RESOURCE = 24


def has_cap_sys_resource():
    """Whether this process (and so a node's, which is its child in a namespace) may grow a mounted ext4."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> CAP_SYS_RESOURCE & 1)
    return False


if has_cap_sys_resource():
    pytest.skip("this machine's root has CAP_SYS_RESOURCE: online ext4 growth works here, so it cannot be seen "
                "pending (docs/testing.md)", allow_module_level=True)


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("grow", 2)
    write_list(cluster.state, [node_object("node1"), node_object("node2")]
               + bound_volume("pv-db", "shop", "db", "64Mi")
               + bound_volume("pv-logs", "shop", "logs", "64Mi")
               + bound_volume("pv-web", "shop", "web", "320Mi", fs_type="xfs")
               + [running_pod("shop", "db-0", DB_UID, "node1", "db"),
                  running_pod("shop", "logs-0", LOGS_UID, "node1", "logs"),
                  running_pod("shop", "web-0", WEB_UID, "node2", "web")])
    cluster.reconcile()
    cluster.shared = {"sums": {}}
    for uid, pv in ((DB_UID, "pv-db"), (LOGS_UID, "pv-logs")):
        cluster.shared["sums"][pv] = cluster.write_data("node1", pod_mount_path(uid, pv), "data.bin")
    return cluster


def claim(data, name):
    return get(data, "PersistentVolumeClaim", name, "shop")


def conditions(pvc):
    return dict((c["type"], c) for c in (pvc.get("status") or {}).get("conditions") or ())


def edit(kv, change):
    data = kv.cluster()
    change(data)
    write_list(kv.state, data["items"])


def grow(data, name, size):
    claim(data, name)["spec"]["resources"]["requests"]["storage"] = size


def ext4_blocks(kv, node, path):
    """(block count, block size) of the ext4 filesystem mounted at ``path`` on ``node``."""
    out = kv.ssh(node, "dumpe2fs -h $(findmnt -no SOURCE --nofsroot %s) 2>/dev/null" % path)
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    return int(fields["Block count"]), int(fields["Block size"])


def steps_of(run):
    """(action/target, node, volume) of each step of the plan table the run printed."""
    steps = []
    for line in run.plan_lines():
        cells = line.split(None, 5)
        if len(cells) >= 4 and cells[0] in ("-", "+", "~") and "/" in cells[1]:
            steps.append((cells[1], cells[2], cells[3]))
    return steps


def no_failed_host(run):
    return all(not stats.get("failures") and not stats.get("unreachable") for stats in run.stats.values())


def test_a_failed_online_grow_is_pending_and_the_other_volumes_are_done(kv):
    def change(data):
        grow(data, "db", "96Mi")
        grow(data, "logs", "96Mi")
        grow(data, "web", "400Mi")
        data["items"].extend(bound_volume("pv-new", "shop", "new", "64Mi")
                             + [running_pod("shop", "new-0", NEW_UID, "node1", "new")])
    edit(kv, change)
    run = kv.reconcile()   # rc 0: nothing failed
    assert no_failed_host(run), run.stats
    summary = run.summary()
    assert summary["errors"] == [] and "Failed:" not in summary["lines"], summary["lines"]
    pending = dict((p["volume"], p) for p in summary["pending"])
    assert sorted(pending) == ["pv-db", "pv-logs"], summary["pending"]
    text = pending["pv-db"]["reason"]
    assert text.startswith("grow of volume pv-db (claim shop/db) to 96Mi on node node1 is pending: `resize2fs "), text
    assert "Permission denied to resize filesystem; restart pod shop/db-0 (or move it to another node)" in text, text
    assert "\n" not in text and "resize2fs 1.47" not in text, text  # one line, without the tool's banner
    assert text.endswith("[KV-GROW-PENDING]"), text
    row = summary["nodes"]["node1"]
    assert (row["applied"], row["failed"], row["pending"]) == (5, 0, 2), row
    assert row["volumes"]["pv-db"] == ["expand/controller", "expand PENDING"], row
    data = kv.cluster()
    for name in ("db", "logs"):
        pvc = claim(data, name)
        status, found = pvc["status"], conditions(pvc)
        assert status["capacity"]["storage"] == "64Mi", status          # not grown: not recorded as grown
        assert status["allocatedResourceStatuses"] == {"storage": "NodeResizeInProgress"}, status
        assert status["allocatedResources"] == {"storage": "96Mi"}, status
        assert found["FileSystemResizePending"]["status"] == "True", found
        error = found["NodeResizeError"]
        assert error["reason"] == "OnlineExpansionFailed" and "Permission denied" in error["message"], error
        memo = json.loads(pvc["metadata"]["annotations"][ANNOTATION])
        assert list(memo) == ["node1"], memo
        assert memo["node1"]["offline"] is True and memo["node1"]["size"] == 96 * MiB, memo
        assert get(data, "PersistentVolume", "pv-" + name)["spec"]["capacity"]["storage"] == "96Mi"  # controller's
    assert memo_pods(data, "db") == [DB_UID]
    # the run's other volumes are done: the new volume is mounted, the xfs claim grew and is finished
    assert pod_mount_path(NEW_UID, "pv-new") in kv.mounts("node1")
    web = claim(data, "web")
    assert web["status"]["capacity"]["storage"] == "400Mi" and "allocatedResourceStatuses" not in web["status"]
    assert not conditions(web) and ANNOTATION not in (web["metadata"].get("annotations") or {})
    # the filesystem is as it was, and so is its data
    count, size = ext4_blocks(kv, "node1", pod_mount_path(DB_UID, "pv-db"))
    assert count * size == 64 * MiB, (count, size)
    for uid, pv in ((DB_UID, "pv-db"), (LOGS_UID, "pv-logs")):
        assert kv.read_sum("node1", pod_mount_path(uid, pv), "data.bin") == kv.shared["sums"][pv]
    kv.shared["pending"] = True


def memo_pods(data, name):
    return json.loads(claim(data, name)["metadata"]["annotations"][ANNOTATION])["node1"]["pods"]


def test_the_next_run_does_not_retry_the_same_grow(kv):
    assert kv.shared.get("pending"), "needs the run that left the grows pending"
    before = kv.state_bytes()
    run = kv.reconcile()
    assert no_failed_host(run) and all(run.changed(h) == 0 for h in kv.nodes), run.describe()
    assert run.node_module_runs() == {}, run.node_module_runs()   # no grow tried: nothing ran on a node
    assert kv.state_bytes() == before
    assert steps_of(run) == [], run.plan_lines()
    lines = run.plan_lines()
    assert any("Pending (not tried in this run)" in line for line in lines), lines
    assert lines[-1].endswith("0 blocked; 2 pending"), lines
    assert sorted(p["volume"] for p in run.summary()["pending"]) == ["pv-db", "pv-logs"]


def test_a_restarted_or_moved_pod_gets_its_grow_offline(kv):
    assert kv.shared.get("pending"), "needs the run that left the grows pending"

    def change(data):
        get(data, "Pod", "db-0", "shop")["metadata"]["uid"] = RESTARTED_UID   # the pod restarts
        get(data, "Pod", "logs-0", "shop")["spec"]["nodeName"] = "node2"      # the pod moves
    edit(kv, change)
    run = kv.reconcile()
    assert no_failed_host(run), run.describe()
    assert run.summary()["pending"] == [] and run.summary()["errors"] == [], run.summary()["lines"]
    steps = steps_of(run)
    assert ("unmount/device", "node1", "pv-db") in steps and ("mount/device", "node1", "pv-db") in steps, steps
    assert ("expand/node", "node1", "pv-db") in steps and ("expand/node", "node2", "pv-logs") in steps, steps
    assert ("detach/device", "node1", "pv-db") not in steps  # staged again on its node, never detached
    data = kv.cluster()
    for name in ("db", "logs"):
        pvc = claim(data, name)
        assert pvc["status"]["capacity"]["storage"] == "96Mi", pvc["status"]
        assert "allocatedResourceStatuses" not in pvc["status"], pvc["status"]
        assert not conditions(pvc), pvc["status"]                        # MarkFSResizeFinished
        assert ANNOTATION not in (pvc["metadata"].get("annotations") or {}), pvc["metadata"]
    for node, uid, pv in (("node1", RESTARTED_UID, "pv-db"), ("node2", LOGS_UID, "pv-logs")):
        path = pod_mount_path(uid, pv)
        count, size = ext4_blocks(kv, node, path)
        assert count * size == 96 * MiB, (pv, count, size)
        assert kv.read_sum(node, path, "data.bin") == kv.shared["sums"][pv]
    kv.shared["grown"] = True


def test_then_nothing_is_left_to_do(kv):
    assert kv.shared.get("grown"), "needs the grows done"
    before = kv.state_bytes()
    run = kv.reconcile()
    assert all(run.changed(h) == 0 for h in kv.nodes) and run.node_module_runs() == {}, run.describe()
    assert kv.state_bytes() == before and run.summary()["pending"] == []
    assert os.path.exists(kv.state)
