# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node phases of the in-tree volume plugins other than CSI: local (local.py) and hostPath (host_path.py).

node/operations.py hands every non-CSI item here at the top of each phase. Neither plugin is attachable
(pkg/volume/local, pkg/volume/hostpath implement no AttachableVolumePlugin): attach and detach have nothing to do
and say so with changed false and no VolumeAttachment; the planner plans neither for them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.node import host_path, local
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import LOCAL

NOT_ATTACHABLE = "%s volumes are not attachable: nothing to attach or detach"


def attach(ctx, item):
    """No VolumeAttachment, no device: the volume is the node's own path."""
    return {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "plugin": item.plugin, "device": None,
            "attached": False, "provisioned": False, "adopted": False, "released_holders": {}, "changed": False,
            "volume_attachment": None, "volumes_attached": None, "not_attachable": NOT_ATTACHABLE % item.plugin,
            "diff": {"before": {}, "after": {}}}


def mount(ctx, item):
    return local.mount_local(ctx, item) if item.plugin == LOCAL else host_path.setup_host_path(ctx, item)


def unmount(ctx, item, force=False):
    return local.unmount_local(ctx, item, force) if item.plugin == LOCAL else host_path.teardown_host_path(ctx, item,
                                                                                                           force)


def expand_controller(ctx, item):
    """Neither plugin has a controller-side expansion (no ExpandableVolumePlugin): nothing to grow there."""
    return {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "plugin": item.plugin,
            "stage": "controller", "changed": False, "backing_size_bytes": {"old": None, "new": None},
            "skipped": "%s volumes have no controller expansion" % item.plugin,
            "diff": {"before": {}, "after": {}}}


def expand_node(ctx, item):
    if item.plugin == LOCAL:
        return local.expand_local(ctx, item)
    return {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "plugin": item.plugin, "stage": "node",
            "changed": False, "skipped": "hostPath volumes are not expandable", "diff": {"before": {}, "after": {}}}
