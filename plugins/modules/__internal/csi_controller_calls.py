#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: csi_controller_calls
short_description: Internal - external CSI drivers' controller calls, on the host their controller plugin runs on
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - Makes ControllerUnpublishVolume, ControllerPublishVolume and ControllerExpandVolume over the controller plugin's
    unix socket on this host, as the external-attacher and the external-resizer do beside the controller plugin,
    for the drivers whose C(driver_options) entry names this host as C(controller) with its C(controller_socket).
  - C(kubevol.volumes.csi_controller) runs it (after reading the plan, the PVs' Secrets and the run's failures) on
    each controller host, delegated there by the reconcile role between the nodes' teardown and their setup, and only
    when the plan has such calls. Every unpublish comes before any publish; a volume whose call failed gets no later call.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.internal
  - kubevol.volumes.internal.controller_calls
  - kubevol.volumes.node_volumes
  - kubevol.volumes.node_volumes.node
  - kubevol.volumes.words
  - kubevol.volumes.node_volumes.settings
  - kubevol.volumes.driver_options.loop_pools
options:
  controller_host:
    description: This host's inventory name, for the messages.
    type: str
    required: true
  operations:
    description:
      - The calls, in order, as the action plugin cuts them from the plan; the I-th operation is on the I-th item of
        O(volumes) (the volume item, with its secrets; an expansion's O(volumes[].capacity_bytes) is the new size).
      - The driver's C(controller_socket) in O(driver_options) is the socket called.
    type: list
    elements: dict
    required: true
    suboptions:
      op:
        description: V(unpublish), V(publish) or V(expand).
        type: str
        required: true
        choices: [unpublish, publish, expand]
      node:
        description: The Kubernetes node the volume is published to or unpublished from.
        type: str
        required: true
      node_id:
        description: That node's CSI node id (its node plugin's NodeGetInfo, from the node facts).
        type: str
'''

EXAMPLES = r'''
- name: Publish a volume to node1 from the controller plugin on this host
  kubevol.volumes.__internal.csi_controller_calls:
    controller_host: ctrl1
    driver_options:
      example.csi.vendor.io: {controller: ctrl1, controller_socket: /run/example/controller.sock}
    operations:
      - {op: publish, node: node1, node_id: node1-csi-id}
    volumes:
      - pv_name: pv-a
        driver: example.csi.vendor.io
        volume_handle: vol-a
        fs_type: xfs
'''

RETURN = r'''
operations:
  description: "One entry per call done: C({op, node, pv_name, unique_volume_name, called, skipped, publish_context,
    capacity_bytes, node_expansion_required, csi_calls}) (no request, no secret)."
  returned: always
  type: list
  elements: dict
failures:
  description: "One entry per call that failed or was not attempted: C({op, node, pv_name, unique_volume_name, msg,
    uncertain, code, grpc_code}); C(uncertain) true when the driver may have done it (a non-final gRPC status);
    C(code) the C(KV-...) code the message ends with (for a call not attempted, that of the failure that stopped its
    volume); C(grpc_code) the gRPC status the driver answered, null when no call was answered."
  returned: always
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry_controller_calls as entry


def main():
    module = AnsibleModule(argument_spec=entry.argspec(), supports_check_mode=True)
    entry.run(module)


if __name__ == "__main__":
    main()
