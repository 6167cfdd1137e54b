"""kubevol.volumes.pod_volumes_wait on 2 real SSH nodes: ready for a converged pod; on timeout the Multi-Attach
holder of an RWO claim held on another node is named; a pod on a node that cannot be reached names that node.
The cluster file is written here (kubectl's key order); the reconcile role converges it first."""
import os

import pytest
import yaml

from e2e_lib import bound_volume, node_object, running_pod, write_list

NS = "shop"
CLAIM, PV = "data", "pv-wait-data"
UID_A = "7a7a7a7a-0000-4000-8000-00000000000a"
UID_B = "7a7a7a7a-0000-4000-8000-00000000000b"


def cluster(pods):
    return [node_object("node1"), node_object("node2")] + bound_volume(PV, NS, CLAIM) + pods


def pod(name, uid, node_name, labels):
    return running_pod(NS, name, uid, node_name, CLAIM, labels)


def write(kv, objects):
    write_list(kv.state, objects)


def wait(kv, expect_rc=0, check=False, **args):
    book = os.path.join(kv.dir, "wait.yml")
    with open(book, "w") as handle:
        yaml.safe_dump([{"hosts": "nodes", "gather_facts": False, "tasks": [
            {"name": "Wait for the pods' volumes", "kubevol.volumes.pod_volumes_wait": dict(
                {"cluster_state": kv.state, "interval": 1}, **args)}]}], handle)
    run = kv.reconcile(playbook=book, expect_rc=expect_rc, check=check)
    return run, dict((host, result) for _name, host, _status, result in run.executions(
        action="kubevol.volumes.pod_volumes_wait"))


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("wait", 2)
    write(cluster, cluster_a_only())
    cluster.reconcile()
    return cluster


def cluster_a_only():
    return cluster([pod("a", UID_A, "node1", {"app": "shop", "pod": "a"})])


def test_a_converged_pod_is_ready(kv):
    run, results = wait(kv, pods=["shop/a"], timeout=30)
    assert results["node1"]["ready"] is True, run.describe()
    [entry] = results["node1"]["pods"]
    assert entry["pod"] == "shop/a" and entry["node"] == "node1"
    assert entry["volumes"] == [{"volume": "d", "pv": PV, "state": "ready", "reason": None}]
    assert results["node2"]["pods"] == []  # each pod is answered for once, by its node's host
    # a label selector finds the same pod
    _run, results = wait(kv, label_selector="app=shop,pod!=b", timeout=30)
    assert [e["pod"] for e in results["node1"]["pods"]] == ["shop/a"]


def test_a_pod_whose_rwo_claim_another_node_holds_times_out_naming_the_holder(kv):
    data = kv.cluster()  # with what the first reconcile recorded
    write(kv, data["items"] + [pod("b", UID_B, "node2", {"app": "shop"})])
    run = kv.reconcile()  # the Multi-Attach error is blocked and reported; nothing fails
    assert "Multi-Attach error" in run.stdout, run.describe()
    run, results = wait(kv, expect_rc="nonzero", pods=["shop/b"], timeout=3)
    result = results["node2"]
    assert result["ready"] is False and result["polls"] >= 2, run.describe()
    assert "volumes not ready after" in result["msg"]
    assert 'shop/b volume d (PV %s) on node node2: Multi-Attach error for volume "%s" Volume is already used by ' \
           'pod(s) a' % (PV, PV) in result["msg"], result["msg"]
    # check mode reports without waiting and without failing
    _run, results = wait(kv, check=True, pods=["shop/b"], timeout=60)
    assert results["node2"]["polls"] == 1 and results["node2"]["ready"] is False
    assert results["node2"]["pods"][0]["volumes"][0]["state"] == "waiting"


def test_a_pod_on_an_unreachable_node_names_that_node(kv):
    kv.kill_node("node2")
    run, results = wait(kv, expect_rc="nonzero", pods=["shop/a", "shop/b"], timeout=2)
    assert results["node1"]["ready"] is True, run.describe()
    msg = results["node2"]["msg"]
    assert "shop/b: node node2 is unreachable" in msg, run.describe()
