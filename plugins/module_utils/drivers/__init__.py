# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Driver registry: CSI driver name -> the dotted path of its class, imported on first use (as os-brick's connector
map). Adding a driver means one file in drivers/ and one line in ``DRIVER_PATHS``.

``DRIVERS`` iterates over the names (``sorted(DRIVERS)``, ``name in DRIVERS``) and hands out the class by name
(``DRIVERS[name]``, ``DRIVERS.get(name)``), importing only that driver's module. ``capabilities(name)`` and
``options_spec(name)`` read a driver's class data (CAPABILITIES, OPTIONS) for the planner and the options check.

Any other CSI driver the operator configures in ``driver_options`` (an entry with ``controller`` or ``socket``:
drivers/external/ ``configured_drivers``) is served by ``external_driver_class(name)``: ``get_driver(name,
driver_options=...)`` and ``driver_names(driver_options)`` take the operator's mapping, as the kubelet's
VolumePluginMgr serves a CSI driver once its plugin registered (pkg/volume/csi/csi_plugin.go RegistrationHandler).
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


def configured_names(driver_options):
    """The external CSI drivers ``driver_options`` configures (never one of kubevol's own drivers)."""
    if not driver_options:
        return []
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.driver import configured_drivers
    return configured_drivers(driver_options, builtin=tuple(DRIVERS))


def driver_names(driver_options=None):
    """Every driver name this node serves: kubevol's own and the configured external ones, sorted."""
    return sorted(set(DRIVERS) | set(configured_names(driver_options)))


def is_external(name, driver_options=None):
    """True for a CSI driver served by ExternalCsiDriver (configured in driver_options, not kubevol's own)."""
    return name not in DRIVERS and name in configured_names(driver_options)


def get_driver(name, volume=None, driver_options=None):
    """The driver class registered for CSI driver ``name``, or the external driver's class when ``driver_options``
    configures ``name``; raises UnknownDriver."""
    try:
        return DRIVERS[name]
    except (KeyError, TypeError):
        pass
    if isinstance(name, str) and name in configured_names(driver_options):
        from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.driver import (
            external_driver_class)
        return external_driver_class(name)
    raise UnknownDriver(driver=name, volume=volume, known=", ".join(driver_names(driver_options)))


def capabilities(name):
    """The CAPABILITIES of driver ``name`` (a frozenset), or None for a name kubevol has no driver for."""
    return DRIVERS[name].CAPABILITIES if name in DRIVERS else None


def options_spec(name):
    """The OPTIONS spec of driver ``name`` (its driver_options entry), or None for a name kubevol has no driver for."""
    return dict(DRIVERS[name].OPTIONS) if name in DRIVERS else None


def external_options_spec():
    """The OPTIONS spec of an external CSI driver's driver_options entry (drivers/external/driver.py)."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.driver import OPTIONS
    return dict(OPTIONS)


def _shipped_by_import():  # pragma: no cover (never called)
    """Ansible's module_utils finder follows import statements, never a dotted string: this import (never run) puts
    every registered driver's file in the node modules' payloads (tests/unit/plugins/modules/test_node_payload.py).
    A new driver adds its line here too."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import loop  # noqa: F401 pylint: disable=unused-import
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external import driver  # noqa: F401 pylint: disable=unused-import
