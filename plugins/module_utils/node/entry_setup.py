# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_volume_setup's entry: its argument spec and its work (node/setup.py); each phase's own options were
checked against setup_phase_specs() by the module file."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node.entry import said_in
from ansible_collections.kubevol.volumes.plugins.module_utils.node.setup import run_setup


def argspec():
    return node_args.setup_argspec()


def run(module):
    module = said_in(module)
    result = run_setup(module)
    for text in result.pop("warnings_text"):
        module.warn(text)
    module.exit_json(**result)
