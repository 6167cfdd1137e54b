"""What each node module ships to a node: Ansible's module payload (AnsiballZ) holds the module and every
module_utils file it imports, found by Ansible's own finder. A node module must ship node code only: never the
planner, the stores, the cluster's credentials (k8s_auth) or the records: code a node does not run, and that has no
business on a node (a store's or a token's handling). And each ships what it runs, no more: its module file imports
its own entry (node/entry.py names them), which imports its work at its top; the facts module, which runs on every
node in every run, ships nothing that changes a volume (``SHIPS`` below says, per module, which node/ files)."""
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import registry
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


# The node/ and provisioner/ files each node module ships (besides common/, volume/, drivers/ and csi/: what every
# driver and plugin is, and the CSI client an external driver's facts, calls and phases need). A module that changes a
# volume ships the node verbs every registered driver and plugin names by dotted path (its NODE_OPERATIONS, loaded
# when first built); the facts module ships none of them. A file added to a module's imports shows here first.
NODE = ("blockdev", "context", "entry", "filesystems", "holders", "layout", "lock", "mount", "node_args", "runner",
        "tools", "volume")
PHASES = NODE + ("driver_device", "driver_loop", "driver_loop_holders", "driver_ops", "ephemeral", "expand",
                 "external_ephemeral", "external_ops", "external_records", "module", "operations", "ownership", "paths",
                 "phase", "plugin_host_path", "plugin_local", "plugin_ops", "pod_binds", "publish", "stage",
                 "expand_stage")
SHIPS = {
    "node_volume_info": NODE + ("entry_info", "facts", "csi_registration", "ephemeral_facts", "external_records",
                                "plugin_facts"),
    "k8s_volume_attach": PHASES + ("entry_attach",),
    "node_volume_mount": PHASES + ("entry_mount",),
    "fs_expand": PHASES + ("entry_expand",),
    "volume_detach": PHASES + ("entry_detach", "stale"),
    "__internal.node_volume_setup": PHASES + ("entry_setup", "setup", "setup_args"),
    "__internal.csi_controller_calls": ("context", "controller_host", "entry", "entry_controller_calls", "lock",
                                        "node_args", "runner", "volume"),
    "__internal.volume_provision_calls": ("context", "entry", "lock", "node_args", "runner", "volume",
                                          "provisioner/args", "provisioner/calls", "provisioner/external",
                                          "provisioner/loop", "provisioner/loop_refusals", "provisioner/loop_snapshot",
                                          "provisioner/module", "provisioner/snapshotter"),
}
# what changes a volume: never in the facts module's payload
CHANGING = ("node/operations.py", "node/stage.py", "node/publish.py", "node/expand.py", "node/setup.py",
            "node/ephemeral.py", "node/external_ops.py", "node/external_ephemeral.py", "node/ownership.py",
            "node/pod_binds.py", "node/module.py", "node/expand_stage.py")


def shipped_node_files(files):
    """The node/ files (by name) and provisioner/ files (by path) of a payload, without the packages' __init__.py."""
    found = set()
    for path in collection_files(files):
        if path.endswith("__init__.py"):
            continue
        if path.startswith("node/"):
            found.add(path[len("node/"):-3])
        elif path.startswith("provisioner/"):
            found.add(path[:-3])
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


@pytest.mark.parametrize("python", controllers())
def test_each_node_module_ships_what_it_runs(python):
    """Each module's payload holds its own entry and work, and no other module's: the facts module none of the code
    that changes a volume, the controller host's calls none of the node's phases."""
    found = payloads(python, MODULES_DIR, NODE_MODULES)
    for name, files in found.items():
        assert shipped_node_files(files) == set(SHIPS[name]), (name, sorted(shipped_node_files(files) ^ set(SHIPS[name])))
    facts = collection_files(found["node_volume_info"])
    assert not [f for f in facts if f in CHANGING], facts
    # every registered driver's and plugin's class (common/registry.py load's import lines) travels with every module:
    # a class is read by its name wherever a volume item is
    for name, files in found.items():
        shipped = collection_files(files)
        assert all(f in shipped for f in ("drivers/loop.py", "volume/csi.py", "volume/local.py",
                                          "volume/host_path.py")), (name, shipped)


def test_the_modules_that_act_ship_every_node_class_the_registries_name():
    """A driver's or plugin's node verbs are loaded by dotted path (drivers/base.py, node/plugin_ops.py) when a phase
    first builds one: a module that runs phases must ship each, or a node would fail to import it mid-run."""
    found = payloads(sys.executable, MODULES_DIR, NODE_MODULES)
    paths = list(registry.NODE_OPERATIONS) + [cls.NODE_OPERATIONS for cls in registry.DRIVER_REGISTRY.values()
                                              if cls.NODE_OPERATIONS]
    wanted = set(path.rpartition(".")[0].replace(".", "/") + ".py" for path in paths)
    assert "node/driver_loop.py" in wanted and "node/plugin_local.py" in wanted
    for name in ("k8s_volume_attach", "node_volume_mount", "fs_expand", "volume_detach", "__internal.node_volume_setup"):
        assert wanted <= set(collection_files(found[name])), (name, sorted(wanted - set(collection_files(found[name]))))


def test_the_check_catches_a_node_module_that_imports_planning_or_store_code(tmp_path):
    """The same finder and check on a copy of a node module that also imports the planner and the file store:
    both are found and refused (what a careless import in node code would ship)."""
    with open(os.path.join(MODULES_DIR, "fs_expand.py")) as handle:
        source = handle.read()
    anchor = "from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry_expand as entry\n"
    assert anchor in source
    bad = source.replace(anchor, anchor + "from ansible_collections.kubevol.volumes.plugins.module_utils.plan import "
                                          "planner  # noqa\nfrom ansible_collections.kubevol.volumes.plugins."
                                          "module_utils.stores import file  # noqa\n")
    (tmp_path / "fs_expand_bad.py").write_text(bad)
    found = payloads(sys.executable, str(tmp_path), ["fs_expand_bad"])["fs_expand_bad"]
    refused = not_node_code(found)
    assert "plan/planner.py" in refused and "stores/file.py" in refused, refused


# Runs a node module as AnsiballZ does, from its payload's files alone: the zip first on sys.path, the module run as
# __main__ with its arguments handed over as Ansible hands them (basic._ANSIBLE_ARGS), nothing of the checkout
# importable (no PYTHONPATH): a file the payload lacks (a class a registry loads by dotted path) fails the run.
RUN_FROM_PAYLOAD = r"""
import json, runpy, sys
zip_path, name, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, zip_path)
import ansible_collections.kubevol.volumes.plugins.module_utils as ours
assert ours.__file__.startswith(zip_path), ours.__file__
from ansible.module_utils import basic
basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()
basic._ANSIBLE_PROFILE = "legacy"
runpy.run_module("ansible_collections.kubevol.volumes.plugins.modules." + name, run_name="__main__", alter_sys=True)
"""


def run_from_payload(tmp_path, name, args):
    zips = tmp_path / "payloads"
    zips.mkdir(exist_ok=True)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "payload_finder.py"), "--zip", str(zips), COLLECTIONS,
                           MODULES_DIR, name], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr
    env = dict((k, v) for k, v in os.environ.items() if k not in ("PYTHONPATH", "ANSIBLE_COLLECTIONS_PATH"))
    proc = subprocess.run([sys.executable, "-c", RUN_FROM_PAYLOAD, str(zips / (name + ".zip")), name, json.dumps(args)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False,
                          cwd=str(tmp_path), env=env, timeout=120)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


def test_each_kind_of_node_module_runs_from_its_payload_alone(tmp_path):
    """The facts module on an empty node; a loop volume's controller expansion in check mode (the loop driver's node
    class, loaded by dotted path when the phase builds the driver); a local volume's mount in check mode (the local
    plugin's node class, the same way). Nothing is changed: check mode, and the node's directories are the test's."""
    kubelet, run, pool, disks = (tmp_path / d for d in ("kubelet", "run", "pool", "disks"))
    for path in (kubelet, run, pool, disks / "d1"):
        path.mkdir(parents=True)
    node = {"node_name": "node1", "kubelet_dir": str(kubelet), "run_dir": str(run)}
    facts = run_from_payload(tmp_path, "node_volume_info", node)["node_facts"]
    assert facts["reachable"] and facts["node_name"] == "node1" and facts["devices"] == [], facts
    loop = {"pv_name": "pv-a", "driver": "loop.kubevol.io", "volume_handle": "a.img", "capacity_bytes": 1048576,
            "volume_attributes": {"pool": str(pool)}}
    out = run_from_payload(tmp_path, "fs_expand", dict(node, stage="controller", _ansible_check_mode=True, volumes=[loop],
                                                       driver_options={"loop.kubevol.io": {"pools": [str(pool)]}}))
    assert out["volumes"][0]["backing_size_bytes"] == {"old": 0, "new": 1048576}, out
    local = {"pv_name": "pv-l", "driver": None, "plugin": "kubernetes.io/local-volume", "volume_handle": "",
             "path": str(disks / "d1"), "pods": [{"uid": "11111111-1111-4111-8111-111111111111"}]}
    out = run_from_payload(tmp_path, "node_volume_mount", dict(
        node, _ansible_check_mode=True, volumes=[local], driver_options={"kubernetes.io/local-volume": {
            "paths": [str(disks)]}}))
    assert out["changed"] and out["volumes"][0]["actions"][0].startswith("bind "), out
    assert os.listdir(str(kubelet)) == [] and os.listdir(str(pool)) == []  # check mode: nothing made


@pytest.mark.parametrize("module", NODE_MODULES)
def test_each_node_module_file_runs_its_own_entry(module):
    """The module file only parses its arguments with its entry's spec and runs its entry: it imports that entry
    and nothing else of kubevol's (node/entry.py names each module's), so its payload is that entry's code."""
    import ast

    with open(os.path.join(MODULES_DIR, *module.split(".")) + ".py") as handle:
        tree = ast.parse(handle.read())
    name = module.rsplit(".", 1)[-1]  # __internal.X: the role's internal node modules, in their own directory
    package, _dot, entry_module = entry.MODULES[name].rpartition(".")
    ours = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module.startswith("ansible_collections.")]
    wanted = [n for n in ours if n.module == "ansible_collections.kubevol.volumes.plugins.module_utils." + package
              and [(a.name, a.asname) for a in n.names] == [(entry_module, "entry")]]
    if name == "node_volume_setup":  # its per-phase options checked and their secrets masked first
        ours = [n for n in ours if not n.module.endswith("node.setup_args")]
    assert len(wanted) == 1 and ours == wanted, [ast.unparse(n) for n in ours]
    main = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "main"][0]
    text = ast.unparse(main)
    assert "entry.argspec()" in text and "entry.run(module)" in text
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
