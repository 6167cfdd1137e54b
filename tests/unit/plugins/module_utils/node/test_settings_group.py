# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node's settings are one group (node_args.SETTINGS_SPEC): every node module takes it whole, the doc fragment and
the reconcile role's kubevol_node_settings hold the same keys, the tasks that run node modules check it once and hand
it whole to each module they run, and one function builds the NodeContext. The hung commands a non-default
command_timeout bounds on a node are tests/integration/node/test_settings_limits.py's; here the controller-host and
provisioning entries, which run no node command of their own today, are shown to bound one with the group's limit."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import sys
import time

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevol.volumes.plugins.action.node_phases import ActionModule, module_args
from ansible_collections.kubevol.volumes.plugins.doc_fragments.driver_options import (
    ModuleDocFragment as DriverOptionsDoc)
from ansible_collections.kubevol.volumes.plugins.doc_fragments.node_volumes import ModuleDocFragment as NodeDoc
from ansible_collections.kubevol.volumes.plugins.module_utils.audit import audit_task
from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.node import audit, entry, node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext, node_context
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner import args as provision_args
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner import module as provision_module
from ansible_collections.kubevol.volumes.plugins.module_utils.node import controller_host
from ansible_collections.kubevol.volumes.plugins.module_utils.run import pod_wait

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), *([os.pardir] * 5)))
GROUP = set(node_args.SETTINGS_SPEC)
LOOP = "loop.kubevol.io"
# a non-default value of every setting: what each entry must hand on whole
GIVEN = {"kubelet_dir": "/srv/kubelet", "run_dir": "/srv/run", "lock_timeout": 7, "driver_options": {},
         "command_timeout": 11, "long_command_timeout": 13, "force_release_holders": ["node9"]}


def test_every_node_module_takes_the_group_whole():
    specs = dict((name, entry.argspec(name)) for name in entry.MODULES)
    specs["node_volume_audit"] = audit.argspec()
    for name, spec in specs.items():
        for key, setting in node_args.SETTINGS_SPEC.items():
            assert spec.get(key) == setting, (name, key)


def test_the_doc_fragments_document_the_group():
    loop_pools = yaml.safe_load(DriverOptionsDoc.LOOP_POOLS)["options"]
    documented = set(yaml.safe_load(NodeDoc.SETTINGS)["options"]) | set(loop_pools)
    assert documented == GROUP
    task = yaml.safe_load(NodeDoc.TASK_SETTINGS)["options"]["node_settings"]
    assert set(task["suboptions"]) == GROUP
    for key, doc in task["suboptions"].items():
        assert doc["type"] == node_args.SETTINGS_SPEC[key]["type"], key
    assert set(node_args.settings_argspec()["options"]) == GROUP


def test_the_tasks_that_run_node_modules_take_node_settings():
    for spec in (node_args.node_phases_argspec(), node_args.csi_controller_argspec(), provision_args.provision_argspec(),
                 audit_task.argspec(), pod_wait.argspec()):
        assert spec["node_settings"] == node_args.settings_argspec()


def test_the_roles_group_is_gathered_once_from_its_variables():
    with open(os.path.join(ROOT, "roles/reconcile/vars/main.yml")) as handle:
        text = yaml.safe_load(handle)["kubevol_node_settings"]
    keys = set(re.findall(r"'(\w+)': kubevol_\w+", text))
    assert keys == GROUP - {"run_dir"}  # run_dir: the node modules' default, no role variable
    with open(os.path.join(ROOT, "roles/reconcile/meta/argument_specs.yml")) as handle:
        variables = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    for key in keys:
        assert "kubevol_" + key in variables, key
    tasks = os.path.join(ROOT, "roles/reconcile/tasks")
    for name in os.listdir(tasks):
        with open(os.path.join(tasks, name)) as handle:
            text = handle.read()
        for key in GROUP:  # no task passes a setting by its own name: the group goes whole
            assert not re.search(r"^\s+%s:" % key, text, re.M), (name, key)


def _python_files(*dirs):
    for top in dirs:
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith(".py"):
                    yield os.path.relpath(os.path.join(dirpath, name), ROOT)


def test_one_place_builds_the_node_context():
    builders = []
    for path in _python_files("plugins"):
        with open(os.path.join(ROOT, path)) as handle:
            if "NodeContext(" in handle.read():
                builders.append(path)
    assert builders == ["plugins/module_utils/node/context.py"]


def test_nothing_between_names_force_release_holders():
    between = ["plugins/action", "plugins/module_utils/node/context.py", "plugins/module_utils/node/module.py",
               "plugins/module_utils/node/entry.py", "plugins/module_utils/run"]
    for top in between:
        paths = [top] if top.endswith(".py") else list(_python_files(top))
        for path in paths:
            with open(os.path.join(ROOT, path)) as handle:
                assert "force_release_holders" not in handle.read(), path


def test_task_settings_node_settings_over_the_older_options_over_the_defaults():
    params = {"kubelet_dir": "/old", "command_timeout": 5, "driver_options": {},
              "node_settings": {"command_timeout": 9, "lock_timeout": None, "loop_pools": ["/srv/pool"]}}
    group = node_args.task_settings(params, node_args.NODE_PHASES_LEGACY)
    assert group["command_timeout"] == 9 and group["kubelet_dir"] == "/old" and group["lock_timeout"] == 60
    assert group["driver_options"] == {LOOP: {"pools": ["/srv/pool"]}} and "loop_pools" not in group
    assert set(group) == GROUP - {"loop_pools"}
    with pytest.raises(InvalidInput):
        node_args.task_settings({"node_settings": {"driver_options": {"nfs": {}}}})


def test_node_settings_is_checked_by_the_tasks_argument_spec():
    args = {"phases": ["facts"], "node_name": "n1", "node_settings": {"command_timeout": "2", "extra": 1}}
    result = ArgumentSpecValidator(node_args.node_phases_argspec()).validate(args)
    assert any("extra" in msg for msg in result.error_messages), result.error_messages
    args["node_settings"].pop("extra")
    result = ArgumentSpecValidator(node_args.node_phases_argspec()).validate(args)
    assert not result.error_messages and result.validated_parameters["node_settings"]["command_timeout"] == 2


def test_node_context_takes_the_group_whole():
    calls = []
    ctx = node_context(dict(GIVEN, node_name="n1"), raw_runner=lambda argv, data=None: calls.append(argv))
    assert ctx.settings == dict(GIVEN, loop_pools=None) and ctx.kubelet_dir == "/srv/kubelet"
    assert ctx.run_dir == "/srv/run" and ctx.lock_timeout == 7
    loop = ctx.driver_settings(LOOP)
    for key in ("force_release_holders", "command_timeout", "kubelet_dir"):
        assert loop[key] == GIVEN[key], key
    with pytest.raises(TypeError):
        NodeContext(None, node_name="n1", not_a_setting=1)


def _node_phases(calls):
    act = ActionModule.__new__(ActionModule)

    def execute(_task_vars, module, args):
        calls.append((module, args))
        return {"changed": False, "node_facts": {}, "phase_results": {}}

    act._execute = execute
    return act


def test_node_phases_hands_the_group_whole_to_the_facts_and_every_phase(tmp_path):
    settings = node_args.task_settings({"node_settings": GIVEN})
    params = {"settings": settings, "node_name": "n1", "phases": ["facts"], "provision": False,
              "controller_published": {}, "cluster_store": {"cluster_source": "file", "cluster_state": "/none"}}
    calls = []
    _node_phases(calls)._facts({}, params, {})
    [(module, sent)] = calls
    assert module == "kubevol.volumes.node_volume_info"
    assert dict((k, sent[k]) for k in settings) == settings and sent["fs_sizes"] is False
    for phase in phases.NAMES:
        sent = module_args(phase, "n1", [], [], False, params)
        assert dict((k, sent[k]) for k in settings) == settings, phase
    calls = []
    _node_phases(calls)._setup({"attach": [{"pv_name": "a", "driver": LOOP, "volume_handle": "a.img"}],
                                "mount": [{"pv_name": "a", "driver": LOOP, "volume_handle": "a.img"}]},
                               "n1", params, {})
    [(module, sent)] = calls
    assert module == "kubevol.volumes.__internal.node_volume_setup"
    assert dict((k, sent[k]) for k in settings) == settings


def test_the_audit_hands_the_group_whole(tmp_path):
    state = tmp_path / "cluster.json"
    state.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}))
    params = ArgumentSpecValidator(audit_task.argspec(), required_if=audit_task.REQUIRED_IF).validate(
        {"scope": "node", "cluster_state": str(state), "node_settings": GIVEN}).validated_parameters
    sent = []
    audit_task.node_scope(params, "n1", lambda args: sent.append(args) or {"failed": True, "msg": "x"})
    assert dict((k, sent[0][k]) for k in GIVEN) == GIVEN


HANG = "import time; time.sleep(60)  # kubevol-settings-group-%d"


class Module:
    check_mode = False

    def __init__(self, params):
        self.params = params
        self.exited = None

    def exit_json(self, **result):
        self.exited = result
        raise SystemExit(0)

    def fail_json(self, **result):
        self.exited = dict(result, failed=True)
        raise SystemExit(1)

    def warn(self, text):
        pass


def _hung_through(runner):
    started = time.monotonic()
    rc, _out, err = runner([sys.executable, "-c", HANG % os.getpid()])
    return rc, err, time.monotonic() - started


@pytest.mark.parametrize("name", ["csi_controller_calls", "volume_provision_calls"])
def test_the_controller_host_calls_bound_a_command_with_the_groups_limit(monkeypatch, name):
    """csi_controller_calls and volume_provision_calls: the runner their calls get is the group's (command_timeout 1),
    so a command one of them runs on that host is killed at the limit given. Their calls run none today (gRPC, file
    and sysfs reads): the call here is the test's hung command, run through the runner the entry built."""
    seen = []

    def run_operations(runner, *args, **kwargs):
        seen.append(_hung_through(runner))
        return [], []

    if name == "csi_controller_calls":
        monkeypatch.setattr(controller_host, "run_operations", run_operations)
        params = {"controller_host": "ctrl1", "operations": [], "volumes": []}
    else:
        monkeypatch.setattr(provision_module, "run_operations", run_operations)
        params = {"host": "ctrl1", "operations": [], "secrets": []}
    params.update(command_timeout=1, words="module")
    module = Module(params)
    with pytest.raises(SystemExit):
        entry.run(name, module)
    [(rc, err, waited)] = seen
    assert rc == 124 and "timed out after 1s" in err and waited < 20, (rc, err, waited)


def test_pod_volumes_wait_hands_the_group_whole_to_the_nodes_facts(monkeypatch):
    from ansible_collections.kubevol.volumes.plugins.action import pod_volumes_wait

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "apps", "name": "p", "uid": "u-1"},
           "spec": {"nodeName": "n1", "volumes": [], "containers": [{"name": "c"}]}, "status": {"phase": "Running"}}
    monkeypatch.setattr(pod_volumes_wait, "_load", lambda params: {"apiVersion": "v1", "kind": "List", "items": [pod]})
    sent = []
    act = pod_volumes_wait.ActionModule.__new__(pod_volumes_wait.ActionModule)
    act.node_module = lambda name, args: sent.append((name, args)) or {"failed": True, "msg": "not reached"}
    settings = node_args.task_settings({"node_settings": GIVEN})
    act._poll({"pods": ["apps/p"], "label_selector": None}, "n1", [LOOP], settings, {"n1"}, True)
    [(name, args)] = sent
    assert name == "kubevol.volumes.node_volume_info" and dict((k, args[k]) for k in settings) == settings
