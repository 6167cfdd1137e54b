# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's commands, checked before the step that runs them: a missing tool fails that volume, naming it and the
package to install, in a check run as in a real one.

A real run that reached a missing ``mkfs.xfs`` failed with "command not found" after it had attached the device;
a check run, which runs no mkfs, passed. Each step that runs a tool asks ``require`` first, in both runs, so that
``--check`` fails where the real run would (community.general.filesystem's check mode fails on a missing mkfs too).
What a node needs is bindep.txt's ``node`` profile.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import find_executable

# tool -> the Debian package that has it (bindep.txt, profile node; btrfs-progs: profile btrfs)
PACKAGES = {
    "losetup": "mount", "mount": "mount", "umount": "mount",
    "blkid": "util-linux", "lsblk": "util-linux", "wipefs": "util-linux", "blockdev": "util-linux",
    "fsck": "util-linux", "findmnt": "util-linux",
    "mkfs.ext4": "e2fsprogs", "mkfs.ext3": "e2fsprogs", "e2fsck": "e2fsprogs", "resize2fs": "e2fsprogs",
    "dumpe2fs": "e2fsprogs",
    "mkfs.xfs": "xfsprogs", "xfs_growfs": "xfsprogs", "xfs_db": "xfsprogs", "xfs_io": "xfsprogs",
    "mkfs.btrfs": "btrfs-progs", "btrfs": "btrfs-progs",
}
PROBE_TOOLS = ("blkid", "lsblk", "wipefs")  # blockdev.probe: the three blank probes

_found = {}  # tool -> its path: a node's tools do not come and go within one module run


class ToolMissing(KubevolError):
    """A command a step runs is not installed on the node: the volume fails before the step, nothing was done."""
    code = "KV-TOOL-MISSING"
    message = ("volume {volume} on node {node}: {needs}, which is not installed there; install the {package} package "
               "on node {node} and run again")


def installed(tool):
    """Whether ``tool`` is on the node's PATH or in its sbin directories, as the runner looks for it."""
    if tool not in _found:
        _found[tool] = find_executable(tool)
    return _found[tool] is not None


def require(runner, why, *tools):
    """Fail the volume ``runner`` names when one of ``tools`` is missing. ``why``: what needs them, e.g. "formatting
    it as xfs" (the message says "formatting it as xfs needs mkfs.xfs")."""
    for tool in tools:
        if not installed(tool):
            raise ToolMissing(volume=runner.volume, node=runner.node, needs="%s needs %s" % (why, tool), tool=tool,
                              package=PACKAGES.get(tool, "the package that has %s" % tool), step="check tools")


def require_grow(runner, fs, mountpoint):
    """The tools growing filesystem ``fs`` runs (node/expand.py grow_filesystem): its grow tool, its size tool, and
    for an ext filesystem grown offline (``mountpoint`` None) e2fsck first."""
    tools = [fs.GROW[0], fs.size_argv("-", mountpoint)[0]]
    if fs.EXT and not mountpoint:
        tools.append("e2fsck")
    require(runner, "growing its %s filesystem" % fs.NAME, *tools)
