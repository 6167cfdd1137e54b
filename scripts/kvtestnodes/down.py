"""`down [--purge]`: stop every node of a state directory and leave nothing behind.

Order matters: ControlMasters first (their sessions keep mounts busy), then
unmount inside every live namespace, then detach the loop devices (after
unmounting their users in any namespace), then kill every process. Nodes
missing from nodes.json but running one of its node configs are stopped too.
`down` fails (and says to run it again) when a process or loop device is left;
only then are the node dirs and the callers' files removed, and with --purge
the whole state directory.
"""

import concurrent.futures
import contextlib
import os
import shutil
import sys
import time

from .base import TestNodesError, log
from .loops import detach_loops, our_loops
from .mounts import safe_rmtree
from .nodes import NODE_SUBDIRS, kill_node, orphan_nodes, unmount_node
from .procs import node_ns, pids_in_ns
from .sshclient import stop_control_masters
from .state import Layout, load_state, locked


def _remove_files(layout):
    """The node dirs' contents and the callers' files (keys and pool stay)."""
    for name in os.listdir(layout.nodes_dir) if os.path.isdir(layout.nodes_dir) else []:
        ndir = layout.node_dir(name)
        for sub in NODE_SUBDIRS:
            if os.path.lexists(os.path.join(ndir, sub)):
                safe_rmtree(os.path.join(ndir, sub))
    for path in (layout.nodes_json, layout.inventory, layout.known_hosts, layout.ssh_config):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    if layout.cp != os.path.join(layout.root, "cp"):
        with contextlib.suppress(OSError):
            shutil.rmtree(layout.cp)


def cmd_down(args):
    layout = Layout(args.state_dir)
    t0 = time.monotonic()
    if not os.path.isdir(layout.root):
        log("down: nothing to do (%s does not exist)" % layout.root)
        return 0
    if os.geteuid() != 0:
        raise TestNodesError("must run as root")
    with locked(layout):
        state = load_state(layout)
        masters = stop_control_masters(layout)
        if masters:
            log("stopped %d ssh ControlMaster(s)" % masters)
        # 1. unmount inside every live namespace, 2. detach loop devices (after
        # unmounting their users anywhere), 3. kill every process.
        nodes = state["nodes"] + orphan_nodes(layout, state)
        workers = max(1, min(16, len(nodes)))
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
            found = list(ex.map(unmount_node, nodes))
            detached = detach_loops(layout, state)
            killed = list(ex.map(kill_node, nodes))
        problems = []
        for node, (n_procs, n_mounts), n_killed in zip(nodes, found, killed):
            n_procs = max(n_procs, n_killed)
            log("%s: stopped (%d process(es), %d mount(s))" % (node["name"], n_procs, n_mounts))
            if node_ns(node) and pids_in_ns(node_ns(node)):
                problems.append("%s: processes still in its namespace" % node["name"])
        detached += detach_loops(layout, state)  # autoclear races, late users
        if detached:
            log("detached %d loop device(s): %s" % (len(detached), ", ".join(detached)))
        left = our_loops(layout, state)
        if left:
            problems.append("loop devices still attached: %s" % ", ".join(
                lp["name"] for lp in left))
        if problems:
            for p in problems:
                print("down: " + p, file=sys.stderr)
            raise TestNodesError("down incomplete; run `down --state-dir %s` again, or "
                                 "inspect with `status`" % layout.root)
        _remove_files(layout)
        n = len(nodes)
    if args.purge:
        safe_rmtree(layout.root)
        log("purged %s" % layout.root)
    log("down: %d node(s) stopped in %.2fs" % (n, time.monotonic() - t0))
    return 0
