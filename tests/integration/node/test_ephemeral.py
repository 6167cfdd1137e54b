"""Inline ephemeral CSI volumes on real loop devices: created, written, read back, removed with the pod."""
import datetime
import json
import os

from conftest import DRIVER, MiB

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster

POD1 = "11111111-1111-4111-8111-111111111111"
HANDLE = names.ephemeral_volume_handle(POD1, "scratch")
NOW = datetime.datetime(2026, 11, 23, 12, 0, 0, tzinfo=datetime.timezone.utc)


def inline(node, read_only=False, fs_type="ext4", **attributes):
    attrs = {"pool": node.pool, "size": "64Mi"}
    attrs.update(attributes)
    return dict(pv_name="scratch", driver=DRIVER, volume_handle=HANDLE, volume_attributes=attrs,
                capacity_bytes=64 * MiB, fs_type=fs_type, ephemeral=True,
                pods=[{"uid": POD1, "name": "ns/p", "read_only": read_only}])


def cluster(node, pods=True):
    managed = {names.MANAGED_ATTACH_DETACH_ANNOTATION: "true"}
    items = [{"kind": "Node", "metadata": {"name": "node1", "annotations": managed}},
             {"kind": "CSIDriver", "metadata": {"name": DRIVER},
              "spec": {"volumeLifecycleModes": ["Persistent", "Ephemeral"]}}]
    if pods:
        items.append({"kind": "Pod", "metadata": {"namespace": "ns", "name": "p", "uid": POD1},
                      "spec": {"nodeName": "node1", "volumes": [{"name": "scratch", "csi": {
                          "driver": DRIVER, "volumeAttributes": {"size": "64Mi", "pool": node.pool}}}],
                          "containers": [{"name": "c", "volumeMounts": [{"name": "scratch", "mountPath": "/s"}]}]},
                      "status": {"phase": "Running"}})
    return ClusterIndex(cluster_from_data({"kind": "List", "items": items}))


def plan(node, facts, pods=True):
    opts = PlanOptions(True, 360, (DRIVER,), NOW, loop_pools=(node.pool,))  # the pool the node allows
    return plan_cluster(cluster(node, pods), {"node1": facts}, opts)


def test_created_written_read_back_and_removed_with_the_pod(node):
    os.makedirs(node.kubelet_dir)  # a node has its kubelet directory; node_volume_info fails without one
    target = names.pod_mount_path(node.kubelet_dir, POD1, "scratch")
    image = os.path.join(node.pool, HANDLE)

    # --check: the plan from the node's facts, and the publish it reports, change nothing
    facts = node.module("node_volume_info")["node_facts"]
    assert facts["ephemeral_volumes"] == []
    result = plan(node, facts)
    assert [(s["action"], s["target"], s["ephemeral"]) for s in result["plan"]] == [("mount", "pod", True)]
    item = dict(result["volume_items"]["node1"][result["plan"][0]["unique_volume_name"]],
                pods=[{"uid": POD1, "name": "ns/p", "read_only": False}])
    assert item["volume_handle"] == HANDLE and item["capacity_bytes"] == 64 * MiB
    chk = node.module("node_volume_mount", check_mode=True, volumes=[item])
    assert chk["_rc"] == 0 and chk["changed"] is True, chk
    assert chk["volumes"][0]["actions"] == ["create %s" % image, "attach", "format", "publish %s" % target]
    assert not os.path.exists(image) and node.loops() == [] and node.mounts_under() == []
    assert not os.path.exists(os.path.join(node.kubelet_dir, "pods"))

    # publish: the image is created for the pod, formatted, mounted straight at the pod's dir (no globalmount)
    pub = node.module("node_volume_mount", volumes=[item])
    assert pub["_rc"] == 0, pub
    res = pub["volumes"][0]
    assert res["created"] and res["formatted"] and res["fs_type"] == "ext4" and res["published"] == [POD1]
    assert res["kubernetes_volume_name"] == "kubernetes.io/csi/%s-scratch" % POD1
    assert os.path.getsize(image) == 64 * MiB
    assert node.mounts_under() == [target]
    assert node.loops() == [res["device"]]
    with open(os.path.join(os.path.dirname(target), "vol_data.json")) as handle:
        data = json.load(handle)
    assert data == {"specVolID": "scratch", "volumeHandle": HANDLE, "driverName": DRIVER, "nodeName": "node1",
                    "attachmentID": names.volume_attachment_name(HANDLE, DRIVER, "node1"),
                    "volumeLifecycleMode": "Ephemeral", "kubevol.io/image": image}

    # written and read back through the pod's mount
    node.run("sh", "-c", "echo kept-by-the-pod > %s/hello" % target)
    assert node.run("cat", os.path.join(target, "hello")).stdout == "kept-by-the-pod\n"

    # facts: an ephemeral volume, no attached device (the kubelet reports no attachment for it)
    facts = node.module("node_volume_info")["node_facts"]
    assert facts["devices"] == [] and facts["global_mounts"] == []
    [eph] = facts["ephemeral_volumes"]
    assert eph["pod_uid"] == POD1 and eph["volume_name"] == "scratch" and eph["mounted"] is True
    assert eph["image"] == image and eph["device"] == res["device"] and eph["size_bytes"] == 64 * MiB
    assert [m["ephemeral"] for m in facts["pod_mounts"]] == [True]

    # a second run: nothing planned, and the module changes nothing
    assert plan(node, facts)["plan"] == []
    again = node.module("node_volume_mount", volumes=[item])
    assert again["_rc"] == 0 and again["changed"] is False, again

    # the pod is gone: the plan unpublishes it; --check reports the same and changes nothing
    result = plan(node, facts, pods=False)
    assert [(s["action"], s["target"], s["ephemeral"]) for s in result["plan"]] == [("unmount", "pod", True)]
    teardown = dict(result["volume_items"]["node1"][result["plan"][0]["unique_volume_name"]],
                    pods=[{"uid": POD1, "name": POD1, "read_only": False}], detach=False, unmount_device=False)
    assert teardown["volume_attributes"] == {"pool": node.pool}
    chk = node.module("volume_detach", check_mode=True, volumes=[teardown])
    assert chk["_rc"] == 0 and chk["changed"] is True, chk
    assert chk["volumes"][0]["actions"] == ["unmount %s" % target, "detach %s" % res["device"], "delete %s" % image]
    assert node.mounts_under() == [target] and os.path.exists(image) and node.loops() == [res["device"]]

    gone = node.module("volume_detach", volumes=[teardown])
    assert gone["_rc"] == 0, gone
    out = gone["volumes"][0]
    assert out["unmounted"] == [target] and out["detached"] == res["device"] and out["deleted"] == image
    assert not os.path.exists(image) and node.loops() == [] and node.mounts_under() == []
    assert not os.path.exists(os.path.dirname(target))  # vol_data.json and the pod volume dir removed
    assert os.listdir(os.path.join(node.pool, ".kubevol-holders")) == []  # no holder record, no lock file left

    facts = node.module("node_volume_info")["node_facts"]
    assert facts["ephemeral_volumes"] == [] and facts["pod_mounts"] == []
    assert plan(node, facts, pods=False)["plan"] == []
    again = node.module("volume_detach", volumes=[teardown])
    assert again["_rc"] == 0 and again["changed"] is False, again


def test_read_only_inline_volume_is_formatted_then_mounted_read_only(node):
    target = names.pod_mount_path(node.kubelet_dir, POD1, "scratch")
    pub = node.module("node_volume_mount", volumes=[inline(node, read_only=True)])
    assert pub["_rc"] == 0 and pub["volumes"][0]["formatted"], pub
    assert node.run("sh", "-c", "echo x > %s/f" % target, check=False).returncode != 0
    facts = node.module("node_volume_info")["node_facts"]
    assert facts["ephemeral_volumes"][0]["read_only"] is True
    gone = node.module("volume_detach", volumes=[inline(node, read_only=True)])
    assert gone["_rc"] == 0 and gone["volumes"][0]["deleted"], gone
    assert node.loops() == [] and node.mounts_under() == []


def test_pool_outside_loop_pools_is_refused_before_anything(node, tmp_path):
    other = tmp_path / "elsewhere"
    other.mkdir()
    res = node.module("node_volume_mount", volumes=[inline(node, pool=str(other))])
    assert res["_rc"] != 0
    assert "volumeAttributes.pool of inline volume scratch of pod ns/p" in res["msg"], res["msg"]
    assert "loop_pools" in res["msg"]
    assert os.listdir(str(other)) == [] and node.loops() == []
    assert not os.path.exists(os.path.join(node.kubelet_dir, "pods"))


def test_never_deletes_an_image_nothing_names_as_ephemeral(node):
    # a pod directory whose vol_data.json says Persistent, and an image of the same name: not kubevol's to delete
    vol_dir = os.path.dirname(names.pod_mount_path(node.kubelet_dir, POD1, "scratch"))
    os.makedirs(os.path.join(vol_dir, "mount"))
    with open(os.path.join(vol_dir, "vol_data.json"), "w") as handle:
        json.dump({"specVolID": "scratch", "volumeHandle": HANDLE, "driverName": DRIVER,
                   "volumeLifecycleMode": "Persistent"}, handle)
    image = os.path.join(node.pool, HANDLE)
    with open(image, "w") as handle:
        handle.write("precious")
    res = node.module("volume_detach", volumes=[inline(node)])
    assert res["_rc"] != 0 and "is not inline volume scratch kubevol created" in res["msg"], res
    assert "[KV-UNSAFE-PATH]" in res["msg"], res
    with open(image) as handle:
        assert handle.read() == "precious"
    assert os.path.isdir(os.path.join(vol_dir, "mount"))


def test_a_killed_teardown_is_finished_from_vol_data_alone(node):
    """A run killed after the unmount and the detach (the driver's record gone): vol_data.json still says
    Ephemeral and names the image, so the next run deletes it and the directories."""
    target = names.pod_mount_path(node.kubelet_dir, POD1, "scratch")
    image = os.path.join(node.pool, HANDLE)
    pub = node.module("node_volume_mount", volumes=[inline(node)])
    assert pub["_rc"] == 0, pub
    node.run("umount", target)
    node.run("losetup", "-d", pub["volumes"][0]["device"])
    records = os.path.join(node.kubelet_dir, "plugins", "kubevol.io", "loop", "attachments")
    for name in os.listdir(records):
        os.unlink(os.path.join(records, name))

    facts = node.module("node_volume_info")["node_facts"]
    [eph] = facts["ephemeral_volumes"]
    assert eph["mounted"] is False and eph["image"] == image and eph["device"] is None
    result = plan(node, facts, pods=False)
    assert [(s["action"], s["target"]) for s in result["plan"]] == [("unmount", "pod")]
    teardown = dict(result["volume_items"]["node1"][result["plan"][0]["unique_volume_name"]],
                    pods=[{"uid": POD1, "name": POD1}])
    gone = node.module("volume_detach", volumes=[teardown])
    assert gone["_rc"] == 0, gone
    assert gone["volumes"][0]["deleted"] == image and gone["volumes"][0]["detached"] is None
    assert not os.path.exists(image) and not os.path.exists(os.path.dirname(target)) and node.loops() == []
    assert plan(node, node.module("node_volume_info")["node_facts"], pods=False)["plan"] == []


def test_never_adopts_an_image_nothing_names_as_the_pods(node):
    image = os.path.join(node.pool, HANDLE)
    with open(image, "w") as handle:
        handle.write("precious")
    res = node.module("node_volume_mount", volumes=[inline(node)])
    assert res["_rc"] != 0 and "nothing names it as inline volume" in res["msg"] \
        and "[KV-UNSAFE-PATH]" in res["msg"], res
    with open(image) as handle:
        assert handle.read() == "precious"
    assert node.loops() == [] and node.mounts_under() == []


WRITER = ["setpriv", "--reuid=1234", "--regid=1234", "--groups=2000",
          # search permission on the test's private tmp dirs only; writing still needs the volume's group
          "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]


def test_fs_group_lets_a_non_root_writer_write_to_an_inline_volume(node):
    target = names.pod_mount_path(node.kubelet_dir, POD1, "scratch")
    vol = dict(inline(node), pods=[{"uid": POD1, "name": "ns/p", "fs_group": 2000,
                                    "fs_group_change_policy": "OnRootMismatch"}])
    chk = node.module("node_volume_mount", check_mode=True, volumes=[vol])
    assert chk["_rc"] == 0 and any("set group 2000" in a for a in chk["volumes"][0]["actions"]), chk
    pub = node.module("node_volume_mount", volumes=[vol])
    assert pub["_rc"] == 0, pub
    gid, mode = node.run("stat", "-c", "%g %a", target).stdout.split()
    assert int(gid) == 2000 and int(mode, 8) & 0o2070 == 0o2070, mode
    done = node.run(*(WRITER + ["sh", "-c", 'echo data > "$1"', "sh", os.path.join(target, "f")]), check=False)
    assert done.returncode == 0, done.stderr
    facts = node.module("node_volume_info")["node_facts"]
    [eph] = facts["ephemeral_volumes"]
    assert eph["root_gid"] == 2000 and int(eph["root_mode"], 8) & 0o2070 == 0o2070
    again = node.module("node_volume_mount", volumes=[vol])
    assert again["_rc"] == 0 and again["changed"] is False, again
    gone = node.module("volume_detach", volumes=[inline(node)])
    assert gone["_rc"] == 0 and gone["volumes"][0]["deleted"], gone
    assert node.loops() == [] and node.mounts_under() == []


def test_a_symlinked_pod_directory_is_refused_both_ways(node, tmp_path):
    # pods/<uid>/volumes/kubernetes.io~csi planted as a symlink to a directory outside the kubelet dir
    outside = tmp_path / "outside"
    (outside / "scratch" / "mount").mkdir(parents=True)
    with open(str(outside / "scratch" / "vol_data.json"), "w") as handle:
        json.dump({"specVolID": "scratch", "volumeHandle": HANDLE, "driverName": DRIVER,
                   "volumeLifecycleMode": "Ephemeral", "kubevol.io/image": os.path.join(node.pool, HANDLE)}, handle)
    csi_dir = os.path.dirname(os.path.dirname(names.pod_mount_path(node.kubelet_dir, POD1, "scratch")))
    os.makedirs(os.path.dirname(csi_dir))
    os.symlink(str(outside), csi_dir)
    before = sorted(os.listdir(str(outside / "scratch")))

    pub = node.module("node_volume_mount", volumes=[inline(node)])
    assert pub["_rc"] != 0 and "Traceback" not in pub["msg"], pub
    assert not os.path.exists(os.path.join(node.pool, HANDLE)) and node.loops() == [] and node.mounts_under() == []

    image = os.path.join(node.pool, HANDLE)
    with open(image, "w") as handle:
        handle.write("precious")  # what the planted vol_data.json names
    det = node.module("volume_detach", volumes=[inline(node)])
    assert det["_rc"] != 0 and "Traceback" not in det["msg"], det
    with open(image) as handle:
        assert handle.read() == "precious"
    assert sorted(os.listdir(str(outside / "scratch"))) == before and os.path.islink(csi_dir)
