"""The reconcile role checks every host's variables against its argument spec in one controller task
(plugins/action/role_arguments.py), imported with rolespec_validate: false as playbooks/reconcile.yml does.

Two hosts over the local connection (no node is reached: the check is the role's first task, and a wrong value
stops the run before anything else): a play-wide wrong value and one host's wrong value are refused, naming the
host and the variable; right values pass, and no per-host validation task runs.
"""
import json
import os
import subprocess
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PLAYBOOK = os.path.join(REPO, "playbooks", "reconcile.yml")


def run(tmp_path, host_vars=None, extra=None):
    hosts = {}
    for name in ("node1", "node2"):
        hosts[name] = dict({"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                           **((host_vars or {}).get(name) or {}))
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    state = tmp_path / "cluster.yaml"
    state.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [], "metadata": {}}))
    (tmp_path / "kubelet").mkdir(exist_ok=True)
    args = dict({"kubevol_cluster_state": str(state), "kubevol_kubelet_dir": str(tmp_path / "kubelet")},
                **(extra or {}))
    env = dict(os.environ, ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
                           PLAYBOOK, "--check", "-e", json.dumps(args)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, env=env, cwd=str(tmp_path), timeout=300,
                          check=False)
    return proc.returncode, proc.stdout


def test_a_wrong_value_of_one_host_is_refused_naming_the_host_and_the_variable(tmp_path):
    rc, out = run(tmp_path, host_vars={"node2": {"kubevol_max_wait_for_unmount": "soon"}})
    assert rc != 0, out
    assert "Validation of the role's arguments failed" in out, out
    assert "node2: " in out and "kubevol_max_wait_for_unmount" in out and "node1: " not in out, out
    assert "Gather each node's actual state" not in out, out  # nothing ran after the check


def test_a_play_wide_wrong_choice_is_refused_for_every_host(tmp_path):
    rc, out = run(tmp_path, extra={"kubevol_cluster_source": "nope"})
    assert rc != 0, out
    assert "node1: " in out and "node2: " in out and "kubevol_cluster_source" in out and "nope" in out, out


def test_right_values_pass_with_one_check_and_no_per_host_validation(tmp_path):
    rc, out = run(tmp_path, host_vars={"node1": {"kubevol_node_name": "k8s-node-1"}})
    assert rc == 0, out
    assert out.count("TASK [kubevol.volumes.reconcile : Check the role's arguments of every host]") == 1, out
    assert "Validating arguments against arg spec" not in out, out
