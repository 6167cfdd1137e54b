"""pod_volumes_wait, through the real ansible-playbook: a failure while it looks (here, a cluster file cut short) fails
the host's own task, with the node it waited for said first and the failure's code said once at the end."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from local_play import written  # noqa: E402

PLAY = """
- hosts: localhost
  gather_facts: false
  vars:
    kubevol_node_name: node1
  tasks:
    - name: Wait for a pod's volumes, the cluster read from a file cut short inside its items
      kubevol.volumes.pod_volumes_wait:
        cluster_state: {state}
        pods: [shop/db-0]
        timeout: 0
      register: waited
      ignore_errors: true
    - ansible.builtin.copy:
        dest: {out}
        content: "{{{{ waited | to_json }}}}"
"""


def test_a_failure_while_looking_names_the_node_first_and_its_code_once(tmp_path):
    state = tmp_path / "cluster.yaml"
    state.write_text("apiVersion: v1\nitems:\n  - kind: Pod\n")
    waited = written(tmp_path, PLAY, state=state)
    assert waited["failed"] is True and waited["code"] == "KV-CLUSTER-FILE", waited
    assert waited["msg"].startswith("node node1: cluster store file %s: not trusted as a whole snapshot" % state), \
        waited["msg"]
    assert waited["msg"].endswith(" [KV-CLUSTER-FILE]") and waited["msg"].count("[KV-") == 1
    assert waited["msg"].count("node node1") == 1
    assert "ready" not in waited  # nothing is said ready that was not looked at
