"""The command line: the parser of scripts/testnodes.py, dispatch, and the small `env` and `ssh`.

The interface callers rely on (tests/e2e/e2e_lib/, molecule's create/destroy,
scripts/demo.py, scripts/test.d/30-molecule.sh, bench/)::

    testnodes.py up N --state-dir DIR [--base-port P]
    testnodes.py status --state-dir DIR
    testnodes.py down --state-dir DIR [--purge]
    testnodes.py env --state-dir DIR          # shell exports for callers
    testnodes.py ssh --state-dir DIR NODE [COMMAND...]
    testnodes.py _init --name N --node-dir D --pool P   # internal: a node's init (nodeinit)

Every command module is imported here, up front: the `_init` run mounts over
/root, which may hold the checkout, so nothing may be imported after it starts.
"""

import argparse
import os
import shlex
import sys

from .base import TestNodesError
from .clientfiles import env_exports
from .down import cmd_down
from .nodeinit import cmd_init
from .ports import DEFAULT_BASE_PORT
from .state import Layout
from .status import cmd_status
from .up import cmd_up

DESCRIPTION = 'Local SSH test nodes for kubevol: N sshd "nodes" on 127.0.0.1.'


def cmd_env(args):
    layout = Layout(args.state_dir)
    for key, value in env_exports(layout):
        print("export %s=%s" % (key, shlex.quote(value)))
    return 0


def cmd_ssh(args):
    layout = Layout(args.state_dir)
    if not os.path.exists(layout.ssh_config):
        raise TestNodesError("no nodes running in %s; run `up` first" % layout.root)
    cmd = ["ssh", "-F", layout.ssh_config, args.node] + args.command
    os.execvp(cmd[0], cmd)


def build_parser():
    p = argparse.ArgumentParser(prog="testnodes.py", description=DESCRIPTION)
    sub = p.add_subparsers(dest="cmd")
    sub.required = True

    def with_dir(sp):
        sp.add_argument("--state-dir", required=True, help="directory for keys, pool, inventory")
        return sp

    up = with_dir(sub.add_parser("up", help="start (or add) nodes node1..nodeN"))
    up.add_argument("count", type=int, metavar="N")
    up.add_argument("--base-port", type=int, default=None,
                    help="first port to try (default %d)" % DEFAULT_BASE_PORT)
    down = with_dir(sub.add_parser("down", help="stop all nodes and clean up"))
    down.add_argument("--purge", action="store_true", help="also delete the state dir (pool images)")
    with_dir(sub.add_parser("status", help="show what runs"))
    with_dir(sub.add_parser("env", help="print shell exports for callers"))
    sp = with_dir(sub.add_parser("ssh", help="ssh to a node"))
    sp.add_argument("node")
    sp.add_argument("command", nargs=argparse.REMAINDER)
    init = sub.add_parser("_init")  # internal: the node's init
    init.add_argument("--name", required=True)
    init.add_argument("--node-dir", required=True)
    init.add_argument("--pool", required=True)
    return p


HANDLERS = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "env": cmd_env,
            "ssh": cmd_ssh, "_init": cmd_init}


def main(argv=None):
    p = build_parser()
    args = p.parse_args(argv)
    if args.cmd == "up" and not 1 <= args.count <= 500:
        p.error("N must be between 1 and 500")
    try:
        return HANDLERS[args.cmd](args)
    except TestNodesError as exc:
        print("testnodes: error: %s" % exc, file=sys.stderr)
        return 1
