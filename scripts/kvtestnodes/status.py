"""`status`: what runs, read from the machine rather than trusted from nodes.json.

Per node: alive (its init runs in its recorded namespace), a real ssh login,
the processes and node-only mounts in its namespace; then the loop devices
backed by the state directory and any orphan node namespaces `down` would stop.
"""

import concurrent.futures
import os

from .base import log
from .loops import our_loops
from .mounts import _mount_key, own_mounts, read_mountinfo
from .nodes import orphan_nodes
from .procs import node_alive, node_ns, pids_in_ns
from .sshclient import ssh_ok
from .state import Layout, load_state


def cmd_status(args):
    layout = Layout(args.state_dir)
    state = load_state(layout)
    nodes = state["nodes"]
    if not nodes:
        log("no nodes recorded in %s" % layout.root)
    host = {_mount_key(m) for m in read_mountinfo()}
    loops = our_loops(layout, state) if os.path.isdir(layout.root) else []

    def probe(node):
        alive = node_alive(node)
        pids = pids_in_ns(node_ns(node)) if node_ns(node) else []
        mounts = len(own_mounts(pids[0], host)) if pids else 0
        reach = ssh_ok(layout, node["port"], timeout=3)[0] if alive else False
        return alive, len(pids), mounts, reach

    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(16, len(nodes)))) as ex:
        for node, (alive, nproc, mounts, reach) in zip(nodes, ex.map(probe, nodes)):
            rows.append((node["name"], str(node["port"]), str(node.get("pid")),
                         "yes" if alive else "NO", "yes" if reach else "no",
                         str(nproc), str(mounts)))
    if rows:
        head = ("NODE", "PORT", "PID", "ALIVE", "SSH", "PROCS", "MOUNTS")
        widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
        for r in [head] + rows:
            log("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    log("loop devices backed by the pool: %s" % (
        ", ".join("%s (%s)" % (lp["name"], lp["back_file"]) for lp in loops) if loops else "none"))
    orphans = orphan_nodes(layout, state)
    if orphans:
        log("running but not in nodes.json (`down` stops them): pid %s" % ", ".join(
            str(o["pid"]) for o in orphans))
    if nodes:
        log("inventory: %s" % layout.inventory)
    return 0
