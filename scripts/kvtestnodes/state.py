"""The state directory: where every file lives, its lock, and nodes.json.

nodes.json records each node's name, port, init pid and mount namespace
(device, inode): `down` and `status` find a node's processes by namespace, so
a reused pid or a renamed process is never mistaken for a node.
"""

import contextlib
import fcntl
import hashlib
import json
import os

from .base import TestNodesError, write_file

STATE_VERSION = 1
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; ssh wants some slack


class Layout:
    """Paths inside a state directory."""

    def __init__(self, state_dir):
        self.root = os.path.abspath(state_dir)
        self.pool = os.path.join(self.root, "pool")
        self.nodes_dir = os.path.join(self.root, "nodes")
        self.client_key = os.path.join(self.root, "client_key")
        self.known_hosts = os.path.join(self.root, "known_hosts")
        self.ssh_config = os.path.join(self.root, "ssh_config")
        self.inventory_dir = os.path.join(self.root, "inventory")
        self.inventory = os.path.join(self.inventory_dir, "hosts.yml")
        self.nodes_json = os.path.join(self.root, "nodes.json")
        self.lock = os.path.join(self.root, ".lock")
        default_cp = os.path.join(self.root, "cp")
        if len(default_cp) + 1 + 40 <= SOCKET_PATH_MAX:  # %C is 40 hex chars
            self.cp = default_cp
        else:  # ControlPath would exceed the unix socket path limit
            digest = hashlib.sha1(self.root.encode()).hexdigest()[:12]
            self.cp = "/tmp/kvtn-cp-" + digest

    def node_dir(self, name):
        return os.path.join(self.nodes_dir, name)

    def ssh_common_args(self):
        return (
            "-o UserKnownHostsFile={kh} -o StrictHostKeyChecking=yes "
            "-o IdentitiesOnly=yes -o ControlMaster=auto -o ControlPersist=60s "
            "-o ControlPath={cp}/%C".format(kh=self.known_hosts, cp=self.cp)
        )


@contextlib.contextmanager
def locked(layout):
    """One `up` or `down` at a time per state directory."""
    os.makedirs(layout.root, exist_ok=True)
    with open(layout.lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def load_state(layout):
    try:
        with open(layout.nodes_json) as fh:
            state = json.load(fh)
    except FileNotFoundError:
        return {"version": STATE_VERSION, "state_dir": layout.root, "nodes": []}
    except ValueError as exc:
        raise TestNodesError(
            "{}: unreadable ({}); run `down --state-dir {}` to clean up".format(
                layout.nodes_json, exc, layout.root))
    state.setdefault("nodes", [])
    return state


def save_state(layout, state):
    state["version"] = STATE_VERSION
    state["state_dir"] = layout.root
    state["cp_dir"] = layout.cp
    state["nodes"].sort(key=lambda n: node_index(n["name"]))
    write_file(layout.nodes_json, json.dumps(state, indent=2, sort_keys=True) + "\n")


def node_index(name):
    """node10 sorts after node9; names not of the form nodeN sort last."""
    return int(name[4:]) if name.startswith("node") and name[4:].isdigit() else 10 ** 6
