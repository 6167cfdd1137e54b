"""volume_reconcile_plan run ad hoc through the real ansible command: an action plugin that plans in the
controller's process, reads a relative cluster_state from the directory the command runs in, and fails
cleanly on bad input."""
import json
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ANSIBLE = os.path.join(os.path.dirname(sys.executable), "ansible")


def adhoc(cwd, args):
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_NOCOLOR="1")
    res = subprocess.run([ANSIBLE, "localhost", "-m", "kubevol.volumes.volume_reconcile_plan",
                          "-a", json.dumps(args)],
                         cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=120, check=False)
    # the default callback: "localhost | SUCCESS => {...}"
    assert "localhost | " in res.stdout, res.stdout + res.stderr
    text = res.stdout[res.stdout.index("localhost | "):]
    return res.returncode, json.JSONDecoder().raw_decode(text[text.index(" => ") + 4:])[0]


def test_relative_cluster_state_is_read_from_the_working_directory(tmp_path):
    shutil.copy(os.path.join(REPO, "examples", "cluster.yaml"), str(tmp_path / "snapshot.yaml"))
    rc, result = adhoc(tmp_path, {"cluster_state": "snapshot.yaml"})
    assert rc == 0 and not result.get("failed"), result
    assert result["changed"] is False
    assert result["summary"]["attach"] == 4 and result["summary"]["mount"] == 8
    # the lean plan: every step's volume item is in items, once per node and volume
    for step in result["plan"]:
        assert step["unique_volume_name"] in result["volume_items"][step["node"]]
        assert step in [result["plan"][i] for i in result["by_node"][step["node"]]]


def test_bad_input_fails_cleanly(tmp_path):
    rc, result = adhoc(tmp_path, {"cluster_state": "missing.yaml"})
    assert rc != 0 and "cannot read the cluster state file" in result["msg"]
    assert "missing.yaml" in result["msg"] and "Traceback" not in json.dumps(result)
    rc, result = adhoc(tmp_path, {"cluster_state": "a.yaml", "cluster": {"kind": "List", "items": []}})
    assert rc != 0 and "mutually exclusive" in result["msg"]
