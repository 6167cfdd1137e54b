"""The example cluster on 3 real SSH nodes, one scenario chained after the other.

converge -> idempotent re-run -> check mode of a change -> pod move + claim growth (data kept)
-> scope limited to one namespace. Each test builds on the cluster the one before left (module-
scoped nodes); a failing step makes the later ones fail too, which is intended: they need it.
"""
import json

import pytest

from e2e_lib import (KUBELET, MiB, get, global_mount_path, node_status, pod_device_path, pod_mount_path,
                     pod_uid, unique_name, va_name, vas)

DB_POD, DB_CLAIM, DB_PV, DB_HANDLE = "shop/db-0", "shop/db-data", "pv-db-data", "pv-db-data.img"
HANDLES = {"pv-db-data": "pv-db-data.img", "pv-raw-journal": "pv-raw-journal.img",
           "pv-web-content": "pv-web-content.img", "pv-shared-logs": "pv-shared-logs.img"}


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("rec", 3)
    cluster.load_example()
    cluster.shared = {}  # what one test hands to the next (the chain)
    return cluster


def expected_layout(cluster_data):
    """What the nodes must have for this cluster file, written out by hand from the pods.

    {node: {path: (kind, pv, fs_type, read_only)}} for pod mounts (Filesystem) and pod device
    maps (Block), plus the global mounts of the Filesystem volumes.
    """
    layout = {}
    for pod in (o for o in cluster_data["items"] if o["kind"] == "Pod"):
        node, uid = pod["spec"]["nodeName"], pod["metadata"]["uid"]
        ns = pod["metadata"]["namespace"]
        for vol in pod["spec"].get("volumes") or []:
            claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
            if vol.get("csi"):
                # an inline ephemeral volume: published straight into the pod, no global mount
                layout.setdefault(node, {})[pod_mount_path(uid, vol["name"])] = (
                    "pod", vol["name"], vol["csi"].get("fsType", "ext4"), bool(vol["csi"].get("readOnly")))
                continue
            if not claim:
                continue
            pvc = get(cluster_data, "PersistentVolumeClaim", claim, ns)
            pv = get(cluster_data, "PersistentVolume", pvc["spec"]["volumeName"])
            mounts = [m for c in pod["spec"]["containers"] for m in c.get("volumeMounts") or []
                      if m["name"] == vol["name"]]
            entries = layout.setdefault(node, {})
            if pv["spec"].get("volumeMode") == "Block":
                entries[pod_device_path(uid, pv["metadata"]["name"])] = ("block", pv["metadata"]["name"], None, None)
                continue
            fs = pv["spec"]["csi"].get("fsType", "ext4")
            ro = bool(mounts) and all(m.get("readOnly") for m in mounts)
            entries[pod_mount_path(uid, pv["metadata"]["name"])] = ("pod", pv["metadata"]["name"], fs, ro)
            entries[global_mount_path(pv["spec"]["csi"]["volumeHandle"])] = (
                "global", pv["metadata"]["name"], fs, False)
    return layout


def assert_nodes_match(kv, cluster_data):
    """Every node has exactly the mounts the cluster wants, of the right kind and mode."""
    layout = expected_layout(cluster_data)
    for node in kv.nodes:
        want = layout.get(node, {})
        have = kv.mounts(node)
        assert sorted(have) == sorted(want), "%s: mounts differ:\nhave %s\nwant %s" % (node, sorted(have), sorted(want))
        for path, (kind, pv, fs, ro) in want.items():
            m = have[path]
            if kind == "block":
                # the pod's device map is a bind of the loop device node
                kv.ssh(node, "test -b %s" % path)
                continue
            assert m["fstype"] == fs, (node, path, m)
            assert m["source"].startswith("/dev/loop"), (node, path, m)
            assert ("ro" in m["options"]) == ro, "%s: %s should be %s: %s" % (node, path, "ro" if ro else "rw", m)
    return layout


def assert_records_match(cluster_data, expect):
    """VolumeAttachments, volumesAttached and volumesInUse are exactly `expect` {node: [pv, ...]}."""
    want_vas = dict((va_name(HANDLES[pv], node), (pv, node, True)) for node, pvs in expect.items() for pv in pvs)
    assert vas(cluster_data) == want_vas
    for node in ("node1", "node2", "node3"):
        names = sorted(unique_name(HANDLES[pv]) for pv in expect.get(node, []))
        attached, in_use = node_status(cluster_data, node)
        assert attached == names, "%s volumesAttached" % node
        assert in_use == names, "%s volumesInUse" % node


def test_converge_example_cluster(kv):
    run = kv.reconcile()
    data = kv.cluster()
    assert_nodes_match(kv, data)
    # the node modules ran where there was work, one call per phase per node
    runs = run.node_module_runs()
    assert sorted(runs) == ["node1", "node2", "node3"], runs
    for node, modules in runs.items():
        assert modules.count("k8s_volume_attach") == 1 and modules.count("node_volume_mount") == 1, (node, modules)
        assert "volume_detach" not in modules and "fs_expand" not in modules, (node, modules)
    # log-reader's only container mounts the logs read-only, log-writer's read-write
    logs = kv.mounts("node3")
    assert "ro" in logs[pod_mount_path(pod_uid(data, "tools/log-reader"), "pv-shared-logs")]["options"]
    assert "rw" in logs[pod_mount_path(pod_uid(data, "tools/log-writer"), "pv-shared-logs")]["options"]
    # the block volume is published: a block device of the journal's size
    journal = pod_device_path(pod_uid(data, DB_POD), "pv-raw-journal")
    assert int(kv.ssh("node1", "blockdev --getsize64 %s" % journal)) == 64 * MiB
    assert_records_match(data, {"node1": ["pv-db-data", "pv-raw-journal"], "node2": ["pv-web-content"],
                                "node3": ["pv-shared-logs"]})
    # a VolumeAttachment as the external attacher leaves it
    va = get(data, "VolumeAttachment", va_name(DB_HANDLE, "node1"))
    assert va["apiVersion"] == "storage.k8s.io/v1"
    assert va["spec"] == {"attacher": "loop.kubevol.io", "nodeName": "node1",
                          "source": {"persistentVolumeName": "pv-db-data"}}
    assert va["status"]["attached"] is True
    kv.shared["converged"] = True


def test_second_run_changes_nothing(kv):
    assert kv.shared.get("converged"), "needs the converged cluster"
    before = kv.state_bytes()
    run = kv.reconcile()
    assert dict((h, run.changed(h)) for h in kv.nodes) == dict((h, 0) for h in kv.nodes), run.describe()
    assert run.node_module_runs() == {}, "no node module may run on a converged cluster"
    assert kv.state_bytes() == before, "the state file changed on a no-op run"
    assert "Plan: 0 to unmount, 0 to detach, 0 to attach, 0 to mount, 0 to expand; 0 blocked" in run.plan_lines()[-1]


def test_check_mode_changes_nothing(kv):
    assert kv.shared.get("converged"), "needs the converged cluster"
    data = kv.cluster()
    # data in the db volume on node1, for the move in the next test
    path = pod_mount_path(pod_uid(data, DB_POD), DB_PV)
    out = kv.ssh("node1", "head -c 8M /dev/urandom > %s/table.dat && sync && sha256sum %s/table.dat" % (path, path))
    kv.shared["checksum"] = out.split()[0]
    # the scheduler moves the pod, a user grows the claim
    assert kv.edit("move-pod", DB_POD, "node2") == "changed"
    assert kv.edit("resize-claim", DB_CLAIM, "768Mi") == "changed"
    edited = kv.state_bytes()
    snap_before = kv.snapshot()

    run = kv.reconcile(check=True)

    # the node facts the check run gathered first are still what every node reports after it
    facts_before = dict((host, result["node_facts"]) for _t, host, _s, result
                        in run.executions(name="Gather each node's actual state"))
    assert sorted(facts_before) == kv.nodes
    assert kv.node_facts() == facts_before
    assert kv.snapshot() == snap_before
    assert kv.state_bytes() == edited, "check mode wrote the state file"
    # the node tasks ran in the node modules' check mode (node1's teardown, node2's setup), acting on nothing: the
    # facts, the devices and the state file above are as they were; "changed" is what a real run would change
    runs = run.node_module_runs()
    assert runs.get("node1") == ["volume_detach"] and "k8s_volume_attach" in runs.get("node2", []), runs
    assert "node3" not in runs and run.kubevol_report()["check_mode"] is True, run.describe()
    # the plan it printed: release from node1, attach on node2, mount, grow
    steps = sorted((s["action"], s["target"], s["node"], s["volume"]) for s in run.plan())
    assert steps == sorted([
        ("unmount", "pod", "node1", "pv-db-data"), ("unmount", "pod", "node1", "pv-raw-journal"),
        ("unmount", "device", "node1", "pv-db-data"),
        ("detach", "device", "node1", "pv-db-data"), ("detach", "device", "node1", "pv-raw-journal"),
        ("attach", "device", "node2", "pv-db-data"), ("attach", "device", "node2", "pv-raw-journal"),
        ("mount", "device", "node2", "pv-db-data"),
        ("mount", "pod", "node2", "pv-db-data"), ("mount", "pod", "node2", "pv-raw-journal"),
        ("expand", "controller", "node2", "pv-db-data"), ("expand", "node", "node2", "pv-db-data"),
    ]), run.plan()
    text = "\n".join(run.plan_lines())
    assert "pv-db-data" in text and "node2" in text
    assert run.plan_lines()[-1].startswith("Plan: 3 to unmount, 2 to detach, 2 to attach, 3 to mount, 2 to expand")
    kv.shared["moved"] = True


def test_pod_move_and_claim_growth(kv):
    assert kv.shared.get("moved"), "needs the edited cluster of the check mode test"
    run = kv.reconcile()
    data = kv.cluster()
    layout = assert_nodes_match(kv, data)
    # the data moved with the volume
    path = pod_mount_path(pod_uid(data, DB_POD), DB_PV)
    assert path in layout["node2"]
    assert kv.ssh("node2", "sha256sum %s/table.dat" % path).split()[0] == kv.shared["checksum"]
    # nothing of it is left on node1
    assert not [p for p in kv.mounts("node1") if "pv-db-data" in p or "pv-raw-journal" in p]
    # the CSI volume dirs are removed with their mounts (csi_mounter.go TearDownAt removeMountDir);
    # the empty pod dir itself is the kubelet's housekeeping, not the volume manager's
    left = kv.ssh("node1", "cd %s && find pods plugins -mindepth 1 | sort" % KUBELET).split()
    assert not [p for p in left if "kubernetes.io~csi" in p or "globalmount" in p or "vol_data" in p], left
    # the xfs grew online to (nearly) the new claim size
    size = int(kv.ssh("node2", "df -B1 --output=size %s | tail -n1" % path))
    assert size >= 700 * MiB, size
    assert_records_match(data, {"node2": ["pv-db-data", "pv-raw-journal", "pv-web-content"],
                                "node3": ["pv-shared-logs"]})
    assert get(data, "PersistentVolume", DB_PV)["spec"]["capacity"]["storage"] == "768Mi"
    pvc = get(data, "PersistentVolumeClaim", "db-data", "shop")
    assert pvc["status"]["capacity"]["storage"] == "768Mi"
    assert run.node_module_runs().get("node3") is None, "node3 had no work"

    again = kv.reconcile()
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    assert again.node_module_runs() == {}
    kv.shared["grown"] = True


SCOPE_TOOLS = "[?kind=='Pod' && metadata.namespace=='tools']"


def scoped_run(kv, scope):
    # JSON extra vars: in `-e key=value` form Ansible cuts the value at its first blank
    return kv.reconcile(["-e", json.dumps({"kubevol_scope": scope})])


def test_scope_touches_only_tools_pods(kv):
    assert kv.shared.get("grown"), "needs the cluster after the move"
    data = kv.cluster()
    tools = [pod_uid(data, "tools/log-writer"), pod_uid(data, "tools/log-reader")]
    # changes in both namespaces: the tools pods move to node1, and a shop claim grows
    assert kv.edit("move-pod", "tools/log-writer", "node1") == "changed"
    assert kv.edit("move-pod", "tools/log-reader", "node1") == "changed"
    assert kv.edit("resize-claim", "shop/web-content", "160Mi") == "changed"
    before = kv.snapshot()

    run = scoped_run(kv, SCOPE_TOOLS)

    data = kv.cluster()
    planned = set(s["volume"] for s in run.plan())
    # log-writer's inline spool volume goes with it: a new one for the new pod, the old pod's one deleted
    assert planned == {"pv-shared-logs", "tools/log-writer/spool", tools[0] + "/spool"}, run.plan()
    # tools moved from node3 to node1 ...
    after = dict((n, kv.mounts(n)) for n in kv.nodes)
    assert not [p for p in after["node3"] if "pv-shared-logs" in p], after["node3"]
    new_tools = [pod_uid(data, "tools/log-writer"), pod_uid(data, "tools/log-reader")]
    assert set(tools).isdisjoint(new_tools)
    assert "rw" in after["node1"][pod_mount_path(new_tools[0], "pv-shared-logs")]["options"]
    assert "ro" in after["node1"][pod_mount_path(new_tools[1], "pv-shared-logs")]["options"]
    assert pod_mount_path(new_tools[0], "spool") in after["node1"] and not [p for p in after["node3"] if "spool" in p]
    records = vas(data)
    assert records[va_name("pv-shared-logs.img", "node1")] == ("pv-shared-logs", "node1", True)
    assert va_name("pv-shared-logs.img", "node3") not in records
    # ... and the shop claim was not grown: node2 and the pool image of web-content are as they were
    assert "node2" not in run.node_module_runs(), run.node_module_runs()
    assert after["node2"] == before["node2"]["mounts"]
    pool = dict((name, size) for name, size in kv.snapshot()["pool"])
    assert pool["pv-web-content.img"] == 128 * MiB
    assert get(data, "PersistentVolume", "pv-web-content")["spec"]["capacity"]["storage"] == "128Mi"
    kv.shared["scoped"] = True


def test_scope_leaves_moved_out_of_scope_pod_alone(kv):
    assert kv.shared.get("scoped"), "needs the cluster of the scope test"
    # shop/web-0 moves to node1 (a new pod uid); a run scoped to tools must not act on it at all
    assert kv.edit("move-pod", "shop/web-0", "node1") == "changed"
    before = kv.snapshot()
    state_before = kv.cluster()

    run = scoped_run(kv, SCOPE_TOOLS)

    assert [s for s in run.plan() if s["volume"] == "pv-web-content"] == [], run.plan()
    assert kv.mounts("node2") == before["node2"]["mounts"], "the shop volume was torn down on node2"
    assert vas(kv.cluster()) == vas(state_before)
