# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet directory as kubevol writes it: vol_data.json files, safe directory creation and removal.

Every directory kubevol creates, writes into or mounts on is reached from the kubelet directory one
component at a time without following a symlink (``ensure_dir``: openat with O_NOFOLLOW, as the
kubelet's subpath safe-open does), so a symlink or a file planted inside the kubelet directory can
never send a mount or a write outside it. Removal is only ever ``rmdir`` of an empty directory that is
not a mountpoint, or unlink of a ``vol_data.json`` kubevol wrote (it names this volume). Nothing is ever
deleted recursively.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import UnsafePath

VOL_DATA = "vol_data.json"
# A vol_data.json holds a volume handle, which only the API object's size bounds (etcd's 1.5 MiB request limit), and
# JSON may write a character of it in six bytes: a file larger than this was not written for a volume of this cluster
VOL_DATA_MAX_BYTES = 16 << 20
IDENTITY_KEYS = ("driverName", "volumeHandle")


def block_data_dir(kubelet_dir, pv_name):
    """<kubelet>/plugins/kubernetes.io/csi/volumeDevices/<pv>/data (csi_block.go)."""
    names.check_component("PV name", pv_name)
    return os.path.join(kubelet_dir, "plugins", names.CSI_PLUGIN_NAME, "volumeDevices", pv_name, "data")


# vol_data.json volumeLifecycleMode of an inline ephemeral CSI volume (csi_mounter.go); "Persistent" otherwise
EPHEMERAL_MODE = "Ephemeral"


def pod_vol_data(item, node_name):
    """The keys the kubelet's CSI mounter writes (csi_mounter.go)."""
    return {
        "specVolID": item.pv_name,
        "volumeHandle": item.volume_handle,
        "driverName": item.driver,
        "nodeName": node_name,
        "attachmentID": item.attachment_name(node_name),
        "volumeLifecycleMode": "Persistent",
    }


def device_vol_data(item):
    """Beside globalmount: driverName and volumeHandle as csi_attacher.go, plus specVolID."""
    return {"driverName": item.driver, "volumeHandle": item.volume_handle, "specVolID": item.pv_name}


def load_vol_data(directory):
    """``(data, problem)`` for the vol_data.json in ``directory``.

    data: the JSON object, or None when there is none. problem: None when the file names a volume
    (non-empty string ``driverName`` and ``volumeHandle``), else why not, naming the file. The file is
    read without following a symlink and only when it is a regular file (a FIFO would block).
    """
    path = os.path.join(directory, VOL_DATA)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return None, "%s is missing" % path
        if exc.errno == errno.ELOOP:
            return None, "%s is a symlink (not followed)" % path
        return None, "%s is unreadable: %s" % (path, exc.strerror)
    try:
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None, "%s is not a regular file" % path
            raw = handle.read(VOL_DATA_MAX_BYTES + 1)
    except (IOError, OSError) as exc:
        return None, "%s is unreadable: %s" % (path, exc.strerror)
    if len(raw) > VOL_DATA_MAX_BYTES:
        return None, "%s is larger than %d bytes" % (path, VOL_DATA_MAX_BYTES)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None, "%s is not valid JSON" % path
    if not isinstance(data, dict):
        return None, "%s is not a JSON object" % path
    missing = [key for key in IDENTITY_KEYS if not isinstance(data.get(key), str) or not data.get(key)]
    if missing:
        return data, "%s lacks %s" % (path, " and ".join(missing))
    return data, None


def global_vol_data_problem(hash_dir, data, problem):
    """``problem`` (from load_vol_data of ``<driver>/<hash>``), or why a complete vol_data.json there does
    not identify the volume of its path: another driver, or a handle whose sha256 is not ``<hash>``."""
    if problem is not None:
        return problem
    path = os.path.join(hash_dir, VOL_DATA)
    dir_driver = os.path.basename(os.path.dirname(hash_dir))
    if data["driverName"] != dir_driver:
        return "%s names driver %s but lies under driver directory %s" % (path, data["driverName"], dir_driver)
    if names.handle_hash(data["volumeHandle"]) != os.path.basename(hash_dir):
        return "%s names volume handle %s, whose sha256 is not the directory name" % (
            path, names.show_handle(data["volumeHandle"]))
    return None


def read_vol_data(directory):
    """The vol_data.json object in ``directory`` or None (see load_vol_data)."""
    return load_vol_data(directory)[0]


def _relative_parts(kubelet_dir, path, node):
    base = os.path.normpath(kubelet_dir)
    rel = os.path.relpath(os.path.normpath(path), base)
    if rel == "." or rel.startswith(".." + os.sep) or rel == ".." or os.path.isabs(rel):
        raise UnsafePath(path=path, node=node, kubelet_dir=kubelet_dir, reason="it is not inside the kubelet directory")
    return base, rel.split(os.sep)


def open_dir(kubelet_dir, path, create=True, node="", mode=0o750):
    """An O_DIRECTORY fd of ``path``, reached from the kubelet directory without following any symlink below it,
    creating missing directories when ``create``; raises UnsafePath naming the offending component. The kubelet
    directory itself may be a symlink (an operator's choice) and is created when missing. The caller closes it."""
    base, parts = _relative_parts(kubelet_dir, path, node)
    if create:
        os.makedirs(base, mode=0o750, exist_ok=True)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    current = base
    try:
        for part in parts:
            current = os.path.join(current, part)
            try:
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            except OSError as err:
                if err.errno == errno.ENOENT and create:
                    try:
                        os.mkdir(part, mode, dir_fd=fd)
                    except OSError as mkerr:
                        if mkerr.errno != errno.EEXIST:
                            raise
                    child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
                elif err.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UnsafePath(path=current, node=node, kubelet_dir=kubelet_dir,
                                     reason="it is %s where a directory belongs" % _what(fd, part))
                else:
                    raise
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _what(dir_fd, name):
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return "not a directory"
    if stat.S_ISLNK(st.st_mode):
        return "a symlink (to %s)" % os.readlink(name, dir_fd=dir_fd)
    if stat.S_ISREG(st.st_mode):
        return "a regular file"
    return "not a directory"


def ensure_dir(kubelet_dir, path, node=""):
    """Create ``path`` (and its parents) inside the kubelet directory as real directories; see open_dir."""
    os.close(open_dir(kubelet_dir, path, True, node))
    return path


def prepare_dir(kubelet_dir, path, node, check_mode):
    """A pod's target directory before its mount: created (ensure_dir); in check mode only checked (check_dir), so
    that a symlink or a non-directory on the way is refused in check mode too."""
    if check_mode:
        check_dir(kubelet_dir, path, node)
    else:
        ensure_dir(kubelet_dir, path, node)


def check_dir(kubelet_dir, path, node=""):
    """True when ``path`` exists as a chain of real directories inside the kubelet directory, False when it (or a
    parent) does not exist; raises UnsafePath for a symlink or a non-directory on the way."""
    try:
        os.close(open_dir(kubelet_dir, path, False, node))
    except OSError as err:
        if err.errno == errno.ENOENT:
            return False
        raise
    return True


def write_json(kubelet_dir, directory, name, data, node=""):
    """Write ``name`` in ``directory`` atomically (a new temporary file, renamed over it), the directory reached as
    open_dir does and the file never opened through a symlink."""
    fd = open_dir(kubelet_dir, directory, True, node)
    try:
        tmp = name + ".tmp"
        try:
            os.unlink(tmp, dir_fd=fd)
        except OSError:
            pass
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o640, dir_fd=fd)
        with os.fdopen(out, "w") as handle:
            json.dump(data, handle, sort_keys=True)
        os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
    finally:
        os.close(fd)


def write_vol_data(kubelet_dir, directory, data, node=""):
    """Write vol_data.json atomically into ``directory`` (write_json); return True when the file changed."""
    if check_dir(kubelet_dir, directory, node) and read_vol_data(directory) == data:
        return False
    write_json(kubelet_dir, directory, VOL_DATA, data, node)
    return True


def is_ours(data, item):
    return bool(data) and data.get("driverName") == item.driver and data.get("volumeHandle") == item.volume_handle


def remove_vol_data(directory, item, mounts):
    """Unlink vol_data.json in ``directory`` only if it describes ``item`` and nothing is mounted there."""
    if mounts.mounted(directory) or os.path.ismount(directory):
        return None
    path = os.path.join(directory, VOL_DATA)
    if os.path.islink(path) or not is_ours(read_vol_data(directory), item):
        return None
    os.unlink(path)
    return path


def rmdir_safe(path, mounts):
    """rmdir ``path`` if it is an empty directory and not a mountpoint; return the path or None."""
    if os.path.islink(path) or not os.path.isdir(path):
        return None
    if mounts.mounted(path) or os.path.ismount(path):
        return None
    try:
        os.rmdir(path)
    except OSError:
        return None
    return path


def remove_pod_volume_dir(target, item, mounts):
    """After a pod's unmount: rmdir its ``mount`` dir, unlink the vol_data.json beside it (only one naming
    ``item``), rmdir the volume dir and an empty kubernetes.io~csi. Never recursive, never through a mountpoint.
    Returns the paths removed."""
    vol_dir = os.path.dirname(target)
    removed = [rmdir_safe(target, mounts)]
    if not os.path.exists(target):
        removed += [remove_vol_data(vol_dir, item, mounts), rmdir_safe(vol_dir, mounts),
                    rmdir_safe(os.path.dirname(vol_dir), mounts)]
    return [path for path in removed if path]


def remove_empty_pod_volumes_dir(kubelet_dir, path, mounts):
    """After a pod's volume was torn down: rmdir the pod's ``volumes`` or ``volumeDevices`` directory (``path`` is a
    publish path below it) and an empty ``kubernetes.io~csi`` in it, only when empty and not a mountpoint. A moved
    pod's directories would stay otherwise; the kubelet removes them in its orphaned pod cleanup
    (kubelet_volumes.go cleanupOrphanedPodDirs, removeOrphanedPodVolumeDirs: only empty directories, never
    through a mount). The pod directory itself is the kubelet's. Returns the paths removed."""
    pods = os.path.join(kubelet_dir, "pods") + os.sep
    if not path.startswith(pods):
        return []
    parts = path[len(pods):].split(os.sep)
    if len(parts) < 3 or parts[1] not in ("volumes", "volumeDevices"):
        return []
    top = os.path.join(pods, parts[0], parts[1])
    removed = [rmdir_safe(os.path.join(top, names.CSI_PLUGIN_DIR), mounts), rmdir_safe(top, mounts)]
    return [p for p in removed if p]


def unlink_publish_file(path, mounts):
    """Remove the empty regular file a Block volume was bind-mounted on, once nothing is mounted there."""
    if mounts.mounted(path) or os.path.ismount(path) or os.path.islink(path):
        return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size != 0:
        return None
    os.unlink(path)
    return path
