"""The reconcile role's last two steps read what they need without templating the names of every node outside the
run into their tasks: the report reads the run's summary from the registered variable (reconcile_report's
``summary_of``), and each host's verdict is given what failed elsewhere as messages (reconcile_verdict). Through the
real ansible-playbook, on localhost: the report is the one a templated summary gives, key for key, and the verdict
and the fact for the play on localhost are those the report's whole entries give.
"""
import json
import os
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from local_play import run_play  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run import run_report  # noqa: E402

OUTSIDE = ["node-%04d" % n for n in range(3000)]


def _summary():
    """A reconcile_run last step's summary in check mode: one node of the run failed, and 3,000 nodes outside the run
    have steps it did not run (one entry naming them all, in errors and in failed_elsewhere)."""
    failed = {"node": "node1", "phase": "mount", "msg": "mount of pv-a failed", "volumes": ["pv-a"]}
    outside = run_report.outside_entry(OUTSIDE)
    return {"lines": ["Check mode, nothing was changed."], "body_lines": ["Check mode, nothing was changed."],
            "nodes": {"node1": {"applied": 0, "planned": 1, "failed": 1, "blocked": 0, "pending": 0,
                                "volumes": {"pv-a": ["mount/device WOULD FAIL"]}}},
            "blocked": [], "errors": [failed, outside], "pending": [],
            "outside": {"nodes": len(OUTSIDE), "steps": 2 * len(OUTSIDE), "blocked": 0, "names": OUTSIDE[:5]},
            "failed_nodes": {"node1": ["mount"]}, "failed_elsewhere": [outside], "check_mode": True,
            "unreachable_nodes": [], "shown": ["node1"]}


PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.set_fact:
        kubevol_run: {run}
    - name: The report, the summary read from the variable
      kubevol.volumes.reconcile_report:
        summary_of: kubevol_run
        quiet: true
      register: read
    - name: The report, the summary templated into the task (without errors and lines, as the role passed it)
      kubevol.volumes.reconcile_report:
        summary: "{{{{ dict(kubevol_run.summary | dict2items | rejectattr('key', 'in', ['errors', 'lines'])
                     | items2dict) }}}}"
        quiet: true
      register: templated
    - name: The report of a run with no summary (it stopped before its last step)
      kubevol.volumes.reconcile_report:
        summary_of: kubevol_run_never_registered
        stopped: Plan the operations
        quiet: true
      register: stopped
    - name: The verdict, given what failed elsewhere as messages (as the role gives it)
      kubevol.volumes.reconcile_verdict:
        report: "{{{{ dict(read, failed_elsewhere=read.failed_elsewhere | map(attribute='msg', default='') | list) }}}}"
        node_name: node1
        fail_run_on_localhost: true
      register: by_messages
      ignore_errors: true
    - name: The verdict, given the report's entries
      kubevol.volumes.reconcile_verdict:
        report: "{{{{ read }}}}"
        node_name: node1
        fail_run_on_localhost: true
      register: by_entries
      ignore_errors: true
    - ansible.builtin.copy:
        dest: {out}
        content: "{{{{ {{'read': read, 'templated': templated, 'stopped': stopped, 'by_messages': by_messages,
                      'by_entries': by_entries}} | to_json }}}}"
"""


def test_the_report_read_from_the_variable_and_the_verdict_by_messages(tmp_path):
    out = tmp_path / "out.json"
    proc = run_play(tmp_path, PLAY.format(run=json.dumps({"changed": False, "summary": _summary()}), out=str(out)))
    assert proc.returncode == 0, proc.stdout[-4000:]
    found = json.loads(out.read_text())
    read, templated = found["read"], found["templated"]
    assert yaml.safe_dump(read) == yaml.safe_dump(templated)  # key for key, the report a templated summary gives
    assert read["failed_elsewhere"][0]["nodes"] == OUTSIDE and "errors" not in read and read["check_mode"] is True
    # localhost is not a host of this play, so node1 is no play host: its failure is one elsewhere too
    assert [e["phase"] for e in read["failed_elsewhere"]] == ["outside", "mount"] and read["run_failed"] is True
    assert found["stopped"]["run_failed"] is True and "nodes" not in found["stopped"]
    assert [e["phase"] for e in found["stopped"]["failed_elsewhere"]] == ["controller step"]
    by_messages, by_entries = found["by_messages"], found["by_entries"]
    for key in ("failed", "msg", "ansible_facts"):
        assert by_messages.get(key) == by_entries.get(key), key
    assert by_messages["ansible_facts"]["kubevol_run_failed_elsewhere"] == [
        e["msg"] for e in read["failed_elsewhere"]]
    assert by_messages["ansible_facts"]["kubevol_run_failed_elsewhere"][0].startswith(
        "3000 node(s) not in this run's hosts have steps it did not run")
