"""Trust: never lose a running pod's volume.

Foreign drivers are hands-off, read-only is per pod (the global mount is read-write for a writer), and
reconstruction is per volume (an unidentifiable directory is reported, never fatal, and cleaned up only
when nothing is mounted there). Every test checks the real state: findmnt, files, sha256.
"""
import json
import os
import re

from conftest import DRIVER

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
READER = "88888888-8888-4888-8888-888888888881"
WRITER = "88888888-8888-4888-8888-888888888882"
WRITER2 = "88888888-8888-4888-8888-888888888883"
GONE = "88888888-8888-4888-8888-888888888884"
READER2 = "88888888-8888-4888-8888-888888888885"
EBS = "ebs.csi.aws.com"


def write_json(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(data, handle)


def options(node):
    """{target: (per-mount options, superblock options)} as findmnt reports them in the test's namespace."""
    out = node.run("findmnt", "-J", "-l", "-o", "TARGET,VFS-OPTIONS,FS-OPTIONS").stdout
    return dict((m["target"], (m["vfs-options"].split(","), m["fs-options"].split(",")))
                for m in json.loads(out)["filesystems"])


def writable(node, directory, name="probe"):
    path = os.path.join(directory, name)
    ok = node.run("sh", "-c", 'echo x > "$1"', "-", path, check=False).returncode == 0
    if ok:
        node.run("rm", "-f", path)
    return ok


def by_path(entries):
    return dict((e["path"], e) for e in entries)


def uvn(driver, handle):
    return names.unique_volume_name(driver, handle)


# -- A. foreign drivers are hands-off ------------------------------------------------------------
def make_foreign(node, pod_uid=WRITER):
    """An EBS CSI volume the kubelet would have mounted: a tmpfs at its globalmount, bound into a pod."""
    gpath = names.device_mount_path(node.kubelet_dir, EBS, "vol-0abc")
    write_json(os.path.join(os.path.dirname(gpath), "vol_data.json"),
               {"driverName": EBS, "volumeHandle": "vol-0abc", "specVolID": "pv-ebs"})
    os.makedirs(gpath)
    node.run("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", gpath)
    ppath = names.pod_mount_path(node.kubelet_dir, pod_uid, "pv-ebs")
    write_json(os.path.join(os.path.dirname(ppath), "vol_data.json"),
               {"specVolID": "pv-ebs", "volumeHandle": "vol-0abc", "driverName": EBS, "nodeName": "node1",
                "attachmentID": "csi-x", "volumeLifecycleMode": "Persistent"})
    os.makedirs(ppath)
    node.run("mount", "--bind", gpath, ppath)
    node.write_random(os.path.join(ppath, "data"), mib=2)
    return gpath, ppath


def test_foreign_volumes_reported_and_left_alone(node):
    fgpath, fppath = make_foreign(node)
    data_sum = node.sha256(os.path.join(fppath, "data"))
    ours = node.vol("pv-own", pods=[{"uid": WRITER}])
    foreign = node.vol("pv-ebs", driver=EBS, handle="vol-0abc", pods=[{"uid": WRITER}])
    # a volume kubevol cannot drive fails (never skipped as done); the other one of the call is served
    att = node.module("k8s_volume_attach", volumes=[foreign, ours], provision=True)
    assert att["_rc"] != 0 and [f["volume"] for f in att["failures"]] == ["pv-ebs"], att
    assert "driver ebs.csi.aws.com cannot be served there" in att["msg"] and "node node1" in att["msg"]
    assert [v["pv_name"] for v in att["volumes"]] == ["pv-own"] and att["volumes"][0]["attached"]
    mnt = node.module("node_volume_mount", volumes=[ours, foreign])
    assert mnt["_rc"] != 0 and [f["volume"] for f in mnt["failures"]] == ["pv-ebs"], mnt
    assert [v["published"] for v in mnt["volumes"]] == [[WRITER]], mnt
    exp = node.module("fs_expand", volumes=[foreign])
    assert exp["_rc"] != 0 and exp["changed"] is False and exp["volumes"] == [], exp

    facts = node.module("node_volume_info")
    assert facts["_rc"] == 0, facts
    gms, pms = by_path(facts["node_facts"]["global_mounts"]), by_path(facts["node_facts"]["pod_mounts"])
    # what is mounted there is reported (the mount table's number), never compared: the device is its plugin's
    assert re.match(r"^\d+:\d+$", gms[fgpath].pop("device_number")), gms[fgpath]
    assert gms[fgpath] == {
        "plugin": "kubernetes.io/csi", "unique_volume_name": uvn(EBS, "vol-0abc"), "driver": EBS, "volume_handle": "vol-0abc", "pv_name": "pv-ebs",
        "path": fgpath, "mounted": True, "device": "tmpfs", "fs_type": "tmpfs", "fs_size_bytes": None,
        "read_only": False, "foreign": True, "uncertain": None, "unsafe": False, "attached_device": None,
        "device_mismatch": False}
    assert pms[fppath] == {
        "plugin": "kubernetes.io/csi", "pod_uid": WRITER, "pv_name": "pv-ebs", "mode": "Filesystem", "path": fppath, "mounted": True,
        "read_only": False, "device": "tmpfs", "unique_volume_name": uvn(EBS, "vol-0abc"), "driver": EBS,
        "foreign": True, "uncertain": None, "unsafe": False,
        "root_gid": 0, "root_mode": "1777", "size_bytes": None,  # a stat of its root; nothing runs on it
        "ephemeral": False, "device_number": None, "attached_device": None, "device_mismatch": False}
    own_g = names.device_mount_path(node.kubelet_dir, DRIVER, "pv-own.img")
    own_p = names.pod_mount_path(node.kubelet_dir, WRITER, "pv-own")
    assert gms[own_g]["foreign"] is False and pms[own_p]["foreign"] is False and pms[own_p]["driver"] == DRIVER

    # One teardown batch: the kubevol volume goes, the foreign one (same pod) fails, untouched.
    det = node.module("volume_detach", volumes=[foreign, ours], stale_paths=[fgpath])
    assert det["_rc"] != 0 and det["changed"], det
    assert [f["volume"] for f in det["failures"]] == ["pv-ebs"], det
    [done] = det["volumes"]
    assert done["detached"] and sorted(done["unmounted"]) == sorted([own_g, own_p]), done
    assert det["stale_removed"] == [] and det["stale_kept"][0]["path"] == fgpath
    assert "no kubevol backend" in det["stale_kept"][0]["reason"]
    assert node.mounts_under() == sorted([fgpath, fppath]) and node.loops() == []
    assert node.sha256(os.path.join(fppath, "data")) == data_sum
    assert writable(node, fppath)
    assert os.path.exists(os.path.join(os.path.dirname(fppath), "vol_data.json"))


# -- B. read-only is per pod ---------------------------------------------------------------------
def test_reader_first_then_writer_global_mount_is_read_write(node):
    vol = node.vol("pv-rw")
    gpath = names.device_mount_path(node.kubelet_dir, DRIVER, "pv-rw.img")
    reader = names.pod_mount_path(node.kubelet_dir, READER, "pv-rw")
    writer = names.pod_mount_path(node.kubelet_dir, WRITER, "pv-rw")
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[dict(vol, pods=[{"uid": READER, "read_only": True}])])
    assert res["_rc"] == 0 and res["volumes"][0]["formatted"], res
    opts = options(node)
    assert "rw" in opts[gpath][0] and "rw" in opts[gpath][1]  # the reader came first: still read-write
    assert "ro" in opts[reader][0] and not writable(node, reader)

    res = node.module("node_volume_mount", volumes=[dict(vol, pods=[{"uid": WRITER}])])
    assert res["_rc"] == 0 and res["volumes"][0]["actions"] == ["publish %s" % writer], res
    node.write_random(os.path.join(writer, "data"))
    written = node.sha256(os.path.join(writer, "data"))
    assert node.sha256(os.path.join(reader, "data")) == written == node.sha256(os.path.join(gpath, "data"))
    assert not writable(node, reader)

    both = dict(vol, pods=[{"uid": READER, "read_only": True}, {"uid": WRITER}])
    again = node.module("node_volume_mount", volumes=[both])
    assert again["_rc"] == 0 and again["changed"] is False, again
    facts = by_path(node.module("node_volume_info")["node_facts"]["pod_mounts"])
    assert facts[reader]["read_only"] is True and facts[writer]["read_only"] is False
    assert node.module("volume_detach", volumes=[both])["_rc"] == 0
    assert node.mounts_under() == [] and node.loops() == []
    # the data survived: mount it again for the writer only
    assert node.module("k8s_volume_attach", volumes=[vol])["_rc"] == 0
    assert node.module("node_volume_mount", volumes=[dict(vol, pods=[{"uid": WRITER}])])["_rc"] == 0
    assert node.sha256(os.path.join(writer, "data")) == written


def test_old_read_only_global_mount_remounted_read_write_for_a_writer(node):
    """As an older kubevol left it: the global mount ro (its first pod was a reader), a writer's bind
    inheriting ro, another writer's bind rw on the ro superblock (still not writable), and a reader's bind
    rw on the ro superblock (it must not become writable when the superblock turns read-write)."""
    vol = node.vol("pv-old")
    dev = node.module("k8s_volume_attach", volumes=[vol], provision=True)["volumes"][0]["device"]
    gpath = names.device_mount_path(node.kubelet_dir, DRIVER, "pv-old.img")
    paths = dict((uid, names.pod_mount_path(node.kubelet_dir, uid, "pv-old")) for uid in (READER, WRITER, WRITER2, READER2))
    item = dict(vol, pods=[{"uid": READER, "read_only": True}, {"uid": WRITER}, {"uid": WRITER2},
                           {"uid": READER2, "read_only": True}])
    node.run("mkfs.ext4", "-q", "-F", "-m0", dev)
    write_json(os.path.join(os.path.dirname(gpath), "vol_data.json"),
               {"driverName": DRIVER, "volumeHandle": "pv-old.img", "specVolID": "pv-old"})
    os.makedirs(gpath)
    node.run("mount", dev, gpath)
    node.write_random(os.path.join(gpath, "data"))
    before = node.sha256(os.path.join(gpath, "data"))
    node.run("mount", "-o", "remount,ro", gpath)
    for uid, path in paths.items():
        write_json(os.path.join(os.path.dirname(path), "vol_data.json"),
                   {"specVolID": "pv-old", "volumeHandle": "pv-old.img", "driverName": DRIVER, "nodeName": "node1",
                    "attachmentID": "csi-old", "volumeLifecycleMode": "Persistent"})
        os.makedirs(path)
        node.run("mount", "--bind", gpath, path)
    node.run("mount", "-o", "remount,bind,ro", paths[READER])
    node.run("mount", "-o", "remount,bind,rw", paths[WRITER2])
    node.run("mount", "-o", "remount,bind,rw", paths[READER2])
    opts = options(node)
    assert "ro" in opts[gpath][1] and "ro" in opts[paths[WRITER]][0]
    assert "rw" in opts[paths[WRITER2]][0] and "ro" in opts[paths[WRITER2]][1]
    assert not any(writable(node, p) for p in paths.values())
    # what the facts say: effectively read-only, whatever the bind's own flag
    facts = node.module("node_volume_info")["node_facts"]
    assert all(m["read_only"] for m in facts["pod_mounts"]) and facts["global_mounts"][0]["read_only"]

    want = ["remount read-write %s" % gpath, "remount read-write %s" % paths[WRITER],
            "remount read-only %s" % paths[READER2]]
    chk = node.module("node_volume_mount", check_mode=True, volumes=[item])
    assert chk["_rc"] == 0 and chk["changed"] and chk["volumes"][0]["actions"] == want, chk
    assert options(node) == opts and not writable(node, paths[WRITER])
    res = node.module("node_volume_mount", volumes=[item])
    assert res["_rc"] == 0 and res["changed"] and res["volumes"][0]["actions"] == want, res
    assert res["diff"]["before"][gpath] == "%s (read-only)" % dev and res["diff"]["after"][gpath] == "%s (read-write)" % dev
    opts = options(node)
    assert "rw" in opts[gpath][0] and "rw" in opts[gpath][1]
    assert writable(node, paths[WRITER]) and writable(node, paths[WRITER2])
    assert not writable(node, paths[READER]) and not writable(node, paths[READER2])
    node.write_random(os.path.join(paths[WRITER], "new"), mib=1)
    assert node.sha256(os.path.join(paths[READER], "new")) == node.sha256(os.path.join(gpath, "new"))
    assert node.sha256(os.path.join(paths[READER], "data")) == before
    again = node.module("node_volume_mount", volumes=[item])
    assert again["_rc"] == 0 and again["changed"] is False, again
    facts = by_path(node.module("node_volume_info")["node_facts"]["pod_mounts"])
    assert [facts[paths[uid]]["read_only"] for uid in (READER, WRITER, WRITER2, READER2)] == [True, False, False, True]
    assert node.module("volume_detach", volumes=[item])["_rc"] == 0
    assert node.mounts_under() == [] and node.loops() == []


def test_read_only_pv_global_mount_stays_read_only(node):
    """item.read_only is the PV's own read-only: then a ro global mount is right and is not remounted."""
    vol = node.vol("pv-ro")
    dev = node.module("k8s_volume_attach", volumes=[vol], provision=True)["volumes"][0]["device"]
    node.run("mkfs.ext4", "-q", "-F", "-m0", dev)
    item = dict(vol, read_only=True, pods=[{"uid": WRITER}])
    res = node.module("node_volume_mount", volumes=[item])
    assert res["_rc"] == 0, res
    gpath = names.device_mount_path(node.kubelet_dir, DRIVER, "pv-ro.img")
    ppath = names.pod_mount_path(node.kubelet_dir, WRITER, "pv-ro")
    opts = options(node)
    assert "ro" in opts[gpath][1] and "ro" in opts[ppath][0] and not writable(node, ppath)
    assert node.module("node_volume_mount", volumes=[item])["changed"] is False


# -- C. reconstruction is per volume --------------------------------------------------------------
def test_uncertain_directories_reported_and_stale_ones_removed(node):
    vol = node.vol("pv-c", pods=[{"uid": WRITER}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    assert node.module("node_volume_mount", volumes=[vol])["_rc"] == 0
    gpath = names.device_mount_path(node.kubelet_dir, DRIVER, "pv-c.img")
    ppath = names.pod_mount_path(node.kubelet_dir, WRITER, "pv-c")
    node.write_random(os.path.join(ppath, "data"), mib=1)
    data_sum = node.sha256(os.path.join(ppath, "data"))
    gdata = os.path.join(os.path.dirname(gpath), "vol_data.json")
    with open(gdata, "w") as handle:
        handle.write("{not json")
    # a stale global dir (corrupt vol_data.json, nothing mounted), a stale pod dir (no vol_data.json),
    # a mounted one nothing identifies, and a stale one someone left a file in
    stale_g = names.device_mount_path(node.kubelet_dir, DRIVER, "gone.img")
    os.makedirs(stale_g)
    with open(os.path.join(os.path.dirname(stale_g), "vol_data.json"), "w") as handle:
        handle.write("\x00garbage")
    stale_p = names.pod_mount_path(node.kubelet_dir, GONE, "pv-gone")
    os.makedirs(stale_p)
    busy_g = names.device_mount_path(node.kubelet_dir, DRIVER, "busy.img")
    os.makedirs(busy_g)
    node.run("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", busy_g)
    full_g = names.device_mount_path(node.kubelet_dir, DRIVER, "full.img")
    os.makedirs(full_g)
    with open(os.path.join(full_g, "keep"), "w") as handle:
        handle.write("x")

    facts = node.module("node_volume_info")
    assert facts["_rc"] == 0, facts
    gms, pms = by_path(facts["node_facts"]["global_mounts"]), by_path(facts["node_facts"]["pod_mounts"])
    assert gms[gpath]["mounted"] is True and gms[gpath]["device"].startswith("/dev/loop")
    assert gms[gpath]["uncertain"] == "%s is not valid JSON" % gdata
    # derived: the attached device's handle hashes to the directory name
    assert gms[gpath]["unique_volume_name"] == uvn(DRIVER, "pv-c.img") and gms[gpath]["volume_handle"] == "pv-c.img"
    assert gms[stale_g]["unique_volume_name"] is None and gms[stale_g]["mounted"] is False
    assert os.path.dirname(stale_g) in gms[stale_g]["uncertain"] and gms[stale_g]["foreign"] is False
    assert gms[busy_g]["mounted"] is True and gms[busy_g]["unique_volume_name"] is None
    assert gms[busy_g]["uncertain"].endswith("vol_data.json is missing")
    assert pms[stale_p]["unique_volume_name"] is None and pms[stale_p]["driver"] is None
    assert pms[stale_p]["foreign"] is False and pms[stale_p]["mounted"] is False
    assert pms[stale_p]["uncertain"] == "%s is missing" % os.path.join(os.path.dirname(stale_p), "vol_data.json")
    assert pms[ppath]["uncertain"] is None

    # refused before anything runs: a path outside the two shapes, a symlink component
    link_uid = os.path.join(node.kubelet_dir, "pods", "linked")
    os.symlink(os.path.join(node.kubelet_dir, "pods", GONE), link_uid)
    for bad in (os.path.join(node.kubelet_dir, "pods", GONE), "/etc/globalmount",
                os.path.join(link_uid, "volumes", "kubernetes.io~csi", "pv-gone", "mount"),
                stale_p + "/../../../../../../etc"):
        res = node.module("volume_detach", stale_paths=[stale_g, bad])
        assert res["_rc"] != 0 and bad in res["msg"], res
        # which node, that nothing was removed, and what to do
        assert "on node %s:" % res["node"] in res["msg"] and "refusing to remove stale path" in res["msg"], res
        assert res["msg"].endswith("[KV-UNSAFE-PATH]") and res["code"] == "KV-UNSAFE-PATH", res
        assert "remove it by hand" in res["msg"], res
        assert os.path.isdir(stale_g) and os.path.isdir(stale_p)
    os.unlink(link_uid)

    stale = [stale_g, stale_p, busy_g, full_g]
    expected = [stale_g, os.path.join(os.path.dirname(stale_g), "vol_data.json"), os.path.dirname(stale_g),
                stale_p, os.path.dirname(stale_p), os.path.dirname(os.path.dirname(stale_p)),
                os.path.join(node.kubelet_dir, "pods", GONE, "volumes")]
    chk = node.module("volume_detach", check_mode=True, stale_paths=stale)
    assert chk["_rc"] == 0 and chk["changed"] and chk["stale_removed"] == expected, chk
    assert os.path.isdir(stale_g) and os.path.isdir(stale_p)
    res = node.module("volume_detach", stale_paths=stale)
    assert res["_rc"] == 0 and res["changed"] and res["volumes"] == [], res
    assert res["stale_removed"] == expected
    kept = dict((k["path"], k["reason"]) for k in res["stale_kept"])
    assert sorted(kept) == sorted([busy_g, full_g])
    assert "mountpoint" in kept[busy_g] and "not empty" in kept[full_g]
    assert not os.path.exists(os.path.dirname(stale_g)) and not os.path.exists(os.path.dirname(stale_p))
    # the moved pod's empty volumes directory goes too; the pod directory itself is the kubelet's
    assert os.listdir(os.path.join(node.kubelet_dir, "pods", GONE)) == []
    assert busy_g in node.mounts_under() and os.path.exists(os.path.join(full_g, "keep"))
    again = node.module("volume_detach", stale_paths=stale)
    assert again["_rc"] == 0 and again["changed"] is False and again["stale_removed"] == [], again
    # the identified volume is untouched, and its own next mount writes its vol_data.json again
    assert node.mounts_under() == sorted([gpath, ppath, busy_g])
    assert node.sha256(os.path.join(ppath, "data")) == data_sum
    res = node.module("node_volume_mount", volumes=[vol])
    assert res["_rc"] == 0 and res["volumes"][0]["actions"] == ["write %s" % gdata], res
    facts = by_path(node.module("node_volume_info")["node_facts"]["global_mounts"])
    assert facts[gpath]["uncertain"] is None and node.module("node_volume_mount", volumes=[vol])["changed"] is False
    assert node.module("volume_detach", volumes=[vol])["_rc"] == 0
    assert node.loops() == [] and node.mounts_under() == [busy_g]


def test_a_pv_naming_a_foreign_pool_is_refused_and_its_file_left_alone(node, tmp_path):
    """A PV pointing volumeAttributes.pool at an application's directory (issue: app.log formatted as ext4):
    refused before anything runs, bytes unchanged, nothing attached or mounted."""
    app = tmp_path / "app"
    app.mkdir()
    log = app / "app.log"
    log.write_bytes(b"2026-11-23 request served\n" * 300000)  # ~8 MiB of text
    before = node.sha256(str(log))
    vol = dict(node.vol("pv-app", handle="app.log", pods=[{"uid": "44444444-4444-4444-8444-444444444444"}]),
               volume_attributes={"pool": str(app)})
    res = node.module("node_volume_setup", attach={"volumes": [vol]}, mount={"volumes": [vol]})
    attach = res["phase_results"]["attach"]
    assert attach["failed"] and "keeps loop images only in %s" % node.pool in attach["msg"], res
    assert "pv-app" in attach["msg"] and "node1" in attach["msg"]
    assert "mount" not in res["phase_results"] or not res["phase_results"]["mount"].get("changed")
    assert node.sha256(str(log)) == before
    assert node.loops() == [] and node.mounts_under() == []


def test_a_pv_naming_a_foreign_pool_never_stops_the_nodes_other_volumes(node, tmp_path):
    """One hostile PV is refused on its own: the node's other volumes of the same call attach and mount."""
    app = tmp_path / "app2"
    app.mkdir()
    (app / "app.log").write_bytes(b"2026-11-23 request served\n" * 40000)
    before = node.sha256(str(app / "app.log"))
    pod = {"uid": "55555555-5555-4555-8555-555555555555"}
    good = node.vol("pv-good", pods=[pod])
    bad = dict(node.vol("pv-bad", handle="app.log", pods=[pod]), volume_attributes={"pool": str(app)})
    res = node.module("node_volume_setup", attach={"volumes": [bad, good], "provision": True},
                      mount={"volumes": [bad, good]})
    attach = res["phase_results"]["attach"]
    assert attach["failed"] and [f["volume"] for f in attach["failures"]] == ["pv-bad"], attach
    assert attach["failures"][0]["step"] == "validate" and attach["failures"][0]["node"] == "node1"
    assert attach["completed"] == ["pv-good"]
    assert [v["pv_name"] for v in res["phase_results"]["mount"]["volumes"]] == ["pv-good"]
    assert names.pod_mount_path(node.kubelet_dir, pod["uid"], "pv-good") in node.mounts_under()
    assert node.sha256(str(app / "app.log")) == before
