"""playbooks/awx_workflow.yml against the awx.awx collection (installed by scripts/bootstrap.sh from the ansible
package's wheel: requirements/awx-collection.txt), with no AWX: its syntax, and each awx.awx task's arguments as the
module itself validates them. The play runs as an ansible-runner job against a controller URL where nothing listens:
every task templates its arguments as Ansible does (loop items included), the module checks them against its own
argument spec, and only then fails to connect. A task whose arguments the module refused would fail with that
refusal instead (the second test shows one)."""
import os
import subprocess
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(REPO, "playbooks", "awx_workflow.yml")
BIN = os.path.dirname(sys.executable)
COLLECTIONS = os.environ["ANSIBLE_COLLECTIONS_PATH"]  # tests/conftest.py: .build/collections
NOT_LISTENING = "https://127.0.0.1:9"
CONNECT_FAILED = "Connection refused"


@pytest.fixture(scope="module", autouse=True)
def awx_collection():
    if not os.path.isfile(os.path.join(COLLECTIONS, "ansible_collections", "awx", "awx", "MANIFEST.json")):
        pytest.fail("awx.awx is not installed in %s: run scripts/bootstrap.sh (it installs it from the ansible "
                    "package's wheel, requirements/awx-collection.txt)" % COLLECTIONS)


def env(tmp_path):
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_HOME=str(tmp_path / "home"),
                ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_LOCALHOST_WARNING="False",
                ANSIBLE_INVENTORY_UNPARSED_WARNING="False")


def test_the_playbook_parses_against_awx_awx(tmp_path):
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "--syntax-check", PLAYBOOK], env=env(tmp_path),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stdout


def awx_task_results(tmp_path, plays):
    """Run ``plays`` (each awx.awx task made ignore_errors) as an ansible-runner job on localhost against a controller
    where nothing listens: [(task name, item or None, message)] of every awx.awx task and loop item."""
    import ansible_runner  # pylint: disable=import-outside-toplevel
    tasks = [task for play in plays for task in play["tasks"]]
    assert all(any(key.startswith("awx.awx.") for key in task) for task in tasks)
    for task in tasks:
        task["ignore_errors"] = True
    project = tmp_path / "job" / "project"
    project.mkdir(parents=True)
    (project / "check.yml").write_text(yaml.safe_dump(plays))
    envvars = {"CONTROLLER_HOST": NOT_LISTENING, "CONTROLLER_USERNAME": "kubevol", "CONTROLLER_PASSWORD": "unused",
               "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
    runner = ansible_runner.run(private_data_dir=str(tmp_path / "job"), playbook="check.yml", envvars=envvars,
                                inventory="localhost ansible_connection=local ansible_python_interpreter=%s"
                                % sys.executable, quiet=True)
    found = []
    for event in runner.events:
        data = event.get("event_data") or {}
        if event["event"] in ("runner_on_failed", "runner_on_ok", "runner_item_on_failed", "runner_item_on_ok") and \
                str(data.get("resolved_action", "")).startswith("awx.awx.") and "results" not in (data.get("res") or {}):
            found.append((data.get("task"), (data.get("res") or {}).get("item"), str(data["res"].get("msg"))))
    return found


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
def test_every_awx_task_passes_its_modules_argument_spec(tmp_path):
    with open(PLAYBOOK) as handle:
        plays = yaml.safe_load(handle)
    results = awx_task_results(tmp_path, plays)
    # two job templates, the workflow, and its three nodes (one loop item each)
    assert len(results) == 6, results
    for name, item, msg in results:
        assert CONNECT_FAILED in msg, "%s %s: %s" % (name, item or "", msg)  # past the module's argument checks
    loop_items = sorted(item["id"] for _name, item, _msg in results if item)
    assert loop_items == ["attach-detach", "node-stage-1", "node-stage-2"]


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded")
def test_arguments_a_module_refuses_are_caught(tmp_path):
    with open(PLAYBOOK) as handle:
        plays = yaml.safe_load(handle)
    first, second = plays[0]["tasks"][0], plays[0]["tasks"][1]
    first["awx.awx.job_template"]["job_slices"] = 8  # no such option
    second["awx.awx.job_template"]["job_slice_count"] = "one"  # not an int
    plays[0]["tasks"] = [first, second]
    messages = [msg for _name, _item, msg in awx_task_results(tmp_path, plays)]
    assert "Unsupported parameters" in messages[0] and "job_slices" in messages[0], messages
    assert "job_slice_count" in messages[1] and CONNECT_FAILED not in messages[1], messages
