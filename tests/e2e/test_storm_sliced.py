"""The storm of test_storm.py (storm_lib.py) through the sliced workflow on ansible-runner (docs/fleet.md,
scripts/workflow.py), on 6 SSH test nodes. Each round runs the workflow as AWX would: every stage and slice an
ansible-runner job with its own private data directory and inventory (the node stage as 3 slices at once, the
attach/detach stage once, the node stage again), slice 1 on an execution node (test node node1, through
ansible-runner transmit | ssh node1 ansible-runner worker | process, with a venv of Debian's Python holding
ansible-core and ansible-runner: .build/venv-execution-node), the others here. Rounds overlap (the second node
stage's slices started with the attach/detach stage; in one round two workflows at once, whose attach/detach stages
take turns on the run lock); pods are moved, deleted, re-created and doubled between rounds; in one round the
execution node's worker is SIGKILLed (with everything under it) while its slice's node task runs. After every round:

- no ReadWriteOnce volume is attached or mounted on two nodes, nor mounted without its device;
- no data written to a volume is lost (checksums, wherever the volume went);
- the records match the nodes (VolumeAttachments and node.status.volumesAttached);

the killed slice's job failed, named (its execution node, the lost stream), and the storm converges within a
bounded number of workflow rounds: a round whose jobs all succeeded and whose plans were all empty, every pod with
its volume mounted.
"""
import json
import os
import random
import subprocess
import sys
import time

import pytest
import yaml

from e2e_lib import COLLECTIONS, REPO
from storm_lib import (EXTRA, NODE_TASK_TITLES, NODES, RWO, SEED, Storm, check_data, check_invariants,
                       kill_worker_once_a_node_task_runs, seed_pods)

WORKFLOW = os.path.join(REPO, "scripts", "workflow.py")
ATTACH_DETACH = os.path.join(REPO, "playbooks", "reconcile_attach_detach.yml")
EXECUTION_NODE_VENV = os.path.join(REPO, ".build", "venv-execution-node")
EXECUTION_NODE = "node1"  # runs slice 1 (AWX's first slice: node1, node4)
SLICES = 3
ROUNDS = 4
KILL_ROUND = 2
TWO_WORKFLOWS_ROUND = 3
AD_FIRST_ROUND = 4  # the attach/detach stage alone first, before any node stage saw the moves
CONVERGE_ROUNDS = 4  # a bound: a pod move needs one workflow round, a multi-attach volume's second node another
GATHER = ("Gather each node's actual state",)


def execution_nodes(kv):
    """The workflow's execution nodes file: slice 1 on test node node1, whose mount namespace sees this work tree,
    so the venv of Debian's Python serves as its execution environment."""
    path = os.path.join(kv.dir, "execution-nodes.yml")
    with open(path, "w") as handle:
        yaml.safe_dump({EXECUTION_NODE: {
            "ssh": ["ssh", "-F", os.path.join(kv.dir, "ssh_config"), EXECUTION_NODE],
            "ansible_runner": os.path.join(EXECUTION_NODE_VENV, "bin", "ansible-runner"),
            "collections_path": COLLECTIONS, "work_dir": os.path.join(kv.dir, "worker"), "slices": [1]}}, handle)
    return path


def workflow(kv, tag, rounds=1, overlap=False, until_converged=False):
    """Start scripts/workflow.py on the cluster (its jobs under workflow-<tag>/, its result in workflow-<tag>.json);
    returns the Popen."""
    work = os.path.join(kv.dir, "workflow-%s" % tag)
    env = kv.env()
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)  # the e2e results callback writes one file per run: not for jobs
    argv = [sys.executable, WORKFLOW, "-i", kv.inventory, "--slices", str(SLICES), "--rounds", str(rounds),
            "--work-dir", work, "--result", work + ".json", "--execution-nodes", execution_nodes(kv),
            "-e", "kubevol_cluster_state=" + kv.state, "-e", "kubevol_provision=true",
            # two workflows at once: the second attach/detach stage waits for the first one's run lock
            "-e", "kubevol_run_lock_timeout=300"] + list(EXTRA)
    # what the jobs on the execution node get too (the ones here inherit this process's environment)
    for key in ("ANSIBLE_PIPELINING", "ANSIBLE_FORKS", "ANSIBLE_HOME", "ANSIBLE_LOCAL_TEMP", "TMPDIR",
                "ANSIBLE_INVENTORY_HOST_PATTERN_MISMATCH", "ANSIBLE_RETRY_FILES_ENABLED", "ANSIBLE_NOCOLOR"):
        argv += ["--env", "%s=%s" % (key, env[key])]
    if overlap:
        argv.append("--overlap")
    if until_converged:
        argv.append("--until-converged")
    out = open(os.path.join(kv.dir, "workflow-%s.out" % tag), "w")
    proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=kv.dir)
    out.close()
    kv.children.append(proc)
    proc.work, proc.out = work, out.name
    return proc


def finished(proc, where, expect_rc=0):
    """The workflow's output and its result file, once it ended."""
    rc = proc.wait(timeout=900)
    with open(proc.out) as handle:
        text = handle.read()
    if expect_rc is not None:
        assert rc == expect_rc, "%s: workflow rc %s:\n%s" % (where, rc, text)
    with open(proc.work + ".json") as handle:
        return text, json.load(handle)


def jobs_of(result):
    return [job for one in result["rounds"] for job in one["jobs"]]


def events_text(proc):
    """Every job event of the workflow's jobs, as text (what each job's plan and report said)."""
    text = []
    for folder, _dirs, names in os.walk(proc.work):
        if os.path.basename(folder) == "job_events":
            for name in names:
                with open(os.path.join(folder, name)) as handle:
                    text.append(handle.read())
    return "\n".join(text)


@pytest.fixture(scope="module")
def kv(make_cluster):
    if not os.access(os.path.join(EXECUTION_NODE_VENV, "bin", "ansible-runner"), os.X_OK):
        pytest.fail("no execution node venv at %s: run scripts/bootstrap.sh (requirements/execution-node.txt)"
                    % EXECUTION_NODE_VENV)
    return make_cluster("storm-sliced", NODES)


def test_a_sliced_storm_keeps_rwo_single_and_data_whole_and_converges(kv):
    rng = random.Random(SEED)
    storm = Storm(kv, rng)
    seed_pods(storm, kv)
    # from nothing: the first node stage waits for attaches, the A/D stage attaches, the second node stage mounts
    text, result = finished(workflow(kv, "first"), "seed %d, first round" % SEED)
    assert "3 slice(s)" in text and "slice 1 on execution node node1" in text, text
    remote = [job for job in jobs_of(result) if job["where"] == EXECUTION_NODE]
    labels = [job["label"].split(" (")[0] for job in remote]
    assert labels == ["round 1 node stage 1, slice 1/3", "round 1 node stage 2, slice 1/3"], remote
    # the slice's own inventory: its nodes (and localhost, where the plays' controller tasks run)
    assert all(job["ok"] and set(job["hosts"]) - {"localhost"} == {"node1", "node4"} for job in remote), remote
    assert not result["converged"]  # the first node stage waited for the attach/detach stage's attaches
    state = check_invariants(kv, storm, "seed %d, first round" % SEED)
    check_data(kv, storm, state, 0)
    assert all(any(p["uid"] in state[p["node"]]["mounted"].get(p["pv"], ()) for p in storm.pods.values()
                   if p["pv"] == pv) for pv in RWO), state

    for round_no in range(1, ROUNDS + 1):
        where = "seed %d, round %d" % (SEED, round_no)
        held = dict((pv, n) for n, s in state.items() for pv in s["mounted"] if pv in RWO)
        storm.shuffle()
        moved_off = round_no == KILL_ROUND and any(storm.move_off(node, state) for node in ("node1", "node4"))
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
        flows = [workflow(kv, "r%d" % round_no, overlap=round_no % 2 == 1)]
        if round_no == KILL_ROUND:
            # the execution node's worker dies while its slice's node task runs (or its facts, if it has none)
            job = os.path.join(flows[0].work, "r01-node-1-slice1", "artifacts", "r01-node-1-slice1")
            killed = kill_worker_once_a_node_task_runs(kv, EXECUTION_NODE, job, flows[0],
                                                       NODE_TASK_TITLES if moved_off else GATHER)
            assert killed, "%s: the execution node's job ended before its worker could be killed" % where
        if round_no == TWO_WORKFLOWS_ROUND:
            time.sleep(1.0)
            flows.append(workflow(kv, "r%d-second" % round_no))
        results = [finished(proc, where, expect_rc=None)[1] for proc in flows]  # a stage may fail mid-storm
        if round_no == KILL_ROUND:
            lost = [j for j in jobs_of(results[0]) if j["label"].startswith("round 1 node stage 1, slice 1/3")][0]
            assert lost["status"] == "error" and not lost["ok"] and lost["where"] == EXECUTION_NODE, lost
            assert "KV-WORKER-LOST" in lost["explanation"] and "execution node node1" in lost["explanation"], lost
            later = [j for j in jobs_of(results[0]) if j["label"].startswith("round 1 node stage 2, slice 1/3")][0]
            assert later["where"] == EXECUTION_NODE and later["complete"], later  # the always edge ran on
        state = check_invariants(kv, storm, where)
        doubled = [pv for pv in RWO if len([p for p in storm.pods.values() if p["pv"] == pv]) > 1]
        storm.doubled += len(doubled)
        if doubled:
            text = "".join(events_text(proc) for proc in flows)
            assert "Multi-Attach" in text, "%s: %s doubled and no job's events said Multi-Attach" % (where, doubled)
        check_data(kv, storm, state, round_no)
        storm.settle_doubles()
        storm.write()

    # converge: workflow rounds until one in which nothing is left, within the bound
    text, result = finished(workflow(kv, "converge", rounds=CONVERGE_ROUNDS, until_converged=True),
                            "seed %d, converge" % SEED)
    assert "converged in round" in text and result["converged"], text
    last = result["rounds"][-1]
    assert all(job["ok"] and job["plan"]["steps"] == 0 and job["plan"]["blocked"] == 0 for job in last["jobs"]), last
    state = check_invariants(kv, storm, "seed %d, converged" % SEED)
    check_data(kv, storm, state, ROUNDS + 1)
    for name, pod in storm.pods.items():
        assert pod["uid"] in state[pod["node"]]["mounted"].get(pod["pv"], ()), (name, pod, state[pod["node"]])
    assert storm.followed >= 2 and storm.doubled >= 1, (storm.followed, storm.doubled)
