"""Mounts: /proc/PID/mountinfo parsed, a node's own mounts, unmounting inside a namespace.

A node's mounts are the ones in its namespace that the host's namespace does
not have (compared by target, device, root and type); they are unmounted
deepest first, through nsenter, so the host never has to see them.
"""

import os
import shutil

from .base import TestNodesError, run, warn
from .procs import ns_id, own_ns


def _unescape(text):
    r"""Undo mountinfo's octal escapes (\040 for a space, \011, \012, \134)."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and text[i + 1:i + 4].isdigit():
            out.append(chr(int(text[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text):
    """List of dicts (in kernel order) for the text of a mountinfo file.

    Fields (proc(5)): id, parent, major:minor, root, target, options, optional
    fields up to "-", then type, source, super options."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        try:
            sep = fields.index("-", 6)
        except ValueError:
            continue
        mounts.append({
            "majmin": fields[2],
            "root": _unescape(fields[3]),
            "target": _unescape(fields[4]),
            "fstype": fields[sep + 1],
            "source": _unescape(fields[sep + 2]) if len(fields) > sep + 2 else "",
        })
    return mounts


def read_mountinfo(pid="self"):
    """List of dicts (in kernel order) for /proc/PID/mountinfo; [] if unreadable."""
    try:
        with open("/proc/%s/mountinfo" % pid) as fh:
            text = fh.read()
    except OSError:
        return []
    return parse_mountinfo(text)


def _mount_key(m):
    return (m["target"], m["majmin"], m["root"], m["fstype"])


def own_mounts(pid, host=None):
    """Mounts in pid's namespace that the host (our namespace) does not have."""
    if host is None:
        host = {_mount_key(m) for m in read_mountinfo()}
    return [m for m in read_mountinfo(pid) if _mount_key(m) not in host]


def deepest_first(mounts):
    """Deeper targets first; among equals, the later (upper) mount first."""
    indexed = list(enumerate(mounts))
    indexed.sort(key=lambda im: (im[1]["target"].rstrip("/").count("/"), im[0]), reverse=True)
    return [m for _index, m in indexed]


def unmount_in_ns(pid, mounts, label):
    """Unmount mounts (deepest first) inside pid's mount namespace."""
    if not mounts:
        return
    ordered = deepest_first(mounts)
    in_own = ns_id(pid) == own_ns()
    prefix = [] if in_own else ["nsenter", "-t", str(pid), "-m", "--"]
    targets = [m["target"] for m in ordered]
    run(prefix + ["umount"] + targets, check=False)
    keys = {_mount_key(m) for m in ordered}
    left = [m for m in read_mountinfo(pid) if _mount_key(m) in keys]
    if left and ns_id(pid) is not None:
        # Still busy: detach lazily (the namespace dies right after anyway).
        run(prefix + ["umount", "-l"] + [m["target"] for m in deepest_first(left)],
            check=False)
        left = [m for m in read_mountinfo(pid) if _mount_key(m) in keys]
        if left:
            warn("%s: could not unmount %s" % (label, ", ".join(m["target"] for m in left)))


def safe_rmtree(path):
    """rmtree, refusing to descend into anything mounted in our namespace."""
    path = os.path.abspath(path)
    for m in read_mountinfo():
        if m["target"] == path or m["target"].startswith(path + "/"):
            raise TestNodesError("%s is mounted on the host; unmount it and retry" % m["target"])
    shutil.rmtree(path)
