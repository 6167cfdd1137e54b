# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mount table (``findmnt -J``) and mount, bind and unmount as argument lists."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import MountBusy, ParseError
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, holders
from ansible_collections.kubevol.volumes.plugins.module_utils.common.value import REQUIRED, Value

# OPTIONS is what a writer sees (ro when either the mount or its superblock is read-only);
# VFS-OPTIONS is the per-mount flag a bind remount changes, FS-OPTIONS the superblock's.
FINDMNT = ["findmnt", "-J", "-l", "-o", "TARGET,SOURCE,FSTYPE,OPTIONS,VFS-OPTIONS,FS-OPTIONS,MAJ:MIN"]


class Mount(Value):
    FIELDS = (
        ("target", REQUIRED),  # str
        ("source", REQUIRED),  # str
        ("fstype", REQUIRED),  # str
        ("options", REQUIRED),  # Tuple[str, ...]
        ("majmin", REQUIRED),  # str
        ("vfs_options", ()),  # Tuple[str, ...]
        ("fs_options", ()),  # Tuple[str, ...]
    )

    @property
    def read_only(self):
        """Effectively read-only: the mount or its superblock is (nothing can be written through it)."""
        return "ro" in self.options or self.mount_read_only or self.super_read_only

    @property
    def mount_read_only(self):
        """The per-mount flag (what ``mount -o remount,bind,ro|rw`` sets)."""
        return "ro" in (self.vfs_options or self.options)

    @property
    def super_read_only(self):
        """The filesystem itself (the superblock) is mounted read-only: every bind of it is read-only."""
        return "ro" in self.fs_options

    @property
    def source_device(self):
        """'/dev/loop0' from '/dev/loop0' or '/dev/loop0[/sub]'."""
        return self.source.split("[", 1)[0]


def _split(options):
    return tuple(o for o in (options or "").split(",") if o)


def parse_findmnt(out):
    if not out.strip():
        return []
    try:
        entries = json.loads(out)["filesystems"]
    except (ValueError, KeyError, TypeError):
        raise ParseError(cmd=" ".join(FINDMNT), reason="expected JSON with a filesystems list", output=out)
    mounts = []

    def walk(items):
        for entry in items:
            mounts.append(Mount(target=entry.get("target") or "", source=entry.get("source") or "",
                                fstype=entry.get("fstype") or "",
                                options=_split(entry.get("options")),
                                majmin=(entry.get("maj:min") or "").strip(),
                                vfs_options=_split(entry.get("vfs-options")),
                                fs_options=_split(entry.get("fs-options"))))
            walk(entry.get("children") or ())
    walk(entries)
    return mounts


class MountTable:
    def __init__(self, mounts):
        self.mounts = list(mounts)

    def at(self, target):
        """The mount on top at ``target`` or None."""
        found = [m for m in self.mounts if m.target == target]
        return found[-1] if found else None

    def mounted(self, target):
        return self.at(target) is not None

    def of_device(self, majmin):
        return [m for m in self.mounts if m.majmin == majmin]


MOUNTINFO = "/proc/self/mountinfo"
_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(text):
    """mountinfo escapes space, tab, newline and backslash as octal (``\\040``)."""
    return _OCTAL.sub(lambda m: chr(int(m.group(1), 8)), text)


def parse_mountinfo(text):
    """The mount table from /proc/self/mountinfo (proc(5)), as findmnt lists it: SOURCE gets ``[root]`` for a
    mount of a subdirectory, OPTIONS is the per-mount options then the superblock's."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        if "-" not in fields[6:]:
            continue
        sep = fields.index("-", 6)
        if len(fields) < sep + 4:
            continue
        root, target, vfs = _unescape(fields[3]), _unescape(fields[4]), _split(fields[5])
        fstype, source, fs_opts = fields[sep + 1], _unescape(fields[sep + 2]), _split(fields[sep + 3])
        if root != "/":
            source = "%s[%s]" % (source, root)
        options = vfs + tuple(o for o in fs_opts if o not in vfs)
        mounts.append(Mount(target=target, source=source, fstype=fstype, options=options, majmin=fields[2],
                            vfs_options=vfs, fs_options=fs_opts))
    return mounts


def list_mounts(runner):
    """This mount namespace's mount table, read from /proc/self/mountinfo without a process (a node's facts and
    every mount step read it); findmnt when it cannot be read."""
    try:
        with open(MOUNTINFO) as handle:
            return MountTable(parse_mountinfo(handle.read()))
    except (IOError, OSError):
        pass
    rc, out, err = runner(FINDMNT)
    if rc == 1 and not out.strip():
        return MountTable([])
    if rc != 0:
        raise runner.fail("read the mount table", FINDMNT, rc, err)
    return MountTable(parse_findmnt(out))


def same_device(mount, device):
    """True when ``mount`` is a filesystem on block device ``device`` (compared by major:minor)."""
    try:
        return mount.majmin == blockdev.device_number(device)
    except OSError:
        return False


def mount_options(options, read_only):
    opts = ["defaults"] + [o for o in options if o not in ("defaults",)]
    if read_only and "ro" not in opts:
        opts.append("ro")
    return opts


def mount_device(runner, device, target, fstype, options, read_only):
    argv = ["mount", "-t", fstype, "-o", ",".join(mount_options(options, read_only)), device, target]
    runner.check(argv, step="mount device", hint="check the mount options and the kernel log (dmesg)")


def bind(runner, source, target, read_only):
    """Bind ``source`` at ``target``; read-only as mount-utils: bind, then remount,bind,ro."""
    runner.check(["mount", "--bind", source, target], step="bind mount")
    if read_only:
        remount_read_only(runner, target)


def remount_read_only(runner, target):
    runner.check(["mount", "-o", "remount,bind,ro", target], step="remount read-only")


def remount_bind_read_write(runner, target):
    """A pod's bind mount left read-only while its pod now writes: clear the per-mount flag only."""
    runner.check(["mount", "-o", "remount,bind,rw", target], step="remount read-write")


def remount_read_write(runner, target, hint=None):
    """The global mount (superblock and its mount) read-write, for a writer pod."""
    runner.check(["mount", "-o", "remount,rw", target], step="remount read-write",
                 hint=hint or "check the kernel log (dmesg): the device may be read-only")


def is_busy(rc, err):
    """umount's EBUSY: exit 32 with "target is busy" (util-linux), or the kernel's "Device or resource busy"."""
    text = (err or "").lower()
    return "busy" in text and rc != 0


def unmount(runner, target):
    """umount ``target``; a refusal because processes still use it names them (holders.py) and says what to do."""
    argv = ["umount", target]
    rc, out, err = runner(argv)
    if rc == 0:
        return
    if not is_busy(rc, err or out):
        raise runner.fail("unmount", argv, rc, err or out, "check the kernel log (dmesg) and the mount (findmnt %s)"
                          % target)
    found = holders.holders(target)
    # the processes' working directories, open and mapped files under the mount: holders.describe names them
    raise MountBusy(step="unmount", node=runner.node, volume=runner.volume, cmd=" ".join(argv), rc=rc,
                    stderr=(err or out or "").strip(), target=target, held=holders.describe(found), holders=found)
