# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Driver registry: kubevol's own CSI drivers, by name. Adding a driver means one file in drivers/ (its class: NAME,
CAPABILITIES, OPTIONS as class data, CSI's verbs as methods) and one dotted path in common/registry.py ``DRIVERS``, as
a volume plugin is one file and one line in ``VOLUME_PLUGINS`` there. Each class is named by its dotted path and
imported when the registry is first read, as os-brick's connector map (common/registry.py).

``DRIVERS`` iterates over the names (``sorted(DRIVERS)``, ``name in DRIVERS``) and hands out the class by name
(``DRIVERS[name]``, ``DRIVERS.get(name)``). ``capabilities(name)`` and ``options_spec(name)`` read a driver's class
data (CAPABILITIES, OPTIONS) for the planner and the options check.

Any other CSI driver the operator configures in ``driver_options`` (an entry with ``controller`` or ``socket``:
drivers/external/ ``configured_drivers``) is served by ``external_driver_class(name)``: ``get_driver(name,
driver_options=...)`` and ``driver_names(driver_options)`` take the operator's mapping, as the kubelet's
VolumePluginMgr serves a CSI driver once its plugin registered (pkg/volume/csi/csi_plugin.go RegistrationHandler).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import UnknownDriver
from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import DRIVER_REGISTRY, load


DRIVERS = DRIVER_REGISTRY


def configured_names(driver_options):
    """The external CSI drivers ``driver_options`` configures (never one of kubevol's own drivers)."""
    if not driver_options:
        return []
    # loaded on demand (common/registry.py ON_DEMAND): a node without an external driver never compiles its code
    return load("drivers.external.driver.configured_drivers")(driver_options, builtin=tuple(DRIVERS))


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
        return load("drivers.external.driver.external_driver_class")(name)
    raise UnknownDriver(driver=name, volume=volume, known=", ".join(driver_names(driver_options)))


def capabilities(name):
    """The CAPABILITIES of driver ``name`` (a frozenset), or None for a name kubevol has no driver for."""
    return DRIVERS[name].CAPABILITIES if name in DRIVERS else None


def options_spec(name):
    """The OPTIONS spec of driver ``name`` (its driver_options entry), or None for a name kubevol has no driver for."""
    return dict(DRIVERS[name].OPTIONS) if name in DRIVERS else None


def external_options_spec():
    """The OPTIONS spec of an external CSI driver's driver_options entry (drivers/external/driver.py)."""
    return dict(load("drivers.external.driver.OPTIONS"))
