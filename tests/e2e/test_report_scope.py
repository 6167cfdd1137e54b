"""The run's report is of the run's nodes (issue 30), on 2 real SSH nodes in a cluster of 9 nodes and a deleted one.

The cluster file has node1 and node2 (the inventory's hosts), seven more nodes each with a pod and its volume
(three steps each that no node task of this run runs), and a VolumeAttachment of a node that no longer exists
(a record-only release: the controller's, no node needed, its detach requested long ago). --check reports
node1's and node2's volumes, the deleted node's release, and the seven other nodes in one line of counts, with
one warning; a real run does what --check said for the run's hosts, releases the deleted node's attachment, and
fails naming the nodes it did not reach (their steps are not run), in one line of its report and of its message.
"""
import pytest

from e2e_lib import DRIVER, bound_volume, node_object, pod_mount_path, running_pod, va_name, vas, write_list

OTHERS = ["node-x%d" % i for i in range(1, 8)]
# a deleted node may still have the volume mounted: its release waits max_wait_for_unmount since the detach was
# first requested (reconciler.go maxWaitForUnmountDuration); the VolumeAttachment below says when that was
RELEASE_NOW = ["-e", "kubevol_max_wait_for_unmount=60"]
GONE, OLD_PV = "node-gone", "pv-old"
OUTSIDE_LINE = ("7 other node(s) of the cluster, not in this run's hosts: 21 step(s) not run, 0 blocked (node-x1, "
                "node-x2, node-x3, node-x4, node-x5, and 2 more); add them to the inventory (kubevol_node_name maps a "
                "host to its Kubernetes node name) or drop --limit")


def uid(i):
    return "5c0be000-0000-4000-8000-%012d" % i


def objects():
    out = []
    for i, node in enumerate(["node1", "node2"] + OTHERS):
        out.append(node_object(node))
        out.extend(bound_volume("pv-%s" % node, "apps", "data-%s" % node, size="32Mi"))
        out.append(running_pod("apps", "pod-%s" % node, uid(i), node, "data-%s" % node))
    # a claim whose only attachment is on a node deleted from the cluster: released in the records only
    out.extend(bound_volume(OLD_PV, "apps", "old", size="32Mi"))
    out.append({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
                "metadata": {"name": va_name(OLD_PV + ".img", GONE),
                             # its detach was requested long ago (a run before this one recorded when)
                             "annotations": {"kubevol.io/detach-requested-at": "2026-01-01T00:00:00Z"}},
                "spec": {"attacher": DRIVER, "nodeName": GONE, "source": {"persistentVolumeName": OLD_PV}},
                "status": {"attached": True}})
    return out


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("scope", 2)
    write_list(cluster.state, objects())
    cluster.shared = {}
    return cluster


def test_check_reports_the_run_nodes_and_one_line_for_the_others(kv):
    before = kv.state_bytes()
    # the check runs the node tasks (in check mode) and, as the real run, fails for the seven nodes outside the
    # inventory, on localhost: no host of the run failed
    run = kv.reconcile(RELEASE_NOW, check=True, expect_rc=2)
    assert kv.state_bytes() == before, run.describe()
    assert run.stats["localhost"]["failures"] == 1 and not run.stats["node1"]["failures"], run.stats
    summary = run.summary()
    # the run's hosts and the deleted node's record-only release; none of the seven other nodes
    assert sorted(summary["nodes"]) == ["node-gone", "node1", "node2"], summary["nodes"]
    assert summary["outside"] == {"nodes": 7, "steps": 21, "blocked": 0, "names": OTHERS[:5]}, summary["outside"]
    lines = run.summary_lines()
    assert lines[0].startswith("Check mode, nothing was changed"), lines
    assert "node1: 3 would run, 0 would fail, 0 blocked" in lines and "node2: 3 would run, 0 would fail, 0 blocked" \
        in lines, lines
    assert "  pv-node1: attach/device, mount/device, mount/pod apps/pod-node1" in lines, lines
    assert "node-gone: 1 would run, 0 would fail, 0 blocked" in lines and "  %s: detach/device" % OLD_PV in lines, lines
    assert OUTSIDE_LINE in lines, lines
    assert not [line for line in lines if line.startswith(tuple(OTHERS))], lines
    # one warning for the seven nodes, not one per node; the deleted node's release is not in it
    text = " ".join(run.stdout.split())  # warnings are wrapped to the terminal width
    assert text.count("[WARNING]: the plan has") == 1, run.describe()
    assert ("[WARNING]: the plan has 21 step(s) (attach/device, mount/device, mount/pod) on 7 nodes that are not "
            "in this run's hosts (no node facts for them: node-x1, node-x2, node-x3, node-x4, node-x5, and 2 more): "
            "they are not run; add the nodes to the inventory") in text, run.describe()
    kv.shared["check"] = summary


def test_a_real_run_does_what_check_said_for_its_hosts(kv):
    check = kv.shared.get("check")
    assert check
    # the seven other nodes' steps are not run: the run says so, and fails
    run = kv.reconcile(RELEASE_NOW, expect_rc="nonzero")
    summary = run.summary()
    assert sorted(summary["nodes"]) == ["node-gone", "node1", "node2"], summary["nodes"]
    for node in ("node1", "node2", "node-gone"):
        assert summary["nodes"][node]["applied"] == check["nodes"][node]["planned"], summary["nodes"][node]
        assert summary["nodes"][node]["failed"] == 0, summary["nodes"][node]
        assert summary["nodes"][node]["volumes"] == check["nodes"][node]["volumes"]
    assert summary["outside"]["nodes"] == 7 and summary["outside"]["steps"] + summary["outside"]["blocked"] >= 7
    # node1's and node2's volumes are mounted in their pods; the deleted node's attachment is released
    assert pod_mount_path(uid(0), "pv-node1") in kv.mounts("node1")
    assert pod_mount_path(uid(1), "pv-node2") in kv.mounts("node2")
    data = kv.cluster()
    assert va_name(OLD_PV + ".img", GONE) not in vas(data)
    assert vas(data).get(va_name("pv-node1.img", "node1")) == ("pv-node1", "node1", True)
    # the failure names each node that did not run its steps, and what to do: one entry for the seven
    assert [(e["node"], e["phase"], e["nodes"]) for e in summary["errors"]] == [(None, "outside", OTHERS)], \
        summary["errors"]
    assert "have steps it did not run" in summary["errors"][0]["msg"] and "add them to the inventory" in \
        summary["errors"][0]["msg"], summary["errors"]
    # ... and the report and the failure's message say those seven in one line, not one line each
    one_line = ("7 node(s) not in this run's hosts have steps it did not run (node-x1, node-x2, node-x3, node-x4, "
                "node-x5, and 2 more): add them to the inventory")
    assert [line for line in run.summary_lines() if "did not run" in line] == ["  " + one_line + (
        " (kubevol_node_name maps a host to its Kubernetes node name), or run again without --limit")], run.describe()
    text = " ".join(run.stdout.split())
    # no host of the run failed: the play on localhost fails the run for them, once
    assert "The run failed outside its hosts, as the report above says" in text and "node-x3: node node-x3" \
        not in text, run.describe()
    assert run.stats["localhost"]["failures"] == 1 and not any(
        run.stats[host]["failures"] for host in run.stats if host != "localhost"), run.stats
