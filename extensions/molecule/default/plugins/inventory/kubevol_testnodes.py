# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory plugin of the molecule scenario: the hosts of scripts/testnodes.py."""

from __future__ import annotations

DOCUMENTATION = r"""
name: kubevol_testnodes
short_description: The local SSH test nodes of scripts/testnodes.py
description:
  - Reads the inventory that C(scripts/testnodes.py up) writes to C(STATE_DIR/inventory/hosts.yml)
    (group C(nodes), ports picked at start-up) with the C(ansible.builtin.yaml) inventory plugin.
  - Yields no hosts while that file does not exist (before molecule's create step, after destroy),
    so the playbooks that run on localhost only work at any time.
  - The config file must be named C(testnodes.yml) or C(testnodes.yaml).
options:
  plugin:
    description: The name of this plugin.
    required: true
    choices: [kubevol_testnodes]
  state_dir:
    description: The nodes' state directory (C(--state-dir) of C(testnodes.py)).
    type: path
    required: true
    env:
      - name: KUBEVOL_MOLECULE_NODES
"""

import os

from ansible.errors import AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin
from ansible.plugins.loader import inventory_loader


class InventoryModule(BaseInventoryPlugin):
    NAME = "kubevol_testnodes"

    def verify_file(self, path):
        return super().verify_file(path) and os.path.basename(path) in ("testnodes.yml", "testnodes.yaml")

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache=cache)
        self._read_config_data(path)
        hosts = os.path.join(self.get_option("state_dir"), "inventory", "hosts.yml")
        if not os.path.isfile(hosts):
            return
        yaml_plugin = inventory_loader.get("ansible.builtin.yaml")
        if yaml_plugin is None:
            raise AnsibleParserError("the ansible.builtin.yaml inventory plugin is not available")
        yaml_plugin.parse(inventory, loader, hosts, cache=False)
