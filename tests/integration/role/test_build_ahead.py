"""A module's payload built ahead (plugin_utils/payloads.py), through the real ansible-playbook: role_arguments'
``build_ahead`` has Ansible build the payload into the run's own payload cache, in a child of its worker, before any
task executes the module; the module then runs from that payload; and nothing of the child outlives the run.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from local_play import run_play  # noqa: E402

PLAY = """
- hosts: localhost
  gather_facts: false
  tasks:
    - name: Check the arguments and build the payload of the module the next tasks run
      kubevol.volumes.role_arguments:
        spec: {spec}
        build_ahead: [ansible.builtin.ping, kubevol.volumes.no_such_module]
    - name: The payload is in the run's cache before any task executed the module
      ansible.builtin.find:
        paths: {local_temp}
        recurse: true
        use_regex: true
        patterns: ['^ansible[.]modules[.]ping-[A-Z_]+-none$']
      register: cached
      until: cached.matched > 0
      retries: 60
      delay: 1
    - name: The module runs from it
      ansible.builtin.ping:
      register: pinged
    - ansible.builtin.copy:
        dest: {out}
        content: "{{{{ {{'cached': cached.files | map(attribute='path') | list, 'pinged': pinged}} | to_json }}}}"
"""


def test_a_payload_built_ahead_is_the_one_the_module_runs_from(tmp_path):
    spec = tmp_path / "argument_specs.yml"
    spec.write_text("argument_specs:\n  main:\n    options: {}\n")
    local_temp = tmp_path / "tmp"
    out = tmp_path / "out.json"
    proc = run_play(tmp_path, PLAY.format(spec=spec, local_temp=local_temp, out=out),
                    env={"ANSIBLE_PYTHON_INTERPRETER": sys.executable})
    assert proc.returncode == 0, proc.stdout[-4000:]
    found = json.loads(out.read_text())
    assert len(found["cached"]) == 1 and "/ansiballz_cache/" in found["cached"][0], found
    assert found["pinged"]["ping"] == "pong"
    # the module that does not exist was skipped: the run went on; the run's temporary directory is gone with it,
    # and the child left nothing behind
    assert "FAILED" not in proc.stdout and "ERROR" not in proc.stdout, proc.stdout[-4000:]
    assert os.listdir(str(local_temp)) == [], os.listdir(str(local_temp))
