# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a node module's work on a host without Ansible's module wrapper: the reconcile engine's node runner.

Every node module run pays Ansible's module machinery on the node before any work: measured here, the
module wrapper and ``ansible.module_utils.basic`` cost a node about 0.15 s of CPU per run (ping costs
the same), and the node's zipimport compiles each shipped file twice. A reconcile runs one or two node
modules per node, so with ten nodes on two cores that is most of a cold run's node time.

``run_direct`` sends the node code the module would run (``module_utils/node/entry.py`` and what it
imports, found by reading the imports; nothing of Ansible) and the arguments, already checked on the
controller against the module's own spec, to the host's Python on stdin, over the host's connection
(become and the task's environment apply). A small bootstrap imports the code from memory, compiles
each file once, calls ``entry.direct_main`` and prints the module's result as JSON. The node code and
its checks are the module's own; only the wrapper is left out.

It is used only where Ansible itself would pipe a module on stdin (pipelining on and allowed by the
connection and become method) and the host's interpreter is known (``ansible_python_interpreter`` or the
interpreter Ansible discovered on the first module run); otherwise the engine runs the public module.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
import shlex
import zlib

from ansible_collections.kubevol.volumes.plugins.module_utils import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry

PACKAGE = "ansible_collections.kubevol.volumes.plugins.module_utils"
ENTRY = PACKAGE + ".node.entry"

# Runs on the node (python -I: no PYTHON* variables, no user site). Reads {sources, request} (zlib'd JSON) from
# stdin, serves the sources from memory (each compiled once) and prints the result of entry.direct_main. Kept to
# what every Python 3 has.
BOOTSTRAP = r'''
import sys, json, zlib, traceback
from importlib.machinery import ModuleSpec
data = json.loads(zlib.decompress(sys.stdin.buffer.read()).decode("utf-8"))
sources = data["sources"]
class Finder(object):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name in sources:
            return ModuleSpec(name, cls, origin="<kubevol>/" + name.replace(".", "/") + ".py",
                              is_package=sources[name][0])
    @staticmethod
    def create_module(spec):
        return None
    @staticmethod
    def exec_module(module):
        name = module.__name__
        exec(compile(sources[name][1], module.__spec__.origin, "exec"), module.__dict__)
sys.meta_path.insert(0, Finder)
try:
    from importlib import import_module
    result = import_module(data["entry"]).direct_main(data["request"])
except BaseException:
    result = {"failed": True, "msg": "the node code failed: " + traceback.format_exc().strip().splitlines()[-1],
              "exception": traceback.format_exc()}
sys.stdout.write("\n" + json.dumps(result, default=lambda o: sorted(o) if isinstance(o, (set, frozenset)) else str(o)))
'''

_SOURCES = {}  # this controller process's node code, read once: {module name: [is package, source]}


# ``from <kubevol module_utils...> import a, b`` (parenthesized over lines or not) and ``import <...>``, anywhere in a
# file. A regular expression, not ast: every action plugin worker builds the payload, and parsing the node code
# took it 30-70 ms (a unit test checks that this finds what ast finds).
_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+(%s(?:\.\w+)*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)" % re.escape(PACKAGE), re.M)
_IMPORT = re.compile(r"^[ \t]*import[ \t]+(%s(?:\.\w+)*)" % re.escape(PACKAGE), re.M)


def imports(text):
    """The kubevol module_utils names a file's source imports: modules, and ``module.name`` for each name
    imported from one (which node_sources keeps only when it is a module itself)."""
    found = set(_IMPORT.findall(text))
    for module, names in _FROM_IMPORT.findall(text):
        found.add(module)
        for name in re.sub(r"#[^\n]*", "", names).strip().strip("()").split(","):
            name = name.split()
            if name:
                found.add("%s.%s" % (module, name[0]))
    return found


def node_sources():
    """{module name: [is package, source]}: entry.py, everything it imports, and their packages."""
    if _SOURCES:
        return _SOURCES
    root = os.path.dirname(os.path.abspath(node_args.__file__))  # .../plugins/module_utils
    sources = {}
    todo = [ENTRY]
    while todo:
        name = todo.pop()
        if name in sources:
            continue
        rel = name[len(PACKAGE):].lstrip(".").replace(".", os.sep)
        path = os.path.join(root, rel)
        if os.path.isdir(path):
            path, package = os.path.join(path, "__init__.py"), True
        elif os.path.isfile(path + ".py"):
            path, package = path + ".py", False
        else:
            continue  # a name imported from a module (``from x import y``), not a module of its own
        text = ""
        if os.path.isfile(path):  # a package may have no __init__.py (module_utils has none)
            with open(path) as handle:
                text = handle.read()
        sources[name] = [package, text]
        todo.extend(imports(text))
    # the packages above module_utils, empty: the node has no collection installed
    parts = PACKAGE.split(".")
    for i in range(1, len(parts) + 1):
        package = ".".join(parts[:i])
        if package not in sources:
            sources[package] = [True, ""]
    _SOURCES.update(sources)
    return _SOURCES


def payload(module, params, check_mode=False, diff=False):
    """The bytes the bootstrap reads on stdin for one run of node module ``module`` (its short name)."""
    data = {"sources": node_sources(), "entry": ENTRY,
            "request": {"module": module, "params": params, "check_mode": check_mode, "diff": diff}}
    return zlib.compress(json.dumps(data, separators=(",", ":")).encode("utf-8"), 1)


def command(interpreter):
    """The command line that runs the bootstrap with ``interpreter`` (a path, maybe with arguments)."""
    return " ".join(shlex.quote(arg) for arg in shlex.split(interpreter) + ["-I", "-c", BOOTSTRAP])


def parse_output(module, res):
    """The module result from a run's {rc, stdout, stderr}, or a failure saying what came back. The bootstrap
    prints the result as its last line; what a login script or a wrapper printed around it is left out, as Ansible
    leaves it out of a module's output."""
    stdout = res.get("stdout") or ""
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                result = json.loads(line)
            except ValueError:
                continue
            if isinstance(result, dict):
                return result
    detail = (res.get("stderr") or "").strip() or stdout.strip() or "no output"
    return {"failed": True, "rc": res.get("rc"),
            "msg": "%s (direct run): the node's Python gave no result (rc=%s): %s. Check the host's Python "
                   "(ansible_python_interpreter); kubevol_node_runner=module runs the module instead"
                   % (module, res.get("rc"), detail[-2000:])}


def check_args(module, args):
    """(parameters, errors) for node module ``module`` as its AnsibleModule would parse ``args``."""
    # ansible's validator, imported here: this file is also read by unit tests of the payload alone
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

    validated = ArgumentSpecValidator(entry.argspec(module)).validate(args)
    if validated.error_messages:
        return None, list(validated.error_messages)
    params = validated.validated_parameters
    if module == "node_volume_setup":
        for phase, phase_spec in node_args.setup_phase_specs().items():
            if params.get(phase) is None:
                continue
            phase_validated = ArgumentSpecValidator(phase_spec).validate(params[phase])
            if phase_validated.error_messages:
                return None, ["%s: %s" % (phase, "; ".join(phase_validated.error_messages))]
            params[phase] = phase_validated.validated_parameters
    return params, []


def direct_interpreter(action, task_vars):
    """The host's Python for a direct run, or None when Ansible's module run must be used: pipelining is off
    or not possible (keep_remote_files, a become method that needs a tty), the task is delegated (the interpreter
    to use is the delegate's, which Ansible resolves), or the interpreter is not known yet."""
    if not action._is_pipelining_enabled("new") or getattr(action._task, "delegate_to", None):
        return None
    value = task_vars.get("ansible_python_interpreter")
    if value:
        value = action._templar.template(value)
        if isinstance(value, str) and value.strip() and not value.strip().startswith("auto"):
            return value.strip()
    discovered = (task_vars.get("ansible_facts") or {}).get("discovered_interpreter_python")
    return discovered if isinstance(discovered, str) and discovered.strip() else None


def execute(action, task_vars, module_fqcn, module_args, runner="auto"):
    """Node module ``module_fqcn``'s result for ``module_args`` on the action's host: run directly when
    ``runner`` is auto and direct_interpreter allows it, else as Ansible runs the module. Either way the result
    names the runner (``node_runner``). A connection failure raises, as the module run raises it."""
    interpreter = direct_interpreter(action, task_vars) if runner == "auto" else None
    if interpreter is None:
        result = action._execute_module(module_name=module_fqcn, module_args=module_args, task_vars=task_vars)
        result["node_runner"] = "module"
        return result
    module = module_fqcn.rsplit(".", 1)[-1]
    params, errors = check_args(module, module_args)
    if errors:
        return {"failed": True, "msg": "%s: %s" % (module_fqcn, "; ".join(errors)), "node_runner": "direct"}
    cmd = command(interpreter)
    environment = action._compute_environment_string()
    if environment:
        cmd = "%s %s" % (environment, cmd)
    res = action._low_level_execute_command(
        cmd, sudoable=True,
        in_data=payload(module, params, bool(action._play_context.check_mode), bool(action._play_context.diff)))
    result = parse_output(module_fqcn, res)
    result["node_runner"] = "direct"
    return result
