"""kvtestnodes.cli: the command line callers rely on (no root needed)."""
import os
import shlex
import subprocess

import pytest

from kvtestnodes.cli import build_parser, main

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))), "scripts", "testnodes.py")


@pytest.mark.parametrize("count", ["0", "501"])
def test_up_refuses_a_node_count_out_of_range(count, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["up", count, "--state-dir", "/nonexistent"])
    assert exc.value.code == 2
    assert "N must be between 1 and 500" in capsys.readouterr().err


def test_parser_reads_every_command_line_callers_use():
    p = build_parser()
    up = p.parse_args(["up", "3", "--state-dir", "d", "--base-port", "23000"])
    assert (up.cmd, up.count, up.state_dir, up.base_port) == ("up", 3, "d", 23000)
    assert p.parse_args(["up", "1", "--state-dir", "d"]).base_port is None
    assert p.parse_args(["down", "--state-dir", "d", "--purge"]).purge
    ssh = p.parse_args(["ssh", "--state-dir", "d", "node1", "ls", "-l", "/"])
    assert (ssh.node, ssh.command) == ("node1", ["ls", "-l", "/"])
    init = p.parse_args(["_init", "--name", "node1", "--node-dir", "/n", "--pool", "/p"])
    assert (init.cmd, init.name, init.node_dir, init.pool) == ("_init", "node1", "/n", "/p")
    with pytest.raises(SystemExit):
        p.parse_args(["status"])  # --state-dir is required


def test_env_prints_exports_a_shell_reads_back(tmp_path, capsys):
    state = str(tmp_path / "it's $here")
    assert main(["env", "--state-dir", state]) == 0
    exports = dict(shlex.split(line)[1].split("=", 1) for line in capsys.readouterr().out.splitlines())
    assert exports["KUBEVOL_TESTNODES_DIR"] == state
    assert exports["KUBEVOL_INVENTORY"] == os.path.join(state, "inventory", "hosts.yml")
    assert exports["KUBEVOL_SSH_CONFIG"] == os.path.join(state, "ssh_config")
    assert exports["KUBEVOL_POOL_DIR"] == os.path.join(state, "pool")


def test_ssh_without_nodes_says_to_run_up(tmp_path, capsys):
    assert main(["ssh", "--state-dir", str(tmp_path), "node1"]) == 1
    assert "run `up` first" in capsys.readouterr().err


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="no /usr/bin/python3")
def test_the_script_runs_by_path_from_any_directory_under_the_hosts_python(tmp_path):
    # As the nodes' init runs it: `PYTHON /abs/scripts/testnodes.py ...`, here from another cwd.
    res = subprocess.run(["/usr/bin/python3", SCRIPT, "env", "--state-dir", "s"], cwd=str(tmp_path),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
                         check=False)
    assert res.returncode == 0, res.stderr
    assert "export KUBEVOL_TESTNODES_DIR=%s\n" % shlex.quote(str(tmp_path / "s")) in res.stdout
