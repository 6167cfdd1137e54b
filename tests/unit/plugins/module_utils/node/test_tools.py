# -*- coding: utf-8 -*-
"""node/tools.py: a step's tools are looked for before the step, in a real and a check run alike; and the blank
probe reads a check run's backing file, never a file given as a device in a real run."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import UnsafeToFormat
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, tools
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import Ext4, Xfs
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import Runner


def runner(calls=None):
    def raw(argv, data=None):
        if calls is not None:
            calls.append(argv[0])
        return {"blkid": (2, "", ""), "wipefs": (0, json.dumps({"signatures": []}), "")}.get(argv[0], (0, "", ""))
    return Runner(raw, node="node7", volume="pv-a")


@pytest.fixture
def missing(monkeypatch):
    """The node has every tool but those added to the returned set."""
    gone = set()
    monkeypatch.setattr(tools, "_found", {})
    monkeypatch.setattr(tools, "find_executable", lambda name: None if name in gone else "/usr/sbin/" + name)
    return gone


def test_a_missing_tool_fails_naming_the_volume_the_node_the_step_and_the_package(missing):
    tools.require(runner(), "formatting it as xfs", "mkfs.xfs")
    missing.add("mkfs.xfs")
    tools._found.clear()
    with pytest.raises(tools.ToolMissing) as err:
        tools.require(runner(), "formatting it as xfs", "mkfs.xfs")
    assert err.value.msg == ("volume pv-a on node node7: formatting it as xfs needs mkfs.xfs, which is not installed "
                             "there; install the xfsprogs package on node node7 and run again [KV-TOOL-MISSING]")
    assert err.value.to_result()["code"] == "KV-TOOL-MISSING" and err.value.kwargs["tool"] == "mkfs.xfs"


@pytest.mark.parametrize("fs,mountpoint,needed", [
    (Xfs(), "/mnt/g", {"xfs_growfs", "xfs_io"}),
    (Ext4(), "/mnt/g", {"resize2fs", "dumpe2fs"}),
    (Ext4(), None, {"resize2fs", "dumpe2fs", "e2fsck"}),  # offline: a forced fsck first
])
def test_growth_needs_the_grow_and_size_tools(missing, fs, mountpoint, needed):
    for tool in sorted(needed):
        missing.clear()
        missing.add(tool)
        tools._found.clear()
        with pytest.raises(tools.ToolMissing) as err:
            tools.require_grow(runner(), fs, mountpoint)
        assert "growing its %s filesystem needs %s" % (fs.NAME, tool) in err.value.msg


def test_the_probe_reads_a_backing_file_only_in_a_check_run(tmp_path, missing):
    image = tmp_path / "pv-a.img"
    image.write_bytes(b"\0" * 4096)
    with pytest.raises(UnsafeToFormat) as err:
        blockdev.probe(runner(), str(image))  # a real run: a file is no device
    assert "not a block device" in err.value.msg
    calls = []
    found = blockdev.probe(runner(calls), str(image), backing=True)
    assert found.blank and calls == ["blkid", "wipefs"]  # lsblk reads block devices only
    image.write_bytes(b"\0" * 1024 + b"data" + b"\0" * 1024)
    assert not blockdev.probe(runner(), str(image), backing=True).blank  # the sampled reads still run
    assert blockdev.device_size(runner(), str(image)) == 2052
    missing.add("wipefs")
    tools._found.clear()
    with pytest.raises(tools.ToolMissing):
        blockdev.probe(runner(), str(image), backing=True)
