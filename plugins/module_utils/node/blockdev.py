# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Block devices: size, identity, waiting, and the fail-closed "is it blank?" probe.

A device counts as blank only when three independent probes all positively say so (mount-utils'
``blkid -p`` exit 2, ``lsblk`` with no fstype, pttype or children, ``wipefs`` listing no signature)
and it reads as zeros where a filesystem or partition table would write (first_data_offset).
Any failing or unparseable probe raises :class:`UnsafeToFormat`: kubevol never formats on doubt.

One proof stands in for the probes and the sampled reads: the driver's own, that every byte of the device is
zero (the loop driver: its image has no data extent at all). Every signature a probe knows is non-zero bytes, so
none could find one, and it covers every byte where the samples cover five MiB. The kernel's children of the
device (partitions, holders: sysfs) are still checked, as lsblk's would be.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat
import time

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import ParseError, UnsafeToFormat
from ansible_collections.kubevol.volumes.plugins.module_utils.common.value import REQUIRED, Value
from ansible_collections.kubevol.volumes.plugins.module_utils.node import tools

BLKID_NOTHING_FOUND = 2


def is_block_device(path):
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


def is_regular_file(path):
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def device_number(path):
    """'major:minor' of a block device node (or of the device behind a bind-mounted node)."""
    rdev = os.stat(path).st_rdev
    return "%d:%d" % (os.major(rdev), os.minor(rdev))


def device_for_number(majmin):
    """/dev/<name> of the block device 'major:minor' (from sysfs), or None."""
    try:
        with open("/sys/dev/block/%s/uevent" % majmin) as handle:
            for line in handle:
                if line.startswith("DEVNAME="):
                    return "/dev/" + line.strip().split("=", 1)[1]
    except (IOError, OSError):
        return None
    return None


def sysfs_attribute(device, name):
    """A block device's sysfs attribute (/sys/dev/block/<major:minor>/<name>) as an int, or None when unreadable.

    The kernel's own numbers, read without a process: a node's facts read two per device."""
    try:
        with open("/sys/dev/block/%s/%s" % (device_number(device), name)) as handle:
            return int(handle.read().strip())
    except (IOError, OSError, ValueError):
        return None


def device_size(runner, device, step="read device size"):
    """Size in bytes as the kernel sees it: sysfs ``size`` (always 512-byte sectors), the number
    ``blockdev --getsize64`` reads through BLKGETSIZE64; the command when sysfs cannot be read. A regular file (a
    check run's backing, before the attach: the loop image) has the size its device will have."""
    if is_regular_file(device):
        return os.stat(device).st_size
    sectors = sysfs_attribute(device, "size")
    if sectors is not None:
        return sectors * 512
    argv = ["blockdev", "--getsize64", device]
    rc, out, err = runner.check(argv, step=step)
    try:
        return int(out.strip())
    except ValueError:
        raise ParseError(cmd=" ".join(argv), reason="expected an integer", output=out)


def device_read_only(runner, device):
    """The device's read-only flag: sysfs ``ro`` (what ``blockdev --getro`` reads), else the command."""
    flag = sysfs_attribute(device, "ro")
    if flag is not None:
        return flag == 1
    argv = ["blockdev", "--getro", device]
    rc, out, err = runner.check(argv, step="read device read-only flag")
    return out.strip() == "1"


def wait_for_device(find, timeout, interval=0.5, clock=time.monotonic, sleep=time.sleep):
    """Call ``find()`` until it returns a device path that exists, at most ``timeout`` seconds."""
    deadline = clock() + max(0, timeout)
    while True:
        device = find()
        if device and is_block_device(device):
            return device
        if clock() >= deadline:
            return None
        sleep(interval)


def parse_blkid_export(out, cmd="blkid -p -o export"):
    """KEY=value lines to a dict; any other line is an error (as mount-utils getDiskFormat)."""
    values = {}
    for line in out.splitlines():
        line = line.strip()
        if not line:
            continue
        if "=" not in line:
            raise ParseError(cmd=cmd, reason="a line is not KEY=value", output=out)
        key, value = line.split("=", 1)
        values[key] = value
    return values


def parse_lsblk(out, cmd="lsblk -J"):
    try:
        devices = json.loads(out)["blockdevices"]
        return devices[0]
    except (ValueError, KeyError, IndexError, TypeError):
        raise ParseError(cmd=cmd, reason="expected JSON with one blockdevices entry", output=out)


def parse_wipefs(out, cmd="wipefs --no-act --json"):
    """Signatures as 'type@offset' strings. Empty output is inconclusive, hence an error."""
    try:
        signatures = json.loads(out)["signatures"]
        return tuple("%s@%s" % (s.get("type"), s.get("offset")) for s in signatures)
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ParseError(cmd=cmd, reason="expected JSON with a signatures list", output=out)


class Probe(Value):
    FIELDS = (
        ("device", REQUIRED),  # str
        ("fs_type", ""),  # str
        ("pttype", ""),  # str
        ("lsblk_fstype", ""),  # str
        ("children", ()),  # Tuple[str, ...]
        ("signatures", ()),  # Tuple[str, ...]
        ("data_offset", None),  # Optional[int]: first non-zero byte seen in the sampled regions
    )

    @property
    def blank(self):
        return not (self.fs_type or self.pttype or self.lsblk_fstype or self.children or self.signatures
                    or self.data_offset is not None)

    def describe(self):
        parts = []
        if self.fs_type:
            parts.append("a %s signature" % self.fs_type)
        if self.pttype:
            parts.append("a %s partition table" % self.pttype)
        if self.children:
            parts.append("partitions or holders on it (device-mapper, md) %s" % ", ".join(self.children))
        if self.signatures:
            parts.append("signatures %s" % ", ".join(self.signatures))
        if self.lsblk_fstype and not self.fs_type:
            parts.append("lsblk fstype %s" % self.lsblk_fstype)
        if self.data_offset is not None and not parts:
            # a blank device reads as zeros where a filesystem keeps its metadata
            parts.append("data (a non-zero byte at offset %d) in no format blkid, lsblk or wipefs knows"
                         % self.data_offset)
        return "it holds " + "; ".join(parts) if parts else "it is blank"


def _inconclusive(runner, device, argv, rc, out, err, why):
    return UnsafeToFormat(device=device, volume=runner.volume, node=runner.node,
                          reason="probe `%s` %s (exit %s: %s), so what it holds is unknown; check the device and "
                                 "the kernel log (dmesg), then run again"
                          % (" ".join(argv), why, rc, (err or out or "").strip()))


def blkid_probe(runner, device):
    """(TYPE, PTTYPE) from ``blkid -p``; ('', '') only on exit 2 with no output."""
    argv = ["blkid", "-p", "-s", "TYPE", "-s", "PTTYPE", "-o", "export", device]
    rc, out, err = runner(argv)
    if rc == BLKID_NOTHING_FOUND and not out.strip():
        return "", ""
    if rc != 0:
        raise _inconclusive(runner, device, argv, rc, out, err, "failed")
    try:
        values = parse_blkid_export(out, " ".join(argv))
    except ParseError:
        raise _inconclusive(runner, device, argv, rc, out, err, "gave unparseable output")
    if not values:
        raise _inconclusive(runner, device, argv, rc, out, err, "succeeded without reporting anything")
    return values.get("TYPE", ""), values.get("PTTYPE", "")


SAMPLE_BYTES = 1 << 20
_ZEROS = bytes(SAMPLE_BYTES)


def first_data_offset(device, sample=SAMPLE_BYTES):
    """Offset of the first non-zero byte in the regions filesystems and partition tables write first (the first
    and last MiB: superblocks, GPT and its backup, md and ZFS end labels) and in three MiB samples in between
    (1/4, 1/2, 3/4), or None when all read as zeros. kubevol goes further than mount-utils here: a device whose
    content no probe recognises (a log file, an unknown format) is not blank because of that."""
    fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        starts = sorted(set(max(0, min(size - sample, int(size * f))) for f in (0, 0.25, 0.5, 0.75, 1)))
        for start in starts:
            chunk = os.pread(fd, sample, start)
            if chunk == (_ZEROS if len(chunk) == SAMPLE_BYTES else bytes(len(chunk))):
                continue  # a memcmp; lstrip would copy the MiB and scan it byte by byte (docs/performance.md)
            stripped = chunk.lstrip(b"\0")
            if stripped:
                return start + len(chunk) - len(stripped)
    finally:
        os.close(fd)
    return None


def sysfs_children(device):
    """The partitions and holders (device-mapper, md) the kernel lists on ``device``, what lsblk shows as its
    children, read from sysfs; None when sysfs cannot be read."""
    try:
        base = "/sys/dev/block/%s" % device_number(device)
        name = os.path.basename(os.path.realpath(base))
        partitions = sorted(entry for entry in os.listdir(base)
                            if entry.startswith(name) and os.path.exists(os.path.join(base, entry, "partition")))
        return tuple(partitions) + tuple(sorted(os.listdir(os.path.join(base, "holders"))))
    except (IOError, OSError):
        return None


def probe(runner, device, reads_as_zeros=False, backing=False):
    """Run all three probes; return a Probe or raise UnsafeToFormat when any is inconclusive.

    ``reads_as_zeros``: the driver has proven that every byte of the device is zero (Driver.reads_as_zeros). Then
    no probe could find a signature nor a read any data: only the device's children are checked, in sysfs (a device
    with children, or whose sysfs cannot be read, gets the probes). The three commands and the sampled reads cost
    more than the mkfs that follows (docs/performance.md), so a device proven blank does without them.

    ``backing``: a check run before the attach may give the volume's backing file (the loop image) in place of the
    device it becomes: the same bytes, read only. blkid and wipefs read a file as they read a device; lsblk reads
    only block devices, and a file has no kernel children (partitions, holders) for it to find: blkid's PTTYPE
    still finds a partition table. A real run never probes a file: there a non-device is refused."""
    backing = backing and is_regular_file(device)
    if not backing and not is_block_device(device):
        raise UnsafeToFormat(device=device, volume=runner.volume, node=runner.node,
                             reason="it is not a block device; check that the device exists on the node")
    if reads_as_zeros and (backing or sysfs_children(device) == ()):
        return Probe(device=device)
    # lsblk reads only block devices: a backing file does without it
    tools.require(runner, "probing what it holds", *(t for t in tools.PROBE_TOOLS if not (backing and t == "lsblk")))
    fs_type, pttype = blkid_probe(runner, device)
    if backing:
        return _probe_rest(runner, device, fs_type, pttype, {}, ())
    argv = ["lsblk", "-J", "-b", "-o", "NAME,FSTYPE,PTTYPE,TYPE", device]
    rc, out, err = runner(argv)
    if rc != 0:
        raise _inconclusive(runner, device, argv, rc, out, err, "failed")
    try:
        entry = parse_lsblk(out, " ".join(argv))
    except ParseError:
        raise _inconclusive(runner, device, argv, rc, out, err, "gave unparseable output")
    children = tuple(c.get("name", "?") for c in entry.get("children") or ())
    return _probe_rest(runner, device, fs_type, pttype, entry, children)


def _probe_rest(runner, device, fs_type, pttype, entry, children):
    """wipefs and the sampled reads, after blkid (and lsblk's ``entry`` and ``children``)."""
    argv = ["wipefs", "--no-act", "--json", device]
    rc, out, err = runner(argv)
    if rc != 0:
        raise _inconclusive(runner, device, argv, rc, out, err, "failed")
    try:
        signatures = parse_wipefs(out, " ".join(argv))
    except ParseError:
        raise _inconclusive(runner, device, argv, rc, out, err, "gave no parseable answer")
    try:
        data_offset = first_data_offset(device)
    except (IOError, OSError) as err:
        raise UnsafeToFormat(device=device, volume=runner.volume, node=runner.node,
                             reason="reading it to check that it is zeroed failed (%s), so what it holds is unknown; "
                                    "check the device and the kernel log (dmesg), then run again" % err)
    return Probe(device=device, fs_type=fs_type, pttype=pttype or (entry.get("pttype") or ""),
                 lsblk_fstype=entry.get("fstype") or "", children=children, signatures=signatures,
                 data_offset=data_offset)


def filesystem_type(runner, device):
    """The filesystem type blkid sees ('' when unformatted); raises CommandFailed on a failed probe."""
    argv = ["blkid", "-p", "-s", "TYPE", "-s", "PTTYPE", "-o", "export", device]
    rc, out, err = runner(argv)
    if rc == BLKID_NOTHING_FOUND and not out.strip():
        return ""
    if rc != 0:
        raise runner.fail("probe filesystem", argv, rc, err or out)
    values = parse_blkid_export(out, " ".join(argv))
    if values.get("PTTYPE"):
        return ""
    return values.get("TYPE", "")
