# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One class per filesystem, mostly data (as community.general's filesystem module).

MKFS flags follow mount-utils ``format``: ``-F -m0`` for ext3/ext4, ``-f`` for xfs, nothing else
for other types. GROW follows mount-utils ``ResizeFs``. Size parsers run in the C locale and raise
ParseError with the raw output.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, ParseError


class Filesystem:
    NAME = None
    MKFS = None
    MKFS_FORCE_FLAGS = ()
    GROW = ()
    GROW_MOUNTPOINT_ONLY = False  # grows only while mounted, on the mount path
    GROW_SLACK = 0  # a device at most this much larger than the filesystem needs no grow
    EXT = False

    def mkfs_argv(self, device):
        return [self.MKFS] + list(self.MKFS_FORCE_FLAGS) + [device]

    def grow_argv(self, device, mountpoint=None):
        return list(self.GROW) + [mountpoint if self.GROW_MOUNTPOINT_ONLY else device]

    def needs_grow(self, device_bytes, fs_bytes):
        return device_bytes > fs_bytes + self.GROW_SLACK

    def size_argv(self, device, mountpoint=None):
        raise NotImplementedError

    def parse_size(self, out):
        raise NotImplementedError

    def fs_size(self, runner, device, mountpoint=None):
        """Filesystem size in bytes as its own tool reports it."""
        argv = self.size_argv(device, mountpoint)
        rc, out, err = runner.check(argv, step="read %s size" % self.NAME)
        try:
            return self.parse_size(out)
        except ValueError:
            raise ParseError(cmd=" ".join(argv), reason="no filesystem size found", output=out)


def _field(pattern, out):
    match = re.search(pattern, out, re.MULTILINE)
    if not match:
        raise ValueError(out)
    return int(match.group(1))


class Ext4(Filesystem):
    NAME = "ext4"
    MKFS = "mkfs.ext4"
    MKFS_FORCE_FLAGS = ("-F", "-m0")
    GROW = ("resize2fs",)
    GROW_SLACK = 4095
    EXT = True

    def size_argv(self, device, mountpoint=None):
        return ["dumpe2fs", "-h", device]

    def parse_size(self, out):
        return _field(r"^Block count:\s+(\d+)", out) * _field(r"^Block size:\s+(\d+)", out)


class Ext3(Ext4):
    NAME = "ext3"
    MKFS = "mkfs.ext3"


class Xfs(Filesystem):
    NAME = "xfs"
    MKFS = "mkfs.xfs"
    MKFS_FORCE_FLAGS = ("-f",)
    GROW = ("xfs_growfs", "-d")
    GROW_MOUNTPOINT_ONLY = True
    GROW_SLACK = 64 * 4096 - 1

    def size_argv(self, device, mountpoint=None):
        if mountpoint:
            return ["xfs_io", "-r", "-c", "statfs", mountpoint]
        return ["xfs_db", "-r", "-c", "sb 0", "-c", "print blocksize dblocks", device]

    def parse_size(self, out):
        if "geom.bsize" in out:
            return _field(r"^geom\.bsize = (\d+)", out) * _field(r"^geom\.datablocks = (\d+)", out)
        return _field(r"^blocksize = (\d+)", out) * _field(r"^dblocks = (\d+)", out)


class Btrfs(Filesystem):
    NAME = "btrfs"
    MKFS = "mkfs.btrfs"
    GROW = ("btrfs", "filesystem", "resize", "max")
    GROW_MOUNTPOINT_ONLY = True
    GROW_SLACK = 4095

    def size_argv(self, device, mountpoint=None):
        return ["btrfs", "inspect-internal", "dump-super", device]

    def parse_size(self, out):
        return _field(r"^total_bytes\s+(\d+)", out)


FILESYSTEMS = dict((cls.NAME, cls) for cls in (Ext4, Ext3, Xfs, Btrfs))


def get_filesystem(name):
    """An instance for ``name``, or None for a type kubevol does not handle."""
    cls = FILESYSTEMS.get(name)
    return cls() if cls else None


def filesystem_to_create(name, volume, node):
    """The filesystem to create for fs_type ``name``. A type kubevol does not create fails this volume alone, before
    its device is touched: the node modules take any fs_type, so that one PV's unusual csi.fsType does not fail
    the call for every other volume on the node."""
    fs = get_filesystem(name)
    if fs is None:
        raise InvalidInput(field="fs_type", value=name,
                           reason="volume %s on node %s: kubevol creates only %s filesystems; set the PV's "
                                  "csi.fsType to one of them"
                                  % (volume, node, ", ".join(sorted(FILESYSTEMS))))
    return fs
