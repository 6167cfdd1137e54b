# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The registries as data: every volume plugin and every one of kubevol's own CSI drivers, named by dotted path and
imported on first use, as os-brick names its connectors (os_brick/initiator/connector.py: protocol -> dotted class
path, loaded by importutils when asked for).

A new volume plugin is its file in volume/ plus one line in ``VOLUME_PLUGINS``; a new driver is its file in drivers/
plus one line in ``DRIVERS``. The paths are relative to module_utils. Naming a class by its path keeps this file at
the floor: common/ imports nothing above it at its top, and whoever asks a registry (the planner, the options check,
the node operations) imports no plugin or driver module until it reads one.

``load`` is the one function in module_utils that imports inside itself (tests/unit/test_layout.py allows it and
no other). Its import lines name the registered modules once more, for Ansible's module_utils finder: the finder
ships what import statements name and reads a dotted path as a string, so without them a node module's payload would
leave the drivers and plugins out. A unit test keeps those lines and the tables equal. The modules ``ON_DEMAND``
names are loaded the same way by code that must not import them until it needs them (a path into one of them, as
``load("drivers.external.driver.configured_drivers")``); their import lines sit in a branch no call takes, so that the
finder ships them and no node compiles them before they are asked for.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
from collections.abc import Mapping

PACKAGE = "ansible_collections.kubevol.volumes.plugins.module_utils"

# pkg/volume/plugins.go FindPluginBySpec's order: a PV with two sources is served by the first plugin that names one
VOLUME_PLUGINS = (
    "volume.csi.CSIPlugin",
    "volume.local.LocalVolumePlugin",
    "volume.host_path.HostPathPlugin",
)

# the node verbs of a plugin whose class names them by its NODE_OPERATIONS (volume/base.py): loaded by the node
# operations only (node/plugin_ops.py, whose import lines name them for Ansible's finder), so that the planner,
# which reads the plugins above, imports no node code
NODE_OPERATIONS = (
    "node.plugin_local.LocalVolumeNode",
    "node.plugin_host_path.HostPathNode",
)

# kubevol's own CSI drivers (an operator's external CSI driver is configured, not registered: drivers/external/)
DRIVERS = (
    "drivers.loop.LoopDriver",
)


# modules loaded only when a dotted path into one of them is (load), never by an import statement that runs: the
# external CSI drivers' code, which a node without one never compiles (the CSI client and its socket module), and the
# volume items, which the facts module, on every node in every run, never builds
ON_DEMAND = (
    "drivers.external.driver",
    "drivers.external.endpoint",
    "node.volume",
)


def load(path):
    """The class (or function) registered at dotted ``path`` (relative to module_utils), imported on first use."""
    # pylint: disable=import-outside-toplevel,unused-import
    # for Ansible's finder only (see the module docstring): every module the tables above name
    from ansible_collections.kubevol.volumes.plugins.module_utils.volume import csi, local, host_path  # noqa: F401
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import loop  # noqa: F401
    if path is None:
        # never taken: the modules ON_DEMAND names, for Ansible's finder, which reads import lines wherever they are;
        # a node imports each only when a path into it is loaded below
        from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external import driver, endpoint  # noqa: F401
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import volume  # noqa: F401
    module, name = path.rsplit(".", 1)
    return getattr(importlib.import_module(PACKAGE + "." + module), name)


class Registry(Mapping):
    """Names -> classes, from dotted paths, each class keyed by its NAME; loaded when first read and kept.

    ``classes()`` is the loaded mapping itself: a test adds its own plugin or driver to it (as its one registry line
    would) and takes it out again."""

    def __init__(self, paths):
        self.paths = tuple(paths)
        self._classes = None

    def classes(self):
        if self._classes is None:
            self._classes = dict((cls.NAME, cls) for cls in (load(path) for path in self.paths))
        return self._classes

    def register(self, cls):
        """Add class ``cls`` under its NAME."""
        self.classes()[cls.NAME] = cls

    def unregister(self, name):
        self.classes().pop(name, None)

    def __getitem__(self, name):
        return self.classes()[name]  # KeyError for an unknown name, as a dict's

    def __iter__(self):
        return iter(self.classes())

    def __len__(self):
        return len(self.classes())

    def __contains__(self, name):
        try:
            return name in self.classes()
        except TypeError:  # an unhashable name is no class's
            return False


PLUGIN_REGISTRY = Registry(VOLUME_PLUGINS)
DRIVER_REGISTRY = Registry(DRIVERS)
