"""The engine's direct node runner (plugin_utils/node_runner.py): the node code it sends is the modules' own and
needs nothing of Ansible, the exact command line it builds runs that code through a real shell and a real Python
and gives the result the node code gives in process, and it falls back to the module run when it must."""
import ast
import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry
from ansible_collections.kubevol.volumes.plugins.plugin_utils import node_runner

MODULES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(entry.__file__))), "..", "modules")
NODE_MODULES = ["node_volume_info", "k8s_volume_attach", "node_volume_mount", "fs_expand", "volume_detach",
                "node_volume_setup"]


def imported_names(source):
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def ast_imports(source, package):
    """What Ansible's own module finder reads: every import, anywhere in the file, relative ones resolved."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = parent + ("." + base if base else "")
            found.add(base)
            found.update("%s.%s" % (base, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def node_closure(sources):
    """The modules a run of entry.py can import, found by parsing (what the node may compile)."""
    seen, todo = set(), [node_runner.ENTRY]
    while todo:
        name = todo.pop()
        if name in seen or name not in sources:
            continue
        seen.add(name)
        package = name if sources[name][0] else name.rsplit(".", 1)[0]
        todo.extend(ast_imports(sources[name][1], package))
    return seen


def test_the_payload_holds_all_of_module_utils_and_the_node_code_needs_nothing_of_ansible():
    sources = node_runner.node_sources()
    root = os.path.dirname(os.path.dirname(os.path.abspath(entry.__file__)))
    for folder, _dirs, files in os.walk(root):
        if "__pycache__" in folder:
            continue
        rel = os.path.relpath(folder, root)
        package = node_runner.PACKAGE if rel == "." else node_runner.PACKAGE + "." + rel.replace(os.sep, ".")
        assert sources[package][0] is True, package
        for name in files:
            if name.endswith(".py") and name != "__init__.py":
                with open(os.path.join(folder, name)) as handle:
                    assert sources[package + "." + name[:-3]] == [False, handle.read()]
    closure = node_closure(sources)
    for name in ("node.setup", "node.facts", "node.stale", "drivers.loop", "errors", "names"):
        assert node_runner.PACKAGE + "." + name in closure
    for name in sorted(closure):
        for imported in ast_imports(sources[name][1], name if sources[name][0] else name.rsplit(".", 1)[0]):
            assert imported.split(".")[0] != "ansible", "%s imports %s: the node has no Ansible" % (name, imported)
            if imported.startswith(node_runner.PACKAGE) and imported not in sources:
                # ``from package import name``: name must be something the imported module defines
                module, attr = imported.rsplit(".", 1)
                assert module in sources and attr in sources[module][1], "%s imports %s" % (name, imported)


@pytest.mark.parametrize("module", NODE_MODULES)
def test_each_node_module_file_runs_its_work_through_entry(module):
    """The module and the direct runner run the same function with the same spec: the file only parses."""
    with open(os.path.join(MODULES_DIR, module + ".py")) as handle:
        source = handle.read()
    main = [n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "main"][0]
    text = ast.unparse(main)
    assert "entry.argspec(%r)" % module in text and "entry.run(%r, module)" % module in text


class FakeTemplar:
    def template(self, value):
        return value.replace("{{ py }}", "/usr/bin/python3")


class FakeAction:
    """An action plugin's surface node_runner uses; the 'connection' is a local /bin/sh."""

    def __init__(self, pipelining=True, environment="", delegate_to=None):
        self.pipelining = pipelining
        self._task = type("Task", (), {"delegate_to": delegate_to})()
        self.environment = environment
        self._templar = FakeTemplar()
        self._play_context = type("PlayContext", (), {"check_mode": False, "diff": False})()
        self.commands = []
        self.module_runs = []

    def _is_pipelining_enabled(self, style):
        assert style == "new"
        return self.pipelining

    def _compute_environment_string(self):
        return self.environment

    def _low_level_execute_command(self, cmd, sudoable=True, in_data=None):
        self.commands.append(cmd)
        proc = subprocess.run(["/bin/sh", "-c", cmd], input=in_data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              check=False)
        return {"rc": proc.returncode, "stdout": proc.stdout.decode(), "stderr": proc.stderr.decode()}

    def _execute_module(self, module_name, module_args, task_vars):
        self.module_runs.append((module_name, module_args))
        return {"changed": False, "ran": module_name}


PY = {"ansible_python_interpreter": sys.executable}


@pytest.fixture(autouse=True)
def code_cache(tmp_path, monkeypatch):
    """The node's code cache of these runs (the local Python is the 'node'): a directory of the test's own."""
    path = str(tmp_path / "run" / "kubevol" / "code")
    monkeypatch.setattr(node_runner, "CODE_CACHE", path)
    return path


def test_a_direct_run_gives_what_the_node_code_gives_in_process(tmp_path):
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir()
    args = {"node_name": "n1", "kubelet_dir": str(kubelet), "fs_sizes": False}
    action = FakeAction()
    direct = node_runner.execute(action, PY, "kubevol.volumes.node_volume_info", args)
    assert action.module_runs == [] and len(action.commands) == 1
    assert direct.pop("node_runner") == "direct"
    in_process = entry.direct_main({"module": "node_volume_info", "params": dict(args)})
    assert direct == in_process
    assert direct["node_facts"]["node_name"] == "n1" and direct["node_facts"]["reachable"] is True
    assert direct["node_facts"]["kubelet_dir"] == str(kubelet)


def test_a_failing_node_module_fails_the_same_way_directly(tmp_path):
    missing = str(tmp_path / "kubelet-typo")
    args = {"node_name": "n1", "kubelet_dir": missing, "fs_sizes": False}
    direct = node_runner.execute(FakeAction(), PY, "kubevol.volumes.node_volume_info", args)
    assert direct["failed"] is True
    assert direct["msg"].startswith("kubelet_dir %s does not exist on node n1: " % missing)
    del direct["node_runner"]
    assert direct == entry.direct_main({"module": "node_volume_info", "params": dict(args)})


def test_the_task_environment_prefixes_the_command_and_reaches_the_node_code(tmp_path):
    """The task's environment applies, as it applies to a module; -I keeps PYTHON* variables from the code."""
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir()
    action = FakeAction(environment="PATH=/nonexistent-kubevol")
    result = node_runner.execute(action, PY, "kubevol.volumes.node_volume_info",
                                 {"node_name": "n1", "kubelet_dir": str(kubelet)})
    assert action.commands[0].startswith("PATH=/nonexistent-kubevol ")
    # the node code finds its tools in the sbin directories as well, so facts still gather with that PATH
    assert result["node_facts"]["reachable"] is True, result


def test_arguments_are_checked_on_the_controller_with_the_modules_own_spec():
    action = FakeAction()
    result = node_runner.execute(action, PY, "kubevol.volumes.node_volume_mount", {"node_name": "n1"})
    assert result["failed"] is True and "missing required arguments: volumes" in result["msg"]
    assert result["msg"].startswith("kubevol.volumes.node_volume_mount: ")
    bad_phase = {"node_name": "n1", "mount": {"volumes": [{"driver": "loop.kubevol.io", "volume_handle": "a"}]}}
    result = node_runner.execute(action, PY, "kubevol.volumes.node_volume_setup", bad_phase)
    assert result["failed"] is True and "mount: " in result["msg"] and "pv_name" in result["msg"]
    assert action.commands == [], "nothing may be sent to the node with arguments the module would refuse"


def test_no_pipelining_or_no_known_interpreter_runs_the_module():
    action = FakeAction(pipelining=False)
    result = node_runner.execute(action, PY, "kubevol.volumes.node_volume_info", {"node_name": "n1"})
    assert result == {"changed": False, "ran": "kubevol.volumes.node_volume_info", "node_runner": "module"}
    assert action.commands == []
    assert node_runner.direct_interpreter(FakeAction(), {}) is None
    assert node_runner.direct_interpreter(FakeAction(delegate_to="other"), PY) is None
    assert node_runner.direct_interpreter(FakeAction(), {"ansible_python_interpreter": "auto_silent"}) is None
    discovered = {"ansible_python_interpreter": "auto", "ansible_facts": {"discovered_interpreter_python": "/bin/py"}}
    assert node_runner.direct_interpreter(FakeAction(), discovered) == "/bin/py"
    assert node_runner.direct_interpreter(FakeAction(), {"ansible_python_interpreter": "{{ py }}"}) == "/usr/bin/python3"
    # runner=module always runs the module
    action = FakeAction()
    node_runner.execute(action, PY, "kubevol.volumes.node_volume_info", {"node_name": "n1"}, runner="module")
    assert action.commands == [] and len(action.module_runs) == 1


def test_the_interpreter_is_one_word_as_ansible_passes_it_and_a_missing_one_fails(tmp_path):
    assert shlex.split(node_runner.command("/opt/my python/bin/python3"))[0] == "/opt/my python/bin/python3"
    result = node_runner.execute(FakeAction(), {"ansible_python_interpreter": str(tmp_path / "no-python")},
                                 "kubevol.volumes.node_volume_info", {"node_name": "n1"})
    assert result["failed"] is True and result["rc"] == 127 and "no-python" in result["msg"]
    assert "the node's Python gave no result" in result["msg"]


def test_output_around_the_result_is_left_out_and_no_result_is_a_failure():
    result = {"changed": True, "volumes": []}
    noisy = "Welcome to node1\n{not json\n%s\n" % json.dumps(result)
    assert node_runner.parse_output("m", {"rc": 0, "stdout": noisy, "stderr": ""}) == result
    empty = node_runner.parse_output("kubevol.volumes.fs_expand", {"rc": 1, "stdout": "", "stderr": "Killed\n"})
    msg = ("kubevol.volumes.fs_expand (direct run): the node's Python gave no result (rc=1): Killed. Check the host's "
           "Python (ansible_python_interpreter); kubevol_node_runner=module runs the module instead")
    assert empty == {"failed": True, "rc": 1, "msg": msg}


def test_a_crash_in_the_node_code_is_a_failed_result_with_its_traceback():
    proc = subprocess.run(shlex.split(node_runner.command(sys.executable)),
                          input=node_runner.payload("no_such_module", {}), stdout=subprocess.PIPE, check=False)
    result = node_runner.parse_output("m", {"rc": proc.returncode, "stdout": proc.stdout.decode(), "stderr": ""})
    assert result["failed"] is True and result["msg"] == "the node code failed: KeyError: 'no_such_module'"
    assert "Traceback" in result["exception"]


def test_the_stand_in_module_reports_as_ansible_module_does():
    def fails(module):
        module.warn("first")
        module.fail_json(msg="boom", volumes=[])

    entry.MODULES["_test_fails"] = (dict, fails)
    try:
        result = entry.direct_main({"module": "_test_fails", "params": {}})
    finally:
        del entry.MODULES["_test_fails"]
    assert result == {"failed": True, "msg": "boom", "volumes": [], "warnings": ["first"]}


def test_the_command_is_one_line_a_login_shell_leaves_alone():
    """csh and tcsh refuse a newline inside quotes, and expand ! and $: the command has none of them; the bootstrap
    travels on stdin."""
    cmd = node_runner.command("/usr/bin/python3")
    assert shlex.split(cmd) == ["/usr/bin/python3", "-I", "-c", node_runner.LOADER]
    assert not set("\n!$`\\") & set(cmd)
    tcsh = shutil.which("tcsh")
    assert tcsh, "tcsh is missing: scripts/bootstrap.sh installs it"
    for shell in ("/bin/sh", tcsh):
        proc = subprocess.run([shell, "-c", node_runner.command(sys.executable)],
                              input=node_runner.payload("no_such_module", {}), stdout=subprocess.PIPE, check=False)
        assert '"the node code failed: KeyError' in proc.stdout.decode(), shell
    # what the multi-line bootstrap on the command line did under tcsh
    old = "%s -I -c %s" % (sys.executable, shlex.quote(node_runner.BOOTSTRAP))
    proc = subprocess.run([tcsh, "-c", old], input=b"", stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert proc.returncode != 0 and b"Unmatched" in proc.stderr


def test_text_that_is_not_utf8_fails_as_ansible_fails_it():
    line = json.dumps({"changed": False, "volumes": [{"label": "\udcff"}]})
    result = node_runner.parse_output("kubevol.volumes.node_volume_info", {"rc": 0, "stdout": line, "stderr": ""})
    assert result["failed"] is True and "not valid UTF-8" in result["msg"]


def test_a_handler_of_exception_in_the_node_code_does_not_swallow_the_end_of_the_run():
    def work(module):
        try:
            module.fail_json(msg="refused")
        except Exception:  # what run_each and other node code do around a phase
            pass
        raise AssertionError("the run went on after fail_json")

    entry.MODULES["_test_swallow"] = (dict, work)
    try:
        result = entry.direct_main({"module": "_test_swallow", "params": {}})
    finally:
        del entry.MODULES["_test_swallow"]
    assert result == {"failed": True, "msg": "refused"}


def test_each_direct_run_logs_its_invocation_as_ansible_module_does(monkeypatch):
    logged = []
    fake = type(sys)("syslog")
    fake.LOG_USER, fake.LOG_INFO = 8, 6
    fake.openlog = lambda ident, option, facility: logged.append(("open", ident))
    fake.syslog = lambda priority, message: logged.append(("log", message))
    monkeypatch.setitem(sys.modules, "syslog", fake)
    entry.MODULES["_test_log"] = (dict, lambda module: module.exit_json())
    try:
        entry.direct_main({"module": "_test_log", "params": {"node_name": "n1", "volumes": []}})
    finally:
        del entry.MODULES["_test_log"]
    assert logged == [("open", "ansible-_test_log"), ("log", "Invoked with node_name=n1 volumes=[]")]


# -- the node's code cache ----------------------------------------------------------------------------------------

def run_direct(code_cache, module="node_volume_info", params=None):
    proc = subprocess.run(shlex.split(node_runner.command(sys.executable)),
                          input=node_runner.payload(module, params or {}, code_cache=code_cache),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    return node_runner.parse_output(module, {"rc": proc.returncode, "stdout": proc.stdout.decode(),
                                             "stderr": proc.stderr.decode()})


def facts_args(tmp_path):
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir(exist_ok=True)
    return {"node_name": "n1", "kubelet_dir": str(kubelet), "fs_sizes": False}


def test_the_node_keeps_the_code_it_compiled_in_a_private_directory_and_runs_it_next_time(tmp_path, code_cache):
    args = facts_args(tmp_path)
    first = node_runner.execute(FakeAction(), PY, "kubevol.volumes.node_volume_info", args)
    assert oct(os.stat(code_cache).st_mode & 0o777) == "0o700"
    kept = sorted(os.listdir(code_cache))
    assert kept and all(len(name) == 64 for name in kept)  # one per imported file; no temporary file left
    assert all(os.stat(os.path.join(code_cache, name)).st_mode & 0o777 == 0o600 for name in kept)
    stamps = dict((name, os.stat(os.path.join(code_cache, name)).st_mtime_ns) for name in kept)
    second = node_runner.execute(FakeAction(), PY, "kubevol.volumes.node_volume_info", args)
    assert second == first and "failed" not in second
    assert dict((name, os.stat(os.path.join(code_cache, name)).st_mtime_ns) for name in kept) == stamps  # read only
    assert sorted(os.listdir(code_cache)) == kept


def plant(code_cache, source_of_direct_main):
    """Replace every cached file with code whose direct_main says it was planted (a poisoned or foreign cache)."""
    planted = compile("def direct_main(request):\n    return %s\n" % source_of_direct_main, "planted", "exec")
    import marshal
    for name in os.listdir(code_cache):
        with open(os.path.join(code_cache, name), "wb") as handle:
            handle.write(marshal.dumps(planted))


def test_code_in_a_cache_others_could_write_is_never_run(tmp_path, code_cache):
    args = facts_args(tmp_path)
    assert "failed" not in run_direct(code_cache, params=args)
    plant(code_cache, "{'planted': True}")
    # this user's private directory and 0600 files: the cache is trusted, as Python trusts its __pycache__
    assert run_direct(code_cache, params=args) == {"planted": True}
    for name in os.listdir(code_cache):
        os.chmod(os.path.join(code_cache, name), 0o620)  # a file the group could have written
    assert "node_facts" in run_direct(code_cache, params=args)
    plant(code_cache, "{'planted': True}")
    for name in os.listdir(code_cache):
        os.chmod(os.path.join(code_cache, name), 0o600)
    os.chmod(code_cache, 0o770)  # a directory the group could have written: no file in it is read
    assert "node_facts" in run_direct(code_cache, params=args)
    os.chmod(code_cache, 0o700)
    os.rename(code_cache, code_cache + ".real")
    os.symlink(code_cache + ".real", code_cache)  # never through a symlink
    assert "node_facts" in run_direct(code_cache, params=args)


def test_a_damaged_cached_file_is_compiled_again_and_an_unusable_cache_only_costs_the_compile(tmp_path, code_cache):
    args = facts_args(tmp_path)
    good = run_direct(code_cache, params=args)
    for name in os.listdir(code_cache):
        with open(os.path.join(code_cache, name), "wb") as handle:
            handle.write(b"\xe3not marshal")  # cut short, or written by something else
    assert run_direct(code_cache, params=args) == good
    shutil.rmtree(code_cache)
    with open(code_cache, "w") as handle:
        handle.write("a file where the directory should be")
    assert run_direct(code_cache, params=args) == good
    assert run_direct(None, params=args) == good  # no cache at all
