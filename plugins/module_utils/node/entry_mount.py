# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_volume_mount's entry: its argument spec and its work (node/operations.py mount_volume)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node.entry import said_in
from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import run_volumes
from ansible_collections.kubevol.volumes.plugins.module_utils.node.operations import mount_volume


def argspec():
    return node_args.volumes_argspec(force=dict(type="bool", default=False),
                                     device_timeout=dict(type="int", default=30))


def run(module):
    module = said_in(module)
    force, timeout = module.params["force"], module.params["device_timeout"]
    run_volumes(module, lambda ctx, item: mount_volume(ctx, item, force=force, device_timeout=timeout))
