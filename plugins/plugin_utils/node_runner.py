# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a node module's work on a host without Ansible's module wrapper: the reconcile engine's node runner.

Every node module run pays Ansible's module machinery on the node before any work: measured here, the
module wrapper and ``ansible.module_utils.basic`` cost a node about 0.15 s of CPU per run (ping costs
the same), and the node's zipimport compiles each shipped file twice. A reconcile runs one or two node
modules per node, so with ten nodes on two cores that is most of a cold run's node time.

``execute`` sends the collection's module_utils (the node code the module would run is
``module_utils/node/entry.py`` and what it imports, none of which imports Ansible) and the arguments,
already checked on the controller against the module's own spec, to the host's Python on stdin, over the
host's connection (become and the task's environment apply). A small bootstrap imports the code from
memory, compiling only the files the run imports and each once, calls ``entry.direct_main`` and prints the
module's result as JSON. The node code and its checks are the module's own. Left out with the wrapper:
AnsibleModule's change of a current directory it cannot read (the node code uses absolute paths only) and
the path details it adds to a failure naming a ``path``; ``direct_main`` logs the "Invoked with" line to
syslog as AnsibleModule does.

It is used only where Ansible itself would pipe a module on stdin (pipelining on and allowed by the
connection and become method, keep_remote_files off), for a task that is not delegated, on a host whose
interpreter is known the way Ansible resolves it (``ansible_python_interpreter`` or the ``interpreter_python``
setting, else the interpreter Ansible discovered on an earlier module run); otherwise the engine runs the
public module.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import json
import os
import shlex
import zlib

from ansible import constants as C
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevol.volumes.plugins.module_utils import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry
from ansible_collections.kubevol.volumes.plugins.module_utils.setup_args import check_setup_phases

PACKAGE = "ansible_collections.kubevol.volumes.plugins.module_utils"
ENTRY = PACKAGE + ".node.entry"

# The command line: one line, with no character a login shell (sh, bash, csh, tcsh) would expand. It runs the
# bootstrap, which is the first line of stdin (base64), with python -I: no PYTHON* variables, no user site, no
# current directory on sys.path.
LOADER = "import sys,base64;exec(base64.b64decode(sys.stdin.buffer.readline()))"

# Where the node keeps the code it compiled (the bootstrap's code_of), by what it was compiled from. /run is tmpfs:
# emptied at boot. Compiling the node code costs a node about 25 ms of CPU per run, which is a third of a facts run.
CODE_CACHE = "/run/kubevol/code"

# Runs on the node. Reads from the rest of stdin the sources' size in bytes (a line), the sources (zlib'd JSON) and
# {entry, request, code_cache} (zlib'd JSON), serves the sources from memory (each compiled when imported, once, or
# loaded from the node's code cache) and prints the result of entry.direct_main as its last line. Kept to what
# every Python 3 has.
BOOTSTRAP = r'''
import sys, os, json, zlib, marshal, hashlib
from importlib.machinery import ModuleSpec
from importlib.util import MAGIC_NUMBER
stdin = sys.stdin.buffer
sources = json.loads(zlib.decompress(stdin.read(int(stdin.readline()))).decode("utf-8"))
data = json.loads(zlib.decompress(stdin.read()).decode("utf-8"))
def private_dir(path):
    # Python's own model for __pycache__: compiled code is kept where only this user can write. The directory
    # (not a symlink) must belong to this user and be closed to everyone else; otherwise nothing is cached.
    try:
        os.makedirs(path, 0o700, exist_ok=True)
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return None
    st = os.fstat(fd)
    if st.st_uid == os.geteuid() and not st.st_mode & 0o077:
        return fd
    os.close(fd)
cache = private_dir(data["code_cache"]) if data.get("code_cache") else None
def cached(key):
    try:
        fd = os.open(key, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=cache)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid == os.geteuid() and not st.st_mode & 0o077:
            return marshal.loads(os.read(fd, st.st_size + 1))
    except (OSError, ValueError, EOFError, TypeError):
        pass
    finally:
        os.close(fd)
def keep(key, code):
    tmp = "%s.%d" % (key, os.getpid())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=cache)
        with os.fdopen(fd, "wb") as out:
            out.write(marshal.dumps(code))
        os.replace(tmp, key, src_dir_fd=cache, dst_dir_fd=cache)
    except OSError:
        try:
            os.unlink(tmp, dir_fd=cache)
        except OSError:
            pass
def code_of(name, origin):
    source = sources[name][1]
    if cache is None or not source:
        return compile(source, origin, "exec")
    # named by what it is compiled from: this Python's bytecode version, the file's name and its text
    key = hashlib.sha256(MAGIC_NUMBER + origin.encode("utf-8") + b"\0" + source.encode("utf-8")).hexdigest()
    code = cached(key)
    if code is None:
        code = compile(source, origin, "exec")
        keep(key, code)
    return code
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
        exec(code_of(module.__name__, module.__spec__.origin), module.__dict__)
sys.meta_path.insert(0, Finder)
try:
    from importlib import import_module
    result = import_module(data["entry"]).direct_main(data["request"])
except BaseException:
    import traceback
    result = {"failed": True, "msg": "the node code failed: " + traceback.format_exc().strip().splitlines()[-1],
              "exception": traceback.format_exc()}
sys.stdout.write("\n" + json.dumps(result, default=lambda o: sorted(o) if isinstance(o, (set, frozenset)) else str(o)))
'''

_SOURCES = {}  # this controller process's module_utils, read once: {module name: [is package, source]}
_SOURCES_BLOB = []  # sources_blob()


def node_sources():
    """{module name: [is package, source]}: every file of the collection's module_utils, its packages (empty when a
    directory has no __init__.py) and the packages above it. All of it, not what entry.py imports: nothing to find
    or keep in step, and the node compiles only what a run imports."""
    if _SOURCES:
        return _SOURCES
    root = os.path.dirname(os.path.abspath(node_args.__file__))  # .../plugins/module_utils
    sources = {}
    parts = PACKAGE.split(".")
    for i in range(1, len(parts)):  # ansible_collections ... plugins: the node has no collection installed
        sources[".".join(parts[:i])] = [True, ""]
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        rel = os.path.relpath(folder, root)
        package = PACKAGE if rel == "." else PACKAGE + "." + rel.replace(os.sep, ".")
        sources[package] = [True, ""]
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            with open(os.path.join(folder, name)) as handle:
                text = handle.read()
            if name == "__init__.py":
                sources[package] = [True, text]
            else:
                sources[package + "." + name[:-3]] = [False, text]
    _SOURCES.update(sources)
    return _SOURCES


def sources_blob():
    """The bootstrap line and the sources as the node reads them (their size, then their zlib'd JSON): the part of
    every payload that never changes, made once per controller process. Made when this module is imported, and
    Ansible's strategy imports node_phases (and so this) in its main process to look the action up, before it forks
    the task's workers: each worker inherits it instead of reading and compressing 480 KB of sources again."""
    if not _SOURCES_BLOB:
        sources = zlib.compress(json.dumps(node_sources(), separators=(",", ":")).encode("utf-8"), 1)
        _SOURCES_BLOB.append(base64.b64encode(BOOTSTRAP.encode("utf-8")) + b"\n" + str(len(sources)).encode("ascii")
                             + b"\n" + sources)
    return _SOURCES_BLOB[0]


def payload(module, params, check_mode=False, diff=False, code_cache=None):
    """The bytes the node reads on stdin for one run of node module ``module`` (its short name): the bootstrap
    (one base64 line), the sources (sources_blob), then the request as zlib'd JSON. ``code_cache``: where the node
    keeps the code it compiles (CODE_CACHE), or None: compiled on every run."""
    data = {"entry": ENTRY, "code_cache": code_cache,
            "request": {"module": module, "params": params, "check_mode": check_mode, "diff": diff}}
    return sources_blob() + zlib.compress(json.dumps(data, separators=(",", ":")).encode("utf-8"), 1)


def command(interpreter):
    """The command line that runs the bootstrap with ``interpreter``, one word as Ansible passes it."""
    return "%s -I -c %s" % (shlex.quote(interpreter), shlex.quote(LOADER))


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
                return _strict_utf8(module, result)
    detail = (res.get("stderr") or "").strip() or stdout.strip() or "no output"
    return {"failed": True, "rc": res.get("rc"),
            "msg": "%s (direct run): the node's Python gave no result (rc=%s): %s. Check the host's Python "
                   "(ansible_python_interpreter); kubevol_node_runner=module runs the module instead"
                   % (module, res.get("rc"), detail[-2000:])}


def _strict_utf8(module, result):
    """The result, or a failure when its text is not valid UTF-8 (bytes the node code could not decode travel as
    lone surrogates): Ansible fails a module result like that, and it could not be written to the store."""
    try:
        json.dumps(result, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as err:
        return {"failed": True, "msg": "%s (direct run): the node's result is not valid UTF-8 (%s); a device label, "
                                       "path or command output on the node holds bytes that are not text"
                                       % (module, err.reason)}
    return result


def check_args(module, args):
    """(parameters, errors) for node module ``module`` as its module file parses ``args``."""
    validated = ArgumentSpecValidator(entry.argspec(module)).validate(args)
    if validated.error_messages:
        return None, list(validated.error_messages)
    params = validated.validated_parameters
    error = check_setup_phases(params) if module == "node_volume_setup" else None
    return (None, [error]) if error else (params, [])


def configured_interpreter(task_vars):
    """The host's ``interpreter_python`` setting as Ansible reads it for a module: the ``ansible_python_interpreter``
    variable, else ansible.cfg or ANSIBLE_PYTHON_INTERPRETER, else the default (auto)."""
    return C.config.get_config_value("INTERPRETER_PYTHON", variables=task_vars)


def direct_interpreter(action, task_vars):
    """The host's Python for a direct run, or None when Ansible's module run must be used: pipelining is off
    or not possible (keep_remote_files, a become method that needs a tty), the task is delegated (the interpreter
    to use is the delegate's, which Ansible resolves), or the interpreter is to be discovered and has not been yet.
    Resolved as Ansible resolves a module's: the setting, templated; when it is auto, the discovered interpreter."""
    if not action._is_pipelining_enabled("new") or getattr(action._task, "delegate_to", None):
        return None
    value = configured_interpreter(task_vars)
    value = action._templar.template(value) if isinstance(value, str) else value
    value = value.strip() if isinstance(value, str) else ""
    if value and value not in ("auto", "auto_silent", "auto_legacy", "auto_legacy_silent"):
        return value
    discovered = (task_vars.get("ansible_facts") or {}).get("discovered_interpreter_python")
    return discovered.strip() if isinstance(discovered, str) and discovered.strip() else None


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
        in_data=payload(module, params, bool(action._play_context.check_mode), bool(action._play_context.diff),
                        CODE_CACHE))
    result = parse_output(module_fqcn, res)
    result["node_runner"] = "direct"
    return result


sources_blob()  # see its docstring: in Ansible's main process, before the workers fork
