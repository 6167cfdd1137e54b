"""One plan (issue 37): playbooks/plan.yml and the reconcile's --check give the same steps for the same inputs, on
fresh SSH nodes (nothing mounted, so node facts add nothing the cluster alone does not say), and both honour the
planning variables (a scope, the driver options); --check runs the node tasks in the node modules' check mode and
changes nothing anywhere.
"""
import json
import os

import pytest

from e2e_lib import REPO

PLAN_PLAYBOOK = os.path.join(REPO, "playbooks", "plan.yml")
INPUTS = ["-e", json.dumps({"kubevol_scope": "[?kind=='Pod' && metadata.namespace=='shop']",
                            "kubevol_driver_options": {"loop.kubevol.io": {"pools": ["/var/lib/kubevol/pool"]},
                                                       "kubernetes.io/local-volume": {"paths": ["/mnt/disks"]}},
                            "kubevol_plan_table_rows": 0})]
ROW_MARKS = ("+", "-", "~", "!")


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("oneplan", 3)
    cluster.load_example()
    return cluster


def rows(lines):
    return [line for line in lines if line[:1] in ROW_MARKS]


def test_plan_yml_and_check_give_the_same_steps(kv):
    before = kv.state_bytes()
    check = kv.reconcile(INPUTS, check=True)
    plan = kv.reconcile(INPUTS, playbook=PLAN_PLAYBOOK)
    assert kv.state_bytes() == before
    check_rows, plan_rows = rows(check.plan_lines()), rows(plan.plan_lines())
    assert check_rows and check_rows == plan_rows, (check_rows, plan_rows)
    # the scope is honoured by both: only the shop namespace's pods
    assert not [row for row in plan_rows if "tools/" in row], plan_rows
    # plan.yml says it has no node facts and what that assumes, and is no run: no node was reached
    assert plan.plan_lines()[0].startswith("Planned from the cluster alone, without node facts"), plan.plan_lines()
    assert plan.node_module_runs() == {}
    # --check ran the node tasks, in check mode: nothing mounted, no image made, nothing recorded
    assert check.node_module_runs(), check.describe()
    assert all(kv.mounts(node) == {} for node in kv.nodes)
    assert [name for name in os.listdir(os.path.join(kv.dir, "pool")) if name.endswith(".img")] == []
    assert check.kubevol_report()["check_mode"] is True and not check.kubevol_report()["run_failed"]


def test_plan_yml_honours_the_driver_options_it_names_in_its_remedies(kv):
    """The plan's remedy names kubevol_driver_options: plan.yml takes it (it used to ignore it)."""
    other = ["-e", json.dumps({"kubevol_driver_options": {"loop.kubevol.io": {"pools": ["/srv/other-pool"]}}})]
    plan = kv.reconcile(other, playbook=PLAN_PLAYBOOK)
    lines = plan.plan_lines()
    assert any(line.startswith("Nothing to do;") for line in lines), lines
    assert "kubevol_driver_options" in "\n".join(lines) and not [line for line in lines if line.startswith("+")]
