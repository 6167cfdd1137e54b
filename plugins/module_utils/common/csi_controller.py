# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where an external CSI driver's Controller service runs: ``driver_options[<driver>]``'s ``controller`` and
``controller_socket``. Pure, shared by the planner, the run's executor and the node code.

- ``controller: node``: each node's plugin serves it (csi-driver-host-path does): the node calls it.
- ``controller: <inventory hostname>`` with ``controller_socket: <absolute path on that host>``: the controller
  plugin runs there, apart from the nodes, as the external-attacher and external-resizer run beside it
  (kubernetes-csi/external-attacher, external-resizer: one controller Deployment, the node plugins a DaemonSet).
  The run's controller task makes ControllerPublish/Unpublish/ExpandVolume on that host over its own Ansible
  connection (run/controller_task.py); the nodes never call that service.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput

CONTROLLER_ON_NODE = "node"
CONTROLLER = "controller"
CONTROLLER_SOCKET = "controller_socket"


def check(name, own):
    """The controller of driver ``name``'s options ``own``: None (none), ``"node"``, or {host, socket} for a
    controller host. A bad combination is refused naming the option (InvalidInput)."""
    own = own or {}
    controller = own.get(CONTROLLER)
    socket = own.get(CONTROLLER_SOCKET)
    where = "driver_options[%s]" % name
    if controller is not None and (not isinstance(controller, str) or not controller.strip()
                                   or controller != controller.strip()):
        raise InvalidInput(field="%s.%s" % (where, CONTROLLER), value=controller,
                           reason="must be 'node' (each node's plugin serves the Controller service) or the "
                                  "inventory hostname of the host its controller plugin runs on")
    if socket is not None and (not isinstance(socket, str) or not socket.startswith("/") or "\x00" in socket
                               or posixpath.normpath(socket) != socket):
        raise InvalidInput(field="%s.%s" % (where, CONTROLLER_SOCKET), value=socket,
                           reason="must be a normalized absolute path: the controller plugin's unix socket on the "
                                  "controller host")
    if controller in (None, CONTROLLER_ON_NODE):
        if socket is not None:
            raise InvalidInput(field="%s.%s" % (where, CONTROLLER_SOCKET), value=socket,
                               reason="is only for a controller on a host of the inventory: set %s.%s to that "
                                      "host's inventory hostname, or remove %s" % (where, CONTROLLER,
                                                                                   CONTROLLER_SOCKET))
        return controller
    if socket is None:
        raise InvalidInput(field="%s.%s" % (where, CONTROLLER_SOCKET), value=None,
                           reason="is required with %s.%s: %s (a host of the inventory): give the controller "
                                  "plugin's unix socket path on that host" % (where, CONTROLLER, controller))
    return {"host": controller, "socket": socket}


def remote_controllers(driver_options, inventory=None):
    """{driver: {host, socket}} of the drivers whose Controller service runs on a host of the inventory.

    ``inventory``: the inventory's hostnames (the role passes groups['all']); when given, a host not in it is
    refused naming the option: the run could not reach it, and it would fail only after the nodes' teardown."""
    found = {}
    for name in sorted(driver_options or {}, key=str):
        own = (driver_options or {}).get(name)
        if not isinstance(own, dict) or (CONTROLLER not in own and CONTROLLER_SOCKET not in own):
            continue
        where = check(name, own)
        if not isinstance(where, dict):
            continue
        if inventory is not None and where["host"] not in inventory:
            raise InvalidInput(field="driver_options[%s].%s" % (name, CONTROLLER), value=where["host"],
                               reason="is not a host of this play's inventory: name the inventory host its "
                                      "controller plugin runs on (add it to the inventory), or 'node' when each "
                                      "node's plugin serves the Controller service")
        found[name] = where
    return found
