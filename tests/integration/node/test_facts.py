"""node_volume_info reports exactly what was done, in the shape of docs/contracts.md section 2."""
import json
import os
import subprocess
import sys

from conftest import COLLECTIONS, DRIVER, MiB

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
POD1 = "77777777-7777-4777-8777-777777777771"
POD2 = "77777777-7777-4777-8777-777777777772"

FACT_KEYS = {"node_name", "reachable", "error", "kubelet_dir", "devices", "global_mounts", "pod_mounts",
             "ephemeral_volumes", "csi_node_ids", "csi_nodes"}
DEVICE_KEYS = {"unique_volume_name", "driver", "volume_handle", "device", "size_bytes", "read_only"}
IDENTITY_KEYS = {"device_number", "attached_device", "device_mismatch"}  # the device attached now, compared
GLOBAL_KEYS = {"plugin", "unique_volume_name", "driver", "volume_handle", "pv_name", "path", "mounted", "device",
               "fs_type", "fs_size_bytes", "read_only", "foreign", "uncertain", "unsafe"} | IDENTITY_KEYS
POD_KEYS = {"plugin", "pod_uid", "pv_name", "mode", "path", "mounted", "read_only", "device", "unique_volume_name",
            "driver", "foreign", "uncertain", "unsafe", "root_gid", "root_mode", "size_bytes",
            "ephemeral"} | IDENTITY_KEYS
HEALTHY = {"plugin": names.CSI_PLUGIN_NAME, "driver": DRIVER, "foreign": False, "uncertain": None, "unsafe": False,
           "ephemeral": False}
NOT_COMPARED = {"device_number": None, "attached_device": None, "device_mismatch": False}  # a Filesystem bind


def check_schema(facts):
    assert set(facts) == FACT_KEYS
    for key, keys in (("devices", DEVICE_KEYS), ("global_mounts", GLOBAL_KEYS), ("pod_mounts", POD_KEYS)):
        for entry in facts[key]:
            assert set(entry) == keys, (key, entry)
    assert facts["devices"] == sorted(facts["devices"], key=lambda d: d["unique_volume_name"])
    assert facts["global_mounts"] == sorted(facts["global_mounts"], key=lambda d: d["path"])
    assert facts["pod_mounts"] == sorted(facts["pod_mounts"], key=lambda d: d["path"])


def uvn(handle):
    return names.unique_volume_name(DRIVER, handle)


def number(device):
    """A block device's "MAJ:MIN", as the facts give it."""
    rdev = os.stat(device).st_rdev
    return "%d:%d" % (os.major(rdev), os.minor(rdev))


def test_facts_report_exactly_what_was_done(node, node2):
    os.makedirs(node.kubelet_dir)  # a node has its kubelet directory; node_volume_info fails without one
    empty = node.module("node_volume_info")
    assert empty["_rc"] == 0 and empty["changed"] is False, empty
    assert empty["node_facts"] == {"node_name": "node1", "reachable": True, "error": None,
                                   "kubelet_dir": node.kubelet_dir, "devices": [], "global_mounts": [],
                                   "pod_mounts": [], "ephemeral_volumes": [], "csi_node_ids": {}, "csi_nodes": {}}
    fsv = node.vol("pv-a", fs_type="xfs", size=320 * MiB, pods=[{"uid": POD1}, {"uid": POD2, "read_only": True}])
    blk = node.vol("pv-b", mode="Block", pods=[{"uid": POD1}])
    att = node.module("k8s_volume_attach", volumes=[fsv, blk], provision=True)
    dev_a, dev_b = [v["device"] for v in att["volumes"]]
    assert node.module("node_volume_mount", volumes=[fsv, blk])["_rc"] == 0
    # a second node on the same kernel and pool attaches its own volume: node1 must not report it
    other = dict(node2.vol("pv-z"), volume_attributes={"pool": node.pool})
    assert node2.module("k8s_volume_attach", volumes=[other], provision=True, loop_pools=[node.pool])["_rc"] == 0

    facts = node.module("node_volume_info")["node_facts"]
    check_schema(facts)
    gpath = names.device_mount_path(node.kubelet_dir, DRIVER, "pv-a.img")
    assert facts["devices"] == [
        {"unique_volume_name": uvn("pv-a.img"), "driver": DRIVER, "volume_handle": "pv-a.img", "device": dev_a,
         "size_bytes": 320 * MiB, "read_only": False},
        {"unique_volume_name": uvn("pv-b.img"), "driver": DRIVER, "volume_handle": "pv-b.img", "device": dev_b,
         "size_bytes": 64 * MiB, "read_only": False},
    ]
    [glob] = facts["global_mounts"]
    assert glob["fs_size_bytes"] and 300 * MiB < glob["fs_size_bytes"] <= 320 * MiB
    assert dict(glob, fs_size_bytes=None) == {
        "plugin": names.CSI_PLUGIN_NAME, "unique_volume_name": uvn("pv-a.img"), "driver": DRIVER,
        "volume_handle": "pv-a.img", "pv_name": "pv-a",
        "path": gpath, "mounted": True, "device": dev_a, "fs_type": "xfs", "fs_size_bytes": None, "read_only": False,
        "foreign": False, "uncertain": None, "unsafe": False,
        "device_number": number(dev_a), "attached_device": dev_a, "device_mismatch": False}
    assert facts["pod_mounts"] == sorted([
        {"pod_uid": POD1, "pv_name": "pv-a", "mode": "Filesystem", "mounted": True, "read_only": False,
         "path": names.pod_mount_path(node.kubelet_dir, POD1, "pv-a"), "device": dev_a,
         "unique_volume_name": uvn("pv-a.img"), "root_gid": 0, "root_mode": "0755", "size_bytes": None,
         **NOT_COMPARED, **HEALTHY},
        {"pod_uid": POD2, "pv_name": "pv-a", "mode": "Filesystem", "mounted": True, "read_only": True,
         "path": names.pod_mount_path(node.kubelet_dir, POD2, "pv-a"), "device": dev_a,
         "unique_volume_name": uvn("pv-a.img"), "root_gid": 0, "root_mode": "0755", "size_bytes": None,
         **NOT_COMPARED, **HEALTHY},
        {"pod_uid": POD1, "pv_name": "pv-b", "mode": "Block", "mounted": True, "read_only": False,
         "path": names.pod_device_path(node.kubelet_dir, POD1, "pv-b"), "device": dev_b,
         "unique_volume_name": uvn("pv-b.img"), "root_gid": None, "root_mode": None, "size_bytes": 64 * MiB,
         "device_number": number(dev_b), "attached_device": dev_b, "device_mismatch": False, **HEALTHY},
    ], key=lambda m: m["path"])
    assert node.module("node_volume_info")["node_facts"] == facts  # stable across runs
    facts2 = node2.module("node_volume_info")["node_facts"]
    assert [d["volume_handle"] for d in facts2["devices"]] == ["pv-z.img"]

    # an orphaned pod dir (nothing mounted) is reported as not mounted
    node.run("umount", names.pod_mount_path(node.kubelet_dir, POD2, "pv-a"))
    facts = node.module("node_volume_info")["node_facts"]
    orphan = [m for m in facts["pod_mounts"] if m["pod_uid"] == POD2][0]
    assert orphan["mounted"] is False and orphan["device"] is None and orphan["read_only"] is False
    assert orphan["unique_volume_name"] == uvn("pv-a.img")

    # a device detached behind kubevol's back is no longer reported
    node2.module("volume_detach", volumes=[other], loop_pools=[node.pool])
    assert node2.module("node_volume_info")["node_facts"]["devices"] == []


def ansible(node, *args, check=True):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_HOME=os.path.join(node.tmp, "ansible-home"),
               XDG_CACHE_HOME=os.path.join(node.tmp, "cache"), ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_NOCOLOR="1")
    env.pop("PYTHONPATH", None)  # the module must ship with its module_utils
    exe = os.path.join(os.path.dirname(sys.executable), "ansible")
    argv = node.argv(exe, "localhost", "-i", "localhost,", "-c", "local",
                     "-e", "ansible_python_interpreter=/usr/bin/python3") + list(args)
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env,
                          check=False)
    # the minimal callback prints "localhost | SUCCESS => {json}"
    at = proc.stdout.find("localhost | ")
    assert at >= 0, (proc.stdout, proc.stderr)
    return proc.returncode, json.loads(proc.stdout[proc.stdout.find("{", at):])


def test_through_ansible_adhoc(node):
    vol = node.vol("pv-ans", pods=[{"uid": POD1}])
    rc, res = ansible(node, "-m", "kubevol.volumes.k8s_volume_attach", "-a",
                      json.dumps({"volumes": [vol], "provision": True, "node_name": "node1",
                                  "kubelet_dir": node.kubelet_dir, "run_dir": node.run_dir,
                                  "loop_pools": [node.pool]}))
    assert rc == 0 and res["changed"] and res["volumes"][0]["device"].startswith("/dev/loop"), res
    rc, res = ansible(node, "-m", "kubevol.volumes.node_volume_mount", "--check", "-a",
                      json.dumps({"volumes": [vol], "node_name": "node1", "kubelet_dir": node.kubelet_dir,
                                  "run_dir": node.run_dir, "loop_pools": [node.pool]}))
    assert rc == 0 and res["changed"] and node.mounts_under() == [], res
    rc, res = ansible(node, "-m", "kubevol.volumes.node_volume_info", "-a",
                      "kubelet_dir=%s node_name=node1" % node.kubelet_dir)
    assert rc == 0 and res["changed"] is False, res
    assert [d["volume_handle"] for d in res["node_facts"]["devices"]] == ["pv-ans.img"]
    check_schema(res["node_facts"])


def test_through_ansible_hostile_name_fails_cleanly(node):
    rc, res = ansible(node, "-m", "kubevol.volumes.node_volume_mount", "-a",
                      json.dumps({"volumes": [node.vol("../x")], "kubelet_dir": node.kubelet_dir,
                                  "run_dir": node.run_dir}), check=False)
    assert rc != 0 and "refusing PV name '../x'" in res["msg"], res
    assert not os.path.exists(node.kubelet_dir)


def test_kernel_loop_listing_matches_losetup(tmp_path):
    """The loop driver lists devices through sysfs + LOOP_GET_STATUS64 (no process); losetup --list agrees."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import loop
    image = tmp_path / "listing.img"
    image.write_bytes(b"")
    os.truncate(str(image), 8 << 20)
    devices = []
    try:
        for extra in ([], ["--read-only"]):
            devices.append(subprocess.run(["losetup", "--find", "--show"] + extra + [str(image)], check=True,
                                          stdout=subprocess.PIPE, universal_newlines=True).stdout.strip())
        kernel = loop.kernel_loop_devices()
        listed = loop.parse_losetup(subprocess.run(loop.LOSETUP_LIST, check=True, stdout=subprocess.PIPE,
                                                   universal_newlines=True).stdout)
        ours = sorted((d for d in kernel if d.name in devices), key=lambda d: d.name)
        assert ours == sorted((d for d in listed if d.name in devices), key=lambda d: d.name)
        st = os.stat(str(image))
        assert [d.backs(st.st_dev, st.st_ino) for d in ours] == [True, True]
        assert sorted(d.read_only for d in ours) == [False, True]
        # find_device reads only the recorded device: the same answer, no scan; what is not /dev/loopN reads nothing
        assert sorted(loop.kernel_loop_devices(only=devices), key=lambda d: d.name) == ours
        assert loop.kernel_loop_devices(only=["/dev/sda", "/dev/loop0/../sda", None]) == []
    finally:
        for dev in devices:
            subprocess.run(["losetup", "-d", dev], check=False)


def test_mount_table_from_mountinfo_matches_findmnt(node):
    """list_mounts reads /proc/self/mountinfo (no process); findmnt agrees on every field kubevol reads, also for
    a bind of a subdirectory (SOURCE dev[/sub]), a read-only bind and a target with a space."""
    image = os.path.join(node.tmp, "mi.img")
    base, spaced = os.path.join(node.tmp, "mi-base"), os.path.join(node.tmp, "mi dir with space")
    node.run("truncate", "-s", "64M", image)
    node.run("mkfs.ext4", "-q", "-F", image)
    os.makedirs(base)
    os.makedirs(spaced)
    dev = node.run("losetup", "--find", "--show", image).stdout.strip()
    try:
        node.run("mount", dev, base)
        node.run("mkdir", os.path.join(base, "sub"))  # inside the mounted filesystem, in the node's namespace
        node.run("mount", "--bind", os.path.join(base, "sub"), spaced)
        node.run("mount", "-o", "remount,bind,ro", spaced)
        script = ("import json, subprocess, sys\n"
                  "sys.path.insert(0, %r)\n"
                  "from ansible_collections.kubevol.volumes.plugins.module_utils.node import mount\n"
                  "a = mount.parse_mountinfo(open('/proc/self/mountinfo').read())\n"
                  "b = mount.parse_findmnt(subprocess.run(mount.FINDMNT, stdout=subprocess.PIPE, "
                  "universal_newlines=True).stdout)\n"
                  "key = lambda m: (m.target, m.majmin, m.source, m.fstype, m.read_only, m.mount_read_only, "
                  "m.super_read_only)\n"
                  "print(json.dumps([sorted(map(key, a)), sorted(map(key, b))]))\n") % COLLECTIONS
        ours, findmnt = json.loads(node.run(sys.executable, "-c", script).stdout)
        assert ours == findmnt
        mine = [m for m in ours if m[0] == spaced]
        assert mine and mine[0][2] == "%s[/sub]" % dev and mine[0][5] is True  # read-only bind of a subdir
    finally:
        node.run("umount", spaced, check=False)
        node.run("umount", base, check=False)
        node.run("losetup", "-d", dev, check=False)


def test_missing_kubelet_dir_fails(node):
    """A mistyped kubelet_dir is an error, not a node with nothing mounted (which would plan every mount again)."""
    missing = os.path.join(node.tmp, "kubelet-typo")
    res = node.module("node_volume_info", kubelet_dir=missing)
    assert res["_rc"] != 0 and res["failed"], res
    assert "kubelet_dir %s does not exist on node node1" % missing in res["msg"], res
    assert "node_facts" not in res
    afile = os.path.join(node.tmp, "afile")
    open(afile, "w").close()
    res = node.module("node_volume_info", kubelet_dir=afile)
    assert res["_rc"] != 0 and "is not a directory" in res["msg"], res


def test_a_node_without_the_node_plugin_of_a_remote_controllers_driver_reports_no_id_and_no_warning(node, tmp_path):
    """A host that runs only the controller plugin (or none) of an external driver: no socket of it at all, so no
    CSINode entry and nothing to ask; a socket that is there but does not answer still warns."""
    os.makedirs(node.kubelet_dir, exist_ok=True)
    driver = "csi.vendor.example"
    own = {"controller": "ctl", "controller_socket": "/run/vendor/controller.sock"}
    res = node.module("node_volume_info", driver_options={driver: own})
    assert res["_rc"] == 0 and res["node_facts"]["csi_node_ids"] == {driver: None}, res
    assert not res.get("warnings"), res
    dead = str(tmp_path / "dead.sock")
    with open(dead, "w"):
        pass  # a file where the socket should be: nothing listens
    res = node.module("node_volume_info", driver_options={driver: dict(own, socket=dead)})
    assert res["_rc"] == 0 and res["node_facts"]["csi_node_ids"] == {driver: None}, res
    texts = [json.dumps(w) for w in res.get("warnings") or ()]
    assert any("gave no node id (NodeGetInfo)" in w and driver in w for w in texts), texts
