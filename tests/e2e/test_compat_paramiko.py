"""The oldest supported controller: ansible-core 2.19 on Python 3.11, nodes over paramiko_ssh.

The paramiko connection plugin is gone in ansible-core 2.21, so this runs the compat venv's
ansible-playbook (KUBEVOL_PYTHON_COMPAT, else .venv-compat; missing: skip, or fail under CI=true).
The controller-side modules run on localhost with ansible_playbook_python (the role sets it).
"""
import os
import subprocess

import pytest
import yaml

from e2e_lib import node_status, pod_mount_path, pod_uid, require_compat_python, unique_name, va_name, vas


@pytest.fixture(scope="module")
def compat_py():
    py = require_compat_python()
    out = subprocess.run([py, "-c", "import sys, ansible.release, paramiko; "
                          "print(sys.version_info[0], sys.version_info[1], ansible.release.__version__)"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    assert out.returncode == 0, "the compat venv lacks ansible-core or paramiko: %s" % out.stdout
    major, minor, core = out.stdout.split()
    assert (int(major), int(minor)) == (3, 11), out.stdout
    assert core.startswith("2.19."), out.stdout
    return py


@pytest.fixture(scope="module")
def kv(make_cluster, compat_py):
    cluster = make_cluster("pmk", 3)
    cluster.load_example()
    # the generated inventory, switched to paramiko (it takes the same private key variable)
    with open(cluster.inventory) as handle:
        inv = yaml.safe_load(handle)
    group = inv["all"]["children"]["nodes"]
    group["vars"].pop("ansible_ssh_common_args")
    group["vars"]["ansible_connection"] = "paramiko_ssh"
    assert os.path.exists(group["vars"]["ansible_ssh_private_key_file"])
    cluster.paramiko_inventory = os.path.join(cluster.dir, "paramiko.yml")
    with open(cluster.paramiko_inventory, "w") as handle:
        yaml.safe_dump(inv, handle)
    return cluster


PARAMIKO_ENV = {
    "ANSIBLE_HOST_KEY_CHECKING": "False",
    "ANSIBLE_PARAMIKO_RECORD_HOST_KEYS": "False",  # or it writes ~/.ssh/known_hosts
    "ANSIBLE_PARAMIKO_LOOK_FOR_KEYS": "False",
    "ANSIBLE_DEPRECATION_WARNINGS": "True",
}


def assert_paramiko_was_used(kv, run):
    # the plugin's own deprecation notice (it is gone in 2.21), and no OpenSSH ControlMaster socket
    assert "The paramiko connection plugin is deprecated" in run.stdout, run.describe()
    cp = os.path.join(kv.dir, "cp")
    assert not os.path.isdir(cp) or os.listdir(cp) == [], "OpenSSH was used: %s" % os.listdir(cp)


def test_converge_and_idempotent_on_core_219_paramiko(kv, compat_py):
    first = kv.reconcile(python=compat_py, inventory=kv.paramiko_inventory, env=PARAMIKO_ENV)
    assert first.argv[0] == os.path.join(os.path.dirname(compat_py), "ansible-playbook")
    assert_paramiko_was_used(kv, first)
    data = kv.cluster()
    # the pods' volumes are there, over paramiko
    for ref, node, pv, ro in (("shop/db-0", "node1", "pv-db-data", False), ("shop/web-0", "node2", "pv-web-content",
                              False), ("tools/log-writer", "node3", "pv-shared-logs", False),
                              ("tools/log-reader", "node3", "pv-shared-logs", True)):
        mounts = kv.mounts(node)
        path = pod_mount_path(pod_uid(data, ref), pv)
        assert path in mounts, (ref, node, sorted(mounts))
        assert ("ro" in mounts[path]["options"]) == ro, (ref, mounts[path])
    assert sorted(vas(data)) == sorted([va_name("pv-db-data.img", "node1"), va_name("pv-raw-journal.img", "node1"),
                                        va_name("pv-web-content.img", "node2"),
                                        va_name("pv-shared-logs.img", "node3")])
    assert node_status(data, "node2") == ([unique_name("pv-web-content.img")], [unique_name("pv-web-content.img")])
    runs = first.node_module_runs()
    assert sorted(runs) == ["node1", "node2", "node3"], runs

    before = kv.state_bytes()
    second = kv.reconcile(python=compat_py, inventory=kv.paramiko_inventory, env=PARAMIKO_ENV)
    assert all(second.changed(h) == 0 for h in kv.nodes), second.describe()
    assert second.node_module_runs() == {}
    assert_paramiko_was_used(kv, second)
    assert kv.state_bytes() == before
