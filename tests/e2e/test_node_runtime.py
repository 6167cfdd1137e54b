"""The node runtime on real SSH nodes: the reconcile role's node work is Ansible's own module execution.

--check on the cold cluster changes nothing and leaves nothing of kubevol's on the nodes (no code cache) -> a cold
converge from an inventory that names no Python (Ansible discovers the interpreter on first contact) -> a
converged run finds nothing to do -> the oldest controller (ansible-core 2.19) reads the same node state -> a broken
Python on one node fails that node, named, and changes nothing. Under Mitogen's mitogen_linear strategy (an
optional speed setting): a cold converge and a no-op on two nodes.
"""
import os
import subprocess
import sys

import pytest
import yaml

from e2e_lib import pod_mount_path, pod_uid, require_compat_python, va_name, vas

NODE_MODULES = {"kubevol.volumes.node_volume_info", "kubevol.volumes.__internal.node_volume_setup",
                "kubevol.volumes.volume_detach", "kubevol.volumes.k8s_volume_attach",
                "kubevol.volumes.node_volume_mount", "kubevol.volumes.fs_expand"}


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("runtime", 3)
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


def facts_of(run):
    return dict((host, result["node_facts"])
                for _name, host, _status, result in run.executions(name="Gather each node's actual state"))


def no_code_cache(kv):
    """No node keeps code of kubevol's (the former direct runner's /run/kubevol/code)."""
    for node in kv.nodes:
        assert kv.ssh(node, "test -e /run/kubevol/code && echo present || echo absent").strip() == "absent", node


def test_check_mode_with_work_changes_nothing_on_the_nodes(kv):
    """--check on the cold cluster: the plan has the setup, no node changes, the store is untouched, and the nodes
    keep nothing of kubevol's code (the former direct runner wrote its code cache even in check mode)."""
    mounts = dict((n, kv.mounts(n)) for n in kv.nodes)
    before = kv.state_bytes()
    run = kv.reconcile(check=True)
    assert run.plan(), run.describe()
    assert kv.state_bytes() == before and dict((n, kv.mounts(n)) for n in kv.nodes) == mounts, run.describe()
    assert kv.loops() == [], kv.loops()
    no_code_cache(kv)


def test_first_contact_discovers_the_python_and_converges(kv):
    run = kv.reconcile(inventory=kv.discovering_inventory)
    for _name, host, status, result in run.executions(name="Gather each node's actual state"):
        assert status == "ok" and result["module_runs"] == ["kubevol.volumes.node_volume_info"], (host, result)
        assert "node_runner" not in result  # one runtime: nothing to report
    setup = run.executions(name="Set up")
    assert setup and all(set(result["module_runs"]) <= NODE_MODULES for _n, _h, _s, result in setup), run.describe()
    data = kv.cluster()
    assert va_name("pv-db-data.img", "node1") in vas(data)
    assert pod_mount_path(pod_uid(data, "shop/db-0"), "pv-db-data") in kv.mounts("node1")
    assert pod_mount_path(pod_uid(data, "shop/web-0"), "pv-web-content") in kv.mounts("node2")
    no_code_cache(kv)


def test_a_converged_run_finds_nothing_to_do(kv):
    """Also: an inventory that still sets the removed kubevol_node_runner runs as before (the variable is ignored)."""
    before = kv.state_bytes()
    run = kv.reconcile(["-e", "kubevol_node_runner=module"])
    assert run.plan() == [] and run.node_module_runs() == {}, run.describe()
    assert all(run.changed(n) == 0 for n in kv.nodes) and kv.state_bytes() == before
    # with no node task, the include is skipped once (run_once), not in a worker per host (docs/performance.md)
    include = [task for task in run.tasks if task["name"].endswith("Carry out the plan on the nodes")]
    assert len(include) == 1 and len(include[0]["hosts"]) == 1 < len(kv.nodes), include
    facts = facts_of(run)
    assert any(node_facts["global_mounts"] for node_facts in facts.values()), facts
    kv.shared["facts"] = facts


def test_the_oldest_controller_reads_the_same_node_state(kv):
    """ansible-core 2.19 (the compat venv) over OpenSSH: the same modules, the same facts, nothing to do."""
    compat_py = require_compat_python()
    before = kv.state_bytes()
    run = kv.reconcile(python=compat_py)
    assert run.argv[0] == os.path.join(os.path.dirname(compat_py), "ansible-playbook")
    assert run.plan() == [] and kv.state_bytes() == before
    assert facts_of(run) == kv.shared["facts"]


def test_a_broken_python_on_one_node_fails_that_node_with_what_to_do(kv):
    """node2's interpreter is missing: its facts cannot be read, nothing runs on it; the run fails naming the node
    and the module, and changes nothing."""
    with open(kv.inventory) as handle:
        inv = yaml.safe_load(handle)
    inv["all"]["children"]["nodes"]["hosts"]["node2"]["ansible_python_interpreter"] = "/nonexistent/python3"
    broken = os.path.join(kv.dir, "broken-python.yml")
    with open(broken, "w") as handle:
        yaml.safe_dump(inv, handle)
    before, mounts = kv.state_bytes(), kv.mounts("node2")
    run = kv.reconcile(inventory=broken, expect_rc="nonzero")
    # node2's facts task failed there, with what went wrong; the last step fails node2 alone
    facts = [result for _task, host, status, result in run.executions(name="Gather each node's actual state")
             if host == "node2"]
    assert len(facts) == 1 and "/nonexistent/python3" in facts[0]["msg"], facts
    verdicts = run.verdicts()
    assert [host for host, (status, _msg) in verdicts.items() if status != "ok"] == ["node2"], verdicts
    assert [e["node"] for e in run.report().get("errors") or []] == ["node2"], run.report()
    assert run.node_module_runs() == {} and kv.state_bytes() == before and kv.mounts("node2") == mounts


# -- Mitogen ---------------------------------------------------------------------------------------------------

def mitogen_strategy_dir():
    """The mitogen_linear strategy's directory in the controller's Python (requirements/controller.txt pins
    mitogen), found as Ansible would import it."""
    proc = subprocess.run([sys.executable, "-c", "import os, ansible_mitogen; print(os.path.join(os.path.dirname("
                           "ansible_mitogen.__file__), 'plugins', 'strategy'))"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if proc.returncode != 0:
        msg = "mitogen is not installed in the controller venv: run scripts/bootstrap.sh (requirements/controller.txt)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)
    return proc.stdout.strip()


@pytest.fixture(scope="module")
def mitogen(make_cluster):
    strategy = mitogen_strategy_dir()
    cluster = make_cluster("mitogen", 2)
    cluster.load_example()
    for pod in ("tools/log-writer", "tools/log-reader"):  # the example's node3 pods, onto node2: two nodes
        assert cluster.edit("move-pod", pod, "node2") == "changed"
    cluster.mitogen_env = {"ANSIBLE_STRATEGY_PLUGINS": strategy, "ANSIBLE_STRATEGY": "mitogen_linear"}
    return cluster


def test_mitogen_linear_converges_then_finds_nothing_to_do(mitogen):
    run = mitogen.reconcile(env=mitogen.mitogen_env)
    # the strategy that ran is a third-party one (Ansible warns of it), and none of the engine asserts under it
    assert "strategy plugins not included in ansible.builtin" in run.stdout, run.describe()
    assert "_is_pipelining_enabled() should never be called" not in run.stdout, run.describe()
    assert run.executions(name="Set up"), run.describe()
    data = mitogen.cluster()
    assert va_name("pv-db-data.img", "node1") in vas(data)
    assert pod_mount_path(pod_uid(data, "shop/db-0"), "pv-db-data") in mitogen.mounts("node1")
    assert pod_mount_path(pod_uid(data, "tools/log-writer"), "pv-shared-logs") in mitogen.mounts("node2")
    before = mitogen.state_bytes()
    again = mitogen.reconcile(env=mitogen.mitogen_env)
    assert again.plan() == [] and again.node_module_runs() == {}, again.describe()
    assert all(again.changed(n) == 0 for n in mitogen.nodes) and mitogen.state_bytes() == before
