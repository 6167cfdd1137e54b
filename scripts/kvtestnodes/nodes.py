"""One node's life: fresh dirs, start in new namespaces, wait for a login, stop, clean up.

A node is an sshd in its own mount and UTS namespace (see nodeinit). It is
started by running scripts/testnodes.py by path under `unshare`, is ready when
its own sshd listens on its port and accepts a verified login, and is stopped
by namespace: first its sessions end and its mounts are unmounted inside the
namespace (keeping one process as the way in), then every process in it is
killed. Loop devices are not a node's: see loops.
"""

import os
import subprocess
import sys
import time

from .base import log, warn, write_file
from .mounts import own_mounts, safe_rmtree, unmount_in_ns
from .ports import listens_on
from .procs import all_pids, is_running, node_alive, node_ns, ns_id, own_ns, pids_in_ns, terminate
from .sshclient import ssh_ok
from .sshd import ensure_host_key, sshd_config

NODE_SUBDIRS = ("kubelet", "upper", "work", "home")
READY_TIMEOUT = 30.0
# The entry point the init runs by path: scripts/testnodes.py, next to this package.
ENTRY_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "testnodes.py")


def reset_node_dir(layout, name):
    """Give a (re)starting node fresh, empty kubelet/upper/work dirs."""
    ndir = layout.node_dir(name)
    for sub in NODE_SUBDIRS:
        path = os.path.join(ndir, sub)
        if os.path.lexists(path):
            safe_rmtree(path)
        os.makedirs(path, mode=0o700 if sub == "home" else 0o755)
    ensure_host_key(layout, name)


def spawn_node(layout, name, port):
    """Start the node's init under unshare; (Popen, its namespace or None)."""
    ndir = layout.node_dir(name)
    write_file(os.path.join(ndir, "sshd_config"), sshd_config(layout, name, port))
    logf = open(os.path.join(ndir, "sshd.log"), "ab")
    try:
        proc = subprocess.Popen(
            ["unshare", "--mount", "--uts", "--propagation", "private", "--",
             sys.executable, ENTRY_SCRIPT, "_init",
             "--name", name, "--node-dir", ndir, "--pool", layout.pool],
            stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
            start_new_session=True, close_fds=True)
    finally:
        logf.close()
    # unshare() happens before the init's exec: wait for the new namespace.
    mine = own_ns()
    deadline = time.monotonic() + 5.0
    ns = None
    while time.monotonic() < deadline:
        ns = ns_id(proc.pid)
        if proc.poll() is not None or (ns is not None and ns != mine):
            break
        time.sleep(0.002)
    return proc, ns


def log_tail(layout, name, lines=5):
    try:
        with open(os.path.join(layout.node_dir(name), "sshd.log")) as fh:
            return "".join(fh.readlines()[-lines:]).strip()
    except OSError:
        return ""


def wait_ready(layout, node, proc, timeout=READY_TIMEOUT):
    """Wait until sshd accepts an ssh login; (ok, reason)."""
    deadline = time.monotonic() + timeout
    reason = "no answer"
    listening = False
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False, "exited (rc=%s)" % proc.returncode
        if proc is None and not node_alive(node):
            return False, "init process is gone"
        if not listening:
            # Our sshd itself must hold the listening socket: a plain connect
            # could reach whoever else won a race for the port.
            listening = listens_on(node["pid"], node["port"])
            if not listening:
                time.sleep(0.01)
                continue
        ok, reason = ssh_ok(layout, node["port"])
        if ok:
            return True, ""
        time.sleep(0.1)
    return False, "no ssh login within %.0fs (%s)" % (timeout, reason)


def record_private_devs(node):
    """Remember the node's own filesystems (overlay, /run tmpfs) so loop devices
    backed by files on them can be found even after the node died."""
    devs = []
    for m in own_mounts(node["pid"]):
        if m["fstype"] in ("overlay", "tmpfs"):
            major, minor = (int(x) for x in m["majmin"].split(":"))
            devs.append(os.makedev(major, minor))
    node["private_devs"] = sorted(set(devs))


def orphan_nodes(layout, state):
    """Namespaces running one of our node configs but missing from nodes.json
    (e.g. `up` was interrupted before it saved): treat them as nodes too."""
    known = {node_ns(n) for n in state["nodes"]}
    needle = (layout.nodes_dir + "/").encode()
    found = {}
    for pid in all_pids():
        ns = ns_id(pid)
        if ns is None or ns in known or ns == own_ns() or ns in found:
            continue
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if needle in cmdline and is_running(pid):
            found[ns] = {"name": "orphan-%d" % pid, "pid": pid, "ns_dev": ns[0],
                         "mnt_ns": ns[1], "port": 0}
    return list(found.values())


def unmount_node(node):
    """End a node's sessions and unmount, inside its namespace, everything the
    host does not have (deepest first). Keeps one process alive as the way
    into the namespace. Returns (processes, mounts) found."""
    ns = node_ns(node)
    if ns is None:
        return 0, 0

    def in_ns(p):
        return ns_id(p) == ns

    pids = pids_in_ns(ns)
    if not pids:  # killed and nothing kept the namespace: its mounts are gone
        return 0, 0
    target = node["pid"] if node["pid"] in pids else pids[0]
    # Sessions (ControlPersist sshd children, leftovers) may keep mounts busy.
    terminate([p for p in pids if p != target], in_ns, grace=1.0)
    mounts = []
    if in_ns(target) and is_running(target):
        mounts = own_mounts(target)
        unmount_in_ns(target, mounts, node["name"])
    return len(pids), len(mounts)


def kill_node(node):
    """TERM then KILL every process in the node's namespace (or its init, if
    it died before unsharing); returns how many there were."""
    ns = node_ns(node)
    if ns is None:
        pid = node.get("pid")
        if pid and is_running(pid):
            terminate([pid], is_running)
            return 1
        return 0

    def in_ns(p):
        return ns_id(p) == ns

    seen = set()
    for _attempt in range(5):  # processes may fork while we work: repeat until empty
        pids = pids_in_ns(ns)
        if not pids:
            break
        seen.update(pids)
        left = terminate(pids, in_ns)
        if left:
            warn("%s: processes %s survived SIGKILL" % (node["name"], left))
    return len(seen)


def cleanup_node(node, quiet=False):
    """Remove a node's mounts and processes (alive or killed). Loop devices
    are left to `down`: the pool is shared, so a loop device cannot be
    attributed to one node."""
    n_procs, n_mounts = unmount_node(node)
    n_procs = max(n_procs, kill_node(node))
    if not quiet:
        log("%s: stopped (%d process(es), %d mount(s))" % (node["name"], n_procs, n_mounts))
