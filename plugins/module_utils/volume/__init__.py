# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Volume plugin registry (pkg/volume/plugins.go VolumePluginMgr). A new volume plugin is one file in this package
(its class: name, PV spec key, capabilities, unique-name rule, kubelet paths and options as class data; its PV
source, plan-time refusals and node operations as methods: volume/base.py) plus its dotted path in
common/registry.py ``VOLUME_PLUGINS``, whose order is FindPluginBySpec's (a PV with two sources: the first wins).
The classes are imported when the registry is first read."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import PLUGIN_REGISTRY
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import field

CSI = "kubernetes.io/csi"  # the items' default plugin, whose drivers (drivers/) serve what the in-tree plugins do not


def registry():
    """{plugin name: plugin class}, in registration order, loaded once (a test may add a plugin to it)."""
    return PLUGIN_REGISTRY.classes()


def plugins():
    """Every registered plugin class, in registration order."""
    return tuple(registry().values())


def names():
    """Every registered plugin name, in registration order."""
    return tuple(registry())


def in_tree_plugins():
    """The registered plugins other than CSI (local, hostPath, ...): a PV source, plan rules and node operations of
    their own (volume/base.py); CSI's are its drivers' (drivers/)."""
    return tuple(cls for name, cls in registry().items() if name != CSI)


def is_in_tree(name):
    """Whether ``name`` is a registered plugin other than CSI (its unique names are <plugin>/<PV name>)."""
    return name != CSI and name in registry()


def get_plugin(name):
    """The plugin class registered for ``name`` (None or "": the CSI plugin, the items' default); KeyError for an
    unknown name."""
    return registry()[name or CSI]


def plugin_for_spec_key(key):
    """The plugin that serves spec.<key> of a PV (CanSupport), or None."""
    return next((cls for cls in plugins() if cls.SPEC_KEY == key), None)


def plugin_name_of(unique_name):
    """The plugin a unique volume name belongs to (GetUniqueVolumeNameFromSpec's prefix), or None."""
    if not isinstance(unique_name, str):
        return None
    return next((name for name in registry() if unique_name.startswith(name + "/")), None)


def find_plugin_by_spec(pv):
    """plugins.go FindPluginBySpec: the plugin that serves a PV (the cluster model's PersistentVolume, or a PV
    object as a dict), or None when none of kubevol's plugins does (nfs, in-tree disks, ...)."""
    if isinstance(pv, dict):
        spec = pv.get("spec") or {}
        return next((cls for cls in plugins() if spec.get(cls.SPEC_KEY) is not None), None)
    if getattr(pv, "csi", None) is not None:
        return get_plugin(CSI)
    if getattr(pv, "source", None) is not None:
        return plugin_for_spec_key(pv.source_kind)
    return None


def unique_name_of(item_like):
    """The unique volume name of a volume item (a dict or an object with its fields), by its plugin's rule
    (GetUniqueVolumeNameFromSpec); None when it lacks the fields its plugin's rule needs."""
    plugin = get_plugin(field(item_like, "plugin"))
    if any(field(item_like, name) in (None, "") for name in plugin.NAME_FIELDS):
        return None
    return plugin.unique_name(item_like)
