# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each node module's phase for a volume: attach, mount (stage + publish), expand, unmount and detach.

Each phase asks the volume's node handler (``ctx.handler(item)``: the class its plugin, or for a CSI volume its
driver, names by dotted path as NODE_HANDLER) and calls its verb, as the kubelet's operation generator asks the
volume plugin for its Attacher, Mounter or Expander (pkg/volume/util/operationexecutor/operation_generator.go) and
never asks what kind of volume it is. The handlers: node/driver_ops.py (kubevol's own drivers), node/external_ops.py
(an external CSI driver), node/plugin_ops.py (local, hostPath). Every verb decides from the node's actual state
first; a second run changes nothing; in check mode it decides and reports but runs no mutating command.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node import expand as node_expand
# for Ansible's finder (it ships what import statements name): the handlers the classes name by NODE_HANDLER, and
# the node verbs of each registered driver, which a driver's constructor builds from its NODE_OPERATIONS dotted path
# (drivers/base.py), in every module that acts
from ansible_collections.kubevol.volumes.plugins.module_utils.node import driver_ops, external_ops, plugin_ops  # noqa: F401 pylint: disable=unused-import
from ansible_collections.kubevol.volumes.plugins.module_utils.node import driver_loop  # noqa: F401 pylint: disable=unused-import


def attach_volume(ctx, item, provision=False):
    return ctx.handler(item).attach(ctx, item, provision=provision)


def mount_volume(ctx, item, force=False, device_timeout=30):
    handler = ctx.handler(item)
    if item.ephemeral:
        # an inline volume: no attach, no staging (csi_mounter.go SetUpAt)
        return handler.publish_ephemeral(ctx, item)
    return handler.mount(ctx, item, force=force, device_timeout=device_timeout)


def expand_controller(ctx, item):
    return ctx.handler(item).expand_controller(ctx, item)


def expand_node(ctx, item):
    """NodeExpandVolume of one volume. A grow that fails or cannot run yet is returned as the volume's pending grow
    (node/expand.py pending), never raised: the node's other volumes, and its later work, go on."""
    res = {}
    try:
        ctx.handler(item).expand_node(ctx, item, res)
        res.setdefault("pending", None)
        return res
    except KubevolError as err:
        return node_expand.pending(ctx, item, res, err)
    finally:
        if "diff" not in res:
            dev, fs = res.get("device_size_bytes") or {}, res.get("fs_size_bytes") or {}
            res["diff"] = {
                "before": {item.pv_name: {"device_size_bytes": dev.get("old"), "fs_size_bytes": fs.get("old")}},
                "after": {item.pv_name: {"device_size_bytes": dev.get("new"), "fs_size_bytes": fs.get("new")}}}


def detach_volume(ctx, item, force=False):
    handler = ctx.handler(item)
    if item.ephemeral:
        return handler.unpublish_ephemeral(ctx, item, force)
    return handler.unmount(ctx, item, force)
