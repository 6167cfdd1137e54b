"""Kubernetes parity on real devices: a pod's fsGroup (SetVolumeOwnership), Block volume expansion (the mapped
device grows), and ReadWriteOncePod (the planner's refusal carried out by the node modules)."""
import datetime
import os

from conftest import MiB

from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster

POD1 = "55555555-5555-4555-8555-555555555551"
POD2 = "55555555-5555-4555-8555-555555555552"
WRITER = ["setpriv", "--reuid=1234", "--regid=1234", "--groups=2000",
          # search permission on the test's private tmp dirs only; writing still needs the volume's group
          "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]


def write_as_non_root(node, path):
    return node.run(*(WRITER + ["sh", "-c", 'echo data > "$1"', "sh", path]), check=False)


def stat_of(node, path):
    gid, mode = node.run("stat", "-c", "%g %a", path).stdout.split()
    return int(gid), int(mode, 8)


def test_fs_group_lets_a_non_root_writer_write(node):
    plain = node.vol("pv-plain", fs_type="xfs", size=320 * MiB, pods=[{"uid": POD1}])
    grouped = node.vol("pv-group", fs_type="ext4",
                       pods=[{"uid": POD2, "fs_group": 2000, "fs_group_change_policy": "OnRootMismatch"}])
    assert node.module("k8s_volume_attach", volumes=[plain, grouped], provision=True)["_rc"] == 0
    chk = node.module("node_volume_mount", check_mode=True, volumes=[grouped])
    assert chk["_rc"] == 0 and any("set group 2000" in a for a in chk["volumes"][0]["actions"]), chk
    res = node.module("node_volume_mount", volumes=[plain, grouped])
    assert res["_rc"] == 0, res
    plain_root = names.pod_mount_path(node.kubelet_dir, POD1, "pv-plain")
    group_root = names.pod_mount_path(node.kubelet_dir, POD2, "pv-group")
    # without fsGroup the volume root stays root's: a non-root writer is refused
    assert write_as_non_root(node, os.path.join(plain_root, "f")).returncode != 0
    gid, mode = stat_of(node, group_root)
    assert gid == 2000 and mode & 0o2070 == 0o2070, oct(mode)
    lost = os.path.join(group_root, "lost+found")  # ext4's own directory, re-grouped too
    assert stat_of(node, lost)[0] == 2000
    done = write_as_non_root(node, os.path.join(group_root, "f"))
    assert done.returncode == 0, done.stderr
    assert stat_of(node, os.path.join(group_root, "f"))[0] == 2000  # setgid: new files inherit the group
    facts = node.module("node_volume_info")["node_facts"]
    entry = [m for m in facts["pod_mounts"] if m["pv_name"] == "pv-group"][0]
    assert entry["root_gid"] == 2000 and int(entry["root_mode"], 8) & 0o2070 == 0o2070
    again = node.module("node_volume_mount", volumes=[plain, grouped])
    assert again["_rc"] == 0 and again["changed"] is False, again
    # Always: a root-owned file written later is re-grouped when the module is asked again
    node.run("sh", "-c", 'echo x > "$1"; chown 0:0 "$1"; chmod 0644 "$1"', "sh", os.path.join(group_root, "late"))
    always = dict(grouped, pods=[{"uid": POD2, "fs_group": 2000, "fs_group_change_policy": "Always"}])
    fixed = node.module("node_volume_mount", volumes=[always])
    assert fixed["_rc"] == 0 and fixed["changed"] is True, fixed
    assert stat_of(node, os.path.join(group_root, "late")) == (2000, 0o664)
    on_root = node.module("node_volume_mount", volumes=[grouped])
    assert on_root["changed"] is False  # OnRootMismatch: the root is right, nothing walked
    assert node.module("volume_detach", volumes=[plain, grouped])["_rc"] == 0


def test_negative_fs_group_is_refused_before_anything_runs(node):
    vol = node.vol("pv-neg", pods=[{"uid": POD1, "fs_group": -1}])
    res = node.module("node_volume_mount", volumes=[vol])
    assert res["_rc"] != 0 and "fs_group" in res["msg"] and "Traceback" not in res["msg"], res
    assert node.mounts_under() == []


def test_block_volume_grows_where_the_pod_sees_it(node):
    vol = node.vol("pv-blk", mode="Block", size=64 * MiB, pods=[{"uid": POD1}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    assert node.module("node_volume_mount", volumes=[vol])["_rc"] == 0
    pod_dev = names.pod_device_path(node.kubelet_dir, POD1, "pv-blk")
    node.run("dd", "if=/dev/urandom", "of=" + pod_dev, "bs=1M", "count=8", "conv=fsync", "status=none")
    head = node.run("sh", "-c", 'head -c 8388608 "$1" | sha256sum', "sh", pod_dev).stdout.split()[0]
    grown = dict(vol, capacity_bytes=96 * MiB)
    ctl = node.module("fs_expand", stage="controller", volumes=[grown])
    assert ctl["_rc"] == 0 and ctl["changed"], ctl
    assert int(node.run("blockdev", "--getsize64", pod_dev).stdout) == 64 * MiB  # not rescanned yet
    res = node.module("fs_expand", volumes=[grown])
    assert res["_rc"] == 0 and res["changed"], res
    assert res["volumes"][0]["device_size_bytes"] == {"old": 64 * MiB, "new": 96 * MiB}
    assert int(node.run("blockdev", "--getsize64", pod_dev).stdout) == 96 * MiB
    assert node.run("sh", "-c", 'head -c 8388608 "$1" | sha256sum', "sh", pod_dev).stdout.split()[0] == head
    facts = node.module("node_volume_info")["node_facts"]
    entry = [m for m in facts["pod_mounts"] if m["pv_name"] == "pv-blk"][0]
    assert entry["size_bytes"] == 96 * MiB
    assert node.module("fs_expand", volumes=[grown])["changed"] is False
    assert node.module("volume_detach", volumes=[vol])["_rc"] == 0


def _rwop_cluster(node):
    def pod(name, uid, created):
        return {"kind": "Pod", "metadata": {"namespace": "ns", "name": name, "uid": uid, "creationTimestamp": created},
                "spec": {"nodeName": node.name, "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}],
                         "containers": [{"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]},
                "status": {"phase": "Running"}}
    return {"kind": "List", "items": [
        {"kind": "Node", "metadata": {"name": node.name, "annotations": {
            "volumes.kubernetes.io/controller-managed-attach-detach": "true"}}},
        {"kind": "PersistentVolume", "metadata": {"name": "pv-rwop"},
         "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOncePod"],
                  "claimRef": {"namespace": "ns", "name": "c", "uid": "claim-uid"},
                  "csi": {"driver": "loop.kubevol.io", "volumeHandle": "pv-rwop.img", "fsType": "ext4",
                          "volumeAttributes": {"pool": node.pool}}}},
        {"kind": "PersistentVolumeClaim", "metadata": {"namespace": "ns", "name": "c", "uid": "claim-uid"},
         "spec": {"volumeName": "pv-rwop", "accessModes": ["ReadWriteOncePod"],
                  "resources": {"requests": {"storage": "64Mi"}}},
         "status": {"phase": "Bound", "capacity": {"storage": "64Mi"}}},
        pod("second", POD2, "2026-11-23T10:00:00Z"), pod("first", POD1, "2026-11-23T09:00:00Z")]}


def test_read_write_once_pod_is_published_to_one_pod_only(node):
    index = ClusterIndex(cluster_from_data(_rwop_cluster(node)))
    opts = PlanOptions(now=datetime.datetime.now(datetime.timezone.utc), loop_pools=(node.pool,))
    os.makedirs(node.kubelet_dir, exist_ok=True)  # a node has its kubelet directory; node_volume_info fails without
    facts = node.module("node_volume_info")["node_facts"]
    result = plan_cluster(index, {node.name: facts}, opts)
    assert any("ReadWriteOncePod" in b["reason"] and b["pod"] == "ns/second" for b in result["blocked"]), result
    items = executor.phase_items(result, "mount", node.name)
    assert [p["uid"] for p in items[0]["pods"]] == [POD1]
    assert node.module("k8s_volume_attach", volumes=items, provision=True)["_rc"] == 0
    assert node.module("node_volume_mount", volumes=items)["_rc"] == 0
    mounted = node.mounts_under(os.path.join(node.kubelet_dir, "pods"))
    assert mounted == [names.pod_mount_path(node.kubelet_dir, POD1, "pv-rwop")]
    # the next plan, from the node's real facts, still refuses the second pod and changes nothing
    again = plan_cluster(index, {node.name: node.module("node_volume_info")["node_facts"]}, opts)
    assert [s for s in again["plan"] if s["action"] == "mount"] == []
    assert any(b["pod"] == "ns/second" for b in again["blocked"])
    assert node.module("volume_detach", volumes=[dict(items[0], pods=[{"uid": POD1}])])["_rc"] == 0
