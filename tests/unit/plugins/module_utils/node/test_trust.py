"""Pure parts of "Trust": mount flags, vol_data.json identity, stale path shapes, foreign skipping."""
import json
import os

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names, words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, UnsafeName
from ansible_collections.kubevol.volumes.plugins.module_utils.node import facts, layout, mount, stale
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext
from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import run_volumes

LOOP = "loop.kubevol.io"
EBS = "ebs.csi.aws.com"
UID = "1b6f0d2e-0000-4000-8000-000000000001"


def no_commands(argv, data=None):
    raise AssertionError("no command may run: %r" % (argv,))


def test_findmnt_flags_per_mount_and_superblock():
    out = json.dumps({"filesystems": [
        {"target": "/g", "source": "/dev/loop0", "fstype": "ext4", "options": "ro,relatime",
         "vfs-options": "ro,relatime", "fs-options": "ro", "maj:min": "7:0"},
        # a bind whose own flag is rw on a read-only superblock: effectively read-only
        {"target": "/p1", "source": "/dev/loop0", "fstype": "ext4", "options": "ro,relatime",
         "vfs-options": "rw,relatime", "fs-options": "ro", "maj:min": "7:0"},
        # a bind whose own flag is ro on a read-write superblock
        {"target": "/p2", "source": "/dev/loop0", "fstype": "ext4", "options": "ro,relatime",
         "vfs-options": "ro,relatime", "fs-options": "rw", "maj:min": "7:0"},
        {"target": "/p3", "source": "/dev/loop0", "fstype": "ext4", "options": "rw,relatime",
         "vfs-options": "rw,relatime", "fs-options": "rw", "maj:min": "7:0"}]})
    table = mount.MountTable(mount.parse_findmnt(out))
    g, p1, p2, p3 = (table.at(t) for t in ("/g", "/p1", "/p2", "/p3"))
    assert (g.read_only, g.mount_read_only, g.super_read_only) == (True, True, True)
    assert (p1.read_only, p1.mount_read_only, p1.super_read_only) == (True, False, True)
    assert (p2.read_only, p2.mount_read_only, p2.super_read_only) == (True, True, False)
    assert (p3.read_only, p3.mount_read_only, p3.super_read_only) == (False, False, False)
    # an older findmnt without the split columns: the combined options decide
    old = mount.parse_findmnt(json.dumps({"filesystems": [{"target": "/x", "source": "s", "fstype": "t",
                                                           "options": "ro", "maj:min": "1:1"}]}))[0]
    assert old.read_only and old.mount_read_only and not old.super_read_only
    assert "VFS-OPTIONS" in mount.FINDMNT[-1] and "FS-OPTIONS" in mount.FINDMNT[-1]


def test_remount_argv(monkeypatch):
    calls = []

    class R:
        def check(self, argv, step, hint=None):
            calls.append(argv)
    mount.remount_read_write(R(), "/g")
    mount.remount_bind_read_write(R(), "/p")
    mount.remount_read_only(R(), "/q")
    assert calls == [["mount", "-o", "remount,rw", "/g"], ["mount", "-o", "remount,bind,rw", "/p"],
                     ["mount", "-o", "remount,bind,ro", "/q"]]


def test_load_vol_data(tmp_path):
    d = str(tmp_path)
    path = os.path.join(d, "vol_data.json")
    assert layout.load_vol_data(d) == (None, "%s is missing" % path)
    for text, why in (("{not json", "is not valid JSON"), ("[1]", "is not a JSON object"), ("\xff\xfe", None)):
        with open(path, "w", encoding="latin-1") as handle:
            handle.write(text)
        data, problem = layout.load_vol_data(d)
        assert data is None and problem.startswith(path) and (why is None or problem.endswith(why))
    with open(path, "w") as handle:
        json.dump({"driverName": LOOP}, handle)
    assert layout.load_vol_data(d) == ({"driverName": LOOP}, "%s lacks volumeHandle" % path)
    with open(path, "w") as handle:
        json.dump({"driverName": LOOP, "volumeHandle": "a.img"}, handle)
    assert layout.load_vol_data(d) == ({"driverName": LOOP, "volumeHandle": "a.img"}, None)
    assert layout.read_vol_data(d) == {"driverName": LOOP, "volumeHandle": "a.img"}
    os.unlink(path)
    os.symlink(str(tmp_path / "elsewhere.json"), path)
    assert layout.load_vol_data(d) == (None, "%s is a symlink (not followed)" % path)
    os.unlink(path)
    os.mkfifo(path)  # would block a plain open()
    assert layout.load_vol_data(d) == (None, "%s is not a regular file" % path)


def test_global_vol_data_must_agree_with_its_path():
    hash_dir = "/k/plugins/kubernetes.io/csi/%s/%s" % (LOOP, names.handle_hash("a.img"))
    good = {"driverName": LOOP, "volumeHandle": "a.img"}
    assert layout.global_vol_data_problem(hash_dir, good, None) is None
    assert "names driver" in layout.global_vol_data_problem(hash_dir, dict(good, driverName=EBS), None)
    assert "sha256" in layout.global_vol_data_problem(hash_dir, dict(good, volumeHandle="b.img"), None)
    assert layout.global_vol_data_problem(hash_dir, None, "x is missing") == "x is missing"


def test_global_identity_derived_from_an_attached_device():
    path = names.device_mount_path("/k", LOOP, "a.img")
    devs = [{"unique_volume_name": names.unique_volume_name(LOOP, "a.img"), "driver": LOOP, "volume_handle": "a.img",
             "device": "/dev/loop3"}]
    assert facts._global_identity(path, None, "p is missing", devs) == (devs[0]["unique_volume_name"], "a.img",
                                                                        "p is missing")
    assert facts._global_identity(path, None, "p is missing", []) == (None, None, "p is missing")
    other = names.device_mount_path("/k", LOOP, "b.img")
    assert facts._global_identity(other, None, "p", devs) == (None, None, "p")


def test_pod_entry_identity_foreign_and_uncertain():
    vol_dir = "/k/pods/%s/volumes/kubernetes.io~csi/pv-a" % UID
    path = vol_dir + "/mount"
    dev = {"unique_volume_name": names.unique_volume_name(LOOP, "a.img"), "driver": LOOP, "device": "/dev/loop3"}
    mounted = mount.Mount(path, "/dev/loop3", "ext4", ("rw",), "7:3")
    healthy = facts._pod_entry(vol_dir, "Filesystem", path, mounted, "/dev/loop3",
                               ({"driverName": EBS, "volumeHandle": "vol-1"}, None), {})
    assert (healthy["driver"], healthy["foreign"], healthy["uncertain"]) == (EBS, True, None)
    assert healthy["unique_volume_name"] == names.unique_volume_name(EBS, "vol-1") and healthy["pod_uid"] == UID
    derived = facts._pod_entry(vol_dir, "Filesystem", path, mounted, "/dev/loop3", (None, "x is missing"),
                               {"/dev/loop3": dev})
    assert (derived["unique_volume_name"], derived["driver"], derived["foreign"], derived["uncertain"]) == (
        dev["unique_volume_name"], LOOP, False, "x is missing")
    unknown = facts._pod_entry(vol_dir, "Filesystem", path, None, None, (None, "x is missing"), {"/dev/loop3": dev})
    assert (unknown["unique_volume_name"], unknown["driver"], unknown["foreign"]) == (None, None, False)
    assert facts.is_foreign(EBS) and not facts.is_foreign(LOOP) and not facts.is_foreign(None)


@pytest.mark.parametrize("path", [
    "/k/plugins/kubernetes.io/csi/%s/%s/globalmount" % (LOOP, "a" * 64),
    "/k/pods/%s/volumes/kubernetes.io~csi/pv-a/mount" % UID,
])
def test_stale_shapes_accepted(path):
    assert stale.stale_kind("/k", path) == (stale.DEVICE if "globalmount" in path else stale.POD)


@pytest.mark.parametrize("path,why", [
    ("k/pods/u/volumes/kubernetes.io~csi/pv/mount", "absolute"),
    ("/k/pods/u/volumes/kubernetes.io~csi/pv/mount/", "normalized"),
    ("/k/pods/u/volumes/kubernetes.io~csi/pv/../pv/mount", "normalized"),
    ("/k//pods/u/volumes/kubernetes.io~csi/pv/mount", "normalized"),
    ("/other/pods/u/volumes/kubernetes.io~csi/pv/mount", "inside kubelet_dir"),
    ("/kk/pods/u/volumes/kubernetes.io~csi/pv/mount", "inside kubelet_dir"),
    ("/k/pods/u/volumes/kubernetes.io~csi/pv", "only"),
    ("/k/pods/u/volumeDevices/kubernetes.io~csi/pv", "only"),
    ("/k/pods/u", "only"),
    ("/k/plugins/kubernetes.io/csi/%s/%s/globalmount" % (LOOP, "A" * 64), "only"),
    ("/k/plugins/kubernetes.io/csi/%s/%s/globalmount" % (LOOP, "a" * 63), "only"),
    ("/k/plugins/kubernetes.io/csi/volumeDevices/%s/globalmount" % ("a" * 64), "only"),
    ("/k/plugins/kubernetes.io/csi/bad%%driver/%s/globalmount" % ("a" * 64), "outside"),
    ("/k/plugins/kubernetes.io/csi/%s/%s/globalmount/x" % (LOOP, "a" * 64), "only"),
    ("/k/pods/u\x01/volumes/kubernetes.io~csi/pv/mount", "control"),
    ("/k/pods/u/volumes/kubernetes.io~csi/pv/mount\x00", "absolute"),
])
def test_stale_shapes_refused(path, why):
    with pytest.raises(InvalidInput) as exc:
        stale.stale_kind("/k", path)
    assert repr(path) in exc.value.msg and why in exc.value.msg


def test_stale_symlink_component_refused(tmp_path):
    kubelet = str(tmp_path / "kubelet")
    os.makedirs(os.path.join(kubelet, "real", "volumes"))
    os.makedirs(os.path.join(kubelet, "pods"))
    os.symlink(os.path.join(kubelet, "real"), os.path.join(kubelet, "pods", UID))
    path = os.path.join(kubelet, "pods", UID, "volumes", "kubernetes.io~csi", "pv", "mount")
    with pytest.raises(InvalidInput) as exc:
        stale.check_no_symlink(kubelet, path)
    assert "is a symlink" in exc.value.msg
    stale.check_no_symlink(kubelet, os.path.join(kubelet, "pods", "other", "volumes", "x"))  # missing: fine


def test_stale_plan(tmp_path):
    kubelet = str(tmp_path)
    ctx = NodeContext(no_commands, node_name="n1", kubelet_dir=kubelet)
    table = mount.MountTable([])
    gpath = names.device_mount_path(kubelet, LOOP, "gone.img")
    os.makedirs(gpath)
    steps, reason = stale.plan_removal(ctx, gpath, stale.DEVICE, table)
    assert reason is None and steps == [("rmdir", gpath), ("rmdir", os.path.dirname(gpath))]
    vol_data = os.path.join(os.path.dirname(gpath), "vol_data.json")
    with open(vol_data, "w") as handle:
        handle.write("garbage")
    steps, reason = stale.plan_removal(ctx, gpath, stale.DEVICE, table)
    assert steps == [("rmdir", gpath), ("unlink", vol_data), ("rmdir", os.path.dirname(gpath))]
    with open(vol_data, "w") as handle:
        json.dump({"driverName": LOOP, "volumeHandle": "gone.img"}, handle)
    steps, reason = stale.plan_removal(ctx, gpath, stale.DEVICE, table)
    assert steps == [] and "identifies volume" in reason
    busy = mount.MountTable([mount.Mount(gpath, "tmpfs", "tmpfs", ("rw",), "0:50")])
    os.unlink(vol_data)
    assert "mountpoint (mounted from tmpfs)" in stale.plan_removal(ctx, gpath, stale.DEVICE, busy)[1]
    with open(os.path.join(gpath, "f"), "w") as handle:
        handle.write("x")
    assert "not empty" in stale.plan_removal(ctx, gpath, stale.DEVICE, table)[1]
    foreign = names.device_mount_path(kubelet, EBS, "vol-1")
    assert "no kubevol backend" in stale.plan_removal(ctx, foreign, stale.DEVICE, table)[1]

    ppath = names.pod_mount_path(kubelet, UID, "pv-a")
    os.makedirs(ppath)
    steps, reason = stale.plan_removal(ctx, ppath, stale.POD, table)
    vol_dir = os.path.dirname(ppath)
    assert steps == [("rmdir", ppath), ("rmdir", vol_dir), ("rmdir", os.path.dirname(vol_dir)),
                     ("rmdir", os.path.dirname(os.path.dirname(vol_dir)))]  # the pod's empty volumes directory too
    with open(os.path.join(vol_dir, "vol_data.json"), "w") as handle:
        json.dump({"driverName": EBS}, handle)
    assert "no kubevol backend" in stale.plan_removal(ctx, ppath, stale.POD, table)[1]
    os.rmdir(ppath)
    os.unlink(os.path.join(vol_dir, "vol_data.json"))
    os.rmdir(vol_dir)
    assert stale.plan_removal(ctx, ppath, stale.POD, table) == ([], None)  # already gone: neither removed nor kept


def test_context_refuses_foreign_and_checks_names():
    """A volume of a driver the node has no backend for is refused (kept in ``refused``, failed by run_each), named
    with its driver, the node and what the node drives; it is never skipped as if done."""
    ctx = NodeContext(no_commands, node_name="n1", kubelet_dir="/k")
    items = ctx.items([{"pv_name": "pv-e", "driver": EBS, "volume_handle": "vol-1"}])
    assert items == []
    [(item, err)] = ctx.refused
    assert item.pv_name == "pv-e" and not ctx.has_backend(item)
    assert "driver ebs.csi.aws.com cannot be served" in err.msg and "node n1" in err.msg, err.msg
    assert "loop.kubevol.io" in err.msg and "kubevol_known_drivers" in words.say(err.msg, words.ROLE), err.msg
    assert "from known_drivers if its own CSI node plugin serves it" in words.say(err.msg), err.msg
    with pytest.raises(UnsafeName):
        ctx.items([{"pv_name": "../x", "driver": EBS, "volume_handle": "vol-1"}])
    with pytest.raises(InvalidInput):
        ctx.items([{"pv_name": "a", "driver": EBS, "volume_handle": "v"}, {"pv_name": "b", "driver": EBS,
                                                                           "volume_handle": "v"}])


class FakeModule:
    def __init__(self, **params):
        self.params = dict(node_name="n1", kubelet_dir="/k", run_dir="/nonexistent/run", lock_timeout=1, **params)
        self.check_mode = False
        self._diff = False
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)

    def exit_json(self, **out):
        raise SystemExit(("exit", out))

    def fail_json(self, **out):
        raise SystemExit(("fail", out))


def test_run_volumes_foreign_fails_that_volume_and_runs_nothing_for_it():
    module = FakeModule(volumes=[{"pv_name": "pv-e", "driver": EBS, "volume_handle": "vol-1"}])
    with pytest.raises(SystemExit) as exc:
        run_volumes(module, lambda ctx, item: pytest.fail("phase ran on a foreign volume"),
                    prepare=lambda ctx, items: items and pytest.fail("prepare saw a foreign volume"),
                    finish=lambda ctx: {"extra": 1, "changed": False},
                    built=lambda results: results)
    kind, out = exc.value.args[0]
    assert kind == "fail" and out["changed"] is False and out["volumes"] == [] and out["completed"] == []
    assert [(f["volume"], f["node"], f["step"]) for f in out["failures"]] == [("pv-e", "n1", "find driver")]
    assert "driver ebs.csi.aws.com cannot be served" in out["msg"] and "node n1" in out["msg"], out["msg"]
    assert out["extra"] == 1  # the call's own finish still ran
