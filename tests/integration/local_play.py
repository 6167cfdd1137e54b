"""A playbook run on localhost through the real ansible-playbook, in an Ansible home and a local temporary directory of
its own under the test's tmp_path: what the integration tests share that check an action plugin as Ansible runs it."""
import json
import os
import subprocess
import sys


def run_play(tmp_path, text, env=None):
    """The finished ansible-playbook process of playbook ``text`` (written as tmp_path/play.yml), its output in
    ``stdout``; ``env``: more environment. Ansible's local temporary directory is tmp_path/tmp."""
    playbook = tmp_path / "play.yml"
    playbook.write_text(text)
    full = dict(os.environ, ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
                ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False")
    full.update(env or {})
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), str(playbook)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, env=full,
                          cwd=str(tmp_path), timeout=300, check=False)


def written(tmp_path, text, **fields):
    """What a play wrote to tmp_path/out.json (its last task copies what it registered there as JSON), once the run
    ended with 0: ``text`` is formatted with ``fields`` and ``out``, that file's path."""
    out = tmp_path / "out.json"
    proc = run_play(tmp_path, text.format(out=out, **fields))
    assert proc.returncode == 0, proc.stdout[-4000:]
    with open(str(out)) as handle:
        return json.load(handle)
