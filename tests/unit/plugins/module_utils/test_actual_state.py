# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, csidriver, facts, node, uvn, va  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.plan.actual_state import (  # noqa: E402
    ATTACHED, UNCERTAIN, build_actual_state)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput  # noqa: E402


def actual(*objs, node_facts=None):
    return build_actual_state(ClusterIndex(cluster_from_data(cluster(*objs))), node_facts)


def test_status_confirmed_on_unmanaged_nodes_and_va_uncertain():
    a = actual(node("n1", managed=False, attached=[uvn("pv-a")], in_use=[uvn("pv-a")]), node("n2"),
               bound("pv-a", "ns/a"), va("pv-a", "n1"), va("pv-a", "n2", attached=True))
    assert a.attached[(uvn("pv-a"), "n1")].state == ATTACHED
    assert a.attached[(uvn("pv-a"), "n2")].state == UNCERTAIN
    assert a.confirmed_nodes == {uvn("pv-a"): {"n1"}}
    assert (uvn("pv-a"), "n1") in a.in_use


def test_va_without_pv_or_not_attachable_is_skipped():
    assert actual(node("n1"), va("pv-gone", "n1")).attached == {}
    assert actual(node("n1"), bound("pv-a", "ns/a"), csidriver(attach_required=False), va("pv-a", "n1")).attached == {}


def test_facts_pod_mount_without_vol_data_gets_name_from_pv():
    f = facts("n1", pod_mounts=[("u1", "pv-a")])
    f["pod_mounts"][0]["unique_volume_name"] = None
    a = actual(node("n1"), bound("pv-a", "ns/a"), node_facts={"n1": f})
    assert a.node_facts["n1"].pod_mounts[("u1", "pv-a")].unique_name == uvn("pv-a")


@pytest.mark.parametrize("bad", [[], {"pod_mounts": "x"}, {"devices": [{"driver": "d"}]}, {"pod_mounts": [{}]}])
def test_bad_facts_are_invalid_input(bad):
    with pytest.raises(InvalidInput) as err:
        actual(node("n1"), node_facts={"n1": bad})
    assert "node_facts[n1]" in err.value.msg
