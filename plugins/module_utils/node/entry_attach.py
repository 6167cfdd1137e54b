# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_volume_attach's entry: its argument spec and its work (node/operations.py attach_volume)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node.entry import said_in
from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import run_volumes
from ansible_collections.kubevol.volumes.plugins.module_utils.node.operations import attach_volume


def argspec():
    return node_args.volumes_argspec(provision=dict(type="bool", default=False))


def run(module):
    module = said_in(module)
    provision = module.params["provision"]
    run_volumes(module, lambda ctx, item: attach_volume(ctx, item, provision=provision),
                volume_attachments=lambda results: [r["volume_attachment"] for r in results if r["volume_attachment"]],
                volumes_attached=lambda results: [r["volumes_attached"] for r in results if r["volumes_attached"]])
