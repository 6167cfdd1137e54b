"""volume_reconcile_plan given the cluster's objects inline (``cluster``), through the real ansible-playbook: the
objects come through Ansible's templating as its own tagged types, and a date YAML leaves unquoted as a datetime;
the plan is the one the same objects give read from a file (tests/unit/plugins/action/test_plan_inline.py: a value
no Kubernetes object holds is refused by name)."""
import json
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from local_play import run_play  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
EXAMPLE = os.path.join(REPO, "examples", "cluster.yaml")

PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: The objects inline, from the file through a lookup and from_yaml
      kubevol.volumes.volume_reconcile_plan:
        cluster: "{{{{ lookup('file', '{inline}') | from_yaml }}}}"
        output: table
      register: inline
    - name: The same objects read from the file
      kubevol.volumes.volume_reconcile_plan:
        cluster_state: {example}
        output: table
      register: from_file
    - ansible.builtin.copy:
        dest: {out}
        content: "{{{{ {{'inline': inline, 'from_file': from_file}} | to_json }}}}"
"""


def test_objects_given_inline_plan_as_the_same_objects_read_from_a_file(tmp_path):
    with open(EXAMPLE) as handle:
        data = yaml.safe_load(handle)
    # a creationTimestamp as YAML leaves it unquoted: a datetime once from_yaml has read it
    data["items"][0].setdefault("metadata", {})["creationTimestamp"] = "__STAMP__"
    inline = tmp_path / "inline.yaml"
    inline.write_text(yaml.safe_dump(data).replace("'__STAMP__'", "2026-11-01T10:00:00Z"))
    out = tmp_path / "out.json"
    proc = run_play(tmp_path, PLAY.format(inline=inline, example=EXAMPLE, out=out))
    assert proc.returncode == 0, proc.stdout[-4000:]
    found = json.loads(out.read_text())
    assert not found["inline"].get("failed"), found["inline"]
    assert found["inline"]["summary"] == found["from_file"]["summary"] and found["inline"]["summary"]["attach"] == 4
    assert found["inline"]["table"] == found["from_file"]["table"]
