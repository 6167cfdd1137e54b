# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one VolumeAttachment builder: what k8s_volume_attach returns is what an `attached` record creates."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from types import SimpleNamespace

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import Attachment
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import volume_attachment_name
from ansible_collections.kubevol.volumes.plugins.module_utils.node.operations import attach_volume
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import RecordApplier
from ansible_collections.kubevol.volumes.plugins.module_utils.common.volume_attachment import attached_volume_attachment
from ansible_collections.kubevol.volumes.plugins.module_utils.node.driver_ops import DriverHandler

DRIVER = "loop.kubevol.io"


def apply_one(cluster_list, record):
    """One record through the stores' own path (RecordApplier.apply_all, as stores/file.py and stores/kubernetes.py
    apply records): True when it changed something."""
    applier = RecordApplier(cluster_list)
    return bool(applier.apply_all([record]))


def test_shape():
    va = attached_volume_attachment(DRIVER, "pv-a.img", "node1", "pv-a", "/dev/loop3")
    assert va == {
        "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
        "metadata": {"name": volume_attachment_name("pv-a.img", DRIVER, "node1")},
        "spec": {"attacher": DRIVER, "nodeName": "node1", "source": {"persistentVolumeName": "pv-a"}},
        "status": {"attached": True, "attachmentMetadata": {"devicePath": "/dev/loop3"}},
    }
    assert attached_volume_attachment(DRIVER, "pv-a.img", "node1", "pv-a", None)["status"]["attachmentMetadata"] == {
        "devicePath": ""}


@pytest.mark.parametrize("device", ["/dev/loop3", None])
def test_node_result_is_what_the_record_creates(device):
    item = volume_item({"pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img"})
    driver = SimpleNamespace(controller_publish=lambda item, node_id, check_mode, provision: Attachment(
        device, attached=True))
    ctx = SimpleNamespace(node_name="node1", check_mode=device is None, driver=lambda item: driver,
                          handler=lambda item: DriverHandler())
    returned = attach_volume(ctx, item)["volume_attachment"]
    cluster = {"apiVersion": "v1", "kind": "List",
               "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}, "status": {}}]}
    assert apply_one(cluster, {"type": "attached", "node": "node1", "pv_name": "pv-a", "driver": DRIVER,
                               "volume_handle": "pv-a.img", "device_path": device}) is True
    recorded = [o for o in cluster["items"] if o["kind"] == "VolumeAttachment"]
    assert recorded == [returned]
