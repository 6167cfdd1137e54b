"""The storm of test_storm.py (storm_lib.py) through the sliced workflow (docs/fleet.md, scripts/workflow.py), on 6
SSH test nodes: each round runs the workflow as AWX would (the node stage as 3 slices of ansible-playbook --limit
at once, the attach/detach stage once, the node stage again), with rounds overlapping (the second node stage's
slices started together with the attach/detach stage; in one round two workflows at once, whose attach/detach
stages take turns on the run lock), pods moved, deleted, re-created and doubled between rounds, and one node-stage
slice killed mid-run. After every round:

- no ReadWriteOnce volume is attached or mounted on two nodes, nor mounted without its device;
- no data written to a volume is lost (checksums, wherever the volume went);
- the records match the nodes (VolumeAttachments and node.status.volumesAttached);

and the storm converges within a bounded number of workflow rounds, every pod with its volume mounted.
"""
import glob
import os
import random
import subprocess
import sys
import time

import pytest

from e2e_lib import REPO
from storm_lib import (EXTRA, NODES, RWO, SEED, Storm, check_data, check_invariants, kill_once_a_node_task_runs,
                       seed_pods)

WORKFLOW = os.path.join(REPO, "scripts", "workflow.py")
NODE_STAGE = os.path.join(REPO, "playbooks", "reconcile_node_stage.yml")
ATTACH_DETACH = os.path.join(REPO, "playbooks", "reconcile_attach_detach.yml")
SLICES = 3
ROUNDS = 4
KILL_ROUND = 2
TWO_WORKFLOWS_ROUND = 3
AD_FIRST_ROUND = 4  # the attach/detach stage alone first, before any node stage saw the moves
CONVERGE_ROUNDS = 4  # a bound: a pod move needs one workflow round, a multi-attach volume's second node another


def workflow(kv, tag, rounds=1, overlap=False, until_converged=False):
    """Start scripts/workflow.py on the cluster (its own log directory); returns the Popen."""
    log_dir = os.path.join(kv.dir, "workflow-%s" % tag)
    python = sys.executable
    argv = [python, WORKFLOW, "-i", kv.inventory, "--slices", str(SLICES), "--rounds", str(rounds),
            "--log-dir", log_dir, "--ansible-playbook", os.path.join(os.path.dirname(python), "ansible-playbook"),
            "--cwd", kv.dir]
    if overlap:
        argv.append("--overlap")
    if until_converged:
        argv.append("--until-converged")
    argv += ["--", "-e", "kubevol_cluster_state=" + kv.state, "-e", "kubevol_provision=true",
             # two workflows at once: the second attach/detach stage waits for the first one's run lock
             "-e", "kubevol_run_lock_timeout=300"] + list(EXTRA)
    env = kv.env()
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)  # the e2e results callback writes one file per run: not for slices
    out = open(os.path.join(kv.dir, "workflow-%s.out" % tag), "w")
    proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=kv.dir)
    out.close()
    kv.children.append(proc)
    proc.log_dir, proc.out = log_dir, out.name
    return proc


def finished(proc, where, expect_rc=0):
    rc = proc.wait(timeout=600)
    with open(proc.out) as handle:
        text = handle.read()
    if expect_rc is not None:
        assert rc == expect_rc, "%s: workflow rc %s:\n%s" % (where, rc, text)
    return text


def logs(proc):
    text = ""
    for path in sorted(glob.glob(os.path.join(proc.log_dir, "*.log"))):
        with open(path) as handle:
            text += handle.read()
    return text


def killed_slice(kv, hosts):
    """A node-stage slice (ansible-playbook --limit) SIGKILLed once its node task runs, or its facts if it has none."""
    env = kv.env()
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    log = os.path.join(kv.dir, "killed-slice.log")
    argv = kv.playbook_argv(EXTRA, playbook=NODE_STAGE) + ["--limit", ",".join(hosts)]
    with open(log, "w") as handle:
        proc = subprocess.Popen(argv, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=kv.dir)
    kv.children.append(proc)
    return kill_once_a_node_task_runs(proc, log)


@pytest.fixture(scope="module")
def kv(make_cluster):
    return make_cluster("storm-sliced", NODES)


def test_a_sliced_storm_keeps_rwo_single_and_data_whole_and_converges(kv):
    rng = random.Random(SEED)
    storm = Storm(kv, rng)
    seed_pods(storm, kv)
    # from nothing: the first node stage waits for attaches, the A/D stage attaches, the second node stage mounts
    first = finished(workflow(kv, "first"), "seed %d, first round" % SEED)
    assert "3 slice(s)" in first, first
    state = check_invariants(kv, storm, "seed %d, first round" % SEED)
    check_data(kv, storm, state, 0)
    assert all(any(p["uid"] in state[p["node"]]["mounted"].get(p["pv"], ()) for p in storm.pods.values()
                   if p["pv"] == pv) for pv in RWO), state

    for round_no in range(1, ROUNDS + 1):
        where = "seed %d, round %d" % (SEED, round_no)
        held = dict((pv, n) for n, s in state.items() for pv in s["mounted"] if pv in RWO)
        storm.shuffle()
        storm.write()
        if round_no == AD_FIRST_ROUND:
            # the A/D stage before the node stage: an RWO volume whose pod left its node is still mounted there, so
            # it is neither detached nor attached elsewhere, and says why
            run = kv.reconcile(EXTRA, playbook=ATTACH_DETACH)
            moved = [pv for pv, n in held.items() if any(p["pv"] == pv and p["node"] != n for p in storm.pods.values())
                     and not any(p["pv"] == pv and p["node"] == n for p in storm.pods.values())]
            assert moved, "%s: no RWO pod left a node where its volume was mounted" % where
            for pv in moved:
                assert "waiting for node %s to unmount it" % held[pv] in run.stdout, (where, pv, run.stdout)
            after = check_invariants(kv, storm, where + " (attach/detach stage first)")
            for pv in moved:  # still where it was, mounted and attached, and nowhere else
                assert pv in after[held[pv]]["mounted"] and pv in after[held[pv]]["devices"], (where, pv, after)
        if round_no == KILL_ROUND:
            hosts = kv.nodes[0::SLICES]  # AWX's first slice
            assert killed_slice(kv, hosts) == -9, "%s: the slice to kill ended before its node task" % where
            check_invariants(kv, storm, where + " (killed slice)", records=False)
        flows = [workflow(kv, "r%d" % round_no, overlap=round_no % 2 == 1)]
        if round_no == TWO_WORKFLOWS_ROUND:
            time.sleep(1.0)
            flows.append(workflow(kv, "r%d-second" % round_no))
        for proc in flows:
            finished(proc, where, expect_rc=None)  # a stage may fail mid-storm (a refused detach); invariants hold
        state = check_invariants(kv, storm, where)
        doubled = [pv for pv in RWO if len([p for p in storm.pods.values() if p["pv"] == pv]) > 1]
        storm.doubled += len(doubled)
        if doubled:
            text = "".join(logs(proc) for proc in flows)
            assert "Multi-Attach" in text, "%s: %s doubled and nothing said Multi-Attach" % (where, doubled)
        check_data(kv, storm, state, round_no)
        storm.settle_doubles()
        storm.write()

    # converge: workflow rounds until one changes nothing, within the bound
    text = finished(workflow(kv, "converge", rounds=CONVERGE_ROUNDS, until_converged=True), "seed %d, converge" % SEED)
    assert "converged in round" in text, text
    state = check_invariants(kv, storm, "seed %d, converged" % SEED)
    check_data(kv, storm, state, ROUNDS + 1)
    for name, pod in storm.pods.items():
        assert pod["uid"] in state[pod["node"]]["mounted"].get(pod["pv"], ()), (name, pod, state[pod["node"]])
    assert storm.followed >= 2 and storm.doubled >= 1, (storm.followed, storm.doubled)
