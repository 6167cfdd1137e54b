# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit modules' O(driver_options) and its deprecated O(loop_pools): written once for node_volume_audit and
volume_audit, which read the same loop pools (the volume modules document theirs in node_volumes.settings)."""

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
  loop_pools:
    description:
      - Deprecated, to be removed in 2.0.0; use O(driver_options) C(loop.kubevol.io) C(pools) instead. When given, it
        sets C(loop.kubevol.io)'s C(pools); giving both with different values is an error.
    type: list
    elements: str
"""
