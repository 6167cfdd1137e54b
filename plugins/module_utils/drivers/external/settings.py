# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An external CSI driver's options (``driver_options[<driver>]``), checked: where its node plugin's socket is,
where its Controller service runs (common/csi_controller.py), the per-call timeout."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import csi_controller
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.csi import client as csi_client

CONTROLLER_ON_NODE = csi_controller.CONTROLLER_ON_NODE
OPTIONS = {
    "socket": {"type": "path", "default": None,
               "description": "the node plugin's CSI socket, when neither <kubelet>/plugins_registry/<driver>-reg.sock "
                              "nor <kubelet>/plugins/<driver>/csi.sock exists"},
    "controller": {"type": "str", "default": None,
                   "description": "where the Controller service runs: 'node' = this node's plugin serves it; else "
                                  "the inventory hostname of the host its controller plugin runs on (with "
                                  "controller_socket)"},
    "controller_socket": {"type": "path", "default": None,
                          "description": "the controller plugin's CSI socket on the controller host (with a "
                                         "controller that is an inventory hostname)"},
    "timeout": {"type": "float", "default": csi_client.DEFAULT_TIMEOUT,
                "description": "seconds per CSI call (the kubelet's csiTimeout: 120)"},
}


def driver_settings(name, options):
    """The driver's own options from ``options``: the whole driver_options mapping (keyed by driver name) or
    this driver's entry itself. Unknown keys and bad values are refused naming key and allowed values.
    ``remote``: {host, socket} when a host of the inventory serves the Controller service, else None."""
    options = options or {}
    if isinstance(options.get(name), dict):
        own = options[name]
    elif any(key in OPTIONS for key in options):
        own = options
    else:
        own = {}
    unknown = sorted(set(own) - set(OPTIONS))
    if unknown:
        raise InvalidInput(field="driver_options[%s]" % name, value=unknown[0],
                           reason="unknown option; allowed: %s" % ", ".join(sorted(OPTIONS)))
    socket = own.get("socket")
    if socket is not None and (not isinstance(socket, str) or not os.path.isabs(socket) or "\x00" in socket):
        raise InvalidInput(field="driver_options[%s].socket" % name, value=socket, reason="must be an absolute path")
    where = csi_controller.check(name, own)
    remote = where if isinstance(where, dict) else None
    timeout = own.get("timeout", csi_client.DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise InvalidInput(field="driver_options[%s].timeout" % name, value=timeout,
                           reason="must be a positive number of seconds")
    return {"socket": socket, "controller": own.get("controller"), "remote": remote, "timeout": float(timeout)}
