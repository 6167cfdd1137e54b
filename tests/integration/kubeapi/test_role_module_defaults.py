"""The reconcile role honours a play's module_defaults for group/kubevol.volumes.cluster_store.

The role used to set that group itself (with omitted values for the auth options it was not given),
which replaced the play's whole entry: host and api_key set there were ignored. Now it passes only its
cluster source and the options set in kubevol_k8s_auth, and the play's defaults fill in the rest.

One host, the controller itself over the local connection, with an empty kubelet directory; the
cluster in the fake API has a Node and no pods, so the plan is empty and no node is touched. The run
still takes and releases the cluster's run lock (cluster_run_lock) and reads the cluster
(cluster_volume_info) through the store options under test.
"""
import json
import os
import subprocess
import sys

import pytest
import yaml

from fakeapi import FakeApiServer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TOKEN = "kubevol-test-token"
PLAY = """
- name: Reconcile with the API's address and token in the play's module_defaults
  hosts: all
  gather_facts: false
  module_defaults:
    group/kubevol.volumes.cluster_store:
      host: "{{ api_url }}"
      api_key: "{{ play_token }}"
  roles:
    - role: kubevol.volumes.reconcile
"""


@pytest.fixture
def api():
    server = FakeApiServer(tokens=[TOKEN]).start()
    server.load({"kind": "List", "items": [
        {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "node1"},
         "status": {"conditions": [{"type": "Ready", "status": "True"}]}}]})
    yield server
    server.stop()


def play(tmp_path, api, play_token, role_auth=None):
    (tmp_path / "kubelet").mkdir(exist_ok=True)
    (tmp_path / "home").mkdir(exist_ok=True)  # no ~/.kube/config to fall back on
    playbook = tmp_path / "play.yml"
    playbook.write_text(PLAY)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"node1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    extra = {"api_url": api.url, "play_token": play_token, "kubevol_cluster_source": "kubernetes",
             "kubevol_kubelet_dir": str(tmp_path / "kubelet")}
    if role_auth is not None:
        extra["kubevol_k8s_auth"] = role_auth
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("K8S_AUTH_") and k != "KUBECONFIG")
    env.update({"HOME": str(tmp_path / "home"), "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
                "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_INVENTORY_HOST_PATTERN_MISMATCH": "error"})
    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
                          str(playbook), "-e", yaml.safe_dump(extra, default_flow_style=True).strip()],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=env,
                         timeout=300, check=False)
    return res.returncode, res.stdout


def lease_writes(api):
    return [r for r in api.writes() if "leases" in r["path"]]


def test_play_module_defaults_reach_the_store_modules(api, tmp_path):
    rc, out = play(tmp_path, api, TOKEN)
    assert rc == 0, out[-6000:]
    assert "No changes: volumes match the desired state." in out
    reads = api.requests("GET", "/api/v1/nodes")
    assert reads and all(r["user"] == "token" and r["status"] == 200 for r in reads), api.log
    # the run lock was taken and released in the API with the play's token
    assert len(lease_writes(api)) >= 2 and all(r["status"] < 300 for r in lease_writes(api)), api.log


def test_role_auth_overrides_only_the_options_it_sets(api, tmp_path):
    # the play's token is wrong; the role's is right; the host still comes from the play
    rc, out = play(tmp_path, api, "wrong-token", role_auth={"api_key": TOKEN})
    assert rc == 0, out[-6000:]
    assert all(r["user"] == "token" for r in api.log if r["status"] is not None), api.log


def test_the_play_token_is_really_used(api, tmp_path):
    rc, out = play(tmp_path, api, "wrong-token")
    assert rc != 0
    assert api.log and all(r["status"] == 401 for r in api.log), api.log


NODE_TASK_PLAY = """
- name: A node task reads its share of a plan record in the API with the play's module_defaults
  hosts: all
  gather_facts: false
  module_defaults:
    group/kubevol.volumes.cluster_store:
      host: "{{ api_url }}"
      api_key: "{{ play_token }}"
  tasks:
    - kubevol.volumes.node_phases:
        plan: "{{ record_result }}"
        phases: [teardown]
        node_name: node1
        kubelet_dir: "{{ kubelet_dir }}"
        cluster_store: {cluster_source: kubernetes}
      register: out
    - ansible.builtin.assert:
        that:
          - out.module_runs | length == 0
          - not out.changed
"""


def test_node_phases_reads_a_record_in_the_api_with_the_play_defaults(api, tmp_path):
    """node_phases is not in the cluster_store group (its store options are one dict, cluster_store): the play's
    defaults for the group still reach it (stores.with_group_defaults), so the node's share of a plan record kept
    in the API is read with them; nothing of them is in the record's handle."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record
    plan = {"plan": [{"action": "expand", "target": "node", "node": "node1", "volume": "pv-a"}],
            "volume_items": {}, "by_node": {"node1": [0]}}
    handle = plan_record.write(plan, "k8s:kube-system", nodes=["node1"],
                               connection={"host": api.url, "api_key": TOKEN})
    assert TOKEN not in str(handle) and api.url not in str(handle)
    (tmp_path / "kubelet").mkdir()
    (tmp_path / "home").mkdir()
    (tmp_path / "play.yml").write_text(NODE_TASK_PLAY)
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"node1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}))
    extra = {"api_url": api.url, "play_token": TOKEN, "kubelet_dir": str(tmp_path / "kubelet"),
             "record_result": {"record": handle, "counts": {"steps": 1}}}
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("K8S_AUTH_") and k != "KUBECONFIG")
    env.update({"HOME": str(tmp_path / "home"), "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
                "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"), "ANSIBLE_NOCOLOR": "1"})
    del api.log[:]
    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(inventory),
                          str(tmp_path / "play.yml"), "-e", json.dumps(extra)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, universal_newlines=True, env=env, timeout=300, check=False)
    assert res.returncode == 0, res.stdout[-6000:]
    # the node's share is in one bucket object (-b-<j>-<i>, plan_record_k8s.py), never the whole plan (-p-)
    buckets = "/api/v1/namespaces/kube-system/configmaps/kubevol-plan-%s-b-" % handle["run_id"].lower()
    reads = [r for r in api.log if r["path"].startswith(buckets)]
    assert reads and all(r["user"] == "token" and r["status"] == 200 for r in reads), api.log
