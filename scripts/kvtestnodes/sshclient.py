"""The ssh client side: a login that probes a node, and the ControlMaster processes.

The probe uses no config file (-F /dev/null) and strict host key checking
against DIR/known_hosts, so "ready" means a real, verified root login.
Ansible's ControlPersist masters (ControlPath DIR/cp/%C) outlive a run and keep
sessions, hence mounts, alive in a node's namespace: `down` ends them first.
"""

import contextlib
import os
import subprocess

from .base import run
from .procs import all_pids, is_running, terminate


def ssh_base(layout, port, timeout=5):
    return ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes",
            "-o", "UserKnownHostsFile=" + layout.known_hosts,
            "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes",
            "-o", "ConnectTimeout=%d" % timeout, "-o", "LogLevel=ERROR",
            "-i", layout.client_key, "-p", str(port), "root@127.0.0.1"]


def ssh_ok(layout, port, timeout=5):
    """(True, "") when `ssh ... true` logs in, else (False, ssh's error)."""
    try:
        res = subprocess.run(ssh_base(layout, port, timeout) + ["true"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, timeout=timeout + 5, check=False)
    except subprocess.TimeoutExpired:
        return False, "ssh timed out"
    return res.returncode == 0, res.stderr.decode(errors="replace").strip()


def cp_master_pids(layout):
    """ssh processes (ControlMaster) whose command line names our ControlPath dir.
    A mux master rewrites its title to "ssh: PATH [mux]", so match the whole
    command line and check the executable."""
    needle = layout.cp.encode() + b"/"
    pids = []
    for pid in all_pids():
        if pid == os.getpid():
            continue
        try:
            exe = os.readlink("/proc/%d/exe" % pid)
            with open("/proc/%d/cmdline" % pid, "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if os.path.basename(exe) == "ssh" and needle in cmdline and is_running(pid):
            pids.append(pid)
    return pids


def stop_control_masters(layout):
    """Ask each master to exit (ssh -O exit), kill the rest, remove the sockets."""
    stopped = 0
    if os.path.isdir(layout.cp):
        for name in os.listdir(layout.cp):
            sock = os.path.join(layout.cp, name)
            res = run(["ssh", "-o", "ControlPath=" + sock, "-O", "exit", "testnode"],
                      check=False, timeout=10)
            stopped += res.returncode == 0
    left = cp_master_pids(layout)
    if left:
        terminate(left, is_running, grace=1.0)
        stopped += len(left)
    if os.path.isdir(layout.cp):
        for name in os.listdir(layout.cp):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(layout.cp, name))
    return stopped
