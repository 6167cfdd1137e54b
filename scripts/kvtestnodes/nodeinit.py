"""The node's init: run as `testnodes.py _init` inside a node's fresh namespaces, it execs sshd.

nodes.spawn_node starts ``unshare --mount --uts --propagation private --
PYTHON scripts/testnodes.py _init --name N --node-dir D --pool P`` (the script
by path, so the init runs the same checkout as `up`). Here, as the node's pid:
set the hostname, mount a private /run tmpfs (Debian's sshd needs /run/sshd),
overlay /var/lib (upper/work in the node dir: nothing reaches the host), bind
the node's own empty kubelet dir, the shared pool and a clean root home, then
exec sshd in the foreground. Everything this needs is imported before the
first mount: /root is covered by the bind of the node's home.
"""

import os
import socket
import subprocess
import sys

from .sshd import SSHD

KUBELET_IN_NODE = "/var/lib/kubelet"
POOL_IN_NODE = "/var/lib/kubevol/pool"
HOME_IN_NODE = "/root"


def cmd_init(args):
    """Runs inside the fresh namespaces (as the node's pid): set up, exec sshd."""
    def mount(*argv):
        subprocess.run(["mount"] + list(argv), check=True)

    socket.sethostname(args.name)
    mount("-t", "tmpfs", "-o", "mode=0755,nosuid,nodev,size=64m", "tmpfs", "/run")
    os.makedirs("/run/sshd", mode=0o755)
    nd = args.node_dir
    mount("-t", "overlay", "-o", "lowerdir=/var/lib,upperdir=%s/upper,workdir=%s/work" % (nd, nd),
          "overlay", "/var/lib")
    os.makedirs(KUBELET_IN_NODE, exist_ok=True)
    os.makedirs(POOL_IN_NODE, exist_ok=True)
    mount("--bind", os.path.join(nd, "kubelet"), KUBELET_IN_NODE)
    mount("--bind", args.pool, POOL_IN_NODE)
    # A clean root home: the host's ~/.bashrc (pyenv init, which every ssh
    # command and every bench's ping would pay) is not run, and ~/.ansible/tmp stays inside the node.
    mount("--bind", os.path.join(nd, "home"), HOME_IN_NODE)
    sys.stdout.flush()
    os.execv(SSHD, [SSHD, "-D", "-e", "-f", os.path.join(nd, "sshd_config")])
