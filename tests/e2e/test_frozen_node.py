"""A node that stops answering while Ansible's ControlMaster connection to it is open (SIGSTOP of every process of
the node: its sshd and the per-connection sshd the master talks to) must not hang the run: with
kubevol_node_timeout the run ends in bounded time naming that node, the other nodes converge and are recorded, and
the run lock is released. On 3 real SSH nodes with the example cluster."""
import os
import signal
import time

import pytest

from e2e_lib import pod_mount_path, pod_uid, va_name, vas

WEB_HANDLE = "pv-web-content.img"


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("frozen", 3)
    cluster.load_example()
    cluster.reconcile()
    return cluster


def test_a_frozen_node_is_given_up_and_the_others_converge(kv):
    kv.reconcile()  # every ControlMaster is open (ControlPersist) when the node freezes
    assert kv.edit("move-pod", "shop/web-0", "node1") == "changed"  # work for node1 and node2, none for node3
    kv.signal_node("node3", signal.SIGSTOP)
    try:
        start = time.monotonic()
        run = kv.reconcile(extra=["-e", "kubevol_node_timeout=60"], expect_rc="nonzero")
        took = time.monotonic() - start
    finally:
        kv.signal_node("node3", signal.SIGCONT)
    assert took < 180, "the run took %.0fs with a frozen node" % took
    errors = run.report().get("errors") or []
    assert [e["node"] for e in errors] == ["node3"], run.describe()
    assert "did not answer within 60s (kubevol_node_timeout)" in errors[0]["msg"], errors
    # the move that does not involve node3 is done and recorded
    data = kv.cluster()
    assert pod_mount_path(pod_uid(data, "shop/web-0"), "pv-web-content") in kv.mounts("node1")
    assert vas(data).get(va_name(WEB_HANDLE, "node1")) == ("pv-web-content", "node1", True)
    # the run lock was released: the next run (node3 answering again) takes it at once and converges
    assert not os.path.exists(kv.state + ".run-lock") or "holder" not in open(kv.state + ".run-lock").read()
    again = kv.reconcile()
    assert again.rc == 0
