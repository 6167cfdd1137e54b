# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the KubernetesStore tests share (test_kubernetes.py, test_kubernetes_auth.py, test_kubernetes_errors.py and
the fixtures of conftest.py): the cluster the fake API server holds, and an attached record of its volume."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name, volume_attachment_name


DRIVER = "loop.kubevol.io"
UVN_A = unique_volume_name(DRIVER, "pv-a.img")
VA_A = volume_attachment_name("pv-a.img", DRIVER, "node1")
TOKEN = "test-token"
NO_ENV = {}


def cluster_objects():
    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}, "spec": {},
         "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node2"}, "status": {}},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-a"},
         "spec": {"capacity": {"storage": "1Gi"}, "csi": {"driver": DRIVER, "volumeHandle": "pv-a.img"},
                  "claimRef": {"namespace": "prod", "name": "data-a"}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data-a", "namespace": "prod"},
         "spec": {"resources": {"requests": {"storage": "2Gi"}}, "volumeName": "pv-a"},
         "status": {"phase": "Bound", "capacity": {"storage": "1Gi"},
                    "allocatedResourceStatuses": {"storage": "NodeResizePending"},
                    "conditions": [{"type": "FileSystemResizePending", "status": "True"},
                                   {"type": "Custom", "status": "True"}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "prod", "uid": "u-1"},
         "spec": {"nodeName": "node1"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending-0", "namespace": "prod", "uid": "u-2"},
         "spec": {}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
         "spec": {"attachRequired": True}},
    ]


def attached_record(node="node1", device_path="/dev/loop3"):
    return {"type": "attached", "node": node, "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img",
            "device_path": device_path}
