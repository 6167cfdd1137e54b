"""kvtestnodes.nodes: a restarting node's directory (no root needed; starting nodes is in
test_testnodes.py)."""
import os
import shutil
import stat

import pytest

from kvtestnodes.nodes import ENTRY_SCRIPT, reset_node_dir
from kvtestnodes.state import Layout


@pytest.mark.skipif(not shutil.which("ssh-keygen"), reason="openssh-client missing")
def test_a_restarting_node_gets_empty_dirs_and_keeps_its_host_key(tmp_path):
    layout = Layout(str(tmp_path))
    reset_node_dir(layout, "node1")
    ndir = layout.node_dir("node1")
    with open(os.path.join(ndir, "host_key.pub")) as fh:
        key = fh.read()
    with open(os.path.join(ndir, "kubelet", "left-over"), "w") as fh:
        fh.write("x")
    os.makedirs(os.path.join(ndir, "upper", "kubelet", "pods"))
    reset_node_dir(layout, "node1")  # the restart of a dead node
    for sub in ("kubelet", "upper", "work", "home"):
        assert os.listdir(os.path.join(ndir, sub)) == []
    assert stat.S_IMODE(os.stat(os.path.join(ndir, "home")).st_mode) == 0o700
    with open(os.path.join(ndir, "host_key.pub")) as fh:
        assert fh.read() == key  # known_hosts stays valid


def test_the_init_runs_the_entry_script_by_path():
    assert os.path.isfile(ENTRY_SCRIPT) and ENTRY_SCRIPT.endswith(os.path.join("scripts", "testnodes.py"))
