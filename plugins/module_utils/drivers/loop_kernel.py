# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel's loop devices as the ``loop.kubevol.io`` driver reads them: sysfs and LOOP_GET_STATUS64 (no
process), with ``losetup -J --list`` as the fallback when sysfs or a device cannot be read. A loop device is
identified by the (st_dev, st_ino) of its backing file, never by path text (``losetup -j`` falls back to string
matching)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fcntl
import json
import os
import struct

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import ParseError
from ansible_collections.kubevol.volumes.plugins.module_utils.common.value import REQUIRED, Value

LOSETUP_LIST = ["losetup", "-J", "--list", "-O", "NAME,BACK-FILE,BACK-INO,BACK-MAJ:MIN,RO"]


class LoopDevice(Value):
    FIELDS = (
        ("name", REQUIRED),  # str
        ("back_file", REQUIRED),  # str
        ("back_ino", REQUIRED),  # int
        ("back_dev", REQUIRED),  # Tuple[int, int]
        ("read_only", False),  # bool
    )

    def backs(self, dev, ino):
        """True when this device's backing file is the inode (st_dev ``dev``, st_ino ``ino``)."""
        return self.back_ino == ino and self.back_dev == (os.major(dev), os.minor(dev))


LOOP_GET_STATUS64 = 0x4C05
LO_FLAGS_READ_ONLY = 1
# struct loop_info64 (linux/loop.h): lo_device, lo_inode, lo_rdevice, lo_offset, lo_sizelimit (u64);
# lo_number, lo_encrypt_type, lo_encrypt_key_size, lo_flags (u32); file name, crypt name, key, lo_init[2]
LOOP_INFO64 = struct.Struct("=QQQQQIIII64s64s32s2Q")


class _Unreadable(Exception):
    """sysfs or a loop device could not be read: the caller runs losetup instead."""


def _kernel_loop_device(name):
    """The loop device ``name`` (loopN) if bound, read as ``losetup --list`` reads it: its sysfs backing_file
    (present only while bound), then LOOP_GET_STATUS64 for BACK-INO, BACK-MAJ:MIN and RO. None when unbound;
    _Unreadable when it cannot be read (the caller then runs losetup, which fails loudly if it cannot read it
    either: never "unbound" for a device that may be bound)."""
    try:
        # os.open and os.read, not open(): a node can have hundreds of unbound loop devices, each a failed lookup
        fd = os.open("/sys/block/%s/loop/backing_file" % name, os.O_RDONLY | os.O_CLOEXEC)
        try:
            back_file = os.read(fd, 8192).decode("utf-8", "surrogateescape").rstrip("\n")
        finally:
            os.close(fd)
    except (IOError, OSError) as err:
        if err.errno == errno.ENOENT:
            return None  # no loop/ directory: unbound
        raise _Unreadable(err)
    try:
        fd = os.open("/dev/" + name, os.O_RDONLY | os.O_CLOEXEC)  # bound in sysfs: no device node is an error
        try:
            info = LOOP_INFO64.unpack(fcntl.ioctl(fd, LOOP_GET_STATUS64, bytes(LOOP_INFO64.size)))
        finally:
            os.close(fd)
    except (IOError, OSError) as err:
        if err.errno == errno.ENXIO:
            return None  # unbound between the two reads
        raise _Unreadable(err)
    return LoopDevice(name="/dev/" + name, back_file=back_file, back_ino=info[1],
                      back_dev=(os.major(info[0]), os.minor(info[0])), read_only=bool(info[8] & LO_FLAGS_READ_ONLY))


def kernel_loop_devices(only=None):
    """The bound loop devices as the kernel reports them, read without a process (every /sys/block/loop*, or
    only the device paths in ``only``). None when sysfs or a device cannot be read: the caller then runs
    losetup."""
    try:
        # a node whose sysfs cannot be listed is one to ask losetup, not one without loop devices
        loops = set(n for n in os.listdir("/sys/block") if n.startswith("loop"))
        if only is None:
            names = sorted(loops)
        else:
            # only a recorded /dev/loopN the kernel lists is read: any other path names no loop device
            names = [p[len("/dev/"):] for p in only if isinstance(p, str) and p.startswith("/dev/") and
                     p[len("/dev/"):] in loops]
        devices = [_kernel_loop_device(name) for name in names]
    except (OSError, _Unreadable):
        return None
    return [device for device in devices if device is not None]


def parse_losetup(out):
    """``losetup -J --list`` output to LoopDevice list (empty output: no loop devices)."""
    if not out.strip():
        return []
    try:
        entries = json.loads(out)["loopdevices"]
        devices = []
        for entry in entries:
            major, minor = str(entry.get("back-maj:min") or "").strip().split(":")
            devices.append(LoopDevice(name=entry["name"], back_file=entry.get("back-file") or "",
                                      back_ino=int(entry.get("back-ino")), back_dev=(int(major), int(minor)),
                                      read_only=entry.get("ro") in (True, 1, "1")))
        return devices
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ParseError(cmd=" ".join(LOSETUP_LIST), reason="expected loopdevices with BACK-INO and BACK-MAJ:MIN",
                         output=out)
