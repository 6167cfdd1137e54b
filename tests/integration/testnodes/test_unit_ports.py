"""kvtestnodes.ports: port selection and the listener check, on real sockets (no root needed)."""
import os
import socket
import subprocess

import pytest

from kvtestnodes import ports
from kvtestnodes.base import TestNodesError as NodesError  # not collected as a test class


@pytest.fixture
def listener():
    """A socket listening on 127.0.0.1 on a port the kernel chose; its port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def test_free_port_skips_a_port_someone_listens_on(listener):
    assert ports.free_port(listener, set()) > listener


def test_free_port_skips_ports_taken_by_other_nodes(listener):
    first = ports.free_port(listener + 1, set())
    assert ports.free_port(listener + 1, {first}) not in (first, listener)


def test_no_free_port_is_an_error_that_says_what_to_do(listener, monkeypatch):
    monkeypatch.setattr(ports, "PORT_SCAN", 1)
    with pytest.raises(NodesError, match=r"no free port in %d-%d; pass another --base-port" % (
            listener, listener)):
        ports.free_port(listener, set())


def test_choose_port_gives_a_restarting_node_its_previous_port_unless_taken(listener):
    previous = ports.free_port(listener + 1, set())
    assert ports.choose_port(previous, listener, set()) == previous
    # taken by a kept node: start from --base-port, skipping the busy listener and the taken one
    got = ports.choose_port(previous, listener, {previous})
    assert got not in (previous, listener) and got > listener
    assert ports.choose_port(None, listener, set()) > listener  # no previous port: from the base


def test_listens_on_is_true_only_for_the_process_holding_the_socket(listener):
    assert ports.listens_on(os.getpid(), listener)
    assert not ports.listens_on(os.getpid(), ports.free_port(listener + 1, set()))
    # Same network namespace, same /proc/PID/net/tcp, but not its socket: a port race's loser.
    other = subprocess.Popen(["sleep", "30"], close_fds=True)
    try:
        assert not ports.listens_on(other.pid, listener)
    finally:
        other.kill()
        other.wait()
