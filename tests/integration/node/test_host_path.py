"""hostPath PVs on the node (issue 26): host_path.go checkType on real files, directories, a socket and devices."""
import os
import socket
import stat
import subprocess

import pytest

from conftest import MiB
from plugin_node_run import run, tree

HOST = "kubernetes.io/host-path"
POD1 = "33333333-3333-4333-8333-333333333333"
POD2 = "44444444-4444-4444-8444-444444444444"


def item(pv, path, kind="", pods=({"uid": POD1},)):
    return dict(pv_name=pv, plugin=HOST, driver=None, volume_handle=pv, path=path, host_path_type=kind,
                pods=list(pods))


def marker(node, uid, pv):
    return os.path.join(node.kubelet_dir, "pods", uid, "volumes", "kubernetes.io~host-path", pv)


@pytest.fixture
def root(node):
    path = os.path.join(node.tmp, "hp")
    os.makedirs(path)
    return path


def test_or_create_types_create_with_the_kubelets_modes(node, root):
    opts = {HOST: {"paths": [root]}}
    new_dir, new_file = os.path.join(root, "a", "b"), os.path.join(root, "f.log")
    vols = [item("pv-d", new_dir, "DirectoryOrCreate", [{"uid": POD1}, {"uid": POD2}]),
            item("pv-f", new_file, "FileOrCreate")]
    before = tree(node)
    check = run(node, "mount", vols, opts, check_mode=True)
    assert check["ok"] and check["changed"] and tree(node) == before, check
    res = run(node, "mount", vols, opts)
    assert res["ok"] and res["changed"], res
    assert stat.S_ISDIR(os.stat(new_dir).st_mode) and stat.S_IMODE(os.stat(new_dir).st_mode) == 0o755
    assert stat.S_ISREG(os.stat(new_file).st_mode) and stat.S_IMODE(os.stat(new_file).st_mode) == 0o644
    for uid, pv in ((POD1, "pv-d"), (POD2, "pv-d"), (POD1, "pv-f")):
        assert os.path.isdir(marker(node, uid, pv)) and os.listdir(marker(node, uid, pv)) == []
    assert node.mounts_under() == []  # hostPath mounts nothing
    again = run(node, "mount", vols, opts)
    assert again["ok"] and again["changed"] is False, again
    facts = run(node, "facts")["node_facts"]
    ours = sorted((m["pod_uid"], m["pv_name"], m["published"], m["mounted"], m["unique_volume_name"])
                  for m in facts["pod_mounts"] if m["plugin"] == HOST)
    assert ours == [(POD1, "pv-d", True, False, HOST + "/pv-d"), (POD1, "pv-f", True, False, HOST + "/pv-f"),
                    (POD2, "pv-d", True, False, HOST + "/pv-d")]
    # existing ones are only checked; FileOrCreate does not create a missing parent (host_path.go makeFile)
    with open(os.path.join(new_dir, "data"), "w") as handle:
        handle.write("kept")
    orphan = run(node, "mount", [item("pv-o", os.path.join(root, "no", "f"), "FileOrCreate")], opts)
    assert not orphan["ok"] and "no such file or directory" in orphan["msg"] and not os.path.exists(
        os.path.join(root, "no")), orphan
    # teardown removes the markers only
    check = run(node, "detach", vols, opts, check_mode=True)
    assert check["ok"] and check["changed"] and os.path.isdir(marker(node, POD1, "pv-d")), check
    down = run(node, "detach", vols, opts)
    assert down["ok"] and down["changed"] and not os.path.exists(marker(node, POD1, "pv-d")), down
    assert not os.path.exists(marker(node, POD2, "pv-d"))
    assert open(os.path.join(new_dir, "data")).read() == "kept" and os.path.exists(new_file)
    assert run(node, "detach", vols, opts)["changed"] is False


def test_every_type_is_checked(node, root):
    sock_path = os.path.join(root, "s.sock")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(sock_path)
    try:
        file_path, dir_path = os.path.join(root, "file"), os.path.join(root, "dir")
        open(file_path, "w").close()
        os.mkdir(dir_path)
        image = os.path.join(node.tmp, "hp.img")
        with open(image, "wb") as handle:
            handle.truncate(8 * MiB)
        dev = subprocess.run(["losetup", "-f", "--show", image], stdout=subprocess.PIPE, universal_newlines=True,
                             check=True).stdout.strip()
        opts = {HOST: {"paths": [root, "/dev/null", dev]}}
        good = [item("pv-1", dir_path, "Directory"), item("pv-2", file_path, "File"),
                item("pv-3", sock_path, "Socket"), item("pv-4", "/dev/null", "CharDevice"),
                item("pv-5", dev, "BlockDevice"), item("pv-6", os.path.join(root, "absent"), ""),
                item("pv-7", dir_path, "DirectoryOrCreate"), item("pv-8", file_path, "FileOrCreate")]
        res = run(node, "mount", good, opts)
        assert res["ok"] and len(res["volumes"]) == 8, res
        bad = {
            "pv-a": (item("pv-a", file_path, "Directory"), "hostPath type check failed: %s is not a directory, it's a "
                                                           "File" % file_path),
            "pv-b": (item("pv-b", dir_path, "File"), "is not a file, it's a Directory"),
            "pv-c": (item("pv-c", file_path, "Socket"), "is not a socket file, it's a File"),
            "pv-d": (item("pv-d", dev, "CharDevice"), "is not a character device, it's a BlockDevice"),
            "pv-e": (item("pv-e", "/dev/null", "BlockDevice"), "is not a block device, it's a CharDevice"),
            "pv-f": (item("pv-f", os.path.join(root, "absent"), "Directory"), "doesn't exist"),
            "pv-g": (item("pv-g", file_path, "DirectoryOrCreate"), "is not a directory, it's a File"),
            "pv-h": (item("pv-h", dir_path, "FileOrCreate"), "is not a file, it's a Directory"),
        }
        for pv, (vol, words) in sorted(bad.items()):
            out = run(node, "mount", [vol], opts)
            assert not out["ok"] and words in out["msg"] and pv in out["msg"] and "node1" in out["msg"], out
            assert not os.path.exists(marker(node, POD1, pv))
    finally:
        sock.close()


@pytest.mark.parametrize("case", ["outside", "symlink", "no roots", "relative"])
def test_refused_paths_create_nothing(node, root, case):
    outside = os.path.join(node.tmp, "outside")
    os.makedirs(outside)
    os.symlink(outside, os.path.join(root, "escape"))
    path = {"outside": os.path.join(outside, "new"), "symlink": os.path.join(root, "escape", "new"),
            "no roots": os.path.join(root, "new"), "relative": "hp/new"}[case]
    opts = {} if case == "no roots" else {HOST: {"paths": [root]}}
    before = tree(node)
    res = run(node, "mount", [item("pv-x", path, "DirectoryOrCreate")], opts)
    assert not res["ok"] and "pv-x" in res["msg"], res
    if case != "relative":
        assert "node1" in res["msg"] and "the paths of driver_options[" in res["msg"]  # said to a module caller
    assert tree(node) == before
