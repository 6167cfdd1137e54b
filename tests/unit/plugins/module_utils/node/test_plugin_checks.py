"""hostPath's checkType (volume/host_path.py), local's path kinds (volume/local.py) and the non-attachable phases
(node/plugin_ops.py) on real files in a tmp dir; the mounts themselves: tests/integration/node/test_local_volume.py."""
import os
import socket
import stat

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node import plugin_ops
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.host_path import HostPathPlugin as host_path
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.local import LocalVolumePlugin as local
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item

HOST = "kubernetes.io/host-path"
LOCAL = "kubernetes.io/local-volume"


def ctx_for(tmp_path, check_mode=False):
    def refuse(argv, data=None):
        raise AssertionError("no command runs here: %r" % (argv,))
    return NodeContext(refuse, node_name="node1", kubelet_dir=str(tmp_path / "kubelet"), check_mode=check_mode,
                       driver_options={HOST: {"paths": [str(tmp_path)]}, LOCAL: {"paths": [str(tmp_path)]}})


def hp(path, kind):
    return volume_item({"pv_name": "pv-h", "plugin": HOST, "path": str(path), "host_path_type": kind})


def res():
    return {"actions": [], "changed": False, "diff": {"before": {}, "after": {}}}


def test_or_create(tmp_path):
    ctx = ctx_for(tmp_path)
    out = res()
    host_path.check_type(ctx, hp(tmp_path / "a" / "b", "DirectoryOrCreate"), str(tmp_path / "a" / "b"), out)
    assert out["changed"] and stat.S_IMODE(os.stat(str(tmp_path / "a" / "b")).st_mode) == 0o755 & ~_umask()
    out = res()
    host_path.check_type(ctx, hp(tmp_path / "f", "FileOrCreate"), str(tmp_path / "f"), out)
    assert out["changed"] and os.path.isfile(str(tmp_path / "f"))
    again = res()
    host_path.check_type(ctx, hp(tmp_path / "f", "FileOrCreate"), str(tmp_path / "f"), again)
    assert again["changed"] is False and again["actions"] == []


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_check_mode_creates_nothing(tmp_path):
    ctx = ctx_for(tmp_path, check_mode=True)
    out = res()
    host_path.check_type(ctx, hp(tmp_path / "d", "DirectoryOrCreate"), str(tmp_path / "d"), out)
    assert out["changed"] and out["actions"] and not os.path.exists(str(tmp_path / "d"))


@pytest.mark.parametrize("kind, make, words", [
    ("Directory", "file", "hostPath type check failed: {p} is not a directory, it's a File"),
    ("File", "dir", "hostPath type check failed: {p} is not a file, it's a Directory"),
    ("Socket", "file", "is not a socket file, it's a File"),
    ("CharDevice", "socket", "is not a character device, it's a Socket"),
    ("BlockDevice", "dir", "is not a block device, it's a Directory"),
    ("Directory", None, "hostPath {p} doesn't exist"),
    ("File", None, "hostPath {p} doesn't exist"),
])
def test_type_mismatch_has_the_kubelets_words(tmp_path, kind, make, words):
    path = str(tmp_path / "x")
    sock = None
    if make == "file":
        open(path, "w").close()
    elif make == "dir":
        os.mkdir(path)
    elif make == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(path)
    try:
        with pytest.raises(KubevolError) as err:
            host_path.check_type(ctx_for(tmp_path), hp(path, kind), path, res())
    finally:
        if sock:
            sock.close()
    assert words.format(p=path) in err.value.msg and "pv-h" in err.value.msg and "node1" in err.value.msg


def test_file_or_create_does_not_create_the_parent(tmp_path):
    path = str(tmp_path / "no" / "f")
    with pytest.raises(KubevolError) as err:
        host_path.check_type(ctx_for(tmp_path), hp(path, "FileOrCreate"), path, res())
    assert "no such file or directory" in err.value.msg and not os.path.exists(str(tmp_path / "no"))


def test_unset_type_checks_nothing(tmp_path):
    out = res()
    host_path.check_type(ctx_for(tmp_path), hp(tmp_path / "none", ""), str(tmp_path / "none"), out)
    assert out["changed"] is False


def test_local_path_kinds(tmp_path):
    ctx = ctx_for(tmp_path)
    item = volume_item({"pv_name": "pv-l", "plugin": LOCAL, "path": str(tmp_path / "f")})
    assert local.kind(ctx, item, str(tmp_path)) == "directory"
    open(str(tmp_path / "f"), "w").close()
    for path, what in ((tmp_path / "f", "is a regular file"), (tmp_path / "missing", "is missing")):
        with pytest.raises(KubevolError) as err:
            local.kind(ctx, item, str(path))
        assert what in err.value.msg and "only directory and block device are supported" in err.value.msg


def test_not_attachable(tmp_path):
    ctx = ctx_for(tmp_path)
    item = volume_item({"pv_name": "pv-l", "plugin": LOCAL, "path": str(tmp_path)})
    att = plugin_ops.attach(ctx, item)
    assert att["changed"] is False and att["volume_attachment"] is None and att["attached"] is False
    assert "not attachable" in att["not_attachable"]
    assert plugin_ops.expand_controller(ctx, item)["changed"] is False


def test_unmount_device_of_local_items_is_their_own():
    base = {"pv_name": "pv-l", "plugin": LOCAL, "path": "/mnt/disks/a"}
    assert volume_item(dict(base, unmount_device=False)).unmount_device is False
    assert volume_item(base).unmount_device is True
    csi = {"pv_name": "pv-c", "driver": "loop.kubevol.io", "volume_handle": "h", "unmount_device": False}
    assert volume_item(csi).unmount_device is True  # a CSI detach takes the device mount with it
