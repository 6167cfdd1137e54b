#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: csi_controller
short_description: One controller host's share of a volume plan's CSI controller calls
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - An action plugin. It takes a M(kubevol.volumes.volume_reconcile_plan) result and cuts from it the controller calls
    of the external CSI drivers whose C(driver_options) name O(controller_host) as their C(controller) (with a
    C(controller_socket)), ControllerUnpublishVolume of every volume the nodes' teardown released, then
    ControllerPublishVolume, then ControllerExpandVolume, minus what earlier failures of the run stop.
  - It reads the Secrets the PVs' C(controllerPublishSecretRef) and C(controllerExpandSecretRef) name from the
    cluster store and runs M(kubevol.volumes.csi_controller_calls) over the connection of the host the task is
    delegated to (the reconcile role delegates it to each controller host), the secrets in its no_log option only.
  - A call's failure does not fail the reconcile role's run at once; the role records what succeeded and reports the
    failures (naming the controller host, the driver and the socket) with the nodes'.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.node_volumes.task_settings
  - ansible.builtin.action_common_attributes.flow
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
    support: none
  platform:
    platforms: posix
options:
  plan:
    description: A M(kubevol.volumes.volume_reconcile_plan) result (O(kubevol.volumes.volume_reconcile_plan#module:output=full)).
    type: dict
    required: true
  controller_host:
    description: The inventory name of the controller host whose calls to make (the host the task is delegated to).
    type: str
    required: true
  failures:
    description: The run's failures so far (M(kubevol.volumes.reconcile_run)'s RV(kubevol.volumes.reconcile_run#module:failures)); their volumes get no call.
    type: dict
    default: {}
  driver_options:
    description: The operator's C(driver_options), as the plan's.
    type: dict
    default: {}
  run_lock:
    description:
      - The run's M(kubevol.volumes.cluster_run_lock) result; the lock is renewed while the calls run, as during a
        node task.
    type: dict
  cluster_store:
    description:
      - The cluster store's options, to read the PVs' Secrets and a plan record kept in the Kubernetes API
        (C(cluster_source), C(cluster_state), ...). The play's module_defaults for
        C(group/kubevol.volumes.cluster_store) apply under them.
    type: dict
seealso:
  - module: kubevol.volumes.csi_controller_calls
    description: The module it runs on the controller host.
"""

EXAMPLES = r"""
- name: Controller calls on each controller host
  kubevol.volumes.csi_controller:
    plan: "{{ kubevol_plan_result }}"
    controller_host: "{{ item }}"
    driver_options: "{{ kubevol_driver_options }}"
    cluster_store: {cluster_source: file, cluster_state: /srv/cluster.yaml}
  delegate_to: "{{ item }}"
  run_once: true
  loop: [ctrl1]
"""

RETURN = r"""
operations:
  description: The calls made, as M(kubevol.volumes.csi_controller_calls) returns them.
  returned: when the host has calls to make
  type: list
  elements: dict
failures:
  description: The calls that failed or were not attempted, as M(kubevol.volumes.csi_controller_calls) returns them.
  returned: when the host has calls to make
  type: list
  elements: dict
controller_host:
  description: O(controller_host).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.node.node_args import csi_controller_argspec


def main():
    module = AnsibleModule(argument_spec=csi_controller_argspec(), supports_check_mode=True)
    module.fail_json(msg="kubevol.volumes.csi_controller runs as an action plugin on the controller; it was run as a "
                         "module instead (is the collection's action plugin on the controller's path?)")


if __name__ == "__main__":
    main()
