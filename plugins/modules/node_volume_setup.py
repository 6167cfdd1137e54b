#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: node_volume_setup
short_description: Attach, format and mount, and grow one node's volumes in one module execution
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - Runs, in one execution on the node, the phases that M(kubevol.volumes.k8s_volume_attach),
    M(kubevol.volumes.node_volume_mount) and M(kubevol.volumes.fs_expand) (C(stage=controller), then C(stage=node))
    run one execution each, in that order, each with the same checks, locks, check mode and result.
  - A volume that failed in a phase is left out of the later phases; the other volumes go on.
  - The engine of the reconcile role (M(kubevol.volumes.node_phases) calls it when a node has work in more than one
    of these phases); the single-phase modules stay the ones to use ad hoc.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.node_volumes.node
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
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
  run_dir:
    description: Directory for the per-volume lock files.
    type: str
    default: /run/kubevol
  lock_timeout:
    description: Seconds to wait for another kubevol run that holds a volume's lock.
    type: int
    default: 60
  loop_pools:
    description:
      - The directories this node keeps C(loop.kubevol.io) images in (the node's configuration); a volume whose
        C(volumeAttributes.pool) is not one of them is refused before anything runs.
    type: list
    elements: str
    default: [/var/lib/kubevol/pool]
  command_timeout:
    description:
      - Seconds each node command (mount, losetup, blkid, ...) may run. A command past it is killed and fails its
        volume, naming the command line and the time waited; the other volumes of the call go on.
      - The reconcile role passes C(kubevol_command_timeout).
    type: int
    default: 300
  long_command_timeout:
    description:
      - The same for the tools that walk a whole device (mkfs, fsck, filesystem growth, wipefs).
      - The reconcile role passes C(kubevol_long_command_timeout).
    type: int
    default: 3600
  force_release_holders:
    description:
      - The operator's release of other nodes' holds on C(loop.kubevol.io) images, for nodes that are down for good
        (powered off, their devices gone). Attaching an image whose pool holder record
        (C(<pool>/.kubevol-holders/)) names a node listed here drops that node's hold first, reported in
        C(released_holders) of the volume and with a warning.
      - Otherwise an image another node holds is never attached, adopted or reused (unless the volume is
        multi-attach); the attach fails naming the holder and since when, and waits for that node's own detach.
        The out-of-service taint does not release a hold, since a node that was only unreachable still has its
        device.
      - A loop device that still backs the image (the released node is not down, on a shared kernel) is still
        refused, never adopted and never doubled.
      - The reconcile role passes C(kubevol_force_release_holders).
    type: list
    elements: str
    default: []
'''

EXAMPLES = r'''
- name: Attach and mount two volumes, in one execution
  kubevol.volumes.node_volume_setup:
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

from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry
from ansible_collections.kubevol.volumes.plugins.module_utils.setup_args import check_setup_phases


def main():
    module = AnsibleModule(argument_spec=entry.argspec("node_volume_setup"), supports_check_mode=True)
    error = check_setup_phases(module.params)
    if error:
        module.fail_json(msg=error)
    entry.run("node_volume_setup", module)


if __name__ == "__main__":
    main()
