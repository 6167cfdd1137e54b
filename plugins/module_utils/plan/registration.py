# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet's CSI registration, planned from the node facts: what the CSINode objects and the Nodes' topology
labels say once each external CSI driver's node plugin registered (pkg/volume/csi/nodeinfomanager InstallCSIDriver:
the CSINode driver entry with nodeID, topologyKeys and allocatable.count from NodeGetInfo's max_volumes_per_node;
the topology segments as node labels; the node id in the csi.volume.kubernetes.io/nodeid annotation), and the
records that make the cluster say it.

``StorageView`` is the cluster as it will be after those records: the CSINode drivers and the node labels the
provisioning topology (external-provisioner topology.go reads both) and the CSI volume limits
(plan/rules_limits.py) read. A node without facts, or whose plugin did not answer, keeps what the cluster says.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.storage import CSINodeDriver

NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid"

StorageView = namedtuple("StorageView", "drivers labels records")
StorageView.__doc__ = """drivers: {node: {driver: CSINodeDriver}}; labels: {node: {key: value}}, both as they are once
the records are written; records: the node_registration records (records/provision.py) that bring the cluster
there."""


def _registered(entry):
    """A facts' csi_nodes entry as (node_id, max volumes, {key: value}), or None when it is not usable."""
    if not isinstance(entry, dict) or not isinstance(entry.get("node_id"), str) or not entry["node_id"]:
        return None
    count = entry.get("max_volumes_per_node") or 0
    topology = entry.get("topology") or {}
    if isinstance(count, bool) or not isinstance(count, int) or count < 0 or not isinstance(topology, dict):
        return None
    if not all(isinstance(k, str) and k and isinstance(v, str) for k, v in topology.items()):
        return None
    return entry["node_id"], count, dict(topology)


def storage_view(index, node_facts):
    """The StorageView of the cluster (``index``) with the registrations the reachable nodes' facts report."""
    drivers = dict((csinode.name, dict((d.name, d) for d in csinode.drivers)) for csinode in index.cluster.csi_nodes)
    labels = dict((node.name, dict(node.labels)) for node in index.cluster.nodes)
    records = []
    for node_name in sorted(node_facts or {}, key=str):
        facts = node_facts[node_name]
        node = index.node_by_name.get(node_name)
        if node is None or not isinstance(facts, dict) or not facts.get("reachable", True):
            continue
        annotations = dict(node.annotations)
        try:
            ids = json.loads(annotations.get(NODE_ID_ANNOTATION) or "{}")
        except ValueError:
            ids = {}
        ids = ids if isinstance(ids, dict) else {}
        for driver in sorted(facts.get("csi_nodes") or {}):
            registered = _registered(facts["csi_nodes"][driver])
            if registered is None:
                continue
            node_id, count, topology = registered
            wanted = CSINodeDriver(driver, node_id, tuple(sorted(topology)), count or None)
            have = drivers.setdefault(node_name, {}).get(driver)
            node_labels = labels.setdefault(node_name, {})
            if (have != wanted or ids.get(driver) != node_id
                    or any(node_labels.get(k) != v for k, v in topology.items())):
                records.append({"type": "node_registration", "node": node_name, "driver": driver,
                                "node_id": node_id, "topology": topology, "max_volumes": count})
            drivers[node_name][driver] = wanted
            node_labels.update(topology)
    return StorageView(drivers, labels, records)


def empty_view(index):
    """The cluster's own CSINodes and labels, nothing to record (a plan from the cluster alone)."""
    return storage_view(index, None)
