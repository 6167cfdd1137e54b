"""Ports: the first free one from a base, and whether a given process listens on one.

Ports are chosen at start-up (a fixed list would collide with another run or
another engineer's nodes); a port is free when we can bind it with
SO_REUSEADDR, as sshd will. Binding then closing leaves a race with other
programs, so readiness also checks that the node's own sshd holds the
listening socket (listens_on), and `up` retries a node that lost the race.
"""

import contextlib
import os
import socket

from .base import TestNodesError

DEFAULT_BASE_PORT = 22200
PORT_SCAN = 2000


def free_port(start, taken):
    """The first port from start (up to PORT_SCAN of them) not in taken that binds on 127.0.0.1."""
    for port in range(start, min(start + PORT_SCAN, 65536)):
        if port in taken:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as sshd does
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise TestNodesError("no free port in %d-%d; pass another --base-port" % (
        start, start + PORT_SCAN - 1))


def listens_on(pid, port):
    """True if process pid holds a socket listening on 127.0.0.1:port."""
    inodes = set()
    local = "0100007F:%04X" % port
    try:
        with open("/proc/%d/net/tcp" % pid) as fh:
            for line in fh.readlines()[1:]:
                f = line.split()
                if f[1] == local and f[3] == "0A":  # TCP_LISTEN
                    inodes.add("socket:[%s]" % f[9])
        if not inodes:
            return False
        for fd in os.listdir("/proc/%d/fd" % pid):
            with contextlib.suppress(OSError):
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) in inodes:
                    return True
    except OSError:
        pass
    return False


def choose_port(previous, base_port, taken):
    """A restarting node gets its previous port back when no other node took it
    (known_hosts entries and callers' ssh_config stay right), otherwise the first
    free port from --base-port (default DEFAULT_BASE_PORT)."""
    start = previous if previous and previous not in taken else (base_port or DEFAULT_BASE_PORT)
    return free_port(start, taken)
