"""A device is formatted only when every probe says it is blank; anything else is kept."""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess

import pytest

from conftest import MiB

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop_kernel import (
    LOOP_GET_STATUS64, LOOP_INFO64)

LOOP_SET_STATUS64 = 0x4C04
LO_FLAGS_PARTSCAN = 8

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


def image_digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


@pytest.mark.parametrize("on_device,asked,size", [("xfs", "ext4", 320 * MiB), ("ext4", "xfs", 64 * MiB)])
def test_existing_filesystem_of_other_type_is_refused_and_kept(node, on_device, asked, size):
    """A device holding another filesystem than the PV's fsType is not mounted: that volume fails naming both types
    (as mount-utils words it), its image is unchanged to the byte, and the other volume of the call is mounted."""
    vol = node.vol("pv-x", fs_type=asked, size=size, pods=[{"uid": POD}])
    good = node.vol("pv-good", fs_type="ext4", pods=[{"uid": POD}])
    node.run("truncate", "-s", str(size), node.image(vol))
    subprocess.run(["mkfs.%s" % on_device, "-q"] + (["-F"] if on_device == "ext4" else ["-f"]) + [node.image(vol)],
                   check=True)
    before = image_digest(node.image(vol))
    assert node.module("k8s_volume_attach", volumes=[vol, good], provision=True)["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol, good])
    assert res["_rc"] != 0 and res["failed"], res
    assert 'failed to mount the volume as "%s", it already contains %s' % (asked, on_device) in res["msg"], res["msg"]
    assert "node1" in res["msg"] and "pv-x" in res["msg"] and "fsType" in res["msg"]
    assert [f["volume"] for f in res["failures"]] == ["pv-x"], res["failures"]
    assert [v["pv_name"] for v in res["volumes"]] == ["pv-good"] and res["completed"] == ["pv-good"]
    gpath = names.device_mount_path(node.kubelet_dir, vol["driver"], vol["volume_handle"])
    targets = [m["target"] for m in node.mounts()]
    assert gpath not in targets and not [t for t in targets if "/pv-x/" in t], targets
    assert names.pod_mount_path(node.kubelet_dir, POD, "pv-good") in targets
    # a second try changes nothing either, and the image is unchanged (no mkfs, no fsck repair, no mount)
    again = node.module("node_volume_mount", volumes=[vol, good])
    assert again["_rc"] != 0 and not again["changed"], again
    assert node.module("volume_detach", volumes=[vol])["_rc"] == 0
    assert image_digest(node.image(vol)) == before


def test_force_reformats_other_type(node):
    vol = node.vol("pv-f", fs_type="ext4")
    node.run("truncate", "-s", "64M", node.image(vol))
    make_swap(node.image(vol))
    assert node.module("k8s_volume_attach", volumes=[vol])["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol], force=True)
    assert res["_rc"] == 0 and res["volumes"][0]["formatted"], res
    assert res["volumes"][0]["actions"][:2] == ["wipe", "format"]


def failing_probes(tmp_path, names=("blkid",)):
    """A PATH directory whose ``names`` fail as a probe reading a bad device does."""
    fake = tmp_path / "fakebin"
    fake.mkdir()
    for name in names:
        (fake / name).write_text("#!/bin/sh\necho '%s: probing failed: Input/output error' >&2\nexit 4\n" % name)
        (fake / name).chmod(0o755)
    return str(fake)


def write_zeros(image, size=64 * MiB):
    """A blank image that is not sparse: its zeros are data extents, so only the probes can say it is blank."""
    with open(image, "wb") as handle:
        for _mib in range(size // MiB):
            handle.write(bytes(MiB))


def test_blkid_failure_never_formats(node, tmp_path):
    fake = failing_probes(tmp_path)
    vol = node.vol("pv-b", pods=[{"uid": POD}])
    write_zeros(node.image(vol))
    assert node.module("k8s_volume_attach", volumes=[vol])["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol], extra_path=fake)
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
    write_zeros(node.image(vol))
    assert node.module("k8s_volume_attach", volumes=[vol])["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol], extra_path=str(fake))
    assert res["_rc"] != 0 and "refusing to format" in res["msg"] and "wipefs" in res["msg"], res
    assert node.run("blkid", "-p", node.loops()[0], check=False).returncode == 2


def test_a_sparse_image_is_proven_blank_without_the_probes(node, tmp_path):
    """The loop driver proves a device blank when its image has no data extent at all (SEEK_DATA): every byte
    reads as zero, so no probe could find a signature, and the three probe commands are not run (here they would
    fail). A provisioned image is such an image until something writes to it."""
    fake = failing_probes(tmp_path, ("blkid", "lsblk", "wipefs"))
    vol = node.vol("pv-new", pods=[{"uid": POD}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol], extra_path=fake)
    assert res["_rc"] == 0 and res["volumes"][0]["formatted"] is True, res
    assert node.run("blkid", "-p", "-s", "TYPE", "-o", "value", node.loops()[0]).stdout.strip() == "ext4"


@pytest.mark.parametrize("written", ["into the image", "through the device, not yet flushed"])
def test_one_byte_of_data_anywhere_takes_the_probes(node, tmp_path, written):
    """One byte outside the regions kubevol samples (at 10 MiB of 64), in the image or still in the device's page
    cache (an open writer that has not synced): the image is no longer all holes (the driver flushes the device
    before it looks), so the probes run, and a failing probe refuses."""
    fake = failing_probes(tmp_path)
    vol = node.vol("pv-one", pods=[{"uid": POD}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    target = node.image(vol) if written == "into the image" else node.loops()[0]
    writer = os.open(target, os.O_WRONLY)
    try:
        os.pwrite(writer, b"x", 10 * MiB)
        res = node.module("node_volume_mount", volumes=[vol], extra_path=fake)
    finally:
        os.close(writer)
    assert res["_rc"] != 0 and "refusing to format" in res["msg"] and "Input/output error" in res["msg"], res
    assert node.mounts_under() == []


def add_partition(device):
    """A partition on ``device`` without a partition table (BLKPG, addpart): the kernel lists it, no byte is
    written. The loop device needs its partition scan flag for that (LOOP_SET_STATUS64)."""
    fd = os.open(device, os.O_RDONLY)
    try:
        info = list(LOOP_INFO64.unpack(fcntl.ioctl(fd, LOOP_GET_STATUS64, bytes(LOOP_INFO64.size))))
        info[8] |= LO_FLAGS_PARTSCAN
        fcntl.ioctl(fd, LOOP_SET_STATUS64, LOOP_INFO64.pack(*info))
    finally:
        os.close(fd)
    subprocess.run(["addpart", device, "1", "2048", "4096"], check=True)


def test_a_blank_device_with_a_partition_on_it_takes_the_probes(node):
    """A partition the kernel lists on a sparse image (nothing written: added with BLKPG): the device is in use
    as a disk, so the zero proof is not enough; the probes run (lsblk lists the partition) and it is refused."""
    vol = node.vol("pv-part", pods=[{"uid": POD}])
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    dev = node.loops()[0]
    add_partition(dev)
    try:
        res = node.module("node_volume_mount", volumes=[vol])
    finally:
        subprocess.run(["delpart", dev, "1"], check=True)
    part = os.path.basename(dev) + "p1"
    assert res["_rc"] != 0 and "refusing to format" in res["msg"], res
    assert "partitions or holders on it (device-mapper, md) " + part in res["msg"], res["msg"]
    assert node.mounts_under() == []


def test_missing_device_never_formats(node):
    vol = node.vol("pv-nodev", pods=[{"uid": POD}])
    node.run("truncate", "-s", "64M", node.image(vol))
    res = node.module("node_volume_mount", volumes=[vol], device_timeout=1)
    assert res["_rc"] != 0 and "not attached" in res["msg"] and "attach it first" in res["msg"], res
    assert node.loops() == [] and node.mounts_under() == []
    assert subprocess.run(["blkid", "-p", node.image(vol)], check=False).returncode == 2


def test_fs_type_defaults_and_read_only_unformatted_refused(node):
    vol = node.vol("pv-ro", read_only=True)
    assert node.module("k8s_volume_attach", volumes=[vol], provision=True)["_rc"] == 0
    res = node.module("node_volume_mount", volumes=[vol])
    assert res["_rc"] != 0 and "read-only and it is blank, so it cannot be formatted" in res["msg"] \
        and "[KV-UNSAFE-FORMAT]" in res["msg"], res
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


def test_the_zero_proof_holds_only_for_the_image_the_device_is_bound_to(node):
    """Driver.reads_as_zeros measures the open image it compared by inode with what the loop device is bound to: a
    device bound to another sparse image, or the item's image path replaced by a symlink to a sparse file (after a
    byte was written to the real image), is never proven blank; then the probes decide."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop import LoopDriver
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import Runner
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item

    vols = [node.vol(name) for name in ("pv-a", "pv-b")]
    assert node.module("k8s_volume_attach", volumes=vols, provision=True)["_rc"] == 0
    items = [volume_item(v) for v in vols]
    runner = Runner(lambda argv, data=None: (1, "", "no command runs here"), node=node.name)
    driver = LoopDriver(runner, node.kubelet_dir, node.name, {"loop_pools": [node.pool]})
    devices = [driver.find_device(item) for item in items]
    assert all(devices) and devices[0] != devices[1], devices
    assert [driver.reads_as_zeros(item, dev) for item, dev in zip(items, devices)] == [True, True]
    assert driver.reads_as_zeros(items[0], devices[1]) is False  # pv-b's device is not pv-a's image
    image = node.image(vols[0])
    with open(image, "r+b") as handle:
        handle.seek(10 * MiB)
        handle.write(b"x")
    os.rename(image, image + ".real")
    os.symlink(node.image(vols[1]), image)  # the path now leads to a sparse file the device is not bound to
    try:
        assert driver.reads_as_zeros(items[0], devices[0]) is False
    finally:
        os.unlink(image)
        os.rename(image + ".real", image)
    assert node.module("volume_detach", volumes=vols, force=True)["_rc"] == 0
