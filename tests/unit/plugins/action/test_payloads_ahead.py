"""plugin_utils/payloads.py: the child that builds node modules' payloads ahead is a real forked process that never
returns into its parent's code: a build that fails ends it quietly, and a build no task will use is stopped and
reaped (cancel). The build itself, through the real ansible-playbook, is tests/integration/role/test_build_ahead.py."""
import os
import time

from ansible_collections.kubevol.volumes.plugins.plugin_utils import payloads


class _Loader:
    def __init__(self, behave):
        self.behave = behave

    def find_plugin_with_context(self, name, collection_list=None):
        return self.behave(name)


class _Action:
    """What build_ahead reads of an action: its plugin loader, its task's collections and its templar."""

    def __init__(self, behave):
        self._shared_loader_obj = type("Shared", (), {"module_loader": _Loader(behave)})()
        self._task = type("Task", (), {"collections": []})()
        self._templar = None


def _status(pid, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.01)
    raise AssertionError("the child %d did not end" % pid)


def test_a_build_that_fails_ends_the_child_quietly(tmp_path):
    marker = tmp_path / "asked"

    def behave(name):
        marker.write_text(name)
        raise RuntimeError("no such module")

    pid = payloads.build_ahead(_Action(behave), ["kubevol.volumes.node_volume_info"], {})
    assert pid and pid != os.getpid()
    assert os.WIFEXITED(_status(pid)) and marker.read_text() == "kubevol.volumes.node_volume_info"


def test_a_build_no_task_uses_is_stopped_and_reaped(tmp_path):
    started = tmp_path / "started"

    def behave(name):
        started.write_text(name)
        time.sleep(60)

    pid = payloads.build_ahead(_Action(behave), ["kubevol.volumes.__internal.node_volume_setup"], {})
    assert pid and pid != os.getpid()
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started.exists()
    payloads.cancel(pid)
    try:
        os.kill(pid, 0)
    except OSError:
        pass
    else:
        raise AssertionError("the child %s is still there" % pid)
    payloads.cancel(None)  # no child: nothing to stop


def test_nothing_to_build_forks_nothing():
    assert payloads.build_ahead(_Action(lambda name: None), [], {}) is None
    assert payloads.build_ahead(_Action(lambda name: None), None, {}) is None


def test_each_module_is_built_once_in_the_order_given(tmp_path):
    asked = tmp_path / "asked"

    def behave(name):
        with open(str(asked), "a") as handle:
            handle.write(name + "\n")
        raise RuntimeError("stop before the build")

    pid = payloads.build_ahead(_Action(behave), ["kubevol.volumes.b", "kubevol.volumes.a", "kubevol.volumes.b"], {})
    assert pid and pid != os.getpid()
    assert os.WIFEXITED(_status(pid))
    assert asked.read_text().split() == ["kubevol.volumes.b", "kubevol.volumes.a"]
