# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node phases of the in-tree volume plugins other than CSI (local, hostPath, ...): each plugin's own node
operations (node_setup, node_teardown, node_expand), found through the registry: the plugin class's own, or those of
the subclass its NODE_OPERATIONS names by dotted path (node/plugin_local.py, node/plugin_host_path.py).

``PluginHandler`` is their node handler (volume/base.py NODE_HANDLER), whose verbs node/operations.py calls in each
phase. No such plugin is attachable
(pkg/volume/local, pkg/volume/hostpath implement no AttachableVolumePlugin): attach and detach have nothing to do
and say so with changed false and no VolumeAttachment; the planner plans neither for them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import load
# for Ansible's finder (it ships what import statements name; common/registry.py NODE_OPERATIONS names them by path)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import plugin_host_path, plugin_local  # noqa: F401 pylint: disable=unused-import
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import get_plugin

NOT_ATTACHABLE = "%s volumes are not attachable: nothing to attach or detach"


def node_plugin(name):
    """The class with plugin ``name``'s node verbs."""
    plugin = get_plugin(name)
    return load(plugin.NODE_OPERATIONS) if plugin.NODE_OPERATIONS else plugin


def attach(ctx, item):
    """No VolumeAttachment, no device: the volume is the node's own path."""
    return {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "plugin": item.plugin, "device": None,
            "attached": False, "provisioned": False, "adopted": False, "released_holders": {}, "changed": False,
            "volume_attachment": None, "volumes_attached": None, "not_attachable": NOT_ATTACHABLE % item.plugin,
            "diff": {"before": {}, "after": {}}}


def mount(ctx, item):
    return node_plugin(item.plugin).node_setup(ctx, item)


def unmount(ctx, item, force=False):
    return node_plugin(item.plugin).node_teardown(ctx, item, force)


def expand_controller(ctx, item):
    """No such plugin has a controller-side expansion (no ExpandableVolumePlugin): nothing to grow there."""
    return {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "plugin": item.plugin,
            "stage": "controller", "changed": False, "backing_size_bytes": {"old": None, "new": None},
            "skipped": "%s volumes have no controller expansion" % item.plugin,
            "diff": {"before": {}, "after": {}}}


def expand_node(ctx, item):
    plugin = node_plugin(item.plugin)
    if plugin.NODE_EXPANDABLE:
        return plugin.node_expand(ctx, item)
    return {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "plugin": item.plugin, "stage": "node",
            "changed": False, "skipped": "%s volumes are not expandable" % plugin.KIND,
            "diff": {"before": {}, "after": {}}}


class PluginHandler:
    """Attacher, Mounter and Expander of a volume of an in-tree plugin other than CSI (volume/base.py's
    NODE_HANDLER): the plugin's own node verbs. Such a volume is never inline (pod.spec.volumes[].csi), so its
    ephemeral verbs are its plugin's SetUp and TearDown too."""

    def attach(self, ctx, item, provision=False):
        return attach(ctx, item)  # local, hostPath: not attachable

    def mount(self, ctx, item, force=False, device_timeout=30):
        return mount(ctx, item)  # their plugin file's node_setup (volume/)

    def publish_ephemeral(self, ctx, item):
        return mount(ctx, item)

    def expand_controller(self, ctx, item):
        return expand_controller(ctx, item)

    def expand_node(self, ctx, item, res):
        res.update(expand_node(ctx, item))
        return res

    def unmount(self, ctx, item, force=False):
        return unmount(ctx, item, force)  # unmount the pods (and a local disk's mount); nothing to detach

    def unpublish_ephemeral(self, ctx, item, force=False):
        return unmount(ctx, item, force)
