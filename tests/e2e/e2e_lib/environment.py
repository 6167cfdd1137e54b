"""Where the end-to-end tests find the checkout, the scripts, the playbook and the interpreters, and what they
expect of the machine: root (a module that imports e2e_lib skips without it)."""
import os

import pytest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/e2e (its callback_plugins)
REPO = os.path.dirname(os.path.dirname(HERE))
TESTNODES = os.path.join(REPO, "scripts", "testnodes.py")
CLUSTER_EDIT = os.path.join(REPO, "scripts", "cluster_edit.py")
PLAYBOOK = os.path.join(REPO, "playbooks", "reconcile.yml")
EXAMPLE = os.path.join(REPO, "examples", "cluster.yaml")
COLLECTIONS = os.environ["ANSIBLE_COLLECTIONS_PATH"]  # set by tests/conftest.py
KUBELET = "/var/lib/kubelet"
DRIVER = "loop.kubevol.io"
MiB = 1024 * 1024

NODE_MODULES = ("kubevol.volumes.volume_detach", "kubevol.volumes.k8s_volume_attach",
                "kubevol.volumes.node_volume_mount", "kubevol.volumes.fs_expand")
# what the role's node_phases runs for each phase (plugins/action/node_phases.py)
PHASE_ORDER = ["teardown", "attach", "mount", "expand_controller", "expand_node"]
PHASE_MODULES = {"teardown": "volume_detach", "attach": "k8s_volume_attach", "mount": "node_volume_mount",
                 "expand_controller": "fs_expand", "expand_node": "fs_expand"}

if os.geteuid() != 0:
    pytest.skip("end-to-end tests need root (sshd in namespaces, loop devices, mounts)", allow_module_level=True)


def compat_python():
    """The ansible-core 2.19 / Python 3.11 interpreter, or None."""
    for cand in (os.environ.get("KUBEVOL_PYTHON_COMPAT"), os.path.join(REPO, ".venv-compat", "bin", "python")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def require_compat_python():
    py = compat_python()
    if py is None:
        msg = ("no compat venv (ansible-core 2.19 on Python 3.11 with paramiko): set KUBEVOL_PYTHON_COMPAT "
               "or run scripts/bootstrap.sh to build .venv-compat")
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)
    return py
