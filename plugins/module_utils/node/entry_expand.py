# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fs_expand's entry: its argument spec and its work (node/operations.py expand_controller, expand_node)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node.entry import said_in
from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import run_volumes
from ansible_collections.kubevol.volumes.plugins.module_utils.node.operations import expand_controller, expand_node


def argspec():
    return node_args.volumes_argspec(stage=dict(type="str", default="node", choices=["node", "controller"]))


def run(module):
    module = said_in(module)
    run_volumes(module, expand_controller if module.params["stage"] == "controller" else expand_node)
