# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_volume_info's entry: its argument spec and its work, the node's facts (node/facts.py). Its module file
imports this file alone, so that its payload holds the facts' code and nothing that changes a volume."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import node_context
from ansible_collections.kubevol.volumes.plugins.module_utils.node.entry import said_in
from ansible_collections.kubevol.volumes.plugins.module_utils.node.facts import node_facts


def argspec():
    return node_args.node_argspec(fs_sizes=dict(type="bool", default=True))


def run(module):
    """The node's facts; ends in module.exit_json or module.fail_json."""
    module = said_in(module)
    try:
        ctx = node_context(module.params, check_mode=module.check_mode)
        facts = node_facts(ctx, fs_sizes=module.params["fs_sizes"])
    except KubevolError as err:
        module.fail_json(msg=err.msg, **err.to_result())
    for text in ctx.warnings:  # e.g. a node plugin that gave no node id (facts.csi_node_ids)
        module.warn(text)
    module.exit_json(changed=False, node_facts=facts)
