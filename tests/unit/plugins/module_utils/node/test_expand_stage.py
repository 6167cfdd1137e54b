# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The grow that ends a device driver's stage (node/expand_stage.py): which filesystems it grows and which it leaves,
with the commands a runner is given. The grow itself, on real loop devices and SSH test nodes, is
tests/e2e/test_snapshot_grow.py's."""

import types

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import CommandFailed
from ansible_collections.kubevol.volumes.plugins.module_utils.node.expand_stage import resize_staged

MiB = 1 << 20
GPATH = "/var/lib/kubelet/plugins/kubernetes.io/csi/loop.kubevol.io/abc/globalmount"


class Runner:
    """Answers xfs_io statfs with the filesystem's size, records every command, fails the grow when told to."""
    node, volume = "node1", "pv-x"

    def __init__(self, blocks, grow_rc=0):
        self.blocks, self.grow_rc, self.argvs = blocks, grow_rc, []

    def __call__(self, argv, data=None):
        self.argvs.append(argv)
        if argv[0] == "xfs_growfs":
            if self.grow_rc == 0:
                self.blocks *= 2
            return self.grow_rc, "", "xfs_growfs: failed" if self.grow_rc else ""
        if argv[0] in ("xfs_io", "xfs_db"):
            return 0, "geom.bsize = 4096\ngeom.datablocks = %d\n" % self.blocks, ""
        raise AssertionError("unexpected command %r" % (argv,))

    def check(self, argv, step, hint=None, ok=(0,), data=None):
        rc, out, err = self(argv, data)
        if rc not in ok:
            raise CommandFailed(step=step, node=self.node, volume=self.volume, cmd=" ".join(argv), rc=rc,
                                stderr=err, hint=hint)
        return rc, out, err


class Mounts:
    def __init__(self, *targets):
        self.targets = targets

    def at(self, target):
        return target if target in self.targets else None


@pytest.fixture
def device(tmp_path):
    """A regular file of 600 MiB (sparse): blockdev.device_size reads its size as the device's."""
    path = tmp_path / "image"
    with open(str(path), "wb") as handle:
        handle.truncate(600 * MiB)
    return str(path)


def _ctx(check_mode=False):
    return types.SimpleNamespace(check_mode=check_mode, node_name="node1", step=None)


def _item(**kwargs):
    fields = dict(block=False, read_only=False, pv_name="pv-x")
    fields.update(kwargs)
    return types.SimpleNamespace(**fields)


def _res(**kwargs):
    res = {"actions": [], "changed": False, "fs_type": "xfs", "formatted": False}
    res.update(kwargs)
    return res


def test_an_xfs_smaller_than_its_device_is_grown_after_the_mount(device):
    runner, res = Runner(300 * MiB // 4096), _res()
    assert resize_staged(_ctx(), runner, _item(), device, GPATH, Mounts(), res) == GPATH
    assert ["xfs_growfs", "-d", GPATH] in runner.argvs
    assert res["actions"] == ["grow filesystem"] and res["changed"]
    assert res["grown_online"] == {"old": 300 * MiB, "new": 600 * MiB}


def test_check_mode_says_it_would_grow_and_runs_no_grow(device):
    runner, res = Runner(300 * MiB // 4096), _res()
    resize_staged(_ctx(check_mode=True), runner, _item(), device, GPATH, Mounts(), res)
    assert res["actions"] == ["grow filesystem"] and res["grown_online"] == {"old": 300 * MiB, "new": 600 * MiB}
    assert [argv[0] for argv in runner.argvs] == ["xfs_db"]  # the backing read unmounted, nothing grown


@pytest.mark.parametrize("why", ["mounted before", "formatted", "ext4", "read-only", "block", "as large",
                                 "unknown"])
def test_what_it_leaves_as_it_is(device, why):
    runner, res, item, mounts = Runner(300 * MiB // 4096), _res(), _item(), Mounts()
    if why == "mounted before":
        mounts = Mounts(GPATH)  # NodeExpandVolume's, not the stage's
    elif why == "formatted":
        res["formatted"] = True
    elif why == "ext4":
        res["fs_type"] = "ext4"  # grown offline before the mount (node/stage.py)
    elif why == "read-only":
        item = _item(read_only=True)
    elif why == "block":
        item = _item(block=True)
    elif why == "as large":
        runner = Runner(600 * MiB // 4096)
    else:
        res["fs_type"] = "vfat"
    resize_staged(_ctx(), runner, item, device, GPATH, mounts, res)
    assert res["actions"] == [] and "grown_online" not in res
    assert not [argv for argv in runner.argvs if argv[0] == "xfs_growfs"]


def test_a_failed_grow_names_the_volume_and_the_command_to_run(device):
    runner = Runner(300 * MiB // 4096, grow_rc=1)
    with pytest.raises(CommandFailed) as failed:
        resize_staged(_ctx(), runner, _item(), device, GPATH, Mounts(), _res())
    assert "node node1 for volume pv-x" in failed.value.msg
    assert "no later run grows it: run `xfs_growfs -d %s` on the node" % GPATH in failed.value.msg
