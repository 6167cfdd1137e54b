"""kvtestnodes.clientfiles: what ssh and Ansible read back from the files `up` writes (no root needed)."""
import os
import shutil
import subprocess

import pytest
import yaml

from kvtestnodes.clientfiles import write_client_files
from kvtestnodes.state import Layout

NODES = [{"name": "node1", "port": 22201}, {"name": "node2", "port": 22207}]


def _layout(root):
    layout = Layout(root)
    for n in NODES:
        os.makedirs(layout.node_dir(n["name"]))
        with open(os.path.join(layout.node_dir(n["name"]), "host_key.pub"), "w") as fh:
            fh.write("ssh-ed25519 AAAAC3Nza%s %s\n" % (n["name"], n["name"]))
    return layout


def test_known_hosts_pins_each_node_key_to_its_port(tmp_path):
    layout = _layout(str(tmp_path))
    write_client_files(layout, {"nodes": NODES})
    with open(layout.known_hosts) as fh:
        assert fh.read() == ("[127.0.0.1]:22201 ssh-ed25519 AAAAC3Nzanode1\n"
                             "[127.0.0.1]:22207 ssh-ed25519 AAAAC3Nzanode2\n")


def test_inventory_is_yaml_ansible_reads_even_with_quotes_in_the_state_dir(tmp_path):
    layout = _layout(str(tmp_path / 'a"b\\c'))
    write_client_files(layout, {"nodes": NODES})
    with open(layout.inventory) as fh:
        nodes = yaml.safe_load(fh)["all"]["children"]["nodes"]
    assert nodes["hosts"] == {"node1": {"ansible_host": "127.0.0.1", "ansible_port": 22201},
                              "node2": {"ansible_host": "127.0.0.1", "ansible_port": 22207}}
    assert nodes["vars"]["ansible_ssh_private_key_file"] == layout.client_key
    assert nodes["vars"]["ansible_ssh_common_args"] == layout.ssh_common_args()
    assert nodes["vars"]["ansible_python_interpreter"] == "/usr/bin/python3"


def test_inventory_without_nodes_has_an_empty_group(tmp_path):
    layout = _layout(str(tmp_path))
    write_client_files(layout, {"nodes": []})
    with open(layout.inventory) as fh:
        assert yaml.safe_load(fh)["all"]["children"]["nodes"]["hosts"] == {}


@pytest.mark.skipif(not shutil.which("ssh"), reason="openssh-client missing")
def test_ssh_config_resolves_each_node_with_strict_host_key_checking(tmp_path):
    layout = _layout(str(tmp_path))
    write_client_files(layout, {"nodes": NODES})
    res = subprocess.run(["ssh", "-G", "-F", layout.ssh_config, "node2"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, check=True)
    opts = {}
    for line in res.stdout.splitlines():
        key, _sep, value = line.partition(" ")
        opts.setdefault(key, value)
    assert (opts["hostname"], opts["port"], opts["user"]) == ("127.0.0.1", "22207", "root")
    assert opts["stricthostkeychecking"] == "true"
    assert opts["userknownhostsfile"] == layout.known_hosts
    assert opts["identityfile"] == layout.client_key
