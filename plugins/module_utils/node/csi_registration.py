# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the kubelet learns when it registers a CSI node plugin, read for the node facts: NodeGetInfo's node id,
``max_volumes_per_node`` and ``accessible_topology`` of each external CSI driver whose node plugin has a socket on
this node (pkg/volume/csi/csi_plugin.go RegistrationHandler.RegisterPlugin, then nodeinfomanager.InstallCSIDriver
writes the CSINode, the topology labels and the node id annotation). The planner turns them into those records
(plan/registration.py), the CSI volume limit (plan/rules_limits.py) and the topology of provisioning.

Read-only. kubevol's own drivers (loop) are no kubelet plugins: nothing is registered for them. A node with no
socket of a driver runs no node plugin of it and reports nothing; a plugin that does not answer is reported as
null with a warning (as csi_node_ids does), and the planner keeps the cluster's CSINode as it is.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import load
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import get_driver


class _NodeInfoItem(object):
    """What a driver's errors name when no volume is concerned: registering the node plugin."""
    pv_name = "(node registration)"


def csi_nodes(ctx):
    """{driver: {node_id, max_volumes_per_node, topology} or None} of the external CSI drivers whose node plugin has
    a socket on this node (docs/contracts.md section 2, ``csi_nodes``)."""
    found = {}
    for name in ctx.driver_names():
        if not ctx.is_external(name):
            continue
        # loaded only for an external driver (common/registry.py ON_DEMAND): the gRPC client's code is not compiled
        # otherwise
        conventional_socket = load("drivers.external.endpoint.conventional_socket")
        registration_socket = load("drivers.external.endpoint.registration_socket")

        own = (ctx.options_for(name) or {}).get("socket")
        sockets = (registration_socket(ctx.kubelet_dir, name), conventional_socket(ctx.kubelet_dir, name))
        if not (own and os.path.lexists(own)) and not any(os.path.lexists(s) for s in sockets):
            continue  # no node plugin of this driver here (a controller-only host): nothing to register
        driver = get_driver(name, driver_options=ctx.driver_options)(ctx.runner, ctx.kubelet_dir, ctx.node_name,
                                                                     ctx.driver_settings(name))
        try:
            info = driver.node_get_info(_NodeInfoItem())
        except KubevolError as err:
            found[name] = None
            ctx.warn("driver %s's node plugin on node %s did not register (NodeGetInfo), so its CSINode entry stays "
                     "as the cluster has it: %s" % (name, ctx.node_name, err.msg))
            continue
        found[name] = {"node_id": info.get("node_id") or "",
                       "max_volumes_per_node": int(info.get("max_volumes_per_node") or 0),
                       "topology": dict((info.get("accessible_topology") or {}).get("segments") or {})}
    return found
