#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: csi_controller
short_description: External CSI drivers' controller calls, on the host their controller plugin runs on
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - Makes ControllerUnpublishVolume, ControllerPublishVolume and ControllerExpandVolume over the controller plugin's
    unix socket on this host, as the external-attacher and the external-resizer do beside the controller plugin,
    for the drivers whose C(driver_options) entry names this host as C(controller) with its C(controller_socket).
  - The reconcile role runs it (through its action plugin, which reads the plan, the PVs' Secrets and the run's
    failures) once per controller host, delegated there, between the nodes' teardown and their setup, and only when
    the plan has such calls. Every unpublish comes before any publish; a volume whose call failed gets no later call.
  - Secrets travel in O(operations[].volume.secrets) only (no_log), never in a result or an error.
  - Check mode makes only the read-only calls (GetPluginInfo, Probe, the capability calls).
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  controller_host:
    description: This host's inventory name, for the messages.
    type: str
    required: true
  operations:
    description:
      - The calls, in order, as the action plugin cuts them from the plan.
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
      unique_volume_name:
        description: The volume's unique name (informational).
        type: str
      volume:
        description: The volume item, as the node modules take it (kubevol.volumes.node_volumes doc fragment).
        type: dict
        required: true
  driver_options:
    description:
      - The operator's C(driver_options); the driver's C(controller_socket) is the socket called.
    type: dict
    default: {}
'''

EXAMPLES = r'''
# Run by the reconcile role; the action plugin builds the operations from the plan.
- name: Controller calls on the controller host
  kubevol.volumes.csi_controller:
    plan: "{{ kubevol_plan_result }}"
    controller_host: ctrl1
    driver_options: {example.csi.vendor.io: {controller: ctrl1, controller_socket: /run/example/controller.sock}}
  delegate_to: ctrl1
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
    uncertain}); C(uncertain) true when the driver may have done it (a non-final gRPC status)."
  returned: always
  type: list
  elements: dict
'''

import copy

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args


def argspec():
    return dict(
        controller_host=dict(type="str", required=True),
        operations=dict(type="list", elements="dict", required=True, options=dict(
            op=dict(type="str", required=True, choices=["unpublish", "publish", "expand"]),
            node=dict(type="str", required=True),
            node_id=dict(type="str"),
            unique_volume_name=dict(type="str"),
            volume=dict(type="dict", required=True, options=copy.deepcopy(node_args.VOLUME_SPEC)),
        )),
        driver_options=dict(type="dict", default={}),
    )


def main():
    module = AnsibleModule(argument_spec=argspec(), supports_check_mode=True)
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.controller_host import run_operations
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import Runner, process_runner

    host = module.params["controller_host"]
    results, failures = run_operations(Runner(process_runner(), node=host), host, module.params["operations"],
                                       module.params["driver_options"], check_mode=module.check_mode)
    changed = not module.check_mode and any(r.get("called") for r in results)
    if failures:
        module.fail_json(msg="%d controller call(s) failed on controller host %s: %s" % (
            len(failures), host, "; ".join(f["msg"] for f in failures)), operations=results, failures=failures,
            changed=changed)
    module.exit_json(changed=changed, operations=results, failures=[])


if __name__ == "__main__":
    main()
