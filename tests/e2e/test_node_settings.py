"""The reconcile role hands the node's settings whole to its node tasks (kubevol_node_settings): on 3 real SSH nodes,
node1's losetup hangs when it attaches (a wrapper bind-mounted over the binary in node1's mount namespace only), and
a run with kubevol_command_timeout=3 fails node1's attach at 3 s, naming the command, the limit and the role's
variable; the other nodes converge in the same run. Once losetup answers again, the next run converges node1 too."""
import time

import pytest

# Inside node1 only: `losetup --find` (the attach) sleeps a minute, as a hung device would make it.
HANG_ATTACH = (
    "cp /usr/sbin/losetup /run/losetup.real && "
    "printf '#!/bin/sh\\nfor a in \"$@\"; do [ \"$a\" = --find ] && exec sleep 61; done\\n"
    "exec /run/losetup.real \"$@\"\\n' > /run/losetup.wrap && "
    "chmod +x /run/losetup.wrap && mount --bind /run/losetup.wrap /usr/sbin/losetup")


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("settings", 3)
    cluster.load_example()
    return cluster


def test_the_roles_command_timeout_bounds_a_hung_attach_on_its_node(kv):
    kv.ssh("node1", HANG_ATTACH)
    try:
        started = time.monotonic()
        run = kv.reconcile(extra=["-e", "kubevol_command_timeout=3"], expect_rc="nonzero")
        took = time.monotonic() - started
        errors = run.report().get("errors") or []
        assert errors and all(e["node"] == "node1" for e in errors), run.report()
        msg = " ".join(e["msg"] for e in errors)
        assert "timed out after 3s" in msg and "losetup" in msg and "kubevol_command_timeout" in msg, errors
        assert took < 200, took  # each hung attach waited 3 s, not the default 300 s
        assert "sleep 61" not in kv.ssh("node1", "ps -eo args")  # killed with its process group
    finally:
        kv.ssh("node1", "umount /usr/sbin/losetup")
    run = kv.reconcile()
    assert not run.report().get("errors"), run.report()
