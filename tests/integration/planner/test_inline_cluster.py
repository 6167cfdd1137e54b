"""Data given to the in-process actions through a template, through the real ansible-playbook: it comes as Ansible's
own tagged types, and a date YAML leaves unquoted as a datetime. volume_reconcile_plan's inline objects (``cluster``)
plan as the same objects read from a file; cluster_volume_record's records are written to the state file
(tests/unit/plugins/action/test_plan_inline.py: a value of no plain type is refused by name)."""
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from local_play import run_play, written  # noqa: E402

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
    found = written(tmp_path, PLAY, inline=inline, example=EXAMPLE)
    assert not found["inline"].get("failed"), found["inline"]
    assert found["inline"]["summary"] == found["from_file"]["summary"] and found["inline"]["summary"]["attach"] == 4
    assert found["inline"]["table"] == found["from_file"]["table"]


RECORDS = """
- hosts: localhost
  gather_facts: false
  vars:
    recorded: "{{{{ lookup('file', '{records}') | from_yaml }}}}"
  tasks:
    - name: Records given through a template, written to a state file
      kubevol.volumes.cluster_volume_record:
        cluster_state: {state}
        records: "{{{{ recorded }}}}"
"""


def test_records_given_through_a_template_are_written(tmp_path):
    """cluster_volume_record's records from a templated variable: Ansible's tagged strings are written to the state
    file as the plain strings a module gets (a YAML dump cannot write Ansible's own types)."""
    state = tmp_path / "cluster.yaml"
    state.write_text(open(EXAMPLE).read())
    records = tmp_path / "records.yaml"
    records.write_text(yaml.safe_dump([{"type": "attached", "node": "node1", "pv_name": "pv-db-data",
                                        "driver": "loop.kubevol.io", "volume_handle": "pv-db-data.img",
                                        "device_path": "/dev/loop3"}]))
    proc = run_play(tmp_path, RECORDS.format(records=records, state=state))
    assert proc.returncode == 0, proc.stdout[-4000:]
    written = yaml.safe_load(state.read_text())
    attachments = [obj for obj in written["items"] if obj.get("kind") == "VolumeAttachment"
                   and obj["spec"]["source"].get("persistentVolumeName") == "pv-db-data"]
    assert attachments and attachments[0]["spec"]["nodeName"] == "node1", attachments
    assert attachments[0]["status"]["attached"] is True
