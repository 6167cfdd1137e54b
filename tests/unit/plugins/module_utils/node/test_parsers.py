"""Pure unit tests: parsers, filesystem data, the fail-closed probe, the lock, item validation."""
import json

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    InvalidInput, LockTimeout, ParseError, UnsafeName, UnsafeToFormat)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, mount
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import FILESYSTEMS, get_filesystem
from ansible_collections.kubevol.volumes.plugins.module_utils.node.lock import VolumeLock
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import Runner
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item

ITEM = {"pv_name": "pv-a", "driver": "loop.kubevol.io", "volume_handle": "a.img"}


def fake_runner(answers):
    """Runner answering by argv[0]: {name: (rc, out, err)}."""
    calls = []

    def raw(argv, data=None):
        calls.append(argv)
        return answers.get(argv[0], (0, "", ""))
    runner = Runner(raw, node="n1", volume="pv-a")
    runner.calls = calls
    return runner


def test_mkfs_and_grow_argv_follow_mount_utils():
    assert get_filesystem("ext4").mkfs_argv("/dev/x") == ["mkfs.ext4", "-F", "-m0", "/dev/x"]
    assert get_filesystem("ext3").mkfs_argv("/dev/x") == ["mkfs.ext3", "-F", "-m0", "/dev/x"]
    assert get_filesystem("xfs").mkfs_argv("/dev/x") == ["mkfs.xfs", "-f", "/dev/x"]
    assert get_filesystem("btrfs").mkfs_argv("/dev/x") == ["mkfs.btrfs", "/dev/x"]
    assert get_filesystem("ext4").grow_argv("/dev/x", "/m") == ["resize2fs", "/dev/x"]
    assert get_filesystem("xfs").grow_argv("/dev/x", "/m") == ["xfs_growfs", "-d", "/m"]
    assert get_filesystem("btrfs").grow_argv("/dev/x", "/m") == ["btrfs", "filesystem", "resize", "max", "/m"]
    assert get_filesystem("vfat") is None and sorted(FILESYSTEMS) == ["btrfs", "ext3", "ext4", "xfs"]


def test_fs_size_parsers():
    assert get_filesystem("ext4").parse_size("Block count:              16384\nBlock size:               4096\n") == 64 << 20
    assert get_filesystem("xfs").parse_size("fd.path = \"/m\"\ngeom.bsize = 4096\ngeom.agcount = 4\n"
                                            "geom.datablocks = 81920\n") == 320 << 20
    assert get_filesystem("xfs").parse_size("blocksize = 4096\ndblocks = 81920\n") == 320 << 20
    assert get_filesystem("btrfs").parse_size("superblock: bytenr=65536\ntotal_bytes\t\t268435456\n") == 256 << 20
    with pytest.raises(ValueError):
        get_filesystem("ext4").parse_size("garbage")
    runner = fake_runner({"dumpe2fs": (0, "nothing useful", "")})
    with pytest.raises(ParseError):
        get_filesystem("ext4").fs_size(runner, "/dev/x")


def test_grow_slack():
    xfs = get_filesystem("xfs")
    assert not xfs.needs_grow(100 << 20, (100 << 20) - 4096)
    assert xfs.needs_grow(120 << 20, 100 << 20)
    assert get_filesystem("ext4").needs_grow((64 << 20) + 4096, 64 << 20)


def test_parse_findmnt():
    out = json.dumps({"filesystems": [
        {"target": "/", "source": "/dev/sda1", "fstype": "ext4", "options": "rw,relatime", "maj:min": "8:1"},
        {"target": "/k/g", "source": "/dev/loop0", "fstype": "xfs", "options": "ro,relatime", "maj:min": "7:0"},
        {"target": "/k/p", "source": "/dev/loop0[/sub]", "fstype": "xfs", "options": "rw", "maj:min": "7:0"}]})
    table = mount.MountTable(mount.parse_findmnt(out))
    assert table.at("/k/g").read_only and not table.at("/k/p").read_only
    assert table.at("/k/p").source_device == "/dev/loop0"
    assert [m.target for m in table.of_device("7:0")] == ["/k/g", "/k/p"]
    assert mount.parse_findmnt("") == []
    with pytest.raises(ParseError):
        mount.parse_findmnt("not json")
    assert mount.mount_options(["noatime"], True) == ["defaults", "noatime", "ro"]


def test_blkid_export_parser():
    assert blockdev.parse_blkid_export("TYPE=ext4\n") == {"TYPE": "ext4"}
    assert blockdev.parse_blkid_export("PTTYPE=dos\n") == {"PTTYPE": "dos"}
    with pytest.raises(ParseError):
        blockdev.parse_blkid_export("garbage line\n")


def test_probe_blank_only_when_every_probe_agrees(monkeypatch):
    monkeypatch.setattr(blockdev, "is_block_device", lambda path: True)
    monkeypatch.setattr(blockdev, "first_data_offset", lambda path: None)
    blank = {"blkid": (2, "", ""), "lsblk": (0, json.dumps({"blockdevices": [{"name": "loop0"}]}), ""),
             "wipefs": (0, json.dumps({"signatures": []}), "")}
    assert blockdev.probe(fake_runner(blank), "/dev/loop0").blank
    cases = [
        dict(blank, blkid=(0, "TYPE=swap\n", "")),
        dict(blank, blkid=(0, "PTTYPE=gpt\n", "")),
        dict(blank, lsblk=(0, json.dumps({"blockdevices": [{"name": "loop0", "children": [{"name": "loop0p1"}]}]}), "")),
        dict(blank, wipefs=(0, json.dumps({"signatures": [{"type": "crypto_LUKS", "offset": "0x0"}]}), "")),
    ]
    for answers in cases:
        assert not blockdev.probe(fake_runner(answers), "/dev/loop0").blank
    # every probe says blank, but the device holds data in no format they know: not blank
    monkeypatch.setattr(blockdev, "first_data_offset", lambda path: 4096)
    found = blockdev.probe(fake_runner(blank), "/dev/loop0")
    assert not found.blank and "non-zero byte at offset 4096" in found.describe()
    monkeypatch.setattr(blockdev, "first_data_offset", lambda path: None)
    refused = [
        dict(blank, blkid=(4, "", "I/O error")),  # failed
        dict(blank, blkid=(2, "TYPE=ext4\n", "")),  # exit 2 but output: inconclusive
        dict(blank, blkid=(0, "", "")),  # success with nothing
        dict(blank, blkid=(8, "", "ambivalent result")),
        dict(blank, lsblk=(1, "", "boom")),
        dict(blank, wipefs=(0, "", "")),  # no answer is not "no signatures"
        dict(blank, wipefs=(1, "", "wipefs: error")),
    ]
    for answers in refused:
        with pytest.raises(UnsafeToFormat) as exc:
            blockdev.probe(fake_runner(answers), "/dev/loop0")
        assert "n1" in str(exc.value) and "pv-a" in str(exc.value)


def test_probe_refuses_a_missing_device():
    with pytest.raises(UnsafeToFormat):
        blockdev.probe(fake_runner({}), "/dev/does-not-exist")


def test_volume_item_validation():
    item = volume_item(dict(ITEM, pods=[{"uid": "u1", "read_only": True}]))
    assert item.unique_name == "kubernetes.io/csi/loop.kubevol.io^a.img" and item.pods[0].read_only
    for bad in ({"pv_name": "../x"}, {"pv_name": "a/b"}, {"pods": [{"uid": ".."}]}, {"driver": "a/b"}):
        with pytest.raises(UnsafeName):
            volume_item(dict(ITEM, **bad))
    # a volume handle is opaque: the item takes any the API accepts; the loop driver refuses what it cannot name
    # an image after (tests/unit/plugins/module_utils/test_handles.py)
    assert volume_item(dict(ITEM, volume_handle="x\x00")).volume_handle == "x\x00"
    for bad in ("", None, 7):
        with pytest.raises(InvalidInput):
            volume_item(dict(ITEM, volume_handle=bad))


def test_lock_times_out(tmp_path):
    with VolumeLock(str(tmp_path), "kubernetes.io/csi/d^h", 1, node="n1", volume="pv-a"):
        with pytest.raises(LockTimeout) as exc:
            with VolumeLock(str(tmp_path), "kubernetes.io/csi/d^h", 0.2, node="n1", volume="pv-a"):
                pass
    assert "pv-a" in str(exc.value) and "n1" in str(exc.value)
    with VolumeLock(str(tmp_path), "kubernetes.io/csi/d^h", 0):
        pass


def test_first_data_offset_reads_the_sampled_regions(tmp_path):
    image = tmp_path / "img"
    with open(str(image), "wb") as handle:
        handle.truncate(16 << 20)
    assert blockdev.first_data_offset(str(image)) is None
    for offset in (0, 8 << 20, (16 << 20) - 1):  # start, middle sample, last byte
        with open(str(image), "r+b") as handle:
            handle.seek(offset)
            handle.write(b"x")
        assert blockdev.first_data_offset(str(image)) is not None
        with open(str(image), "r+b") as handle:
            handle.seek(offset)
            handle.write(b"\0")
    small = tmp_path / "small"
    small.write_bytes(b"\0" * 1000 + b"log line\n")
    assert blockdev.first_data_offset(str(small)) == 1000


def test_first_data_offset_finds_data_in_the_sampled_regions_only(tmp_path):
    MiB = 1 << 20
    image = tmp_path / "img"
    with open(str(image), "wb") as fh:
        fh.truncate(8 * MiB)  # samples at 0, 2, 4, 6 MiB and the last MiB (7 MiB)
    assert blockdev.first_data_offset(str(image)) is None
    with open(str(image), "r+b") as fh:
        fh.seek(3 * MiB + 5)  # between samples: not seen (the probes look there)
        fh.write(b"x")
    assert blockdev.first_data_offset(str(image)) is None
    with open(str(image), "r+b") as fh:
        fh.seek(4 * MiB + 100)
        fh.write(b"\x01")
        fh.seek(8 * MiB - 1)
        fh.write(b"\x02")
    assert blockdev.first_data_offset(str(image)) == 4 * MiB + 100
    small = tmp_path / "small"
    small.write_bytes(bytes(1000) + b"\x03")  # smaller than one sample
    assert blockdev.first_data_offset(str(small)) == 1000
