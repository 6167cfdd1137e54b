# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a CreateVolume or a DeleteVolume runs: where the driver's Controller service is (docs/csi.md).

- A driver whose controller plugin runs on a host of the inventory (driver_options ``controller: <host>`` with
  ``controller_socket``): that host, as the external-provisioner runs beside the controller plugin.
- ``controller: node`` (each node plugin serves the Controller service, as csi-driver-host-path's does) and
  kubevol's own drivers (loop: its pool is reached from the nodes): a node of this run, as the external-provisioner
  runs per node in its node deployment: for WaitForFirstConsumer the selected node, for Immediate the first node of
  the run (by name) in the requisite topology that registered the driver; a deletion the first such node the PV's
  nodeAffinity admits.
- A driver without a Controller service kubevol knows of: nothing runs, and the claim is blocked naming the option.

Pure: it reads the node facts (which nodes this run reaches), the StorageView and driver_options.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import node_matches
from ansible_collections.kubevol.volumes.plugins.module_utils.common.csi_controller import check as controller_of
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.provision.topology import matches
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import own_drivers

ON_NODE = "node"


class Hosts:
    def __init__(self, index, options, view, node_facts):
        self.view = view
        self.options = options
        self.own = frozenset(own_drivers())
        self.run_nodes = sorted(node for node, facts in (node_facts or {}).items()
                                if isinstance(facts, dict) and facts.get("reachable", True)
                                and node in index.node_by_name)

    def topology_keys(self, driver):
        """{node: the driver's topology keys} from the CSINodes (after this run's registrations)."""
        return dict((node, entry[driver].topology_keys) for node, entry in self.view.drivers.items()
                    if driver in entry)

    def _controller(self, driver):
        """"node", {host, socket}, or None (no Controller service known)."""
        if driver in self.own:
            return ON_NODE
        return controller_of(driver, (self.options.driver_options or {}).get(driver))

    def _registered(self, driver, node):
        return driver in self.own or driver in (self.view.drivers.get(node) or {})

    def _no_controller(self, driver, what):
        return ("%s needs driver %s's Controller service, and kubevol does not know where it runs: set %s to "
                "{controller: node} when each node plugin serves it, or to {controller: <inventory host>, "
                "controller_socket: <its socket there>}" % (what, driver, setting("driver_options", key=driver)))

    def for_create(self, driver, selected, topology):
        """(host, None), or (None, why nothing can run it)."""
        controller = self._controller(driver)
        if isinstance(controller, dict):
            return controller["host"], None
        if controller != ON_NODE:
            return None, self._no_controller(driver, "CreateVolume")
        if selected:
            if selected not in self.run_nodes:
                return None, ("its selected node %s is not in this run (no facts of it): CreateVolume runs there; "
                              "run the reconcile with that node in the play" % selected)
            return selected, None
        for node in self.run_nodes:
            if self._registered(driver, node) and matches(topology, self.view.labels.get(node) or {}):
                return node, None
        return None, ("no node of this run can run CreateVolume for driver %s (none registered it%s): run the "
                      "reconcile with a node whose plugin of %s runs" % (driver, " in the requisite topology"
                                                                         if topology else "", driver))

    def for_delete(self, driver, pv, call="DeleteVolume"):
        """(host, None), or (None, why nothing can run ``call`` (DeleteVolume, CreateSnapshot, DeleteSnapshot) of
        ``pv``, the volume (None: a snapshot's deletion, which any node of the driver may run)."""
        controller = self._controller(driver)
        if isinstance(controller, dict):
            return controller["host"], None
        if controller != ON_NODE:
            return None, self._no_controller(driver, call)
        for node in self.run_nodes:
            if not self._registered(driver, node):
                continue
            if pv is None or pv.node_affinity is None or node_matches(pv.node_affinity, node,
                                                                      self.view.labels.get(node) or {}):
                return node, None
        return None, ("no node of this run can run %s for driver %s (none registered it where the PV's "
                      "nodeAffinity admits): run the reconcile with such a node in the play" % (call, driver))
