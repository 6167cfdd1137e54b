"""scripts/workflow.py and scripts/kvworkflow/: AWX's slicing of the inventory, each job's inventory and options,
the execution nodes file, and one real ansible-runner job read back from its events (the sliced workflow itself,
with an execution node over SSH, runs in tests/e2e/test_storm_sliced.py)."""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))

from kvworkflow import cli, jobs  # noqa: E402
from kvworkflow.errors import ExecutionNodesInvalid, InventoryUnreadable  # noqa: E402
from kvworkflow.inventory import Inventory  # noqa: E402

BIN = os.path.dirname(sys.executable)
SCRIPT_DATA = {
    "_meta": {"hostvars": {"node3": {"ansible_port": 2203}, "node10": {"kubevol_node_name": "n-10"}}},
    "all": {"children": ["ungrouped", "nodes", "ctrl"], "vars": {"site": "a"}},
    "nodes": {"hosts": ["node3", "node10", "node2", "node1"], "vars": {"ansible_user": "root"}, "children": ["gpu"]},
    "gpu": {"hosts": ["node2"]},
    "ctrl": {"hosts": ["ctrl1"]},
}


def test_slices_are_every_nth_host_by_name_as_awx_slices():
    inventory = Inventory(SCRIPT_DATA)
    assert inventory.hosts == ["ctrl1", "node1", "node10", "node2", "node3"]  # AWX orders hosts by name
    assert inventory.slices(2) == [["ctrl1", "node10", "node3"], ["node1", "node2"]]
    assert inventory.slices(9) == [[h] for h in inventory.hosts]  # no empty slice is run
    assert inventory.slices(1) == [inventory.hosts]


def test_a_slice_inventory_holds_only_its_hosts_with_their_groups_and_variables(tmp_path):
    inventory = Inventory(SCRIPT_DATA)
    path = str(tmp_path / "hosts.json")
    inventory.write(path, ["node2", "node3"])
    listed = json.loads(subprocess.run([os.path.join(BIN, "ansible-inventory"), "-i", path, "--list"], check=True,
                                       stdout=subprocess.PIPE, universal_newlines=True).stdout)
    assert sorted(listed["_meta"]["hostvars"]) == ["node2", "node3"]  # groups['all'] is the slice, as in AWX
    assert listed["_meta"]["hostvars"]["node3"] == {"ansible_port": 2203, "ansible_user": "root", "site": "a"}
    assert listed["gpu"]["hosts"] == ["node2"] and sorted(listed["nodes"]["hosts"]) == ["node2", "node3"]
    assert "ctrl" not in listed or not listed["ctrl"].get("hosts")


def test_an_inventory_that_cannot_be_read_starts_no_job(tmp_path):
    with pytest.raises(InventoryUnreadable) as err:
        Inventory.read(str(tmp_path / "missing.yml"), os.path.join(BIN, "ansible-inventory"))
    assert "[KV-WORKFLOW-INVENTORY]" in str(err.value) and "no job was started" in str(err.value)


def test_options_extra_vars_and_environment(tmp_path):
    args = cli.parse(["-i", "inv", "--slices", "3", "--rounds", "2", "--until-converged", "-e", "a=1 b='x y'",
                      "-e", '{"c": true}', "--env", "ANSIBLE_FORKS=20"])
    assert (args.inventory, args.slices, args.rounds, args.until_converged, args.overlap) == ("inv", 3, 2, True, False)
    (tmp_path / "vars.yml").write_text("d: [1, 2]\n")
    assert cli.extra_vars(args.extra_vars + ["@%s" % (tmp_path / "vars.yml")]) == \
        {"a": "1", "b": "x y", "c": True, "d": [1, 2]}
    env = cli.job_env(args)
    assert env["ANSIBLE_FORKS"] == "20" and env["ANSIBLE_HOST_KEY_CHECKING"] in ("True", os.environ.get(
        "ANSIBLE_HOST_KEY_CHECKING"))  # never turned off behind the operator's back
    with pytest.raises(SystemExit):
        cli.parse(["-i", "inv", "--slices", "0"])


def test_the_execution_nodes_file(tmp_path):
    path = tmp_path / "nodes.yml"
    path.write_text("ee1:\n  ssh: [ssh, -F, cfg, ee1]\n  ansible_runner: /opt/ee/bin/ansible-runner\n"
                    "  collections_path: /usr/share/ansible/collections\n  slices: [1, 3]\n")
    nodes = cli.execution_nodes(str(path))
    assert sorted(nodes) == [1, 3] and nodes[1].name == "ee1"
    assert nodes[1].env() == {"PATH": "/opt/ee/bin:/usr/local/bin:/usr/bin:/bin",
                              "ANSIBLE_COLLECTIONS_PATH": "/usr/share/ansible/collections"}
    job = jobs.Job("r01-node-1-slice1", "slice 1", jobs.NODE_STAGE, str(tmp_path), None, None, {}, {}, node=nodes[1])
    argv = job._worker_argv()  # pylint: disable=protected-access
    assert argv[0] == "ssh" and "ServerAliveInterval=15" in argv
    assert argv[-4:] == ["cfg", "ee1", "/opt/ee/bin/ansible-runner", "worker"]
    path.write_text("ee1:\n  ssh: ssh ee1\n  ansible_runner: x\n  collections_path: y\n")
    with pytest.raises(ExecutionNodesInvalid) as err:
        cli.execution_nodes(str(path))
    assert "ssh must be an argv list" in str(err.value) and "[KV-WORKFLOW-EXECUTION-NODES]" in str(err.value)


PLAYBOOK = """---
- name: Three hosts, one changes, one fails
  hosts: all
  gather_facts: false
  tasks:
    - name: Change on node2
      ansible.builtin.command: "true"
      changed_when: inventory_hostname == 'node2'
    - name: Fail on node3
      ansible.builtin.fail:
        msg: node3 cannot
      when: inventory_hostname == 'node3'
"""


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")  # jobs.py says why it is safe
def test_a_real_job_is_read_from_its_events(tmp_path):
    """ansible-runner's Python API runs a private data directory as the workflow prepares it; the outcome comes from
    the job's events and artifacts: per-host counts, the failed host and its message."""
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    inventory = Inventory({"_meta": {"hostvars": dict((h, local) for h in ("node1", "node2", "node3"))},
                           "nodes": {"hosts": ["node1", "node2", "node3"]}})
    env = {"PATH": BIN + os.pathsep + os.environ.get("PATH", ""), "ANSIBLE_HOME": str(tmp_path / "home"),
           "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}
    job = jobs.Job("r01-test", "test job", "test.yml", str(tmp_path / "jobs"), inventory, ["node2", "node3"],
                   {"unused": 1}, env, project={"test.yml": PLAYBOOK}).start()
    out = job.wait()
    assert out.status == "failed" and out.rc == 2 and out.complete and not out.ok
    assert sorted(out.hosts) == ["node2", "node3"]  # the job's inventory: its slice only
    assert out.changed == 1 and list(out.failed) == ["node3"] and "node3 cannot" in out.failed["node3"]
    with open(os.path.join(job.pdd, "env", "extravars")) as handle:
        assert json.load(handle) == {"unused": 1}


class FakeJob:
    """A job whose outcome the test decides: (status, steps, blocked) by its label's start."""

    started = []
    plans = {}

    def __init__(self, tag, label, playbook, work_dir, inventory, hosts, extravars, env, cmdline, timeout, node,
                 scope):
        self.label, self.scope, self.node = label, scope, node

    def start(self):
        FakeJob.started.append(self.label)
        return self

    def wait(self):
        from kvworkflow.events import JobOutcome, Plan
        status, steps, blocked = next((v for k, v in FakeJob.plans.items() if self.label.startswith(k)),
                                      ("successful", 0, 0))
        out = JobOutcome(self.label, status)
        out.complete = status != "error"
        out.hosts = {"node1": {"ok": 1, "changed": 0, "failures": int(status == "failed"), "dark": 0}}
        if status == "failed":
            out.failed = {"node1": "boom"}
        if status != "error":
            out.plan = Plan({"counts": {"steps": steps, "blocked": blocked}})
            out.plan.blocked_items = [{"node": "node1", "volume": "pv-%d" % i, "pod": None, "action": "mount",
                                       "reason": "waits"} for i in range(blocked)]
        out.scope = self.scope
        return out

    def cancel(self):
        pass


def test_the_workflow_runs_every_stage_whatever_the_one_before_returned(monkeypatch, tmp_path):
    """AWX's always edges: a slice that failed (its worker lost) does not stop the attach/detach stage or the second
    node stage; a round converges only when every plan was empty, and the exit status says so."""
    from kvworkflow import flow
    monkeypatch.setattr(flow, "Job", FakeJob)
    inventory = Inventory(SCRIPT_DATA)
    lines = []
    FakeJob.started, FakeJob.plans = [], {"round 1 node stage 1, slice 1/2": ("error", 0, 0),
                                          "round 1 attach/detach": ("successful", 2, 0),
                                          "round 2 node stage 2, slice 2/2": ("successful", 0, 1)}
    work = flow.Workflow(inventory, 2, str(tmp_path), {}, {}, say=lines.append)
    assert work.run(3, until_converged=True) == 0
    assert [label.split(" (")[0] for label in FakeJob.started[:5]] == [
        "round 1 node stage 1, slice 1/2", "round 1 node stage 1, slice 2/2", "round 1 attach/detach stage",
        "round 1 node stage 2, slice 1/2", "round 1 node stage 2, slice 2/2"]
    assert "workflow: converged in round 3" in lines  # round 2 left a blocked item: not converged, whatever changed
    assert any(line.startswith("  waits: round 2 node stage 2, slice 2/2") for line in lines), lines
    FakeJob.started, FakeJob.plans = [], {"round 1 attach/detach": ("failed", 0, 0)}
    lines[:] = []
    work = flow.Workflow(inventory, 2, str(tmp_path), {}, {}, say=lines.append)
    assert work.run(1, until_converged=True) == 1 and "[KV-NOT-CONVERGED]" in lines[-1]
    assert work.result()["rounds"][0]["outcome"]["converged"] is False
