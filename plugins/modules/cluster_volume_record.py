#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cluster_volume_record
short_description: Record in the cluster store what the node volume operations did
version_added: 0.1.0
author: kubevol contributors (@kubevol)
description:
  - Writes back to the cluster what attach, detach, mount and expand did on the nodes, the way
    Kubernetes records it (VolumeAttachments, C(node.status.volumesAttached) and C(volumesInUse),
    PV capacity, PVC resize status).
  - Runs on the controller, in Ansible's own process (an action plugin), whatever host the task names; a relative
    O(cluster_state) is resolved from the directory the command runs in, and with O(cluster_source=kubernetes) the
    C(kubernetes) client of the controller's Python is used.
  - With O(cluster_source=file) all records are applied or none is; the state file is re-read under
    an exclusive lock and replaced atomically.
  - With O(cluster_source=kubernetes) the objects the records name are read from the API, the records
    applied to them, and the changes sent as Kubernetes makes them (VolumeAttachment create, delete and
    C(status) subresource, node status, PV spec and PVC status patches), each update carrying the
    resourceVersion it read. A conflict with a concurrent writer is re-read and retried (bounded).
    A record naming a missing object fails before anything is written; an API failure in the middle
    leaves the objects already written, and running again converges.
  - Applying the same records again changes nothing.
  - Runs on the controller.
options:
  records:
    description:
      - The records to apply, in order. Each is a dict with a C(type) and the keys that type needs.
      - V(attached) needs C(node), C(pv_name), C(driver), C(volume_handle), C(device_path).
      - V(detached) needs C(node), C(pv_name), C(driver), C(volume_handle).
      - V(in_use) needs C(node), C(unique_volume_names) (list) and C(in_use) (bool).
      - V(attach_intent) needs C(node), C(pv_name), C(driver), C(volume_handle); it creates the VolumeAttachment
        with C(status.attached=false) before the node attaches.
      - V(controller_expanded) needs C(pv_name) and C(capacity) (a quantity such as C(10Gi)). With C(pvc)
        (C(namespace/name)) it also sets the claim's C(status.allocatedResources), C(allocatedResourceStatuses) to
        V(NodeResizePending) and the condition V(FileSystemResizePending) (what C(kubectl describe pvc) shows until
        the node grows the filesystem), as the external-resizer does.
      - V(resize_intent) needs C(pvc), C(stage) (V(controller) or V(node)) and C(capacity). Before an expansion it
        sets the claim's C(allocatedResourceStatuses) to V(ControllerResizeInProgress) (and C(allocatedResources)
        to C(capacity), and the condition V(Resizing)) or V(NodeResizeInProgress), so a run killed mid-expansion
        leaves the claim saying so.
      - V(controller_expanded) and V(resize_intent) take an optional C(at) (RFC 3339), the
        C(lastTransitionTime) of the condition they set; default the time the record is applied.
      - V(node_expanded) needs C(pvc) (C(namespace/name)) and C(capacity); it removes the resize conditions.
      - V(detach_requested) needs C(node), C(requested_at) (RFC 3339) and either C(driver) and C(volume_handle),
        or C(name), the VolumeAttachment name (the shape of the planner's C(detach_requests)).
      - V(detach_request_cleared) needs C(node) and either C(driver) and C(volume_handle), or C(name).
    type: list
    elements: dict
    required: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - kubevol.volumes.cluster_store
  - kubevol.volumes.cluster_store.record
  - kubevol.volumes.k8s_auth
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
seealso:
  - module: kubevol.volumes.cluster_volume_info
    description: Reads the same cluster store.
  - module: kubevol.volumes.cluster_run_lock
    description: The run lock every write renews and checks.
  - module: kubevol.volumes.node_phases
    description: Runs the node work whose outcome is recorded here.
"""

EXAMPLES = r"""
- name: Record an attach and mark the volume in use
  kubevol.volumes.cluster_volume_record:
    cluster_state: /srv/kubevol/cluster.yaml
    records:
      - type: attached
        node: node1
        pv_name: pv-a
        driver: loop.kubevol.io
        volume_handle: pvc-a.img
        device_path: /dev/loop3
      - type: in_use
        node: node1
        unique_volume_names: ["kubernetes.io/csi/loop.kubevol.io^pvc-a.img"]
        in_use: true
  delegate_to: localhost
  run_once: true

- name: Record an attach in the Kubernetes API, with a kubeconfig context
  kubevol.volumes.cluster_volume_record:
    cluster_source: kubernetes
    kubeconfig: ~/.kube/config
    context: prod
    records:
      - type: attached
        node: node1
        pv_name: pv-a
        driver: loop.kubevol.io
        volume_handle: pvc-a.img
        device_path: /dev/loop3
  delegate_to: localhost
  run_once: true

- name: Record a finished file system expansion
  kubevol.volumes.cluster_volume_record:
    cluster_state: /srv/kubevol/cluster.yaml
    records:
      - type: node_expanded
        pvc: prod/data-a
        capacity: 20Gi
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changes:
  description: One entry per record that changed something (records that changed nothing are left out).
  returned: always
  type: list
  elements: dict
  sample: [{"index": 0, "type": "attached", "node": "node1", "pv_name": "pv-a",
            "objects": ["VolumeAttachment/csi-0f3a...", "Node/node1"]}]
count:
  description: Number of entries in RV(changes).
  returned: always
  type: int
  sample: 1
source:
  description: The store written to.
  returned: always
  type: str
  sample: file /srv/kubevol/cluster.yaml
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.run.record_task import REQUIRED_IF, argspec, run


def main():
    module = AnsibleModule(argument_spec=argspec(), required_if=REQUIRED_IF, supports_check_mode=True)
    try:
        module.exit_json(**run(module.params, check_mode=module.check_mode, diff=module._diff))
    except KubevolError as err:
        module.fail_json(msg=err.msg, **err.to_result())


if __name__ == "__main__":
    main()
