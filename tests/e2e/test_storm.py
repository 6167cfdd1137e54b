"""A storm on 6 SSH test nodes (issue 30's safety net): pods of ReadWriteOnce and ReadWriteMany claims moved,
deleted, re-created and doubled on another node between rounds, one round's run killed in its node task; after
every round:

- no ReadWriteOnce volume is attached (a device in node facts) or mounted (a global or pod mount) on two nodes;
- no data written to a volume is lost: each round writes a file through every pod mount and later rounds find
  every earlier file with its checksum, wherever the volume went;
- the records match the nodes (after each completed run): a VolumeAttachment says attached exactly where a node
  has the device, and each node's status.volumesAttached lists exactly its devices;
- a pod whose claim is an RWO volume in use on another node is never mounted (Multi-Attach is blocked, not done);

and at the end the storm converges: one more run and a second one that changes nothing.

The storm is seeded (KUBEVOL_STORM_SEED, else a fixed seed): a failure names its seed and round, and the same
seed replays it. The runs are the single-controller role, round after round; test_storm_sliced.py runs the same
storm (storm_lib.py) through the sliced workflow's stages.
"""
import random

import pytest

from storm_lib import (EXTRA, KILL_ROUND, NODES, ROUNDS, RWO, RWX, SEED, Storm, check_data, check_invariants,
                       kill_once_a_node_task_runs, seed_pods)


def killed_run(kv):
    """A run SIGKILLed while its node task runs (once its log shows the node task's title)."""
    proc, log = kv.start_reconcile(EXTRA)
    return kill_once_a_node_task_runs(proc, log)


@pytest.fixture(scope="module")
def kv(make_cluster):
    return make_cluster("storm", NODES)


def test_a_storm_of_pod_moves_keeps_rwo_single_and_data_whole(kv):
    rng = random.Random(SEED)
    storm = Storm(kv, rng)
    seed_pods(storm, kv)
    kv.reconcile(EXTRA)
    state = check_invariants(kv, storm, "seed %d, first run" % SEED)
    check_data(kv, storm, state, 0)
    assert all(any(p["uid"] in state[p["node"]]["mounted"].get(p["pv"], ()) for p in storm.pods.values()
                   if p["pv"] == pv) for pv in RWO), state
    # the blank RWX image was set up on two nodes at once: the loop driver stages it under its holder lock, so one
    # node formatted it and the other found the filesystem (before: mke2fs refused a device the other had mounted)
    for pv in RWX:
        assert all(p["uid"] in state[p["node"]]["mounted"].get(pv, ()) for p in storm.pods.values()
                   if p["pv"] == pv), state

    for round_no in range(1, ROUNDS + 1):
        where = "seed %d, round %d" % (SEED, round_no)
        storm.shuffle()
        storm.write()
        if round_no == KILL_ROUND:
            assert killed_run(kv) == -9, "%s: the run to kill ended before its node task" % where
            check_invariants(kv, storm, where + " (killed run)", records=False)
        run = kv.reconcile(EXTRA, expect_rc=None)
        assert run.complete, run.describe()
        assert not (run.report().get("errors") or []), "%s: %s" % (where, run.describe())
        state = check_invariants(kv, storm, where)
        doubled = [pv for pv in RWO if len([p for p in storm.pods.values() if p["pv"] == pv]) > 1]
        storm.doubled += len(doubled)
        for pv in doubled:  # the first pod keeps the volume; the second is blocked, and says Multi-Attach
            assert "Multi-Attach" in run.stdout, "%s: %s doubled and nothing said Multi-Attach" % (where, pv)
        check_data(kv, storm, state, round_no)
        storm.settle_doubles()
        storm.write()

    # converge: one run for the settled doubles, then nothing to do
    kv.reconcile(EXTRA)
    state = check_invariants(kv, storm, "seed %d, converged" % SEED)
    check_data(kv, storm, state, ROUNDS + 1)
    for name, pod in storm.pods.items():
        assert pod["uid"] in state[pod["node"]]["mounted"].get(pod["pv"], ()), (name, pod, state[pod["node"]])
    # the storm did what it says: volumes followed their pods to other nodes with their data, claims were doubled
    assert storm.followed >= 3 and storm.doubled >= 1, (storm.followed, storm.doubled)
    again = kv.reconcile(EXTRA)
    assert all(again.changed(h) == 0 for h in kv.nodes), again.describe()
    assert again.node_module_runs() == {}, again.node_module_runs()
