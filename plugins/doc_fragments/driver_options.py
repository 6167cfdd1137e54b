# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit modules' O(driver_options), written once for node_volume_audit and volume_audit, which read the same
loop pools (the volume modules document theirs in node_volumes.settings); PLAN: volume_reconcile_plan's, with the
inventory's hosts its remote CSI controllers are checked against; LOOP_POOLS: the deprecated O(loop_pools) of all
of them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  driver_options:
    description:
      - The operator's options of each volume plugin and CSI driver (as M(kubevol.volumes.k8s_volume_attach) takes
        them); the audit reads C(loop.kubevol.io) C(pools), the directories the nodes keep loop images in (default
        V([/var/lib/kubevol/pool])).
      - The reconcile role's C(kubevol_driver_options).
    type: dict
    default: {}
    version_added: 0.2.0
"""

    PLAN = r"""
options:
  driver_options:
    description:
      - The operator's options of each volume plugin and CSI driver, as the node modules' O(driver_options) (the same
        mapping of plugin or driver name to its options, each name's defaults kept for the options not given).
      - C(loop.kubevol.io) C(pools) (default V([/var/lib/kubevol/pool])) - a PV or inline volume whose
        C(volumeAttributes.pool) is not an absolute, normalized path equal to one of these (a missing pool is
        V(/var/lib/kubevol/pool)) is returned in RV(blocked), naming the object, the field, the value and the rule,
        and nothing of it is attached, recorded or created on any node. The check is a pure path comparison; each
        node checks again with its own symlink-resolving check.
      - C(kubernetes.io/local-volume) C(paths) (default V([/mnt/disks])) and C(kubernetes.io/host-path) C(paths)
        (default V([])) - the directories local and hostPath PVs may name.
      - An unknown plugin or driver name, an unknown option or a value of the wrong shape fails the task, naming the
        key and what is allowed.
      - An external CSI driver whose C(controller) names a host of the inventory (with C(controller_socket)) has its
        attach, detach and controller expansion steps marked with that C(controller_host) (and the nodes' CSI
        node ids, C(csi_node_id), from O(node_facts)), and RV(csi_controllers) lists such drivers. A C(controller)
        not in O(inventory_hosts) or without C(controller_socket) fails the task naming the option.
      - The reconcile role passes C(kubevol_driver_options).
    type: dict
    default: {}
    version_added: 0.2.0
  inventory_hosts:
    description:
      - The inventory's hostnames (the reconcile role passes C(groups['all'])). When given, an external CSI
        driver's C(controller) host must be one of them.
    type: list
    elements: str
"""

    # The deprecated O(loop_pools) of every module that takes O(driver_options): one text for all of them.
    LOOP_POOLS = r"""
options:
  loop_pools:
    description:
      - Deprecated, to be removed in 2.0.0; use O(driver_options) C(loop.kubevol.io) C(pools) instead.
      - When given, it sets C(loop.kubevol.io)'s C(pools); giving both with different values is an error.
    type: list
    elements: str
"""
