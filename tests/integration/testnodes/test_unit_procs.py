"""kvtestnodes.procs: liveness from /proc and pid-guarded signals, on real child processes."""
import signal
import subprocess
import sys
import time

from kvtestnodes.procs import is_running, proc_state, signal_if, terminate

IGNORES_TERM = ("import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(30)")


def _wait_for_state(pid, want, timeout=5.0):
    deadline = time.monotonic() + timeout
    while proc_state(pid) != want and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc_state(pid)


def test_a_killed_unreaped_process_is_not_running():
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert is_running(child.pid)
        child.send_signal(signal.SIGKILL)
        assert _wait_for_state(child.pid, "Z") == "Z"  # a zombie: kill -0 would still succeed
        assert not is_running(child.pid)
    finally:
        child.kill()
        child.wait()
    assert proc_state(child.pid) is None


def test_signal_if_sends_nothing_when_the_check_fails():
    child = subprocess.Popen(["sleep", "30"])
    try:
        signal_if(child.pid, signal.SIGKILL, lambda pid: False)  # e.g. the pid was reused
        time.sleep(0.1)
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()


def test_terminate_ends_a_process_that_ignores_sigterm():
    child = subprocess.Popen([sys.executable, "-c", IGNORES_TERM], stdout=subprocess.PIPE)
    try:
        assert child.stdout.readline() == b"ready\n"
        assert terminate([child.pid], is_running, grace=0.3) == []
        assert child.wait(timeout=5) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()
