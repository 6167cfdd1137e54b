# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volume_detach's entry: its argument spec and its work (node/operations.py detach_volume, node/stale.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args, stale
from ansible_collections.kubevol.volumes.plugins.module_utils.node.entry import said_in
from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import run_volumes
from ansible_collections.kubevol.volumes.plugins.module_utils.node.operations import detach_volume


def argspec():
    return node_args.volumes_argspec(volumes_required=False, force=dict(type="bool", default=False),
                                     stale_paths=dict(type="list", elements="str", default=[]))


def run(module):
    module = said_in(module)
    force = module.params["force"]
    checked = []

    def prepare(ctx, items):
        # Every stale path is checked before anything runs: a refused path fails the call with nothing changed.
        # Each volume decides for itself before it acts (its handler plans the teardown first): one blocked
        # volume (still mounted, an unsafe path) fails alone, never the node's other volumes.
        checked.extend(stale.check_paths(ctx, module.params["stale_paths"]))

    run_volumes(module, lambda ctx, item: detach_volume(ctx, item, force=force), prepare=prepare,
                finish=lambda ctx: stale.remove_stale(ctx, checked))
