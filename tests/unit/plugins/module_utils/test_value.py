# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node code's value objects (module_utils/common/value.py): what a frozen dataclass gave them."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess
import sys

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import PodMount, VolumeItem
from ansible_collections.kubevol.volumes.plugins.module_utils.common.value import REQUIRED, Value


class Pair(Value):
    FIELDS = (("left", REQUIRED), ("right", 0))


class Other(Value):
    FIELDS = (("left", REQUIRED), ("right", 0))


def test_fields_by_position_or_keyword_with_defaults():
    assert Pair(1).right == 0 and Pair(1, 2) == Pair(left=1, right=2) == Pair(1, right=2)
    assert repr(Pair(1, "x")) == "Pair(left=1, right='x')"


@pytest.mark.parametrize("args,kwargs,text", [
    ((), {}, "Pair needs left"),
    ((1, 2, 3), {}, "at most 2 arguments"),
    ((1,), {"left": 2}, "two values for left"),
    ((1,), {"middle": 2}, "no field middle"),
])
def test_wrong_arguments_are_a_type_error(args, kwargs, text):
    with pytest.raises(TypeError, match=text):
        Pair(*args, **kwargs)


def test_immutable_compared_and_hashed_by_value_and_class():
    value = Pair(1, 2)
    with pytest.raises(AttributeError, match="immutable"):
        value.left = 3
    with pytest.raises(AttributeError, match="immutable"):
        del value.right
    assert value != Other(1, 2) and value != (1, 2) and (value == Other(1, 2)) is False
    assert len({Pair(1, 2), Pair(1, 2), Pair(2, 1)}) == 2 and hash(value) != hash(Other(1, 2))


def test_the_node_classes_keep_their_defaults():
    item = VolumeItem("pv-a", "loop.kubevol.io", "pv-a.img", pods=(PodMount("uid-1"),))
    assert item.fs_type == "ext4" and item.detach and item.unmount_device and item.pods[0].read_only is False
    assert item.unique_name == "kubernetes.io/csi/loop.kubevol.io^pv-a.img"


def test_the_node_code_a_facts_run_imports_loads_neither_dataclasses_nor_typing():
    code = ("import sys; import ansible_collections.kubevol.volumes.plugins.module_utils.node.entry as e; "
            "import ansible_collections.kubevol.volumes.plugins.module_utils.node.facts, "
            "ansible_collections.kubevol.volumes.plugins.module_utils.node.setup, "
            "ansible_collections.kubevol.volumes.plugins.module_utils.node.context; "
            "print(sorted(m for m in ('dataclasses', 'typing', 'inspect', 'socket') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, check=True, env=dict(
        __import__("os").environ, PYTHONPATH=":".join(p for p in sys.path if p))).stdout.decode().strip()
    assert out == "[]", out
