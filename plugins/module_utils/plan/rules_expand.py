# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's expansion rules: the controller grows the backing volume and the PV (external-resizer), then the
node grows the filesystem (desired_state_of_world_populator.go checkVolumeFSResize, node_expander.go), each only
where the volume's plugin (and CSI driver) can. Split from planner.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.plan.plan_state import _item, _step
from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import format_bytes
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import CSI
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import (
    CONTROLLER_EXPAND, NODE_EXPAND, driver_capabilities)


def _first_node(p, nvs):
    reachable = [nv.node for nv in nvs if p.unreachable(nv.node) is None]
    return min(reachable) if reachable else None


INFEASIBLE_RESIZE = ("ControllerResizeInfeasible", "NodeResizeInfeasible")
NODE_RESIZE_STATES = ("NodeResizePending", "NodeResizeInProgress")


def expansion_refused(spec):
    """RecoverVolumeExpansionFailure (GA in 1.34; external-resizer, node_expander.go): an expansion marked infeasible
    is not retried until the user lowers the request below the size that failed (allocatedResources). The reason
    to block it, or None."""
    if spec.resize_status not in INFEASIBLE_RESIZE or spec.allocated_bytes is None:
        return None
    if spec.request_bytes < spec.allocated_bytes:
        return None  # lowered: a new attempt at the smaller size
    floor = " (not below its capacity %s)" % format_bytes(spec.claim_capacity_bytes) if spec.claim_capacity_bytes else ""
    return ("the expansion of PVC %s to %s was marked %s; it is not retried at that size: lower "
            "spec.resources.requests.storage below %s%s to try a size that can work" % (
                spec.claim_key, format_bytes(spec.allocated_bytes), spec.resize_status,
                format_bytes(spec.allocated_bytes), floor))


def not_expandable(p, spec):
    """Why a volume cannot be expanded at all, or None: expand_controller.go syncHandler finds no
    ExpandableVolumePlugin (and no CSI driver) for it. A CSI driver of kubevol that declares no expansion counts as
    such a plugin."""
    plugin = p.plugin(spec)
    capabilities = driver_capabilities(spec.driver) if plugin.NAME == CSI else None
    if capabilities is not None:
        can = CONTROLLER_EXPAND in capabilities
    else:
        can = plugin.CONTROLLER_EXPANDABLE or plugin.NODE_EXPANDABLE
    if can:
        return None
    return ("PVC %s: didn't find a plugin capable of expanding the volume; waiting for an external controller to "
            "process this PVC (Kubernetes' expand controller): the %s %s cannot be expanded, so nothing is grown. "
            "Set the claim's spec.resources.requests.storage back to %s, or move the data to a larger volume"
            % (spec.claim_key, "CSI driver" if plugin.NAME == CSI else "volume plugin",
               spec.driver if plugin.NAME == CSI else plugin.NAME, format_bytes(spec.capacity_bytes)))


def node_expands(p, spec):
    """Whether the node grows this volume after the controller (NodeExpandableVolumePlugin, a CSI driver's
    node expansion)."""
    plugin = p.plugin(spec)
    capabilities = driver_capabilities(spec.driver) if plugin.NAME == CSI else None
    if capabilities is not None:
        return NODE_EXPAND in capabilities
    return plugin.NODE_EXPANDABLE


def expand_controller(p):
    """PVC requests more than the PV has: the external-resizer grows the backing volume, then the PV.
    An expansion marked infeasible waits for a lower request (expansion_refused)."""
    by_pv = {}
    for nv in p.desired.volumes.values():
        spec = nv.spec
        if spec.request_bytes > spec.capacity_bytes:
            by_pv.setdefault(spec.pv_name, []).append(nv)
    for pv_name, nvs in by_pv.items():
        spec = nvs[0].spec
        refused = expansion_refused(spec) or not_expandable(p, spec)
        if refused is not None:
            for nv in nvs:
                p.block(nv.node, pv_name, None, refused)
            continue
        node = _first_node(p, nvs)
        if node is None:
            p.block(nvs[0].node, pv_name, None, "node unreachable: %s" % p.unreachable(nvs[0].node))
            continue
        p.grown_to[pv_name] = spec.request_bytes
        what, extra = "grow the backing volume", {}
        if not p.plugin(spec).CONTROLLER_EXPANDABLE:
            # a local volume: no backing volume for a controller to grow; the PV records the size and the node
            # grows a block-backed filesystem (local.go NodeExpand)
            what, extra = "nothing to grow on the controller (%s); record the PV's capacity" % spec.plugin, {
                "record_only": True}
        p.add(_step("expand", "controller", node, pv_name, spec.unique_name,
                    "PVC %s requests %s, PV has %s: %s" % (
                        spec.claim_key, format_bytes(spec.request_bytes), format_bytes(spec.capacity_bytes), what),
                    _item(spec), size_from=spec.capacity_bytes, size_to=spec.request_bytes, pvc=spec.claim_key,
                    **extra))


def expand_node(p):
    """PV capacity above PVC status capacity on a volume pods use read-write:
    desired_state_of_world_populator.go checkVolumeFSResize. A Filesystem volume's filesystem grows; a Block
    volume's device is rescanned (NodeExpandVolume runs for Block volumes too). With the PVC's expansion state
    recorded (RecoverVolumeExpansionFailure) the node acts only on NodeResizePending / NodeResizeInProgress
    (node_expander.go runPreCheck); otherwise the expansion counts as finished."""
    for pair, nv in p.desired.volumes.items():
        spec = nv.spec
        if not nv.mount_pods or nv.claims_read_only or spec.claim_capacity_bytes is None:
            continue
        target = p.grown_to.get(spec.pv_name, spec.capacity_bytes)
        if target <= spec.claim_capacity_bytes or pair in p.not_attached or pair in p.device_changed:
            continue
        refused = expansion_refused(spec) or not_expandable(p, spec)
        if refused is not None:
            p.block(nv.node, spec.pv_name, None, refused)
            continue
        if not node_expands(p, spec):
            continue  # the driver has no node expansion: the resize is finished once the controller's is
        if ((spec.allocated_bytes is not None or spec.resize_status) and spec.pv_name not in p.grown_to
                and spec.resize_status not in NODE_RESIZE_STATES):
            continue  # node_expander.go: neither pending nor in progress on the node: nothing for the kubelet
        error = p.unreachable(nv.node)
        if error is not None:
            p.block(nv.node, spec.pv_name, None, "node unreachable: %s" % error)
            continue
        what = "grow the filesystem" if spec.mode == "Filesystem" else "rescan the block device"
        p.add(_step("expand", "node", nv.node, spec.pv_name, spec.unique_name,
                    "PV capacity %s is above the claim's %s: %s" % (
                        format_bytes(target), format_bytes(spec.claim_capacity_bytes), what), _item(spec),
                    size_from=spec.claim_capacity_bytes, size_to=target, pvc=spec.claim_key))
