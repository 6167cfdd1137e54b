# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The arguments of the provisioner's two internal modules: volume_provision (an action plugin on the Ansible
controller, plugins/action/volume_provision.py) and volume_provision_calls (on the host it delegates to)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args

TASKS = ("provision", "delete")
# volume_provision's top-level options of the node's settings from before its node_settings (node_args.task_settings)
PROVISION_LEGACY = ("driver_options", "kubelet_dir")


def provision_argspec():
    """volume_provision: one host's share of a plan's create_volume (task provision) or delete_volume (task delete)
    operations."""
    spec = node_args.legacy_argspec(PROVISION_LEGACY)
    spec.update(
        plan=dict(type="dict", required=True),
        task=dict(type="str", required=True, choices=list(TASKS)),
        host=dict(type="str", required=True),
        failures=dict(type="dict", default={}),
        node_settings=node_args.settings_argspec(),
        run_lock=dict(type="dict"),
        cluster_store=dict(type="dict", no_log=True),
        words=dict(type="str", default=words.MODULE, choices=list(words.WORDS)),
    )
    return spec


def calls_argspec():
    """volume_provision_calls, on the host: the operations, the I-th operation's secrets (no_log) and the node's
    settings (node_args.SETTINGS_SPEC)."""
    spec = copy.deepcopy(node_args.SETTINGS_SPEC)
    spec.update(
        host=dict(type="str", required=True),
        operations=dict(type="list", elements="dict", required=True),
        secrets=dict(type="list", elements="dict", default=[], no_log=True),
        words=dict(type="str", default=words.MODULE, choices=list(words.WORDS)),
    )
    return spec
