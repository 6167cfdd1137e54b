"""A device is formatted only when every probe says it is blank; anything else is kept."""
import hashlib
import json
import shutil
import subprocess

import pytest

from conftest import MiB

from ansible_collections.kubevol.volumes.plugins.module_utils import names

POD = "33333333-3333-4333-8333-333333333333"


def head_digest(path, size=4 * MiB):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read(size)).hexdigest()


def make_partition_table(image):
    if shutil.which("sfdisk"):
        subprocess.run(["sfdisk", "--quiet", image], input="label: dos\n,32M,L\n", universal_newlines=True,
                       check=True)
    else:  # a DOS MBR with one Linux partition, written by hand
        entry = bytes([0, 0, 0, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (65536).to_bytes(4, "little")
        with open(image, "r+b") as handle:
            handle.seek(446)
            handle.write(entry)
            handle.seek(510)
            handle.write(b"\x55\xaa")


def make_swap(image):
    subprocess.run(["mkswap", image], stdout=subprocess.DEVNULL, check=True)


@pytest.mark.parametrize("prepare,expect", [
    (make_partition_table, "partition table"),
    (make_swap, "swap"),
])
def test_partition_table_or_other_signature_never_formatted(node, prepare, expect):
    vol = node.vol("pv-s", pods=[{"uid": POD}])
    node.run("truncate", "-s", "64M", node.image(vol))
    prepare(node.image(vol))
    before = head_digest(node.image(vol))
    assert node.module("k8s_volume_attach", volumes=[vol])["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol])
    assert res["_rc"] != 0 and res["failed"], res
    assert "refusing to format" in res["msg"] and expect in res["msg"], res["msg"]
    assert "node1" in res["msg"] and "pv-s" in res["msg"]
    assert node.mounts_under() == []
    assert head_digest(node.image(vol)) == before


def test_existing_filesystem_of_other_type_is_kept_and_reported(node):
    vol = node.vol("pv-x", fs_type="xfs", pods=[{"uid": POD}])
    node.run("truncate", "-s", "64M", node.image(vol))
    subprocess.run(["mkfs.ext4", "-q", "-F", node.image(vol)], check=True)
    assert node.module("k8s_volume_attach", volumes=[vol])["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol])
    assert res["_rc"] == 0, res
    vres = res["volumes"][0]
    assert vres["formatted"] is False and vres["fs_type"] == "ext4"
    assert vres["fs_type_mismatch"] == {"expected": "xfs", "found": "ext4"}
    assert "kept the existing filesystem" in json.dumps(res.get("warnings"))
    gpath = names.device_mount_path(node.kubelet_dir, vol["driver"], vol["volume_handle"])
    assert [m["fstype"] for m in node.mounts() if m["target"] == gpath] == ["ext4"]


def test_force_reformats_other_type(node):
    vol = node.vol("pv-f", fs_type="ext4")
    node.run("truncate", "-s", "64M", node.image(vol))
    make_swap(node.image(vol))
    assert node.module("k8s_volume_attach", volumes=[vol])["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol], force=True)
    assert res["_rc"] == 0 and res["volumes"][0]["formatted"], res
    assert res["volumes"][0]["actions"][:2] == ["wipe", "format"]


def test_blkid_failure_never_formats(node, tmp_path):
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "blkid").write_text("#!/bin/sh\necho 'blkid: probing failed: Input/output error' >&2\nexit 4\n")
    (fake / "blkid").chmod(0o755)
    vol = node.vol("pv-b", pods=[{"uid": POD}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol], extra_path=str(fake))
    assert res["_rc"] != 0 and "refusing to format" in res["msg"] and "Input/output error" in res["msg"], res
    dev = node.loops()[0]
    assert node.run("blkid", "-p", dev, check=False).returncode == 2  # still blank
    assert node.mounts_under() == []


def test_inconclusive_wipefs_never_formats(node, tmp_path):
    fake = tmp_path / "fakebin"
    fake.mkdir()
    (fake / "wipefs").write_text("#!/bin/sh\nexit 0\n")  # succeeds but says nothing
    (fake / "wipefs").chmod(0o755)
    vol = node.vol("pv-w")
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol], extra_path=str(fake))
    assert res["_rc"] != 0 and "refusing to format" in res["msg"] and "wipefs" in res["msg"], res
    assert node.run("blkid", "-p", node.loops()[0], check=False).returncode == 2


def test_missing_device_never_formats(node):
    vol = node.vol("pv-nodev", pods=[{"uid": POD}])
    node.run("truncate", "-s", "64M", node.image(vol))
    res = node.module("node_volume_mount", volumes=[vol], device_timeout=1)
    assert res["_rc"] != 0 and "not attached" in res["msg"] and "k8s_volume_attach" in res["msg"], res
    assert node.loops() == [] and node.mounts_under() == []
    assert subprocess.run(["blkid", "-p", node.image(vol)], check=False).returncode == 2


def test_fs_type_defaults_and_read_only_unformatted_refused(node):
    vol = node.vol("pv-ro", read_only=True)
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol])
    assert res["_rc"] != 0 and "UnformattedReadOnly" in res["msg"], res
    assert node.run("blkid", "-p", node.loops()[0], check=False).returncode == 2


@pytest.mark.parametrize("where", ["start", "end"])
def test_data_without_any_signature_is_never_formatted(node, where):
    """A file of text has no signature blkid, lsblk or wipefs knows; it is still not blank (issue: an
    application's log formatted as ext4). Refused, bytes unchanged; force=true is the only way round."""
    vol = node.vol("pv-log", pods=[{"uid": POD}])
    image = node.image(vol)
    node.run("truncate", "-s", "16M", image)
    text = b"2026-11-23T10:00:00Z app started, serving requests\n" * 20000  # ~1 MiB of log lines
    with open(image, "r+b") as handle:
        handle.seek(0 if where == "start" else 15 * MiB)
        handle.write(text[:MiB])
    before = node.sha256(image)
    assert node.module("k8s_volume_attach", volumes=[vol])["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol])
    assert res["_rc"] != 0 and res["failed"], res
    assert "refusing to format" in res["msg"] and "non-zero byte at offset" in res["msg"], res["msg"]
    assert "node1" in res["msg"] and "pv-log" in res["msg"]
    assert node.mounts_under() == []
    assert node.sha256(image) == before
    res = node.module("node_volume_mount", volumes=[vol], force=True)
    assert res["_rc"] == 0 and res["volumes"][0]["formatted"], res


def test_an_fs_type_kubevol_does_not_create_fails_its_volume_alone_and_touches_nothing(node):
    """The node modules take any fs_type (one PV's unusual csi.fsType must not fail the call for the node's other
    volumes); a volume whose blank device would get such a type fails alone, its device untouched, even with
    force=true over an old signature."""
    fat = node.vol("pv-fat", fs_type="vfat", pods=[{"uid": POD}])
    ok = node.vol("pv-ok", pods=[{"uid": POD}])
    old = node.vol("pv-old", fs_type="vfat")
    for vol in (fat, ok, old):
        node.run("truncate", "-s", "64M", node.image(vol))
    make_swap(node.image(old))
    before = dict((v["pv_name"], head_digest(node.image(v))) for v in (fat, old))
    assert node.module("k8s_volume_attach", volumes=[fat, ok, old])["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[fat, ok])
    assert res["_rc"] != 0 and res["failed"], res
    assert "pv-fat on node node1: kubevol creates only btrfs, ext3, ext4, xfs filesystems" in res["msg"], res["msg"]
    assert [v["pv_name"] for v in res["volumes"]] == ["pv-ok"] and res["volumes"][0]["formatted"], res
    forced = node.module("node_volume_mount", volumes=[old], force=True)
    assert forced["_rc"] != 0 and "pv-old" in forced["msg"] and "wipe" not in json.dumps(forced.get("volumes")), forced
    assert dict((v["pv_name"], head_digest(node.image(v))) for v in (fat, old)) == before
    assert node.module("volume_detach", volumes=[fat, ok, old], force=True)["_rc"] == 0
