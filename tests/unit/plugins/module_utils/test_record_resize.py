# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The expansion states a run records as it goes (RecoverVolumeExpansionFailure): external-resizer and
node_expander.go."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import RecordApplier, apply_records

DRIVER = "loop.kubevol.io"


def apply_one(cluster_list, record):
    """One record through the stores' own path (RecordApplier.apply_all, as stores/file.py and stores/kubernetes.py
    apply records): True when it changed something."""
    applier = RecordApplier(cluster_list)
    return bool(applier.apply_all([record]))


def cluster():
    return {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-a"},
         "spec": {"capacity": {"storage": "1Gi"}, "csi": {"driver": DRIVER, "volumeHandle": "pv-a.img"}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "prod"},
         "spec": {"volumeName": "pv-a"}, "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}]}


def claim_status(cl):
    return [o for o in cl["items"] if o["kind"] == "PersistentVolumeClaim"][0]["status"]


def test_a_whole_expansion_as_kubernetes_records_it():
    cl = cluster()
    size = 2 * 2 ** 30
    assert apply_one(cl, {"type": "resize_intent", "pvc": "prod/data", "stage": "controller", "capacity": size})
    status = claim_status(cl)
    assert status["allocatedResources"] == {"storage": "2Gi"}
    assert status["allocatedResourceStatuses"] == {"storage": "ControllerResizeInProgress"}
    assert apply_one(cl, {"type": "controller_expanded", "pv_name": "pv-a", "capacity": size, "pvc": "prod/data"})
    assert claim_status(cl)["allocatedResourceStatuses"] == {"storage": "NodeResizePending"}
    assert cl["items"][0]["spec"]["capacity"] == {"storage": "2Gi"}
    assert apply_one(cl, {"type": "resize_intent", "pvc": "prod/data", "stage": "node", "capacity": size})
    assert claim_status(cl)["allocatedResourceStatuses"] == {"storage": "NodeResizeInProgress"}
    assert apply_one(cl, {"type": "node_expanded", "pvc": "prod/data", "capacity": size})
    status = claim_status(cl)
    assert status["capacity"] == {"storage": "2Gi"} and "allocatedResourceStatuses" not in status
    assert status["allocatedResources"] == {"storage": "2Gi"}
    # each record applied again changes nothing
    assert not apply_one(cl, {"type": "node_expanded", "pvc": "prod/data", "capacity": size})


def test_intent_twice_is_a_no_op():
    cl = cluster()
    rec = {"type": "resize_intent", "pvc": "prod/data", "stage": "controller", "capacity": "2Gi"}
    assert apply_one(cl, rec) and not apply_one(cl, rec)


@pytest.mark.parametrize("record", [
    {"type": "resize_intent", "pvc": "prod/data", "stage": "somewhere", "capacity": "2Gi"},
    {"type": "resize_intent", "pvc": "data", "stage": "node", "capacity": "2Gi"},
    {"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi", "pvc": "nope"},
])
def test_bad_resize_records_are_refused_before_anything_changes(record):
    cl = cluster()
    with pytest.raises(InvalidInput):
        apply_records(cl, [record])
    assert "allocatedResources" not in claim_status(cl)
