"""Failures during a reconcile, on 3 real SSH nodes: a dead node, and a run killed half-way.

Chained: converge -> node3 dies while the cluster wants changes on it and elsewhere -> node3
comes back, converge -> a run is SIGKILLed after its attach phase was recorded -> converge.
"""
import os
import time

import pytest
import yaml

from e2e_lib import get, kill_run, pod_mount_path, pod_uid, va_name, vas

LOGS_HANDLE, WEB_HANDLE, DB_HANDLE = "pv-shared-logs.img", "pv-web-content.img", "pv-db-data.img"


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("fail", 3)
    cluster.load_example()
    cluster.shared = {}
    cluster.reconcile()
    return cluster


def object_key(obj):
    meta = obj.get("metadata") or {}
    return obj.get("kind"), meta.get("namespace"), meta.get("name")


def assert_converged_and_idempotent(kv):
    before = kv.state_bytes()
    again = kv.reconcile()
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    assert again.node_module_runs() == {}, again.node_module_runs()
    assert kv.state_bytes() == before


def test_unreachable_node_blocks_only_what_depends_on_it(kv):
    data = kv.cluster()
    logs_path = pod_mount_path(pod_uid(data, "tools/log-writer"), "pv-shared-logs")
    kv.shared["logs_sum"] = kv.write_data("node3", logs_path, "app.log")
    # wanted: web-0 node2 -> node1 (does not involve node3); the logs volume node3 -> node1
    # (its detach needs node3); log-reader is gone
    assert kv.edit("move-pod", "shop/web-0", "node1") == "changed"
    assert kv.edit("delete-pod", "tools/log-reader") == "changed"
    assert kv.edit("move-pod", "tools/log-writer", "node1") == "changed"
    kv.kill_node("node3")

    run = kv.reconcile(expect_rc="nonzero")

    # the role's last step: the dead node is unreachable in the recap, the others neither failed nor unreachable
    verdicts = run.verdicts()
    assert [host for host, (status, _msg) in verdicts.items() if status != "ok"] == ["node3"], verdicts
    assert verdicts["node3"][0] == "unreachable" and run.rc == 4, run.describe()
    assert run.stats["node3"]["unreachable"] == 1 and not run.stats["node1"]["failures"], run.stats
    assert [e["node"] for e in run.report().get("errors") or []] == ["node3"], run.report()
    data = kv.cluster()
    # the move that did not need node3 is done on the nodes and recorded
    web_path = pod_mount_path(pod_uid(data, "shop/web-0"), "pv-web-content")
    assert web_path in kv.mounts("node1")
    assert not [p for p in kv.mounts("node2") if "pv-web-content" in p]
    records = vas(data)
    assert records.get(va_name(WEB_HANDLE, "node1")) == ("pv-web-content", "node1", True)
    assert va_name(WEB_HANDLE, "node2") not in records
    # the logs volume stays attached to node3 (nobody could release it) and is not attached to node1
    assert records.get(va_name(LOGS_HANDLE, "node3")) == ("pv-shared-logs", "node3", True)
    assert va_name(LOGS_HANDLE, "node1") not in records
    assert not [p for p in kv.mounts("node1") if "pv-shared-logs" in p]
    # and what waits for node3 is reported as blocked
    blocked = run.report().get("blocked") or []
    on_logs = [b for b in blocked if b["volume"] == "pv-shared-logs"]
    assert on_logs, run.report()
    assert any(b["node"] == "node3" and "unreachable" in b["reason"] for b in on_logs), on_logs
    assert not [b for b in blocked if b["volume"] == "pv-web-content"], blocked
    assert "node3" not in run.node_module_runs()
    kv.shared["blocked_run"] = True


def test_node_back_converges(kv):
    assert kv.shared.get("blocked_run"), "needs the run with node3 down"
    kv.testnodes("up", "3")  # restarts the dead node3 (fresh, empty kubelet dir: a rebooted machine)
    assert LOGS_HANDLE in kv.power_off_devices("node3")  # and its loop devices are gone with its kernel
    run = kv.reconcile()
    data = kv.cluster()
    logs_path = pod_mount_path(pod_uid(data, "tools/log-writer"), "pv-shared-logs")
    assert logs_path in kv.mounts("node1")
    assert kv.read_sum("node1", logs_path, "app.log") == kv.shared["logs_sum"], "data lost with the node"
    records = vas(data)
    assert va_name(LOGS_HANDLE, "node3") not in records
    assert records.get(va_name(LOGS_HANDLE, "node1")) == ("pv-shared-logs", "node1", True)
    assert kv.mounts("node3") == {}
    assert (get(data, "Node", "node3").get("status") or {}).get("volumesAttached") in (None, [])
    assert not run.report().get("blocked"), run.report()
    assert_converged_and_idempotent(kv)
    kv.shared["recovered"] = True


def test_run_killed_after_attach_recovers(kv):
    assert kv.shared.get("recovered"), "needs the recovered cluster"
    data = kv.cluster()
    db_path = pod_mount_path(pod_uid(data, "shop/db-0"), "pv-db-data")
    checksum = kv.write_data("node1", db_path, "table.dat")
    assert kv.edit("move-pod", "shop/db-0", "node2") == "changed"
    wanted_va = va_name(DB_HANDLE, "node2")

    proc, log = kv.start_reconcile()
    deadline = time.time() + 180
    seen = False
    while time.time() < deadline and proc.poll() is None:
        with open(kv.state, "rb") as handle:
            text = handle.read()
        # the intent (attached: false) is written before the attach; wait for the attach's own record
        if wanted_va.encode() in text and vas(yaml.safe_load(text)).get(wanted_va, (None, None, False))[2]:
            seen = True
            break
        time.sleep(0.02)
    assert seen, "the attach on node2 was never recorded (rc %s); log: %s" % (proc.poll(), log)
    assert proc.poll() is None, "the run ended before it could be killed; log: %s" % log
    kill_run(proc)  # the controller dies: ansible-playbook and its workers

    # the state file is whole: a valid List that still has every object, with the new attachment
    with open(kv.state) as handle:
        killed = yaml.safe_load(handle)
    assert killed["kind"] == "List" and all(o.get("kind") and o.get("metadata") for o in killed["items"])
    # every object is still there (VolumeAttachments come and go with the phases that ran)
    keys = set(object_key(o) for o in killed["items"] if o["kind"] != "VolumeAttachment")
    assert keys == set(object_key(o) for o in data["items"] if o["kind"] != "VolumeAttachment")
    assert vas(killed).get(wanted_va) == ("pv-db-data", "node2", True)
    assert not [f for f in os.listdir(kv.dir) if f.startswith(".cluster.yaml")], "temp files left by the store"

    run = kv.reconcile()
    data = kv.cluster()
    db_path = pod_mount_path(pod_uid(data, "shop/db-0"), "pv-db-data")
    assert db_path in kv.mounts("node2")
    assert kv.read_sum("node2", db_path, "table.dat") == checksum
    assert not [p for p in kv.mounts("node1") if "pv-db-data" in p or "pv-raw-journal" in p]
    records = vas(data)
    assert va_name(DB_HANDLE, "node1") not in records and records.get(wanted_va) == ("pv-db-data", "node2", True)
    assert not run.report(), run.report()
    assert_converged_and_idempotent(kv)


# Inside node2 only: losetup -d fails (a wrapper bind-mounted over the binary in its mount namespace).
FAIL_DETACH = (
    "cp /usr/sbin/losetup /run/losetup.real && "
    "printf '#!/bin/sh\\nfor a in \"$@\"; do [ \"$a\" = -d ] && { echo \"losetup: injected detach failure\" >&2; "
    "exit 1; }; done\\nexec /run/losetup.real \"$@\"\\n' > /run/losetup.wrap && "
    "chmod +x /run/losetup.wrap && mount --bind /run/losetup.wrap /usr/sbin/losetup")


def test_failed_detach_keeps_the_volume_off_the_other_node(kv):
    """The RWO volume's detach on node2 fails: node1 does not attach it in the same run, the run fails
    naming node2, and the next run, once node2 can detach again, moves it with its data."""
    assert kv.shared.get("recovered"), "needs the recovered cluster"
    data = kv.cluster()
    db_path = pod_mount_path(pod_uid(data, "shop/db-0"), "pv-db-data")
    checksum = kv.write_data("node2", db_path, "table.dat")
    assert kv.edit("move-pod", "shop/db-0", "node1") == "changed"
    kv.ssh("node2", FAIL_DETACH)
    try:
        assert "injected" in kv.ssh("node2", "losetup -d /dev/loop-none 2>&1 || true")
        run = kv.reconcile(expect_rc="nonzero")
        errors = run.report().get("errors") or []
        assert [(e["node"], e["phase"]) for e in errors] == [("node2", "teardown")], run.report()
        assert "injected detach failure" in errors[0]["msg"]
        blocked = run.report().get("blocked") or []
        assert any(b["node"] == "node1" and b["volume"] == "pv-db-data" and b["action"] == "attach"
                   and b["reason"].startswith("not attempted") for b in blocked), blocked
        setup = (run.result("Set up", "node1") or {}).get("phase_results") or {}
        assert not [v for v in (setup.get("attach") or {}).get("volumes") or [] if v.get("pv_name") == "pv-db-data"]
        records = vas(kv.cluster())
        assert records.get(va_name(DB_HANDLE, "node2")) == ("pv-db-data", "node2", True)
        assert va_name(DB_HANDLE, "node1") not in records
        assert not [p for p in kv.mounts("node1") if "pv-db-data" in p]
    finally:
        kv.ssh("node2", "umount /usr/sbin/losetup")
    kv.reconcile()
    assert_db_moved(kv, "node2", "node1", checksum)
    kv.shared["moved_to_node1"] = checksum


def assert_db_moved(kv, old, new, checksum):
    """shop/db-0's volume is on ``new`` with its data, recorded there and not on ``old``, and the run converged."""
    data = kv.cluster()
    db_path = pod_mount_path(pod_uid(data, "shop/db-0"), "pv-db-data")
    assert kv.read_sum(new, db_path, "table.dat") == checksum
    records = vas(data)
    assert va_name(DB_HANDLE, old) not in records and records.get(va_name(DB_HANDLE, new))
    assert_converged_and_idempotent(kv)


TWICE_IN_ONE_PLAY = """\
---
- name: Two reconciles in one play, the cause of the first one's failure removed in between
  hosts: all
  gather_facts: false
  tasks:
    - name: First reconcile (node1 cannot detach; the play goes on)
      ansible.builtin.include_role:
        name: kubevol.volumes.reconcile
      vars:
        kubevol_fail_on_error: false
    - name: Let node1 detach again
      ansible.builtin.command: umount /usr/sbin/losetup
      when: inventory_hostname == 'node1'
      changed_when: true
    - name: Second reconcile
      ansible.builtin.include_role:
        name: kubevol.volumes.reconcile
"""


def test_a_second_reconcile_in_the_same_play_starts_from_its_own_plan(kv):
    """The run's state is the run's own: a second reconcile in the same play does not inherit the first one's
    failures (it would skip the volume they name) or errors (it would fail for what it did not do)."""
    checksum = kv.shared.get("moved_to_node1")
    assert checksum, "needs the volume moved to node1 by the test before"
    assert kv.edit("move-pod", "shop/db-0", "node2") == "changed"
    playbook = os.path.join(kv.dir, "twice.yml")
    with open(playbook, "w") as handle:
        handle.write(TWICE_IN_ONE_PLAY)
    kv.ssh("node1", FAIL_DETACH)
    try:
        run = kv.reconcile(playbook=playbook)
    finally:
        kv.ssh("node1", "umount /usr/sbin/losetup 2>/dev/null || true")
    summaries = run.summaries()
    assert len(summaries) == 2, run.describe()
    assert [(e["node"], e["phase"]) for e in summaries[0]["errors"]] == [("node1", "teardown")], summaries[0]
    assert summaries[1]["errors"] == [] and not summaries[1].get("blocked"), summaries[1]
    assert_db_moved(kv, "node1", "node2", checksum)
