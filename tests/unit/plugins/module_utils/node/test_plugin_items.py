"""Local and hostPath volume items (node/volume.py) and the node's allowed-directory check (node/paths.py)."""
import os

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node import paths
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item, unique_name_of

LOCAL = "kubernetes.io/local-volume"
HOST = "kubernetes.io/host-path"


def local(**kw):
    raw = {"pv_name": "pv-l", "plugin": LOCAL, "driver": None, "volume_handle": "pv-l", "path": "/mnt/disks/d1"}
    raw.update(kw)
    return raw


def test_local_item_fields_and_unique_name():
    item = volume_item(local(fs_type="xfs"))
    assert (item.plugin, item.driver, item.volume_handle, item.path, item.fs_type) == (
        LOCAL, None, "pv-l", "/mnt/disks/d1", "xfs")
    assert item.unique_name == "kubernetes.io/local-volume/pv-l" == unique_name_of(local())
    assert not item.csi


def test_host_path_item_and_csi_default():
    item = volume_item({"pv_name": "pv-h", "plugin": HOST, "path": "/srv/h", "host_path_type": "DirectoryOrCreate"})
    assert item.unique_name == "kubernetes.io/host-path/pv-h" and item.volume_handle == "pv-h"
    assert item.host_path_type == "DirectoryOrCreate"
    csi = volume_item({"pv_name": "pv-c", "driver": "loop.kubevol.io", "volume_handle": "h"})
    assert csi.plugin == "kubernetes.io/csi" and csi.csi and csi.path is None
    assert csi.unique_name == "kubernetes.io/csi/loop.kubevol.io^h"


@pytest.mark.parametrize("path", ["relative/dir", "/mnt/disks/../../etc", "/mnt/disks/./d", "/mnt//disks",
                                  "/mnt/disks/", "/mnt/di\x00sks", "", 5])
def test_bad_paths_refused_naming_pv_and_field(path):
    with pytest.raises(InvalidInput) as err:
        volume_item(local(path=path))
    assert "path of PV pv-l" in err.value.msg


def test_a_teardown_item_without_a_path_is_taken_and_refused_where_a_path_is_needed(tmp_path):
    """The planner builds a teardown from node facts alone when the PV is gone: no path. Unmounting needs none;
    resolving one (every step that mounts, formats or creates) refuses it, naming the PV."""
    item = volume_item(local(path=None))
    assert item.path is None
    with pytest.raises(KubevolError) as err:
        paths.resolve(_ctx(tmp_path, ["/mnt/disks"]), item)
    assert "pv-l" in str(err.value) and "not absolute" in str(err.value)


@pytest.mark.parametrize("raw, field", [
    (local(plugin="kubernetes.io/nfs"), "plugin of PV pv-l"),
    ({"pv_name": "pv-l", "plugin": HOST, "path": "/srv/h", "host_path_type": "Pipe"}, "host_path_type of PV pv-l"),
    (local(host_path_type="Directory"), "host_path_type of PV pv-l"),
    (local(driver="loop.kubevol.io"), "driver of PV pv-l"),
    (local(volume_handle="other"), "volume_handle of PV pv-l"),
    (local(ephemeral=True), "ephemeral of PV pv-l"),
    ({"pv_name": "pv-c", "driver": "loop.kubevol.io", "volume_handle": "h", "path": "/x"}, "path of PV pv-c"),
])
def test_bad_fields_refused(raw, field):
    with pytest.raises(InvalidInput) as err:
        volume_item(raw)
    assert field in err.value.msg


def test_allowed_is_a_string_check():
    roots = ["/mnt/disks", "/srv"]
    assert driver_options.allowed("/mnt/disks", roots)
    assert driver_options.allowed("/mnt/disks/a/b", roots)
    assert not driver_options.allowed("/mnt/disksX", roots)
    assert not driver_options.allowed("/mnt/disks/../etc", roots)
    assert not driver_options.allowed("/etc", roots)
    assert not driver_options.allowed("/srv/x", ["/srv/"])  # a root that is not normalized allows nothing
    assert driver_options.options_for({}, LOCAL) == {"paths": ["/mnt/disks"]}
    assert driver_options.options_for({}, HOST) == {"paths": []}
    assert driver_options.options_for({HOST: {"paths": ["/a"]}}, HOST) == {"paths": ["/a"]}


def _ctx(tmp_path, roots, plugin=LOCAL):
    return NodeContext(lambda argv, data=None: (0, "", ""), node_name="node1", kubelet_dir=str(tmp_path / "kubelet"),
                       driver_options={plugin: {"paths": roots}})


def test_resolve_inside_and_symlinks(tmp_path):
    root = tmp_path / "disks"
    (root / "d1").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    os.symlink(str(tmp_path / "outside"), str(root / "escape"))
    os.symlink(str(root / "d1"), str(root / "alias"))
    ctx = _ctx(tmp_path, [str(root)])
    assert paths.resolve(ctx, volume_item(local(path=str(root / "d1")))) == str(root / "d1")
    assert paths.resolve(ctx, volume_item(local(path=str(root / "alias")))) == str(root / "d1")  # stays inside
    assert paths.resolve(ctx, volume_item(local(path=str(root / "new")))) == str(root / "new")  # not there yet
    with pytest.raises(KubevolError) as err:
        paths.resolve(ctx, volume_item(local(path=str(root / "escape" / "x"))))
    msg = err.value.msg
    assert "pv-l" in msg and "node1" in msg and str(tmp_path / "outside") in msg and str(root) in msg
    # the setting named once, in its reader's words (the role's variable, or the module's option)
    assert 'the paths of kubevol_driver_options["kubernetes.io/local-volume"]' in words.say(msg, words.ROLE)
    assert 'the paths of driver_options["kubernetes.io/local-volume"]' in words.say(msg)


def test_resolve_outside_and_no_roots(tmp_path):
    ctx = _ctx(tmp_path, [str(tmp_path / "disks")])
    with pytest.raises(KubevolError) as err:
        paths.resolve(ctx, volume_item(local(path="/etc")))
    assert "/etc is outside the allowed directories" in err.value.msg and "node1" in err.value.msg
    host = _ctx(tmp_path, [], plugin=HOST)
    with pytest.raises(KubevolError) as err:
        paths.resolve(host, volume_item({"pv_name": "pv-h", "plugin": HOST, "path": str(tmp_path)}))
    assert "none (nothing is allowed)" in err.value.msg and "hostPath PV pv-h" in err.value.msg


def test_root_that_is_a_symlink(tmp_path):
    real = tmp_path / "real"
    (real / "d1").mkdir(parents=True)
    os.symlink(str(real), str(tmp_path / "disks"))
    ctx = _ctx(tmp_path, [str(tmp_path / "disks")])
    assert paths.resolve(ctx, volume_item(local(path=str(tmp_path / "disks" / "d1")))) == str(real / "d1")


def test_context_serves_local_items_without_a_driver(tmp_path):
    ctx = _ctx(tmp_path, ["/mnt/disks"])
    assert ctx.items([local()])[0].plugin == LOCAL and ctx.refused == []


def test_paths_option_must_be_a_list(tmp_path):
    with pytest.raises(InvalidInput) as err:  # a string: its characters would include "/"
        _ctx(tmp_path, "/mnt/disks")  # refused when the node's context is built, before any volume is looked at
    assert "kubernetes.io/local-volume.paths must be a list of absolute paths" in err.value.msg
