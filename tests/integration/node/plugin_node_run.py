"""Run the node phases on local and hostPath items inside a test node's mount namespace (tests of issue 26).

The node modules' option specs gain ``plugin``/``path``/``host_path_type`` with the merge of issue 26; until then these
tests run the node code the modules run (NodeContext.items, run_each, node/operations.py) in a child process entered
into the namespace, exactly as a module's main would, and print its result as JSON.
"""
import json
import os
import subprocess

from conftest import NODE_PYTHON

SCRIPT = r'''
import json, sys
from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options, words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node import facts, operations
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext
from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import merge_diff
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import process_runner

args = json.load(open(sys.argv[1]))
ctx = NodeContext(process_runner(300, 3600), node_name=args["node_name"], kubelet_dir=args["kubelet_dir"],
                  run_dir=args["run_dir"], lock_timeout=10, check_mode=args["check_mode"])
opts = args["driver_options"]
ctx.options_for = lambda name: driver_options.options_for(opts, name)  # the node's driver_options
phases = {
    "attach": operations.attach_volume,
    "mount": operations.mount_volume,
    "expand_controller": operations.expand_controller,
    "expand": operations.expand_node,
    "detach": lambda c, i: operations.detach_volume(c, i, force=args["force"]),
}
try:
    if args["phase"] == "facts":
        out = {"ok": True, "node_facts": facts.node_facts(ctx)}
    else:
        items = ctx.items(args["volumes"])
        done = ctx.run_each(items, lambda item: phases[args["phase"]](ctx, item))
        out = {"ok": True, "changed": any(r["changed"] for r in done), "diff": merge_diff(done), "volumes": done,
               "warnings": ctx.warnings}
except KubevolError as err:
    out = dict(err.to_result(), ok=False, msg=err.msg)
print(json.dumps(words.say_all(out, words.MODULE)))  # said as a node module's edge says it
'''


def run(node, phase, volumes=(), options=None, check_mode=False, force=False):
    """One node phase over ``volumes`` in ``node``'s namespace; the result dict (``ok``, ``msg`` on failure)."""
    node._n += 1
    path = os.path.join(node.tmp, "plugin-args-%d.json" % node._n)
    with open(path, "w") as handle:
        json.dump({"phase": phase, "volumes": list(volumes), "driver_options": options or {}, "check_mode": check_mode,
                   "force": force, "node_name": node.name, "kubelet_dir": node.kubelet_dir, "run_dir": node.run_dir},
                  handle)
    proc = subprocess.run(node.argv(NODE_PYTHON, "-c", SCRIPT, path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=node.module_env(), check=False)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise AssertionError("node run printed no JSON (rc %s):\nstdout: %s\nstderr: %s"
                             % (proc.returncode, proc.stdout, proc.stderr))


def tree(node):
    """Every path under the test's tmp dir but the run dir (volume locks) and these runs' argument files: a snapshot
    to prove that nothing was created or removed."""
    found = []
    for dirpath, dirs, files in os.walk(node.tmp):
        found += [os.path.join(dirpath, n) for n in dirs + files if not n.startswith("plugin-args-")]
    return sorted(p for p in found if p != node.run_dir and not p.startswith(node.run_dir + os.sep))
