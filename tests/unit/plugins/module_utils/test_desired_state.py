# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import Pod
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import (
    is_multi_attach_allowed, is_pod_terminated)


def _pod(phase="Running", deleted=False, states=()):
    return Pod("ns", "p", "u", "node1", phase, "2026-01-01T00:00:00Z" if deleted else None, tuple(states), (), (), ())


@pytest.mark.parametrize("pod,terminated", [
    (_pod("Failed"), True), (_pod("Succeeded"), True), (_pod("Running"), False), (_pod("Pending"), False),
    (_pod("Unknown"), False), (_pod(deleted=True), True), (_pod(deleted=True, states=["waiting", "terminated"]), True),
    (_pod(deleted=True, states=["running"]), False),
])
def test_is_pod_terminated(pod, terminated):
    assert is_pod_terminated(pod) is terminated


@pytest.mark.parametrize("modes,allowed", [
    ((), True), (("ReadWriteMany",), True), (("ReadOnlyMany",), True), (("ReadWriteOnce", "ReadOnlyMany"), True),
    (("ReadWriteOnce",), False), (("ReadWriteOncePod",), False), (("ReadWriteOnce", "ReadWriteOncePod"), False),
])
def test_is_multi_attach_allowed(modes, allowed):
    assert is_multi_attach_allowed(modes) is allowed
