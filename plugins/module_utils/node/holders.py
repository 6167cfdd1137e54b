# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who keeps a mount busy: the processes that use a path under it, read from /proc as ``fuser -vm`` reads it.

``umount`` fails with EBUSY ("target is busy") while a process has its working directory or root there, holds
a file there open, or has a file there mapped into its memory. The kubelet's unmount fails the same way and
retries; an operator then needs to know which process to stop, so a refused unmount names them (pid, command
and what each holds). Only this mount namespace's view is compared (a process of another namespace names its
files in its own), and /proc is read without a process, tolerating processes that exit while it is read.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

MAX_HOLDERS = 10  # named in an error; more are counted, not listed
MAX_FDS = 4096    # per process: a process with more open files is reported by its first matches only


def _under(path, target):
    return path == target or path.startswith(target.rstrip("/") + "/")


def _readlink(path):
    try:
        return os.readlink(path)
    except OSError:
        return None


def _command(pid):
    try:
        with open("/proc/%s/comm" % pid) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return "?"


def _open_files(pid, target):
    found = []
    try:
        fds = os.listdir("/proc/%s/fd" % pid)
    except OSError:
        return found
    for fd in fds[:MAX_FDS]:
        path = _readlink("/proc/%s/fd/%s" % (pid, fd))
        if path and _under(path, target):
            found.append("open file %s" % path)
    return found


def _mapped_files(pid, target):
    found = []
    try:
        with open("/proc/%s/maps" % pid) as handle:
            for line in handle:
                parts = line.split(None, 5)
                path = parts[5].strip() if len(parts) == 6 else ""
                if path and _under(path, target) and ("mapped file %s" % path) not in found:
                    found.append("mapped file %s" % path)
    except (IOError, OSError):
        pass
    return found


def holders(target, proc="/proc"):
    """[{pid, command, holds: [what]}] of the processes using ``target`` or anything under it, by pid order."""
    found = []
    try:
        pids = sorted((p for p in os.listdir(proc) if p.isdigit()), key=int)
    except OSError:
        return found
    me = str(os.getpid())
    for pid in pids:
        if pid == me:
            continue
        holds = []
        for link, what in (("cwd", "working directory"), ("root", "root directory")):
            path = _readlink("/proc/%s/%s" % (pid, link))
            if path and path != "/" and _under(path, target):
                holds.append("%s %s" % (what, path))
        holds.extend(_open_files(pid, target))
        holds.extend(_mapped_files(pid, target))
        if holds:
            found.append({"pid": int(pid), "command": _command(pid), "holds": holds})
    return found


def describe(found):
    """One line naming the holders for an error message (at most MAX_HOLDERS of them)."""
    if not found:
        return ("no process of this mount namespace was found using it (a process in another mount namespace, a "
                "nested mount or a kernel user such as a swap file or a loop device may hold it)")
    parts = ["pid %d (%s): %s" % (h["pid"], h["command"], ", ".join(h["holds"][:3]) +
                                  (" and %d more" % (len(h["holds"]) - 3) if len(h["holds"]) > 3 else ""))
             for h in found[:MAX_HOLDERS]]
    more = len(found) - MAX_HOLDERS
    return "held by " + "; ".join(parts) + ("; and %d more process(es)" % more if more > 0 else "")
