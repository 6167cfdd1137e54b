"""The production runner (node/runner.py process_runner): real processes, no shell, the C locale."""
import os
import stat

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import CommandFailed
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import (
    CANNOT_RUN_RC, NOT_FOUND_RC, Runner, process_runner)


def test_exit_status_and_output_are_returned_not_checked():
    run = process_runner()
    assert run(["sh", "-c", "printf out; printf err >&2; exit 3"]) == (3, "out", "err")


def test_commands_run_in_the_c_locale_with_stdin_closed():
    rc, out, _err = process_runner()(["sh", "-c", "echo $LANG $LC_ALL; cat"])
    assert (rc, out) == (0, "C C\n")  # cat reads /dev/null: an EOF, never the module's own stdin


def test_data_goes_to_stdin():
    assert process_runner()(["cat"], data="a\nb") == (0, "a\nb", "")


def test_argv_is_never_a_shell_string():
    rc, out, _err = process_runner()(["echo", "$(id -u); rm -rf /"])
    assert (rc, out) == (0, "$(id -u); rm -rf /\n")


def test_bytes_that_are_not_utf8_do_not_raise():
    rc, out, _err = process_runner()(["printf", "label-\\377"])
    assert rc == 0 and out.encode("utf-8", "surrogateescape") == b"label-\xff"


def test_a_missing_command_is_exit_127_with_its_name():
    assert process_runner()(["kubevol-no-such-command", "x"]) == (
        NOT_FOUND_RC, "", "kubevol-no-such-command: command not found")


def test_a_command_that_cannot_start_is_reported_and_fails_check(tmp_path):
    script = tmp_path / "tool"
    script.write_text("#!/nonexistent/interpreter\n")
    script.chmod(stat.S_IRWXU)
    rc, out, err = process_runner()([str(script)])
    assert rc in (NOT_FOUND_RC, CANNOT_RUN_RC) and out == "" and str(script) in err
    with pytest.raises(CommandFailed) as failed:
        Runner(process_runner(), node="n1", volume="pv-a").check([str(script)], "probe")
    assert "n1" in failed.value.msg and "pv-a" in failed.value.msg and str(script) in failed.value.msg


def test_the_environment_is_the_modules_own_plus_the_locale(monkeypatch):
    monkeypatch.setenv("KUBEVOL_RUNNER_TEST", "kept")
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    rc, out, _err = process_runner()(["sh", "-c", "echo $KUBEVOL_RUNNER_TEST $LANG"])
    assert (rc, out) == (0, "kept C\n")
    assert os.environ["LANG"] == "de_DE.UTF-8"  # the module's own environment is not changed


def test_a_command_past_its_time_limit_is_killed_and_names_the_time_waited():
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import TIMED_OUT_RC
    import time
    start = time.monotonic()
    rc, out, err = process_runner(timeout=1)(["sh", "-c", "echo started >&2; sleep 30"])
    assert time.monotonic() - start < 10
    assert rc == TIMED_OUT_RC and out == ""
    assert "timed out after 1s" in err and "sh" in err and "started" in err
    with pytest.raises(CommandFailed) as failed:
        Runner(lambda argv, data=None: (rc, out, err), node="n1", volume="pv-a").check(["sleep", "30"], step="probe")
    msg = failed.value.msg
    assert "`sleep 30` timed out after 1s" in msg and "n1" in msg and msg.endswith("[KV-COMMAND-TIMEOUT]"), msg


def test_whole_device_tools_get_the_long_limit():
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import command_timeout
    assert command_timeout(["mkfs.xfs", "-f", "/dev/loop0"], 5, 50) == 50
    assert command_timeout(["/sbin/e2fsck", "-f", "/dev/loop0"], 5, 50) == 50
    assert command_timeout(["mount", "/dev/loop0", "/mnt"], 5, 50) == 5


def test_the_node_modules_options_set_the_limits():
    """command_timeout / long_command_timeout (the role's kubevol_command_timeout, kubevol_long_command_timeout) reach
    the runner every node command goes through."""
    import time
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import context_from

    class Module(object):
        check_mode = False
        params = {"node_name": "n1", "kubelet_dir": "/var/lib/kubelet", "command_timeout": 1,
                  "long_command_timeout": 2}

    ctx = context_from(Module())
    start = time.monotonic()
    rc, _out, err = ctx.runner(["sleep", "30"])
    assert rc == 124 and "timed out after 1s" in err and time.monotonic() - start < 10


# ---- a command past its limit is stopped with every process it started ---------------------------------------------

HANGING = r"""
import os, signal, subprocess, sys, time
marker, pgid_file = sys.argv[1], sys.argv[2]
child = "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN) if sys.argv[1] == 'stubborn' else 0; time.sleep(600)"
for kind in ("plain", "stubborn"):
    subprocess.Popen([sys.executable, "-c", child, kind, marker])  # fsck's fsck.<type>, mkfs's helpers
with open(pgid_file, "w") as out:
    out.write(str(os.getpgid(0)))
sys.stderr.write("started\n")
sys.stderr.flush()
time.sleep(600)
"""


def _running_with(marker):
    """pids of the live (not zombie) processes whose command line holds ``marker``."""
    found = []
    for pid in (name for name in os.listdir("/proc") if name.isdigit()):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                cmdline = handle.read()
            with open("/proc/%s/stat" % pid, "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != b"Z":
            found.append(int(pid))
    return found


def test_a_timed_out_command_is_killed_with_every_process_it_started(tmp_path):
    """A hung command's children (one ignores SIGTERM) die with it: the runner kills the command's process group,
    SIGTERM then SIGKILL, and the error says the command's limit, the time waited and that its processes were
    killed. Checked by the marker in the children's command lines and by the process group: nothing else is touched."""
    import signal
    import sys
    import time
    import uuid
    from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
    from ansible_collections.kubevol.volumes.plugins.module_utils.node import runner as runner_mod

    marker = "kubevol-runner-test-%s" % uuid.uuid4().hex
    pgid_file = tmp_path / "pgid"
    try:
        start = time.monotonic()
        rc, out, err = process_runner(timeout=1)([sys.executable, "-c", HANGING, marker, str(pgid_file)])
        took = time.monotonic() - start
        assert rc == runner_mod.TIMED_OUT_RC and out == "", (rc, out, err)
        assert took < 1 + runner_mod.KILL_GRACE + 5, took
        pgid = int(pgid_file.read_text())
        assert _running_with(marker) == [] and not runner_mod._group_alive(pgid)
        assert "timed out after 1s" in err and "was killed with every process it started" in err, err
        assert "started" in err  # the command's last output
        assert "kubevol_command_timeout" in words.say(err, words.ROLE), err
    finally:
        for pid in _running_with(marker):  # only this test's own processes, by their marker
            os.kill(pid, signal.SIGKILL)


def test_a_whole_device_tool_past_its_limit_names_the_long_limit(tmp_path):
    from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
    tool = tmp_path / "mkfs.kvtest"
    tool.write_text("#!/bin/sh\nexec sleep 30\n")
    tool.chmod(0o755)
    rc, _out, err = process_runner(timeout=30, long_timeout=1)([str(tool), "/dev/null"])
    assert rc == 124 and "timed out after 1s" in err, err
    assert "raise kubevol_long_command_timeout for mkfs.kvtest" in words.say(err, words.ROLE), err


def test_every_command_runs_in_its_own_process_group():
    rc, out, _err = process_runner()(["sh", "-c", "ps -o pgid= -p $$; ps -o sid= -p $$"])
    pgid, sid = out.split()
    assert rc == 0 and int(pgid) == int(sid) != os.getpgid(0)
