"""`up N`: start nodes node1..nodeN (keeping the ones that run), write the callers' files.

Idempotent and growing: a running node is kept, a recorded but dead one is
cleaned up and restarted with fresh dirs (a rebooted machine), a missing one
is added. Nodes start in parallel; a node that lost a race for its port is
retried on another port (up to 3 rounds), any other failure is reported with
the tail of its sshd.log and leaves the node out of nodes.json.
"""

import concurrent.futures
import os
import sys
import time

from .base import TestNodesError, log
from .clientfiles import NODE_PYTHON, write_client_files
from .nodes import cleanup_node, log_tail, record_private_devs, reset_node_dir, spawn_node, wait_ready
from .ports import choose_port
from .procs import node_alive
from .sshd import SSHD, ensure_keys
from .state import Layout, load_state, locked, node_index, save_state


def check_state_dir(layout):
    root = layout.root
    if any(c.isspace() for c in root) or "%" in root:
        raise TestNodesError("state dir %r must not contain whitespace or '%%'" % root)
    if root == "/var/lib" or root.startswith("/var/lib/"):
        raise TestNodesError("state dir %s must not be under /var/lib (nodes overlay it)" % root)
    if os.geteuid() != 0:
        raise TestNodesError("must run as root (mount namespaces, loop devices)")
    for tool in (SSHD, NODE_PYTHON):
        if not os.path.exists(tool):
            raise TestNodesError("%s not found (install openssh-server / python3)" % tool)


def _start_round(layout, state, by_name, batch, taken, procs, base_port, first):
    """Spawn the nodes of batch on free ports; wait for all; {name: (ok, reason)}."""
    for name in batch:
        previous = by_name.get(name, {}).get("port") if first else None
        port = choose_port(previous, base_port, taken)
        taken.add(port)
        node = {"name": name, "port": port}
        by_name[name] = node
        # known_hosts must hold the host key before the first login
        state["nodes"] = [by_name[n] for n in by_name]
        proc, ns = spawn_node(layout, name, port)
        node.update(pid=proc.pid, mnt_ns=ns[1] if ns else None,
                    ns_dev=ns[0] if ns else None, started=time.time())
        procs[name] = proc
    save_state(layout, state)
    write_client_files(layout, state)
    with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(batch))) as ex:
        return dict(zip(batch, ex.map(lambda nm: wait_ready(layout, by_name[nm], procs[nm]), batch)))


def cmd_up(args):
    layout = Layout(args.state_dir)
    check_state_dir(layout)
    t0 = time.monotonic()
    with locked(layout):
        for d in (layout.pool, layout.nodes_dir, layout.inventory_dir):
            os.makedirs(d, exist_ok=True)
        os.makedirs(layout.cp, mode=0o700, exist_ok=True)
        ensure_keys(layout)
        state = load_state(layout)
        by_name = {n["name"]: n for n in state["nodes"]}
        wanted = ["node%d" % i for i in range(1, args.count + 1)]
        kept = [name for name in wanted if name in by_name and node_alive(by_name[name])]
        to_start = [name for name in wanted if name not in kept]
        for name in to_start:
            if name in by_name:  # recorded but dead: clean its remains first
                log("%s: not running; cleaning up before restart" % name)
                cleanup_node(by_name[name])
        taken = {n["port"] for n in state["nodes"] if n["name"] in kept}
        for name in to_start:
            reset_node_dir(layout, name)
        procs = {}
        failures = {}
        for attempt in range(3):
            batch = [name for name in to_start if name not in procs or procs[name] is None]
            if not batch:
                break
            results = _start_round(layout, state, by_name, batch, taken, procs, args.base_port,
                                   first=attempt == 0)
            for name in batch:
                ok, reason = results[name]
                if ok:
                    failures.pop(name, None)
                    continue
                tail = log_tail(layout, name)
                failures[name] = "%s\n    %s" % (reason, tail.replace("\n", "\n    "))
                cleanup_node(by_name[name], quiet=True)
                procs[name] = None
                if "Address already in use" in tail or "Cannot bind" in tail:
                    continue  # lost a port race: retry on another port
                to_start.remove(name)  # real error: do not retry
        for name, proc in procs.items():
            if proc is not None:
                record_private_devs(by_name[name])
                # The init outlives us; forget it without a ResourceWarning.
                proc.returncode = 0
        failed = sorted(failures, key=node_index)
        state["nodes"] = [n for n in by_name.values() if n["name"] not in failed]
        save_state(layout, state)
        write_client_files(layout, state)
        for name in sorted(procs, key=node_index):
            if procs[name] is not None:
                n = by_name[name]
                log("%s: started on 127.0.0.1:%d (pid %d)" % (name, n["port"], n["pid"]))
        if kept:
            log("kept %d running node(s): %s" % (len(kept), ", ".join(kept)))
        if failed:
            for name in failed:
                print("%s: failed to start: %s\n    log: %s" % (
                    name, failures[name], os.path.join(layout.node_dir(name), "sshd.log")),
                    file=sys.stderr)
            raise TestNodesError("%d node(s) failed; fix the cause above, then run "
                                 "`up` again (or `down --state-dir %s`)" % (len(failed), layout.root))
        log("up: %d node(s) ready in %.2fs; inventory %s" % (
            len(state["nodes"]), time.monotonic() - t0, layout.inventory))
    return 0
