"""What the check-mode tests share: a picture of what a run may change, a tool hidden inside a test node, and the
failure a phase reports."""
import os
import shutil
import subprocess

from conftest import ANSIBLE_SITE, COLLECTIONS, parse_module_output


def state(*nodes):
    """Every path under the first node's directory with each file's size (but the nodes' run dirs, where every run
    takes its volume locks, and the module argument files), the loop devices backed there and the mounts: what a
    check run must leave exactly as it was (no file, no device, no mount, no record)."""
    root = nodes[0].tmp
    skip = [n.run_dir for n in nodes]
    found = []
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(dirpath, name)
            if name.startswith(("args-", "plugin-args-")) or any(path == s or path.startswith(s + os.sep) for s in skip):
                continue
            found.append((path, os.lstat(path).st_size if name in files else None))
    return sorted(found), nodes[0].loops(), sorted(m for n in nodes for m in n.mounts_under())


def hide(node, tool):
    """Make ``tool`` missing inside ``node``'s mount namespace only (a character device bound over it is no
    executable file to the runner); the host keeps it."""
    path = os.path.realpath(shutil.which(tool))
    node.run("mount", "--bind", "/dev/null", path)
    return path


def failure(result, phase=None):
    """The one failure of a module result (of one phase of node_volume_setup when ``phase`` is given)."""
    res = result["phase_results"][phase] if phase else result
    assert res.get("failed") or res.get("_rc"), result
    [entry] = res["failures"]
    return res, entry


def module_as_on_a_node(node, name, check_mode=False, **args):
    """Node module ``name`` run with the node's own Python packages (Debian's python3-grpcio for the CSI client, as
    bindep.txt installs them), not the controller venv's (built for another Python): only the venv's ``ansible``
    is added, as Ansible's payload brings it to a node."""
    site = os.path.join(node.tmp, "node-site")
    if not os.path.isdir(site):
        os.makedirs(site)
        os.symlink(os.path.join(ANSIBLE_SITE, "ansible"), os.path.join(site, "ansible"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([COLLECTIONS, site]))
    proc = subprocess.run(node.module_cmd(name, args, check_mode), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, env=env, check=False)
    return parse_module_output(proc)
