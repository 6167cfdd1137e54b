# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Dict lookups over the cluster model (objects.py), built once per plan. Split from objects.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import pv_unique_name


class ClusterIndex:
    """Dict lookups over a Cluster, built once: pv by name, pvc by ns/name, csidriver and node by name, the PV
    behind each unique volume name (CSI, local, hostPath: every plugin kubevol serves) and that name by PV name, and
    the VolumeAttachment of each (PV, node)."""

    __slots__ = ("cluster", "pv_by_name", "pvc_by_key", "csidriver_by_name", "node_by_name", "pv_by_unique_name",
                 "unique_name_by_pv_name", "va_by_pair")

    def __init__(self, cluster):
        self.cluster = cluster
        # comprehensions, not dict() over generated pairs: no pair tuple per PV and claim
        self.pv_by_name = {pv.name: pv for pv in cluster.persistent_volumes}
        self.pvc_by_key = {c.namespace + "/" + c.name: c for c in cluster.claims}
        self.csidriver_by_name = {d.name: d for d in cluster.csi_drivers}
        self.node_by_name = {n.name: n for n in cluster.nodes}
        served = [(pv_unique_name(pv), pv) for pv in cluster.persistent_volumes
                  if pv.csi is not None or pv.source is not None]
        self.pv_by_unique_name = dict(served)
        # each served PV's unique name, computed once (the desired state's VolumeSpecs reuse it)
        self.unique_name_by_pv_name = {pv.name: unique for unique, pv in served}
        self.va_by_pair = {(va.pv_name, va.node_name): va for va in cluster.volume_attachments if va.pv_name}
