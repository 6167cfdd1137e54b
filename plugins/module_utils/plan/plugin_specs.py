# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""PVs of the in-tree plugins other than CSI (local, hostPath, ...) in the desired state: what Kubernetes and the
operator refuse before any node acts, and the VolumeSpec such a PV becomes. Generic: each plugin's own rules are its
class's (module_utils/volume/<plugin>.py refusals, spec_fields; its capabilities as class data), found through the
registry (volume/ find_plugin_by_spec).

Split from desired_state.py. Kubernetes: pkg/apis/core/validation ValidatePersistentVolumeSpec (the plugins' own
rules: their refusals()); a plugin that is no BlockVolumePlugin (host_path.go) has no Block mode ("may not specify
more than 1 volume type": refused here from the class's BLOCK); the scheduler's VolumeBinding plugin
(pkg/scheduler/framework/plugins/volumebinding: "node(s) had volume node affinity conflict"; pkg/volume/util
CheckNodeAffinity).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import node_matches
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import NODE_AFFINITY
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import find_plugin_by_spec
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import BLOCK_MODE, NODE

AFFINITY_CONFLICT = "volume node affinity conflict"


def node_text(reason, node=None):
    """A resolver reason with its node placeholder filled in (the resolver caches per claim, not per node)."""
    return reason.replace(NODE, "node %s" % node if node else "any node") if NODE in reason else reason


def plugin_refusals(pv, driver_options):
    """The PV-level refusals of an in-tree plugin's PV (empty for any other PV): Block where the plugin has no Block
    mode, then the plugin's own."""
    plugin = find_plugin_by_spec(pv)
    if plugin is None or pv.source is None:
        return []
    refusals = []
    if pv.volume_mode == BLOCK_MODE and not plugin.BLOCK:
        # plugin.NO_BLOCK_WHY is why (docs/errors.md KV-OBJECT-REFUSED); its fix is the reader's
        refusals.append("PV %s cannot be set up on %s: spec.volumeMode Block is not supported by the %s plugin: %s"
                        % (pv.name, NODE, plugin.NAME, plugin.NO_BLOCK_FIX))
    return refusals + plugin.refusals(pv, driver_options)


def affinity_conflict(pv_name, terms, node):
    """The scheduler's reason when ``node`` (a cluster Node) is outside a PV's nodeAffinity ``terms``, else None
    (volumebinding CheckNodeAffinity; a PV without nodeAffinity fits every node)."""
    if terms is None or node is None:
        return None
    if node_matches(terms, node.name, dict(node.labels)):
        return None
    return ("PV %s: node(s) had %s: node %s is outside the PV's spec.nodeAffinity; schedule the pod onto a node it "
            "selects, or fix the PV's nodeAffinity [%s]" % (pv_name, AFFINITY_CONFLICT, node.name, NODE_AFFINITY))


def plugin_volume_spec(spec_cls, pv, pvc, read_only, multi_attach):
    """The VolumeSpec of an in-tree plugin's PV (pvc None: a PV only actual state still refers to): driver None,
    volume_handle the PV name (contracts section 2), never attachable; path, hostPath type and fsType as the plugin's
    spec_fields say."""
    plugin = find_plugin_by_spec(pv)
    path, host_type, fs_type = plugin.spec_fields(pv.source)
    return spec_cls(pv.name, plugin.unique_name({"pv_name": pv.name}), None, pv.name, (), pv.capacity_bytes,
                    pv.volume_mode, fs_type, pv.mount_options, read_only, multi_attach, False,
                    pvc.namespace + "/" + pvc.name if pvc else None, pvc.request_bytes if pvc else 0,
                    pvc.capacity_bytes if pvc else None, tuple(pv.access_modes), "ReadWriteOnceWithFSType",
                    pvc.allocated_bytes if pvc else None, pvc.resize_status if pvc else None, plugin.NAME, path,
                    host_type, pv.node_affinity)
