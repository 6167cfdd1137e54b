# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""hostPath PVs on the node (pkg/volume/hostpath/host_path.go): nothing is mounted, the ``type`` is checked.

SetUp runs checkType: DirectoryOrCreate creates a missing directory (makeDir: MkdirAll 0755), FileOrCreate a
missing file (makeFile: O_CREATE 0644, its parent directory is NOT created, as the kubelet's is not), then
Directory, File, Socket, CharDevice and BlockDevice compare the type (typeMatchedOrError); "" checks nothing. The
kubelet's messages are kept. kubevol checks only under the operator's allowed directories (paths.resolve), then
records that the check passed for a pod with an EMPTY marker directory
``<kubelet>/pods/<uid>/volumes/kubernetes.io~host-path/<pv>`` (docs/contracts.md); teardown removes only the marker.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node import layout, mount, paths
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act

DIR = "kubernetes.io~host-path"
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


class HostPathCheckFailed(KubevolError):
    message = ("hostPath PV {volume} on node {node}: {reason}. Nothing was mounted and no pod marker was written; "
               "create what the PV's spec.hostPath.type expects at {path} or fix the PV")


def marker_path(ctx, item, uid):
    return os.path.join(ctx.kubelet_dir, "pods", uid, "volumes", DIR, item.pv_name)


def file_type(path):
    """hostutil GetFileType (it follows symlinks: the path here is already resolved)."""
    mode = os.stat(path).st_mode
    for test, name in FILE_TYPES:
        if test(mode):
            return name
    raise OSError(errno.EINVAL, "only recognise file, directory, socket, block device and character device")


def check_type(ctx, item, real, res):
    """host_path.go checkType on the resolved path ``real``; records what it created (or would create)."""
    if not item.host_path_type:
        return
    expected, description, create = CHECKS[item.host_path_type]

    def fail(reason):
        return HostPathCheckFailed(volume=item.pv_name, node=ctx.node_name, path=item.path, reason=reason,
                                   step="hostPath type check")

    if create and not os.path.exists(real):
        if expected == "Directory":
            act(ctx, res, "create directory %s (0755)" % real, os.makedirs, real, 0o755, True)
        else:
            if not os.path.isdir(os.path.dirname(real)):
                raise fail("open %s: no such file or directory (FileOrCreate does not create the parent directory)"
                           % item.path)
            act(ctx, res, "create file %s (0644)" % real, _make_file, real)
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


def _make_file(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    os.close(fd)


def _result(item, **extra):
    res = {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "plugin": item.plugin, "mode": item.mode,
           "changed": False, "actions": [], "diff": {"before": {}, "after": {}}}
    res.update(extra)
    return res


def setup_host_path(ctx, item):
    """SetUp: the allowed-directory check, checkType, then one marker per pod; idempotent."""
    real = paths.resolve(ctx, item)
    res = _result(item, path=real, host_path_type=item.host_path_type, created=None, published=[])
    check_type(ctx, item, real, res)
    for pod in item.pods:
        marker = marker_path(ctx, item, pod.uid)
        if layout.check_dir(ctx.kubelet_dir, marker, ctx.node_name):
            continue
        act(ctx, res, "write marker %s" % marker, layout.ensure_dir, ctx.kubelet_dir, marker, ctx.node_name)
        res["published"].append(pod.uid)
        res["diff"]["before"][marker] = None
        res["diff"]["after"][marker] = "hostPath check passed"
    return res


def teardown_host_path(ctx, item, force=False):
    """TearDown: nothing is mounted; remove the named pods' empty markers (never anything at the PV's path)."""
    runner = ctx.runner_for(item)
    res = _result(item, device=None, unmounted=[], removed=[], detached=None)
    mounts = mount.list_mounts(runner)
    for pod in item.pods:
        marker = marker_path(ctx, item, pod.uid)
        if not layout.check_dir(ctx.kubelet_dir, marker, ctx.node_name):
            continue
        act(ctx, res, "remove marker %s" % marker)
        res["diff"]["before"][marker] = "hostPath check passed"
        res["diff"]["after"][marker] = None
        if ctx.check_mode:
            continue
        removed = [layout.rmdir_safe(marker, mounts)]
        removed += [layout.rmdir_safe(os.path.dirname(marker), mounts),
                    layout.rmdir_safe(os.path.dirname(os.path.dirname(marker)), mounts)]
        res["removed"] += [p for p in removed if p]
    return res
