#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_volume_setup
short_description: Internal - attach, format and mount, and grow one node's volumes in one module execution
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - Runs, in one execution on the node, the phases that M(kubevol.volumes.k8s_volume_attach),
    M(kubevol.volumes.node_volume_mount) and M(kubevol.volumes.fs_expand) (C(stage=controller), then C(stage=node))
    run one execution each, in that order, each with the same checks, locks, check mode and result.
  - A volume that failed in a phase is left out of the later phases; the other volumes go on.
  - The engine of the reconcile role (C(kubevol.volumes.node_phases) calls it when a node has work in more than one
    of these phases); the single-phase modules stay the ones to use ad hoc.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.internal
  - kubevol.volumes.node_volumes.node
  - kubevol.volumes.words
  - kubevol.volumes.node_volumes.settings
  - kubevol.volumes.driver_options.loop_pools
seealso:
  - module: kubevol.volumes.k8s_volume_attach
    description: The attach phase on its own.
  - module: kubevol.volumes.node_volume_mount
    description: The mount phase on its own.
  - module: kubevol.volumes.fs_expand
    description: The expansion phases on their own.
options:
  attach:
    description:
      - "The attach phase: C(volumes) (the volume items of O(kubevol.volumes.k8s_volume_attach#module:volumes)) and C(provision), as
        M(kubevol.volumes.k8s_volume_attach) takes them."
    type: dict
  mount:
    description:
      - "The mount phase: C(volumes), C(force) and C(device_timeout), as M(kubevol.volumes.node_volume_mount) takes them."
    type: dict
  expand_controller:
    description:
      - "The controller-side expansion: C(volumes), as M(kubevol.volumes.fs_expand) with C(stage=controller) takes them."
    type: dict
  expand_node:
    description:
      - "The node-side expansion: C(volumes), as M(kubevol.volumes.fs_expand) with C(stage=node) takes them."
    type: dict
'''

EXAMPLES = r'''
- name: Attach and mount two volumes, in one execution
  kubevol.volumes.__internal.node_volume_setup:
    attach:
      volumes: "{{ new_volumes }}"
    mount:
      volumes: "{{ new_volumes }}"
'''

RETURN = r'''
phase_results:
  description:
    - The result of each phase that had volumes, keyed C(attach), C(mount), C(expand_controller), C(expand_node),
      each the result its single-phase module returns (with C(failed) and C(msg) when it failed).
  returned: always
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry_setup as entry
from ansible_collections.kubevol.volumes.plugins.module_utils.node.setup_args import check_setup_phases, secret_values


def main():
    module = AnsibleModule(argument_spec=entry.argspec(), supports_check_mode=True)
    # each phase is a plain dict option: its volumes' secrets (no_log in their own spec) are masked here
    module.no_log_values.update(secret_values(module.params))
    error = check_setup_phases(module.params)
    if error:
        module.fail_json(msg=error)
    entry.run(module)


if __name__ == "__main__":
    main()
