"""node_volume_info refuses a kubelet_dir that is not a directory before it reads anything: a mistyped one
would read as a node with nothing mounted, and the planner would plan every mount again."""
import os

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node import facts
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext


def no_commands(argv, data=None):
    raise AssertionError("no command may run: %r" % (argv,))


def test_missing_kubelet_dir_is_an_error(tmp_path):
    missing = str(tmp_path / "kubelet-typo")
    with pytest.raises(KubevolError) as exc:
        facts.node_facts(NodeContext(no_commands, node_name="n1", kubelet_dir=missing))
    # the setting is named in its reader's words: the module's option, or the reconcile role's variable
    assert words.say(exc.value.msg).startswith("kubelet_dir %s does not exist on node n1: " % missing)
    assert words.say(exc.value.msg, words.ROLE).startswith("kubevol_kubelet_dir %s does not exist" % missing)
    assert exc.value.to_result() == {"kubelet_dir": missing, "node": "n1"}


def test_a_file_as_kubelet_dir_is_an_error(tmp_path):
    path = tmp_path / "kubelet"
    path.write_text("")
    with pytest.raises(KubevolError) as exc:
        facts.check_kubelet_dir(NodeContext(no_commands, node_name="n1", kubelet_dir=str(path)))
    assert "%s is not a directory on node n1" % path in exc.value.msg


def test_a_symlinked_kubelet_dir_is_fine(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(str(real), str(tmp_path / "kubelet"))
    found = facts.node_facts(NodeContext(no_commands, node_name="n1", kubelet_dir=str(tmp_path / "kubelet"),
                                         run_dir=str(tmp_path / "run")))
    assert found["kubelet_dir"] == str(tmp_path / "kubelet")
    assert (found["global_mounts"], found["pod_mounts"], found["error"]) == ([], [], None)
