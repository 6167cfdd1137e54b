"""The engine's node runner on real SSH nodes (plugin_utils/node_runner.py, kubevol_node_runner).

A cold converge from an inventory that names no Python: the facts run as the module (Ansible discovers the
interpreter), the setup runs directly on the discovered one -> a run with kubevol_node_runner=module finds nothing
to do -> a default run finds nothing to do either, reading through the direct runner the same node state the
module read. Every other e2e test runs the default (direct) runner as well.
"""
import os

import pytest
import yaml

from e2e_lib import pod_mount_path, pod_uid, require_compat_python, va_name, vas


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("runner", 3)
    cluster.load_example()
    with open(cluster.inventory) as handle:
        inv = yaml.safe_load(handle)
    group_vars = inv["all"]["children"]["nodes"]["vars"]
    assert group_vars.pop("ansible_python_interpreter")
    cluster.discovering_inventory = os.path.join(cluster.dir, "discovering.yml")
    with open(cluster.discovering_inventory, "w") as handle:
        yaml.safe_dump(inv, handle)
    cluster.shared = {}
    return cluster


def runners(run, task):
    """{host: node_runner} of the node_phases executions of the task named ``task``."""
    return dict((host, result.get("node_runner")) for _name, host, _status, result in run.executions(name=task))


def facts_of(run):
    return dict((host, result["node_facts"])
                for _name, host, _status, result in run.executions(name="Gather each node's actual state"))


def test_first_contact_discovers_the_python_then_sets_up_directly(kv):
    run = kv.reconcile(inventory=kv.discovering_inventory)
    assert runners(run, "Gather each node's actual state") == dict((n, "module") for n in kv.nodes), run.describe()
    assert runners(run, "Set up") == dict((n, "direct") for n in kv.nodes), run.describe()
    data = kv.cluster()
    assert va_name("pv-db-data.img", "node1") in vas(data)
    assert pod_mount_path(pod_uid(data, "shop/db-0"), "pv-db-data") in kv.mounts("node1")
    assert pod_mount_path(pod_uid(data, "shop/web-0"), "pv-web-content") in kv.mounts("node2")


def test_the_module_runner_finds_nothing_to_do(kv):
    before = kv.state_bytes()
    run = kv.reconcile(["-e", "kubevol_node_runner=module"])
    assert runners(run, "Gather each node's actual state") == dict((n, "module") for n in kv.nodes), run.describe()
    assert run.plan() == [] and run.node_module_runs() == {}, run.describe()
    assert all(run.changed(n) == 0 for n in kv.nodes) and kv.state_bytes() == before
    kv.shared["module_facts"] = facts_of(run)


def test_the_direct_runner_reads_the_same_node_state(kv):
    before = kv.state_bytes()
    run = kv.reconcile()
    assert runners(run, "Gather each node's actual state") == dict((n, "direct") for n in kv.nodes), run.describe()
    assert run.plan() == [] and run.node_module_runs() == {}, run.describe()
    assert all(run.changed(n) == 0 for n in kv.nodes) and kv.state_bytes() == before
    direct = facts_of(run)
    assert direct == kv.shared["module_facts"]
    assert any(facts["global_mounts"] for facts in direct.values()), direct


def test_the_oldest_controller_runs_directly_too(kv):
    """ansible-core 2.19 (the compat venv) over OpenSSH: the same ActionBase calls, the same result."""
    compat_py = require_compat_python()
    before = kv.state_bytes()
    run = kv.reconcile(python=compat_py)
    assert run.argv[0] == os.path.join(os.path.dirname(compat_py), "ansible-playbook")
    assert runners(run, "Gather each node's actual state") == dict((n, "direct") for n in kv.nodes), run.describe()
    assert run.plan() == [] and kv.state_bytes() == before
    assert facts_of(run) == kv.shared["module_facts"]


def test_a_broken_python_on_one_node_fails_that_node_with_what_to_do(kv):
    """node2's interpreter is missing: its facts cannot be read, nothing runs on it and nothing elsewhere depends on
    guesses about it; the run fails naming the node, the step and what to do, and changes nothing."""
    with open(kv.inventory) as handle:
        inv = yaml.safe_load(handle)
    inv["all"]["children"]["nodes"]["hosts"]["node2"]["ansible_python_interpreter"] = "/nonexistent/python3"
    broken = os.path.join(kv.dir, "broken-python.yml")
    with open(broken, "w") as handle:
        yaml.safe_dump(inv, handle)
    before, mounts = kv.state_bytes(), kv.mounts("node2")
    run = kv.reconcile(inventory=broken, expect_rc="nonzero")
    assert runners(run, "Gather each node's actual state") == {"node1": "direct", "node2": "direct",
                                                               "node3": "direct"}, run.describe()
    final = [result for _task, _host, status, result in run.executions(name="Fail when a node failed")
             if status == "failed"]
    assert len(final) == 1, run.describe()
    msg = final[0]["msg"]
    assert "node2: kubevol.volumes.node_volume_info (direct run): the node's Python gave no result (rc=127)" in msg
    assert "/nonexistent/python3" in msg and "kubevol_node_runner=module runs the module instead" in msg, msg
    assert [e["node"] for e in run.report().get("errors") or []] == ["node2"], run.report()
    assert run.node_module_runs() == {} and kv.state_bytes() == before and kv.mounts("node2") == mounts
