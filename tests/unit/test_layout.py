# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The layout by concern (issue 26): what each part of module_utils may import, and no file over about 400 lines,
production (plugins/) or test (tests/).

Node and driver code (node/, drivers/, csi/) runs on the nodes: it imports only shared code (common/, volume/) and
node code, never planning, the stores, the records or the run. Planning code (plan/) is pure: it imports no node or
driver code (capabilities come from volume/), no store and no run code. Imports are read from the source (every
``import`` and ``from ... import`` anywhere in a file, also inside functions), so a lazy import counts too.
"""

import ast
import os

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PLUGINS = os.path.join(REPO, "plugins")
MODULE_UTILS = os.path.join(PLUGINS, "module_utils")
PREFIX = "ansible_collections.kubevol.volumes.plugins.module_utils."

NODE_SIDE = ("node", "drivers", "csi", "provisioner")
NODE_MAY_IMPORT = frozenset(("common", "volume", "node", "drivers", "csi", "provisioner"))
PLAN_MAY_NOT_IMPORT = frozenset(("node", "drivers", "stores", "run"))

# about 400: the longest file is a module's, plugins/modules/volume_reconcile_plan.py (410, most of it its DOCUMENTATION)
MAX_LINES = 410
TESTS = os.path.join(REPO, "tests")


def python_files(root):
    for folder, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def module_utils_imports(path):
    """The module_utils subpackages (common, plan, ...) a file imports, anywhere in it."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    found = set()
    for node in ast.walk(tree):
        modules = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules.append(node.module)
            if node.module + "." == PREFIX or node.module == PREFIX.rstrip("."):
                modules.extend(PREFIX + alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
        for module in modules:
            if module.startswith(PREFIX):
                found.add(module[len(PREFIX):].split(".")[0])
    return found


def relative(path):
    return os.path.relpath(path, MODULE_UTILS).replace(os.sep, "/")


def test_provisioning_rules_are_pure_shared_code():
    """provision/ holds the external-provisioner's rules (StorageClass parameters, topology, the PV's shape), read by
    the planner and by the hosts that call CreateVolume: it imports common/ and itself only."""
    for path in python_files(os.path.join(MODULE_UTILS, "provision")):
        assert module_utils_imports(path) <= {"common", "provision"}, relative(path)


def test_the_packages_are_there():
    for package in NODE_SIDE + ("plan", "volume", "common", "cluster"):
        assert os.path.isfile(os.path.join(MODULE_UTILS, package, "__init__.py")), package


@pytest.mark.parametrize("package", NODE_SIDE)
def test_node_and_driver_code_imports_only_shared_and_node_code(package):
    bad = {}
    for path in python_files(os.path.join(MODULE_UTILS, package)):
        extra = module_utils_imports(path) - NODE_MAY_IMPORT
        if extra:
            bad[relative(path)] = sorted(extra)
    assert bad == {}, "node-side code imports controller code: %s" % bad


def test_planning_imports_no_node_driver_store_or_run_code():
    bad = {}
    for path in python_files(os.path.join(MODULE_UTILS, "plan")):
        name = relative(path)
        extra = module_utils_imports(path) & PLAN_MAY_NOT_IMPORT
        if extra:
            bad[name] = sorted(extra)
    assert bad == {}, "planning code imports %s" % bad


def top_level_imports(path):
    """The module_utils subpackages a file imports at its top (not inside a function or class)."""
    with open(path) as handle:
        tree = ast.parse(handle.read(), path)
    found = set()
    for node in tree.body:
        modules = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules.append(node.module)
            if node.module == PREFIX.rstrip("."):
                modules.extend(PREFIX + alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            modules.extend(alias.name for alias in node.names)
        found.update(m[len(PREFIX):].split(".")[0] for m in modules if m.startswith(PREFIX))
    return found


def test_volume_plugins_are_shared_code():
    """volume/ is imported by node and planning code alike: what each plugin is (its data and pure rules) imports
    only common/ and itself, anywhere in the file; a plugin's node verbs are a node/ subclass its class names by
    dotted path (NODE_OPERATIONS), and the drivers it asks about are read through common/registry.py."""
    for path in python_files(os.path.join(MODULE_UTILS, "volume")):
        assert module_utils_imports(path) <= {"common", "volume"}, relative(path)


def test_planning_a_driver_volume_imports_no_node_code():
    """The CSI plugin reads a driver's capabilities from its class (drivers/ registry): loading the registry and
    every driver class, as planning does, must import no node/ or csi/ module (a driver's module imports node code
    inside the methods that run it). In a fresh interpreter, so that nothing imported earlier hides it."""
    import subprocess
    import sys
    code = (
        "import sys\n"
        "from ansible_collections.kubevol.volumes.plugins.module_utils.plan import planner\n"
        "from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import driver_capabilities\n"
        "from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import DRIVERS\n"
        "assert all(driver_capabilities(name) for name in DRIVERS)\n"
        "print(sorted(m for m in sys.modules if m.startswith(%r)))\n" % PREFIX)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, env=env, check=False, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = set(m[len(PREFIX):].split(".")[0] for m in eval(out.stdout))  # noqa: S307 - our own list's repr
    assert "drivers" in loaded and not loaded & {"node", "csi", "stores", "run"}, sorted(loaded)


def test_planning_a_local_and_a_host_path_volume_imports_no_node_code():
    """An in-tree plugin is one file (volume/local.py, volume/host_path.py) with its node operations in it: they
    import node code inside the methods that run it, so planning a local and a hostPath volume (their PVs parsed,
    refused or turned into items by the plugin classes) imports no node/ module. In a fresh interpreter."""
    import subprocess
    import sys
    tests = os.path.dirname(os.path.abspath(__file__))
    code = (
        "import sys, datetime\n"
        "sys.path.insert(0, %r)\n"
        "from test_planner_plugins import local_cluster, host_cluster, run, steps, pod, HP_OPTIONS\n"
        "a = run(local_cluster(pod('ns/p', 'node1', ['a'])))\n"
        "b = run(host_cluster(pod('ns/p', 'node1', ['a'])), driver_options=HP_OPTIONS)\n"
        "assert steps(a) == [('mount', 'pod', 'node1', 'pv-l', 'ns/p')], steps(a)\n"
        "assert steps(b) == [('mount', 'pod', 'node1', 'pv-h', 'ns/p')], steps(b)\n"
        "assert a['volume_items']['node1']['kubernetes.io/local-volume/pv-l']['plugin'] == 'kubernetes.io/local-volume'\n"
        "print(sorted(m for m in sys.modules if m.startswith(%r)))\n"
        % (os.path.join(tests, "plugins", "module_utils"), PREFIX))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, env=env, check=False, timeout=60)
    assert out.returncode == 0, out.stderr
    loaded = set(m[len(PREFIX):] for m in eval(out.stdout))  # noqa: S307 - our own list's repr
    assert {"volume.local", "volume.host_path", "plan.planner"} <= loaded, sorted(loaded)
    packages = set(m.split(".")[0] for m in loaded)
    assert not packages & {"node", "csi", "stores", "run"}, sorted(loaded)


def test_the_import_reader_sees_what_it_must():
    """The checks above mean something: the reader finds plan/'s own imports, lazy ones included."""
    found = module_utils_imports(os.path.join(MODULE_UTILS, "plan", "planner.py"))
    assert {"plan", "cluster", "common"} <= found
    # the registry's load imports inside the function: the reader sees those lines too
    assert {"volume", "drivers"} <= module_utils_imports(os.path.join(MODULE_UTILS, "common", "registry.py"))


def long_files(root, start, skip=lambda name: False):
    """{path relative to ``start``: lines} of the .py files under ``root`` over MAX_LINES."""
    found = {}
    for path in python_files(root):
        name = os.path.relpath(path, start).replace(os.sep, "/")
        with open(path) as handle:
            lines = sum(1 for _line in handle)
        if lines > MAX_LINES and not skip(name):
            found[name] = lines
    return found


def test_no_production_file_over_about_400_lines():
    long_ones = long_files(PLUGINS, PLUGINS)
    assert long_ones == {}, "split these by concern: %s" % long_ones


def test_no_test_file_over_about_400_lines():
    """Every .py under tests/ (test files, conftest.py files, the test libraries and helpers), but ansible-test's
    output."""
    long_ones = long_files(TESTS, REPO, lambda name: name.startswith("tests/output/"))
    assert long_ones == {}, "split these by concern: %s" % long_ones


def test_the_registries_are_dotted_paths_and_their_one_load_names_each_module():
    """Volume plugins and drivers are named by dotted path (common/registry.py, as os-brick's connector map); its
    ``load`` is where they are imported, and its import lines (for Ansible's finder, which ships what import
    statements name) name exactly the modules the tables and ON_DEMAND do, so a new line in a table without its import
    line, or the reverse, fails here."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.common import registry

    tables = set(path.rpartition(".")[0] for path in registry.VOLUME_PLUGINS + registry.DRIVERS)
    tables |= set(registry.ON_DEMAND)  # the modules loaded on demand, named for the finder in a branch never taken
    with open(os.path.join(MODULE_UTILS, "common", "registry.py")) as handle:
        tree = ast.parse(handle.read())
    load = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "load"][0]
    imported = set()
    for node in ast.walk(load):
        if isinstance(node, ast.ImportFrom) and node.module.startswith(PREFIX):
            imported.update(node.module[len(PREFIX):] + "." + alias.name for alias in node.names)
    assert imported == tables
    for path in registry.VOLUME_PLUGINS + registry.DRIVERS + registry.NODE_OPERATIONS:
        cls = registry.load(path)
        assert cls.__module__ == PREFIX + path.rpartition(".")[0] and cls.__name__ == path.rpartition(".")[2]
    assert sorted(registry.PLUGIN_REGISTRY) == sorted(registry.load(p).NAME for p in registry.VOLUME_PLUGINS)
    # every NODE_OPERATIONS a plugin names is in the table, and is that plugin's subclass
    named = dict((cls.NODE_OPERATIONS, cls) for cls in registry.PLUGIN_REGISTRY.values() if cls.NODE_OPERATIONS)
    assert sorted(named) == sorted(registry.NODE_OPERATIONS)
    assert all(issubclass(registry.load(path), cls) for path, cls in named.items())
    # ... and node/plugin_ops.py's import lines name each one's module, for the node modules' payloads
    assert node_modules_named(os.path.join("node", "plugin_ops.py")) == set(
        path.rpartition(".")[0] for path in registry.NODE_OPERATIONS)


def node_modules_named(path):
    """The node/ modules a file's top-level ``from ...module_utils.node import a, b`` lines name ("node.a", ...)."""
    with open(os.path.join(MODULE_UTILS, path)) as handle:
        tree = ast.parse(handle.read())
    ops = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == PREFIX + "node":
            ops.update("node." + alias.name for alias in node.names)
    return ops


def test_a_drivers_node_verbs_are_a_node_class_it_names_by_dotted_path():
    """A driver's class (drivers/) holds its data and what it reads; its verbs that act are the node/ subclass its
    NODE_OPERATIONS names, which its constructor builds through the registry (drivers/base.py), as a volume plugin's
    node verbs are (node/plugin_ops.py). node/operations.py's import lines name each one's module, for the payloads
    of the modules that act; ``reader`` builds the class itself."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.common import registry

    named = dict((cls.NODE_OPERATIONS, cls) for cls in registry.DRIVER_REGISTRY.values() if cls.NODE_OPERATIONS)
    assert named, "no driver names its node verbs: the check below is about nothing"
    for path, cls in named.items():
        node = registry.load(path)
        assert issubclass(node, cls) and node.__module__.startswith(PREFIX + "node."), path
        assert cls(None, "/var/lib/kubelet", "node1").__class__ is node  # the constructor builds the node class
        assert cls.reader(None, "/var/lib/kubelet", "node1").__class__ is cls  # the reader, the class itself
    assert set(path.rpartition(".")[0] for path in named) <= node_modules_named(os.path.join("node", "operations.py"))
    # drivers/ imports no node code, anywhere in a file
    for path in python_files(os.path.join(MODULE_UTILS, "drivers")):
        assert "node" not in module_utils_imports(path), relative(path)


# -- the layers: no circle, no two folders importing each other, no import inside a function ----------------------

# The imports inside functions allowed, (file, function), with the reason for each
INNER_IMPORTS_ALLOWED = {
    # the registry's one load: its import lines name the registered modules for Ansible's finder (common/registry.py)
    ("common/registry.py", "load"),
    # the plan record's API kind, imported when a run's record is in the API: it imports the Kubernetes client, which
    # a run against a cluster file never loads (test_k8s_auth.py); it does not import run/plan_record.py back
    ("run/plan_record.py", "_kind"),
    # the Kubernetes API store, imported when a run asks for it: it imports the Kubernetes client, which a run against
    # a cluster file never loads (test_k8s_auth.py); the import line names the module for Ansible's finder
    ("stores/__init__.py", "_kubernetes_store"),
}


def module_name(path):
    name = relative(path)[:-3].replace("/", ".")
    return name[:-len(".__init__")] if name.endswith(".__init__") else name


def import_edges():
    """{module: {(module it imports, function the import is in or None)}} over module_utils, the imports inside a
    function included; ``from package import module`` names the module."""
    files = dict((module_name(path), path) for path in python_files(MODULE_UTILS))
    edges = {}
    for name, path in files.items():
        with open(path) as handle:
            tree = ast.parse(handle.read(), path)
        found = edges[name] = set()

        def visit(node, function):
            for child in ast.iter_child_nodes(node):
                inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
                if isinstance(child, ast.ImportFrom) and child.module and (child.module + ".").startswith(PREFIX):
                    base = child.module[len(PREFIX):]
                    for alias in child.names:
                        full = (base + "." if base else "") + alias.name
                        found.add((full if full in files else base, function))
                visit(child, inner)
        visit(tree, None)
    return files, edges


def allowed_edge(source, function, files):
    return function is not None and (relative(files[source]), function) in INNER_IMPORTS_ALLOWED


def test_the_layer_reader_sees_what_it_must():
    """The checks below mean something: the reader finds a top import, a package's module, one inside a function."""
    files, edges = import_edges()
    assert ("common.registry", None) in edges["volume"]
    assert ("volume.csi", "load") in edges["common.registry"] and ("drivers.loop", "load") in edges["common.registry"]
    assert ("node.plugin_local", None) in edges["node.plugin_ops"]
    assert ("node.operations", None) in edges["node.entry_mount"]
    assert ("node.volume", "load") in edges["common.registry"]


def test_no_import_inside_a_function_but_the_registry_load():
    files, edges = import_edges()
    inner = set((relative(files[source]), function) for source, targets in edges.items()
                for _target, function in targets if function is not None)
    new = inner - INNER_IMPORTS_ALLOWED
    assert not new, "imports inside functions (import at the top, or through common/registry.py): %s" % sorted(new)


def test_no_import_circle():
    """Tarjan's strongly connected components over every import but the registry load's: none has two files."""
    files, edges = import_edges()
    graph = dict((source, set(t for t, f in targets if not allowed_edge(source, f, files) and t != source))
                 for source, targets in edges.items())
    index, low, stack, on_stack, circles, counter = {}, {}, [], set(), [], [0]

    def connect(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    assert circles == []


def test_no_two_folders_import_each_other():
    files, edges = import_edges()
    folders = {}
    for source, targets in edges.items():
        for target, function in targets:
            if allowed_edge(source, function, files):
                continue
            a, b = source.split(".")[0], target.split(".")[0]
            if a != b:
                folders.setdefault(a, set()).add(b)
    pairs = set((a, b) for a in folders for b in folders[a] if a < b and a in folders.get(b, ()))
    assert not pairs, "folders importing each other: %s" % sorted(pairs)
    # the floor: common/ imports nothing above it, volume/ only common/
    assert folders.get("common", set()) <= {"common"}, folders.get("common")
    assert folders.get("volume", set()) <= {"common"}, folders.get("volume")


# The controller's folders, lowest first: each imports none above it, anywhere in a file (docs/architecture.md "The
# layers"). records/ is the status updaters' objects as data; stores/ applies records behind one interface and keeps
# the run lock's record and rules (stores/run_lock.py); cluster/ is the informers' model a store's objects become;
# plan/ is the pure planner over that model; run/ is the run's tasks and glue (the *_task.py behind each controller
# module, the executor, the plan record), which take the lock, read a store, plan and write records; audit/ judges
# what the runs left (the planner's teardown over every node, the records, a dead run's lock) and names the lock's
# Lease with cluster_run_lock's own options (run/run_lock_task.py LOCK_OPTIONS), so it sits above run/.
CONTROLLER_LAYERS = ("records", "stores", "cluster", "plan", "run", "audit")


def test_the_controller_folders_import_one_way():
    _files, edges = import_edges()
    upward = {}
    for source, targets in edges.items():
        folder = source.split(".")[0]
        if folder not in CONTROLLER_LAYERS:
            continue
        above = CONTROLLER_LAYERS[CONTROLLER_LAYERS.index(folder) + 1:]
        for target, _function in targets:
            if target.split(".")[0] in above:
                upward.setdefault(source, set()).add(target)
    assert upward == {}, "a controller folder imports one above it (%s): %s" % (" < ".join(CONTROLLER_LAYERS), upward)
    # the reader sees each layer's import of the one below (the check above is about something)
    for lower, higher in zip(CONTROLLER_LAYERS, CONTROLLER_LAYERS[1:]):
        assert any(source.split(".")[0] == higher and target.split(".")[0] == lower
                   for source, targets in edges.items() for target, _f in targets), (higher, lower)
