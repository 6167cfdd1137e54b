# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Volume plugin registry (pkg/volume/plugins.go VolumePluginMgr): plugin name -> "dotted.module:Class", imported
lazily (as os-brick's connector map). A new volume plugin is one file in this package plus one line here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import field

_PACKAGE = "ansible_collections.kubevol.volumes.plugins.module_utils.volume"

CSI = "kubernetes.io/csi"
LOCAL = "kubernetes.io/local-volume"
HOST_PATH = "kubernetes.io/host-path"

PLUGINS = {
    CSI: _PACKAGE + ".csi:CSIPlugin",
    LOCAL: _PACKAGE + ".local:LocalVolumePlugin",
    HOST_PATH: _PACKAGE + ".host_path:HostPathPlugin",
}
# the PV spec key each plugin serves (plugins.go FindPluginBySpec asks each plugin's CanSupport)
SPEC_KEYS = (("csi", CSI), ("local", LOCAL), ("hostPath", HOST_PATH))

_loaded = {}


def get_plugin(name):
    """The plugin class registered for ``name`` (None or "": the CSI plugin, the items' default); KeyError for an
    unknown name."""
    name = name or CSI
    cls = _loaded.get(name)
    if cls is None:
        module, _sep, attr = PLUGINS[name].partition(":")
        cls = _loaded[name] = getattr(importlib.import_module(module), attr)
    return cls


def plugin_name_of(unique_name):
    """The plugin a unique volume name belongs to (GetUniqueVolumeNameFromSpec's prefix), or None."""
    if not isinstance(unique_name, str):
        return None
    for name in (LOCAL, HOST_PATH, CSI):
        if unique_name.startswith(name + "/"):
            return name
    return None


def find_plugin_by_spec(pv):
    """plugins.go FindPluginBySpec: the plugin that serves a PV (the cluster model's PersistentVolume, or a PV
    object as a dict), or None when none of kubevol's plugins does (nfs, in-tree disks, ...)."""
    if isinstance(pv, dict):
        spec = pv.get("spec") or {}
        for key, name in SPEC_KEYS:
            if spec.get(key) is not None:
                return get_plugin(name)
        return None
    for attr, name in (("csi", CSI), ("local", LOCAL), ("host_path", HOST_PATH)):
        if getattr(pv, attr, None) is not None:
            return get_plugin(name)
    return None


def unique_name_of(item_like):
    """The unique volume name of a volume item (a dict or an object with its fields), by its plugin's rule
    (GetUniqueVolumeNameFromSpec); None when it lacks the fields its plugin's rule needs."""
    plugin = get_plugin(field(item_like, "plugin"))
    if any(field(item_like, name) in (None, "") for name in plugin.NAME_FIELDS):
        return None
    return plugin.unique_name(item_like)
