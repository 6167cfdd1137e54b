#!/usr/bin/env python
"""Local SSH test nodes for kubevol: N sshd "nodes" on 127.0.0.1.

Each node is an sshd running in its own mount and UTS namespace
(``unshare --mount --uts --propagation private`` in a new session) with:

* its hostname set to the node name (node1..nodeN);
* a private tmpfs on /run (Debian's sshd needs /run/sshd);
* a private overlay of /var/lib (upper/work dirs in the node's state dir), so
  nothing a node writes under /var/lib reaches the host;
* its own real, empty /var/lib/kubelet: a bind of DIR/nodes/NODE/kubelet;
* the shared pool DIR/pool bind-mounted on /var/lib/kubevol/pool (all nodes
  see the same pool, like a shared storage backend);
* a clean, empty root home (/root is a bind of DIR/nodes/NODE/home), so the
  host's ~/.bashrc does not run on every ssh command.

The host never sees any of the nodes' mounts.

Usage::

    testnodes.py up N --state-dir DIR [--base-port P]
    testnodes.py status --state-dir DIR
    testnodes.py down --state-dir DIR [--purge]
    testnodes.py env --state-dir DIR          # shell exports for callers
    testnodes.py ssh --state-dir DIR NODE [COMMAND...]

``up`` writes DIR/inventory/hosts.yml (group ``nodes``), DIR/known_hosts,
DIR/ssh_config (``ssh -F DIR/ssh_config node1``) and DIR/nodes.json.

Stdlib only (Python 3.9+); needs root, util-linux (unshare, nsenter, losetup,
mount) and openssh (sshd, ssh, ssh-keygen).

This file is the entry point only: the code lives in the package
scripts/kvtestnodes/ (one module per concern; its __init__ says which and why
the package is not named ``testnodes``). The nodes' init runs this file by
path (``testnodes.py _init``) inside their new namespaces. The names below are
re-exported so that ``import testnodes`` keeps giving what it always gave.
"""

import os
import sys

# Run by path (python3 scripts/testnodes.py ...), scripts/ is already sys.path[0];
# loaded from elsewhere (importlib, another sys.path[0]), the package still resolves.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# pylint: disable=wrong-import-position,unused-import
from kvtestnodes.base import TestNodesError, log, run, warn, write_file  # noqa: E402,F401
from kvtestnodes.clientfiles import NODE_PYTHON, env_exports, write_client_files  # noqa: E402,F401
from kvtestnodes.cli import build_parser, cmd_env, cmd_ssh, main  # noqa: E402,F401
from kvtestnodes.down import cmd_down  # noqa: E402,F401
from kvtestnodes.loops import (  # noqa: E402,F401
    detach_loops, list_loops, namespaces_representatives, our_loops, parse_losetup, state_file_ids)
from kvtestnodes.mounts import (  # noqa: E402,F401
    _mount_key, _unescape, deepest_first, own_mounts, parse_mountinfo, read_mountinfo, safe_rmtree,
    unmount_in_ns)
from kvtestnodes.nodeinit import HOME_IN_NODE, KUBELET_IN_NODE, POOL_IN_NODE, cmd_init  # noqa: E402,F401
from kvtestnodes.nodes import (  # noqa: E402,F401
    NODE_SUBDIRS, READY_TIMEOUT, cleanup_node, kill_node, log_tail, orphan_nodes, record_private_devs,
    reset_node_dir, spawn_node, unmount_node, wait_ready)
from kvtestnodes.ports import DEFAULT_BASE_PORT, PORT_SCAN, choose_port, free_port, listens_on  # noqa: E402,F401
from kvtestnodes.procs import (  # noqa: E402,F401
    all_pids, is_running, node_alive, node_ns, ns_id, own_ns, pids_in_ns, proc_state, signal_if, terminate)
from kvtestnodes.sshclient import cp_master_pids, ssh_base, ssh_ok, stop_control_masters  # noqa: E402,F401
from kvtestnodes.sshd import SSHD, ensure_host_key, ensure_keys, host_pubkey, sshd_config  # noqa: E402,F401
from kvtestnodes.state import (  # noqa: E402,F401
    SOCKET_PATH_MAX, STATE_VERSION, Layout, load_state, locked, node_index, save_state)
from kvtestnodes.status import cmd_status  # noqa: E402,F401
from kvtestnodes.up import check_state_dir, cmd_up  # noqa: E402,F401

if __name__ == "__main__":
    sys.exit(main())
