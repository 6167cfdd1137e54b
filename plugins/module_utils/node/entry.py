# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node modules' entries, by module name: each is a file with the module's argument spec (``argspec()``) and its
work (``run(module)``), named here by dotted path (relative to module_utils, as common/registry.py's).

A module file imports its own entry and nothing else of kubevol, and the entry imports its work at its top: Ansible's
finder ships what import statements name, so each node module's AnsiballZ payload holds the code that module runs
and no other module's (the facts module ships nothing that changes a volume; tests/unit/plugins/modules/
test_node_payload.py says what each ships). The reconcile role's engine (plugins/action/node_phases.py) runs those
same public modules, through Ansible's own module execution. ``argspec(name)`` and ``run(name, module)`` reach an
entry by its module's name (the tests, the settings group's checks), loading it through the registry.

Node code only: an entry and what it imports travel to the nodes, so they import nothing of the planner, the cluster
store or the cluster's credentials.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import load

# module name -> its entry: argspec() and run(module)
MODULES = {
    "node_volume_info": "node.entry_info",
    "k8s_volume_attach": "node.entry_attach",
    "node_volume_mount": "node.entry_mount",
    "fs_expand": "node.entry_expand",
    "volume_detach": "node.entry_detach",
    "node_volume_setup": "node.entry_setup",
    "csi_controller_calls": "node.entry_controller_calls",
    "volume_provision_calls": "provisioner.module",
}


def argspec(name):
    """The argument spec of node module ``name`` (its short name, ``volume_detach``)."""
    return load(MODULES[name] + ".argspec")()


def said_in(module):
    """``module`` with its exit, failure and warnings said in the words of who reads them (its ``words`` option,
    common/words.py): the node code names a setting once, as a token, and only this edge knows who reads the
    result. Each node module's entry runs its work on it."""
    reader = module.params.get("words") or words.MODULE
    exit_json, fail_json, warn = module.exit_json, module.fail_json, module.warn
    module.exit_json = lambda **result: exit_json(**words.say_all(result, reader))
    module.fail_json = lambda msg, **result: fail_json(msg=words.say(msg, reader), **words.say_all(result, reader))
    module.warn = lambda text: warn(words.say(text, reader))
    return module


def run(name, module):
    """Node module ``name``'s work; ends in module.exit_json or module.fail_json."""
    load(MODULES[name] + ".run")(module)
