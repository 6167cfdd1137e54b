"""What Ansible reports is the truth, per host (issue 37), on 3 real SSH nodes, chained on one cluster:

1. a node-side failure on node2 of three fails node2's setup task, with the node's own message, and node2 alone in
   the play's recap and the retry file; the message is printed once (the report names node2, prints no message);
2. the same in check mode: the node's check refuses it, node2 fails, nothing is written anywhere;
3. ``--limit @<retry file>`` retries exactly node2, and converges once the cause is gone;
4. a node that cannot be reached is unreachable in the recap (facts), the others neither failed nor unreachable,
   and the retry file names it alone.

The per-host results come from the test callback (callback_plugins/kubevol_e2e_json.py): each task's status on
each host and the recap's counts.
"""
import json
import os

import pytest
import yaml

from e2e_lib import va_name, vas

HOSTPATH = "hostpath.csi.k8s.io"
KNOWN = ["-e", json.dumps({"kubevol_known_drivers": [HOSTPATH, "loop.kubevol.io"]})]


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("truth", 3)
    cluster.load_example()
    cluster.reconcile()
    cluster.shared = {}
    return cluster


def retry_env(kv):
    return {"ANSIBLE_RETRY_FILES_ENABLED": "True", "ANSIBLE_RETRY_FILES_SAVE_PATH": kv.dir}


def retry_hosts(kv):
    path = os.path.join(kv.dir, "reconcile.retry")
    if not os.path.exists(path):
        return None
    with open(path) as handle:
        hosts = [line.strip() for line in handle if line.strip()]
    os.unlink(path)
    return hosts


def recap(run):
    """{host: (failures, unreachable)} of the play's recap, the nodes' (localhost runs the playbook's checks, and must
    not have failed: nothing failed outside the hosts)."""
    local = run.stats.get("localhost") or {}
    assert not local.get("failures") and not local.get("unreachable"), run.stats
    return dict((host, (counts.get("failures"), counts.get("unreachable"))) for host, counts in run.stats.items()
                if host != "localhost")


def add_foreign_claim(kv):
    """A pod on node2 whose PV's driver the nodes have no backend for (declared known by mistake): node2's setup
    fails there, alone (docs/contracts.md section 1)."""
    data = kv.cluster()
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-hp"},
          "spec": {"capacity": {"storage": "64Mi"}, "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                   "claimRef": {"namespace": "shop", "name": "hp", "uid": "uid-claim-hp"},
                   "csi": {"driver": HOSTPATH, "volumeHandle": "hp-vol-1", "fsType": "ext4"}}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"namespace": "shop", "name": "hp", "uid": "uid-claim-hp"},
           "spec": {"volumeName": "pv-hp", "resources": {"requests": {"storage": "64Mi"}}},
           "status": {"phase": "Bound", "capacity": {"storage": "64Mi"}}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"namespace": "shop", "name": "app-hp", "uid": "0e850000-0000-4000-8000-0000000000b7"},
           "spec": {"nodeName": "node2", "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "hp"}}],
                    "containers": [{"name": "c", "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]},
           "status": {"phase": "Running", "containerStatuses": [{"name": "c", "state": {"running": {}}}]}}
    data["items"].extend([pv, pvc, pod])
    with open(kv.state, "w") as handle:
        yaml.safe_dump(data, handle, sort_keys=False)


def setup_results(run):
    return dict((host, (status, result)) for _task, host, status, result in run.executions(name="Set up"))


def test_a_node_side_failure_fails_that_host_alone(kv):
    add_foreign_claim(kv)
    run = kv.reconcile(KNOWN, env=retry_env(kv), expect_rc=2)
    # node2's own setup task failed, with the node's message; node1 and node3 ran theirs (or had no work) and did not
    setup = setup_results(run)
    assert setup["node2"][0] == "ignored", setup  # failed, kept in the play (ignore_errors)
    msg = setup["node2"][1]["msg"]
    assert HOSTPATH in msg and "node2" in msg and "no backend" in msg, msg
    assert "phase_results" not in setup["node2"][1], "the failed host's result is its message, not every volume's"
    assert all(status != "ignored" for host, (status, _r) in setup.items() if host != "node2"), setup
    # the recap counts exactly node2, and the retry file holds it alone
    assert recap(run) == {"node1": (0, 0), "node2": (1, 0), "node3": (0, 0)}, run.stats
    assert retry_hosts(kv) == ["node2"]
    verdicts = run.verdicts()
    assert verdicts["node2"][0] == "failed" and "(attach)" in verdicts["node2"][1], verdicts
    assert all(status == "ok" for host, (status, _m) in verdicts.items() if host != "node2"), verdicts
    # printed once: the report names node2 and its task, the last step says node2 failed; neither repeats the message
    report = run.kubevol_report()
    assert report["failed_hosts"] == {"node2": ["attach"]} and report["unreachable_hosts"] == {}, report
    assert report["failed_elsewhere"] == [] and report["run_failed"] is True
    text = "\n".join(run.summary_lines())
    assert "node2 (attach)" in text and "no backend" not in text, text
    assert "no backend" not in verdicts["node2"][1]
    # the table and the report are printed as text lines, not as a JSON list of strings
    assert "\nPer node: steps applied, failed, blocked:\n" in run.stdout, run.describe()
    assert '"Per node: steps applied' not in run.stdout
    # nothing of pv-hp is recorded attached; the other nodes' work is unaffected
    assert vas(kv.cluster()).get(va_name("hp-vol-1", "node2"), (None, None, False))[2] is False
    kv.shared["failed"] = True


def test_check_mode_runs_the_node_checks_and_fails_the_refusing_host(kv):
    assert kv.shared.get("failed"), "needs the cluster with the foreign claim"
    before = kv.state_bytes()
    run = kv.reconcile(KNOWN, check=True, env=retry_env(kv), expect_rc=2)
    assert kv.state_bytes() == before
    # the node task ran, in check mode, on node2 (its module's own check mode), and node2 alone failed
    assert "node2" in run.node_module_runs(), run.node_module_runs()
    assert recap(run) == {"node1": (0, 0), "node2": (1, 0), "node3": (0, 0)}, run.stats
    assert retry_hosts(kv) == ["node2"]
    lines = run.summary_lines()
    assert lines[0].startswith("Check mode, nothing was changed") and any(
        line.startswith("node2: ") and "1 would fail" in line for line in lines), lines
    assert run.kubevol_report()["failed_hosts"] == {"node2": ["attach"]}


def test_limit_at_retry_retries_exactly_the_failed_host(kv):
    assert kv.shared.get("failed"), "needs the cluster with the foreign claim"
    run = kv.reconcile(KNOWN, env=retry_env(kv), expect_rc=2)
    path = os.path.join(kv.dir, "node2.retry")
    os.rename(os.path.join(kv.dir, "reconcile.retry"), path)
    with open(path) as handle:
        assert handle.read().split() == ["node2"]
    # the cause goes (the pod is deleted), and the retry runs node2 alone
    assert kv.edit("delete-pod", "shop/app-hp") == "changed"
    run = kv.reconcile(["--limit", "@" + path], env=retry_env(kv))
    assert sorted(host for host in run.stats if host != "localhost") == ["node2"], run.stats
    assert recap(run) == {"node2": (0, 0)}
    assert retry_hosts(kv) is None


def test_an_unreachable_node_is_unreachable_in_the_recap(kv):
    kv.kill_node("node3")
    try:
        run = kv.reconcile(env=retry_env(kv), expect_rc=4)  # Ansible's exit code for unreachable hosts
        assert recap(run) == {"node1": (0, 0), "node2": (0, 0), "node3": (0, 1)}, run.stats
        assert retry_hosts(kv) == ["node3"]
        assert run.kubevol_report()["unreachable_hosts"] == {"node3": ["facts"]}
        assert run.verdicts()["node3"][0] == "unreachable"
        # in check mode too
        check = kv.reconcile(check=True, env=retry_env(kv), expect_rc=4)
        assert recap(check) == {"node1": (0, 0), "node2": (0, 0), "node3": (0, 1)}, check.stats
        assert retry_hosts(kv) == ["node3"]
    finally:
        kv.testnodes("up", "3")  # node3 comes back (fresh, as a rebooted machine)
        kv.power_off_devices("node3")
