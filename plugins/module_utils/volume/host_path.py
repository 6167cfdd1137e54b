# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hostPath volume plugin (pkg/volume/hostpath/host_path.go): kubernetes.io/host-path, the whole plugin.

The kubelet mounts nothing for a hostPath volume: the container runtime bind-mounts the path. SetUp runs checkType
before the pod starts: DirectoryOrCreate creates a missing directory (makeDir: MkdirAll 0755), FileOrCreate a
missing file (makeFile: O_CREATE 0644, its parent directory is NOT created, as the kubelet's is not), then
Directory, File, Socket, CharDevice and BlockDevice compare the type (typeMatchedOrError); "" checks nothing. The
kubelet's messages are kept. kubevol checks only under the operator's allowed directories (node/paths.py resolve),
then records that a pod's check passed with an EMPTY marker directory pods/<uid>/volumes/kubernetes.io~host-path/<pv>
(the kubelet keeps that in memory; docs/contracts.md); teardown removes only the marker. Not attachable, not
device-mountable, not expandable (host_path.go has no expander), no Block mode (hostPath is a filesystem source
only). This class is what the plugin is, with checkType (it runs through the node context it is given); its node
verbs (SetUp, TearDown) are node/plugin_host_path.py's, named by NODE_OPERATIONS.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat
from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.common.fields import optional_str, require_str
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import (
    DEFAULT_FS_TYPE, NODE, VolumePlugin, path_refusal)

# pkg/apis/core/types.go HostPathType: "" (no check) and the seven types host_path.go checks
HOST_PATH_TYPES = ("", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice",
                   "BlockDevice")
# hostutil.FileType of a stat mode (hostutil_linux.go getFileType)
FILE_TYPES = ((stat.S_ISDIR, "Directory"), (stat.S_ISREG, "File"), (stat.S_ISSOCK, "Socket"),
              (stat.S_ISCHR, "CharDevice"), (stat.S_ISBLK, "BlockDevice"))
# type -> (the file type it expects, checkType's description of it, created when missing)
CHECKS = {
    "DirectoryOrCreate": ("Directory", "directory", True),
    "Directory": ("Directory", "directory", False),
    "FileOrCreate": ("File", "file", True),
    "File": ("File", "file", False),
    "Socket": ("Socket", "socket file", False),
    "CharDevice": ("CharDevice", "character device", False),
    "BlockDevice": ("BlockDevice", "block device", False),
}

HostPathSource = namedtuple("HostPathSource", "path type")
HostPathSource.__doc__ = """spec.hostPath: path as written; type: spec.hostPath.type or "" (no check)."""


class HostPathCheckFailed(KubevolError):
    """The kubelet's type check of a hostPath PV failed: nothing was created, and no pod's check is recorded."""
    code = "KV-HOSTPATH-TYPE"
    message = ("hostPath PV {volume} on node {node}: {reason}; create what the PV's spec.hostPath.type expects at "
               "{path} on node {node}, or fix the PV, and run again")


def file_type(path):
    """hostutil GetFileType (it follows symlinks: the path here is already resolved)."""
    mode = os.stat(path).st_mode
    for test, name in FILE_TYPES:
        if test(mode):
            return name
    raise OSError(errno.EINVAL, "only recognise file, directory, socket, block device and character device")


def _not_a_directory_above(path):
    """The nearest existing ancestor of the missing ``path`` when it is not a directory (makedirs would fail on it),
    else None."""
    parent = os.path.dirname(path)
    while parent and not os.path.lexists(parent) and parent != os.path.dirname(parent):
        parent = os.path.dirname(parent)
    return None if os.path.isdir(parent) else parent


def _make_file(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    os.close(fd)


class HostPathPlugin(VolumePlugin):
    NAME = "kubernetes.io/host-path"
    DIR = "kubernetes.io~host-path"
    SPEC_KEY = "hostPath"
    KIND = "hostPath"
    ATTACHABLE = False
    DEVICE_MOUNTABLE = False
    CONTROLLER_EXPANDABLE = False
    NODE_EXPANDABLE = False
    BLOCK = False
    EPHEMERAL = False
    FS_GROUP = False  # host_path.go SetUpAt applies no ownership: the host's files stay as they are
    MARKER = True  # its pod "mount" is an empty marker directory: the pod's check passed
    # the directories hostPath PVs may name (node/paths.py): none until the operator says so (a hostPath PV can
    # name any path of the node)
    OPTIONS = {"paths": "normalized_paths"}
    DEFAULT_OPTIONS = {"paths": []}
    ITEM_TYPES = HOST_PATH_TYPES
    NO_BLOCK_WHY = "a hostPath volume is a filesystem path; the kubelet has no block mapper for it"
    NO_BLOCK_FIX = "Use volumeMode Filesystem, or a local PV for a block device"

    # -- the PV and the plan -----------------------------------------------------------------------------------
    @classmethod
    def parse_source(cls, raw):
        if not isinstance(raw, dict):
            raise TypeError("spec.hostPath must be a mapping")
        return HostPathSource(require_str(raw.get("path"), "path"), optional_str(raw.get("type"), "type") or "")

    @classmethod
    def refusals(cls, pv, driver_options):
        """validation.go validateHostPathType ("supported values: ..."), validatePathNoBacksteps; the operator's
        directories."""
        refusals = []
        if pv.source.type not in HOST_PATH_TYPES:
            refusals.append("PV %s cannot be set up on %s: spec.hostPath.type: Unsupported value: %r: supported "
                            "values: %s: set the PV's type to one of them" % (
                                pv.name, NODE, pv.source.type, ", ".join('"%s"' % t for t in HOST_PATH_TYPES)))
        problem = path_refusal(pv.name, "spec.hostPath.path", pv.source.path, cls.NAME, driver_options)
        if problem is not None:
            refusals.append(problem)
        return refusals

    @classmethod
    def spec_fields(cls, source):
        return source.path, source.type, DEFAULT_FS_TYPE

    NODE_OPERATIONS = "node.plugin_host_path.HostPathNode"

    # -- the node ----------------------------------------------------------------------------------------------
    @classmethod
    def check_type(cls, ctx, item, real, res):
        """host_path.go checkType on the resolved path ``real``; records what it created (or would create)."""
        if not item.host_path_type:
            return
        expected, description, create = CHECKS[item.host_path_type]

        def fail(reason):
            return HostPathCheckFailed(volume=item.pv_name, node=ctx.node_name, path=item.path, reason=reason,
                                       step="hostPath type check")

        if create and not os.path.exists(real):
            if expected == "Directory":
                blocker = _not_a_directory_above(real)
                if blocker is not None:
                    # what MkdirAll would fail on: checked first, so that a check run fails where the real run does
                    raise fail("mkdir %s: %s is not a directory" % (item.path, blocker))
                ctx.act(res, "create directory %s (0755)" % real, os.makedirs, real, 0o755, True)
            else:
                if not os.path.isdir(os.path.dirname(real)):
                    raise fail("open %s: no such file or directory (FileOrCreate does not create the parent "
                               "directory)" % item.path)
                ctx.act(res, "create file %s (0644)" % real, _make_file, real)
            res["created"] = real
            res["diff"]["before"][real] = None
            res["diff"]["after"][real] = expected
            return
        if not os.path.exists(real):
            raise fail("hostPath %s doesn't exist" % item.path)
        try:
            found = file_type(real)
        except OSError as err:
            raise fail("hostPath type check failed, %s is not a %s, unable to determine its type: %s"
                       % (item.path, description, err.strerror))
        if found != expected:
            raise fail("hostPath type check failed: %s is not a %s, it's a %s" % (item.path, description, found))

    @classmethod
    def node_pod_fact(cls, ctx, entry):
        """A marker is "published" when it is kubevol's real, empty-made directory (node/plugin_facts.py)."""
        path = entry["path"]
        entry["published"] = not entry["unsafe"] and os.path.isdir(path) and not os.path.islink(path)
        return entry

    @classmethod
    def pod_published(cls, current, mode):
        """Nothing is mounted for hostPath (the runtime bind-mounts the path itself): the pod's volume is ready once
        its type check passed on the node, which the pod's marker records (node_setup); host_path.go SetUp is that
        check alone."""
        return current is not None and current.published
