"""Processes and mount namespaces, read from /proc, and signals that guard pid reuse.

Liveness is a process's state in /proc/PID/stat, not `kill -0`: a killed sshd
stays a zombie until its new parent reaps it, and a zombie counts as gone.
A node is identified by its mount namespace (st_dev, st_ino of
/proc/PID/ns/mnt), recorded in nodes.json.
"""

import contextlib
import os
import signal
import time


def proc_state(pid):
    """The one-letter state of a process, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            data = fh.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:
        return None
    return data.rsplit(")", 1)[1].split()[0]


def is_running(pid):
    """True for a live process: zombies (killed, not yet reaped) count as gone."""
    return proc_state(pid) not in (None, "Z", "X", "x")


def ns_id(pid):
    try:
        st = os.stat("/proc/%d/ns/mnt" % pid)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def own_ns():
    return ns_id(os.getpid())


def all_pids():
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def pids_in_ns(ns):
    """Live pids whose mount namespace is ns ((dev, ino))."""
    return sorted(pid for pid in all_pids() if ns_id(pid) == ns and is_running(pid))


def node_ns(node):
    if not node.get("mnt_ns"):
        return None
    return (node["ns_dev"], node["mnt_ns"])


def node_alive(node):
    """The node's init (sshd) runs, in the namespace recorded for it."""
    pid = node.get("pid")
    return bool(pid) and is_running(pid) and ns_id(pid) == node_ns(node)


def signal_if(pid, sig, check):
    """Send sig to pid only if check(pid) still holds (guards pid reuse)."""
    if not check(pid):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def terminate(pids, check, grace=2.0):
    """TERM, wait, then KILL; return the pids still running afterwards."""
    pids = [p for p in pids if check(p) and is_running(p)]
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if not pids:
            break
        for pid in pids:
            signal_if(pid, sig, check)
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if is_running(p) and check(p)]
            if pids:
                time.sleep(0.02)
    return pids
