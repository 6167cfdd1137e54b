"""What each node module ships to a node: Ansible's module payload (AnsiballZ) holds the module and every
module_utils file it imports, found by Ansible's own finder. A node module must ship node code only: the node
modules' dispatch (node/*), the loop driver, names, errors, value, the argument specs and the VolumeAttachment
builder. Never the planner, the stores, the cluster's credentials (k8s_auth) or the records: code a node does not
run, and that has no business on a node (a store's or a token's handling)."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
MODULES_DIR = os.path.join(REPO, "plugins", "modules")
COLLECTIONS = os.path.join(REPO, ".build", "collections")  # tests/conftest.py links the checkout there
NODE_MODULES = ["node_volume_info", "k8s_volume_attach", "node_volume_mount", "fs_expand", "volume_detach",
                "__internal.node_volume_setup", "__internal.csi_controller_calls", "__internal.volume_provision_calls"]
PREFIX = "ansible_collections/kubevol/volumes/plugins/module_utils/"

# the collection's module_utils a node module may ship
NODE_CODE = ("node/", "drivers/", "csi/", "common/", "volume/", "provisioner/", "__init__.py")
# what must never be there (named so that a failure says which rule broke)
CONTROLLER_CODE = ("plan/", "cluster/", "run/", "records/", "stores/", "audit/")


def payloads(python, modules_dir, names):
    proc = subprocess.run([python, os.path.join(HERE, "payload_finder.py"), COLLECTIONS, modules_dir] + list(names),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def collection_files(files):
    return sorted(f[len(PREFIX):] for f in files if f.startswith(PREFIX))


def not_node_code(files):
    """The collection's module_utils files in a payload that are not node code."""
    return [f for f in collection_files(files) if not f.startswith(NODE_CODE) or f.startswith(CONTROLLER_CODE)]


def controllers():
    """This test's Python, and the oldest supported controller's (the compat venv) where it exists."""
    found = [sys.executable]
    compat = os.path.join(REPO, ".venv-compat", "bin", "python")
    if os.path.exists(compat) and os.path.realpath(compat) != os.path.realpath(sys.executable):
        found.append(compat)
    return found


@pytest.mark.parametrize("python", controllers())
def test_each_node_module_ships_node_code_only(python):
    found = payloads(python, MODULES_DIR, NODE_MODULES)
    assert sorted(found) == sorted(NODE_MODULES)
    for name, files in found.items():
        shipped = collection_files(files)
        # the finder did find the module's own code: the check below is about something real
        assert "node/entry.py" in shipped and "node/context.py" in shipped and "common/errors.py" in shipped, (name, shipped)
        assert not_node_code(files) == [], "%s ships controller code to the nodes: %s" % (name, not_node_code(files))
    setup = collection_files(found["__internal.node_volume_setup"])
    assert "drivers/loop.py" in setup and "node/setup.py" in setup and "node/operations.py" in setup
    # the device driver's node code, imported inside its verbs (drivers/device.py), travels with every node module
    for name, files in found.items():
        shipped = collection_files(files)
        assert all(f in shipped for f in ("drivers/loop.py", "drivers/device.py", "node/stage.py", "node/publish.py",
                                          "node/expand.py", "node/expand_stage.py", "node/layout.py")), \
            (name, shipped)
        # every registered volume plugin's one file (its registry line is an import: volume/__init__.py), and the
        # shared node code its node methods import inside themselves
        assert all(f in shipped for f in ("volume/csi.py", "volume/local.py", "volume/host_path.py",
                                          "node/pod_binds.py", "node/paths.py", "node/plugin_ops.py")), (name, shipped)


def test_the_check_catches_a_node_module_that_imports_planning_or_store_code(tmp_path):
    """The same finder and check on a copy of a node module that also imports the planner and the file store:
    both are found and refused (what a careless import in node code would ship)."""
    with open(os.path.join(MODULES_DIR, "fs_expand.py")) as handle:
        source = handle.read()
    anchor = "from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry\n"
    assert anchor in source
    bad = source.replace(anchor, anchor + "from ansible_collections.kubevol.volumes.plugins.module_utils.plan import "
                                          "planner  # noqa\nfrom ansible_collections.kubevol.volumes.plugins."
                                          "module_utils.stores import file  # noqa\n")
    (tmp_path / "fs_expand_bad.py").write_text(bad)
    found = payloads(sys.executable, str(tmp_path), ["fs_expand_bad"])["fs_expand_bad"]
    refused = not_node_code(found)
    assert "plan/planner.py" in refused and "stores/file.py" in refused, refused


@pytest.mark.parametrize("module", NODE_MODULES)
def test_each_node_module_file_runs_its_work_through_entry(module):
    """The module file only parses its arguments with the spec entry.py keeps and runs entry.run: one place
    holds what each node module does."""
    import ast

    with open(os.path.join(MODULES_DIR, *module.split(".")) + ".py") as handle:
        source = handle.read()
    main = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "main"][0]
    text = ast.unparse(main)
    name = module.rsplit(".", 1)[-1]  # __internal.X: the role's internal node modules, in their own directory
    assert "entry.argspec(%r)" % name in text and "entry.run(%r, module)" % name in text
    assert sorted(entry.MODULES) == sorted(name.rsplit(".", 1)[-1] for name in NODE_MODULES)


def test_the_direct_runner_and_its_code_cache_are_gone():
    """The node modules run only as Ansible runs modules: no second runtime that bypasses AnsibleModule (and with
    it no_log, no_target_syslog and check mode as Ansible defines them), no code cache left on the nodes."""
    assert not os.path.exists(os.path.join(REPO, "plugins", "plugin_utils", "node_runner.py"))
    assert not hasattr(entry, "direct_main") and not hasattr(entry, "DirectModule")
    # node_phases refuses the removed option instead of ignoring it: a task that still chooses a runner is told so
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    from ansible_collections.kubevol.volumes.plugins.module_utils.node.node_args import node_phases_argspec

    errors = ArgumentSpecValidator(node_phases_argspec()).validate(
        {"phases": ["facts"], "node_name": "node1", "runner": "module"}).error_messages
    assert len(errors) == 1 and errors[0].startswith("runner. Supported parameters include"), errors
