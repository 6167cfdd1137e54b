"""The collection as a user gets it: built with ansible-galaxy, installed from the tarball into an empty
collections path (offline), and the README's quick start run from an unrelated directory.

Nothing here uses the checkout at run time: the commands get an environment without the checkout's
collections path or PYTHONPATH (tests/conftest.py exports both), their own ANSIBLE_HOME and config, and
run in a temporary directory that holds only the user's files. The reconcile runs in check mode against a
local-connection host (an inventory with no ``nodes`` group) whose kubelet directory is a temporary one:
node_volume_info really runs there, and check mode stops after the plan, so nothing is attached or mounted.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.path.dirname(sys.executable)
PLAN_SUMMARY = "Plan: 0 to unmount, 0 to detach, 4 to attach, 9 to mount, 0 to expand; 0 blocked"


def version():
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)["version"]


class User:
    """Runs ansible commands as a user would, in ``work`` (the user's directory), against ``collections``."""

    def __init__(self, root):
        self.root = str(root)
        self.work = os.path.join(self.root, "work")
        self.collections = os.path.join(self.root, "collections")
        home = os.path.join(self.root, "home")
        for path in (self.work, self.collections, home):
            os.makedirs(path)
        config = os.path.join(self.root, "ansible.cfg")
        with open(config, "w") as handle:
            handle.write("[defaults]\n")
        env = dict((k, v) for k, v in os.environ.items()
                   if not k.startswith("ANSIBLE_") and k not in ("PYTHONPATH", "KUBECONFIG"))
        env.update(ANSIBLE_CONFIG=config, ANSIBLE_HOME=os.path.join(home, ".ansible"), HOME=home,
                   XDG_CACHE_HOME=os.path.join(home, ".cache"), ANSIBLE_COLLECTIONS_PATH=self.collections,
                   ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_DEPRECATION_WARNINGS="1",
                   PATH=BIN + os.pathsep + env.get("PATH", ""))
        self.env = env

    def run(self, *argv, cwd=None):
        proc = subprocess.run([os.path.join(BIN, argv[0])] + list(argv[1:]), cwd=cwd or self.work, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                              check=False, timeout=300)
        return proc.returncode, proc.stdout

    def write(self, name, data):
        path = os.path.join(self.work, name)
        with open(path, "w") as handle:
            yaml.safe_dump(data, handle)
        return path


@pytest.fixture(scope="module")
def user(tmp_path_factory):
    """The built tarball, installed into an empty collections path; the user's directory holds cluster.yaml."""
    u = User(tmp_path_factory.mktemp("kubevol-install"))
    dist = os.path.join(u.root, "dist")
    rc, out = u.run("ansible-galaxy", "collection", "build", "--output-path", dist, REPO, cwd=u.root)
    assert rc == 0, out
    u.tarball = os.path.join(dist, "kubevol-volumes-%s.tar.gz" % version())
    assert os.path.isfile(u.tarball), out
    rc, out = u.run("ansible-galaxy", "collection", "install", "--offline", "-p", u.collections, u.tarball,
                    cwd=u.root)
    assert rc == 0 and "kubevol.volumes:%s was installed successfully" % version() in out, out
    u.installed = os.path.join(u.collections, "ansible_collections", "kubevol", "volumes")
    shutil.copy(os.path.join(REPO, "examples", "cluster.yaml"), os.path.join(u.work, "cluster.yaml"))
    os.makedirs(os.path.join(u.work, "kubelet"))  # the local host's kubelet directory (empty: nothing mounted)
    # A Kubernetes node reached over a local connection; no "nodes" group.
    u.inventory = u.write("inventory.yml", {"all": {"hosts": {"node1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "kubevol_kubelet_dir": os.path.join(u.work, "kubelet")}}}})
    return u


def test_tarball_carries_what_runs_from_it(user):
    with tarfile.open(user.tarball) as tar:
        names = set(tar.getnames())
    for needed in ("LICENSE", "README.md", "requirements.txt", "bindep.txt", "meta/execution-environment.yml",
                   "meta/runtime.yml", "playbooks/reconcile.yml", "playbooks/plan.yml", "examples/cluster.yaml",
                   "plugins/modules/cluster_volume_info.py", "plugins/modules/node_volume_info.py"):
        assert needed in names, needed
    leaked = sorted(n for n in names if n.split("/")[0] in ("scripts", "bench", "requirements", "extensions")
                    or n.startswith(("tests/e2e", "tests/integration", ".build", ".venv", ".git/")))
    assert leaked == []
    with open(os.path.join(user.installed, "LICENSE")) as handle:
        assert "GNU GENERAL PUBLIC LICENSE" in handle.readline() + handle.readline()
    with open(os.path.join(user.installed, "MANIFEST.json")) as handle:
        manifest = yaml.safe_load(handle)["collection_info"]
    assert manifest["license"] == ["GPL-3.0-or-later"]
    assert manifest["repository"] == "https://github.com/kubevol/kubevol.volumes"
    assert manifest["issues"] == "https://github.com/kubevol/kubevol.volumes/issues"
    with open(os.path.join(user.installed, "requirements.txt")) as handle:
        reqs = [line.split("#")[0].strip() for line in handle if line.split("#")[0].strip()]
    assert "kubernetes>=24.2.0" in reqs and any(r.startswith("PyYAML") for r in reqs)


def test_plan_of_a_relative_cluster_file(user):
    rc, out = user.run("ansible-playbook", "kubevol.volumes.plan", "-e", "kubevol_cluster_state=cluster.yaml")
    assert rc == 0, out
    assert PLAN_SUMMARY in out, out
    assert "attach/device  node1  pv-db-data" in out, out


def test_a_missing_relative_file_is_named_where_the_user_is(user):
    rc, out = user.run("ansible-playbook", "kubevol.volumes.plan", "-e", "kubevol_cluster_state=nope.yaml")
    assert rc != 0, out
    assert "cluster store file %s" % os.path.join(user.work, "nope.yaml") in out, out
    assert "> %s" % os.path.join(user.work, "nope.yaml") in out, out  # the kubectl command to write it
    fatal = [line for line in out.splitlines() if line.startswith("fatal:")]
    assert fatal and user.installed not in fatal[0], out  # never "write it inside the installed collection"


def test_check_reconcile_with_no_nodes_group(user):
    with open(os.path.join(user.work, "cluster.yaml")) as handle:
        before = handle.read()
    rc, out = user.run("ansible-playbook", "-i", user.inventory, "kubevol.volumes.reconcile",
                       "-e", "kubevol_cluster_state=cluster.yaml", "--check")
    # check mode runs node1's setup in the node modules' check mode: its pool images do not exist and
    # kubevol_provision is off, so the real run would fail there, and so does the check, on node1 (node2 and node3
    # are not in the inventory, their steps not run: the report says so; with every host of the play failed, Ansible
    # runs no later play, and the run has failed already)
    assert rc == 2, out
    assert "no hosts matched" not in out, out
    assert "TASK [kubevol.volumes.reconcile : Gather each node's actual state]" in out, out
    assert PLAN_SUMMARY in out, out
    assert "does not exist" in out and "Would fail on 1 node(s)" in out and "node1 (attach)" in out, out
    recap = out[out.index("PLAY RECAP"):]
    assert re.search(r"node1 +: ok=\d+ +changed=\d+ +unreachable=0 +failed=1 ", recap), recap
    assert "Failed outside the run's hosts:" in out and "node2, node3" in out, out
    with open(os.path.join(user.work, "cluster.yaml")) as handle:
        assert handle.read() == before  # check mode wrote no record
    assert sorted(os.listdir(user.work)) == ["cluster.yaml", "inventory.yml", "kubelet"]  # and took no lock
    assert os.listdir(os.path.join(user.work, "kubelet")) == []


def test_reconcile_fails_loudly_when_its_pattern_matches_nothing(user):
    empty = user.write("empty.yml", {"all": {"hosts": {}}})
    try:
        rc, out = user.run("ansible-playbook", "-i", empty, "kubevol.volumes.reconcile",
                           "-e", "kubevol_cluster_state=cluster.yaml", "--check")
        assert rc != 0 and 'kubevol_hosts "all" matches no host of the inventory' in out, out
        rc, out = user.run("ansible-playbook", "-i", user.inventory, "kubevol.volumes.reconcile",
                           "-e", "kubevol_cluster_state=cluster.yaml", "-e", "kubevol_hosts=nodes", "--check")
        assert rc != 0 and 'kubevol_hosts "nodes" matches no host of the inventory' in out, out
        assert "Gather each node's actual state" not in out, out
    finally:
        os.unlink(empty)


def test_missing_kubelet_dir_fails_the_node(user):
    missing = os.path.join(user.work, "no-such-kubelet")
    rc, out = user.run("ansible", "-i", user.inventory, "node1", "-m", "kubevol.volumes.node_volume_info",
                       "-a", "node_name=node1 kubelet_dir=%s" % missing)
    assert rc != 0 and "kubelet_dir %s does not exist on node node1" % missing in out, out


@pytest.mark.parametrize("old,new,args", [
    ("cluster_volume_facts", "cluster_volume_info", "cluster_state=cluster.yaml query=items[?kind=='Node'].metadata.name"),
    ("node_volume_facts", "node_volume_info", "node_name=node1"),
])
def test_old_names_still_work_with_a_deprecation_warning(user, old, new, args):
    if old.startswith("node"):
        args += " kubelet_dir=%s" % os.path.join(user.work, "kubelet")
    rc, out = user.run("ansible", "-i", user.inventory, "node1", "-m", "kubevol.volumes." + old, "-a", args)
    assert rc == 0 and "node1 | SUCCESS" in out, out
    text = " ".join(out.split())
    assert "kubevol.volumes.%s has been deprecated" % old in text, out
    assert "use kubevol.volumes.%s instead" % new in text, out
    assert "version 2.0.0" in text, out
    rc, out = user.run("ansible", "-i", user.inventory, "node1", "-m", "kubevol.volumes." + new, "-a", args)
    assert rc == 0 and "node1 | SUCCESS" in out and "deprecated" not in out, out


# the modules a user calls; the reconcile role's own steps (action plugins with no module file, and the node modules
# under plugins/modules/__internal/) are not listed: docs/internal-modules.md
USER_MODULES = ["cluster_volume_info", "cluster_volume_record", "fs_expand", "k8s_volume_attach", "node_volume_audit",
                "node_volume_info", "node_volume_mount", "pod_volumes_wait", "volume_audit", "volume_detach",
                "volume_reconcile_plan"]
INTERNAL_NODE_MODULES = ["csi_controller_calls", "node_volume_setup", "volume_provision_calls"]


def test_ansible_doc_lists_exactly_the_users_modules(user):
    rc, out = user.run("ansible-doc", "-l", "-j", "kubevol.volumes")
    assert rc == 0, out
    listed = sorted(json.loads(out[out.index("{"):]))
    assert listed == ["kubevol.volumes." + name for name in USER_MODULES], listed
    # the internal node modules are in the installed collection, still documented, and run by their full name
    for name in INTERNAL_NODE_MODULES:
        assert os.path.isfile(os.path.join(user.installed, "plugins", "modules", "__internal", name + ".py"))
        rc, out = user.run("ansible-doc", "-j", "kubevol.volumes.__internal." + name)
        assert rc == 0 and json.loads(out)["kubevol.volumes.__internal." + name]["doc"]["module"] == name, out
    rc, out = user.run("ansible", "localhost", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable,
                       "-m", "kubevol.volumes.__internal.node_volume_setup",
                       "-a", "node_name=node1 kubelet_dir=" + os.path.join(user.work, "kubelet"))
    assert rc == 0 and '"phase_results"' in out, out
