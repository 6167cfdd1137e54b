# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Driver registry: CSI driver name -> the dotted path of its class, imported on first use (as os-brick's connector
map). Adding a driver means one file in drivers/ and one line in ``DRIVER_PATHS``.

``DRIVERS`` iterates over the names (``sorted(DRIVERS)``, ``name in DRIVERS``) and hands out the class by name
(``DRIVERS[name]``, ``DRIVERS.get(name)``), importing only that driver's module. ``capabilities(name)`` and
``options_spec(name)`` read a driver's class data (CAPABILITIES, OPTIONS) for the planner and the options check.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from collections.abc import Mapping

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import UnknownDriver

DRIVER_PATHS = {
    "loop.kubevol.io": "ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop:LoopDriver",
}


class _Registry(Mapping):
    """Names -> classes, each imported on first use and kept."""

    def __init__(self, paths):
        self._paths = paths
        self._classes = {}

    def __getitem__(self, name):
        if name not in self._classes:
            path = self._paths[name]  # KeyError for an unknown name, as a dict's
            module, _sep, attr = path.partition(":")
            self._classes[name] = getattr(importlib.import_module(module), attr)
        return self._classes[name]

    def __iter__(self):
        return iter(self._paths)

    def __len__(self):
        return len(self._paths)

    def __contains__(self, name):
        try:
            return name in self._paths
        except TypeError:  # an unhashable name is no driver's
            return False


DRIVERS = _Registry(DRIVER_PATHS)


def get_driver(name, volume=None):
    """The driver class registered for CSI driver ``name``; raises UnknownDriver."""
    try:
        return DRIVERS[name]
    except (KeyError, TypeError):
        raise UnknownDriver(driver=name, volume=volume, known=", ".join(sorted(DRIVERS)))


def capabilities(name):
    """The CAPABILITIES of driver ``name`` (a frozenset), or None for a name kubevol has no driver for."""
    return DRIVERS[name].CAPABILITIES if name in DRIVERS else None


def options_spec(name):
    """The OPTIONS spec of driver ``name`` (its driver_options entry), or None for a name kubevol has no driver for."""
    return dict(DRIVERS[name].OPTIONS) if name in DRIVERS else None


def _shipped_by_import():  # pragma: no cover (never called)
    """Ansible's module_utils finder follows import statements, never a dotted string: this import (never run) puts
    every registered driver's file in the node modules' payloads (tests/unit/plugins/modules/test_node_payload.py).
    A new driver adds its line here too."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import loop  # noqa: F401 pylint: disable=unused-import
