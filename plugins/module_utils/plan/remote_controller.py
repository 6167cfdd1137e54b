# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan's controller calls of external CSI drivers whose Controller service runs on a host of the inventory
(``driver_options[<driver>]``: ``controller: <host>``, ``controller_socket``; common/csi_controller.py).

Kubernetes runs those calls apart from the kubelet: the external-attacher (csi_handler.go csiAttach/csiDetach)
makes ControllerPublish/UnpublishVolume for a VolumeAttachment the A/D controller created or deleted, the
external-resizer ControllerExpandVolume for a claim the resize controller marked. So does kubevol: the planner
plans as for any CSI driver (detach on the node that loses the volume, attach on the one that gains it,
controller expansion); this marks those steps with ``controller_host``, and the run carries them out in one
controller task per controller host, between the nodes' teardown and their setup (run/executor.py run_tasks,
run/controller_outcome.py). Attach steps carry the node's CSI node id (``csi_node_id``: NodeGetInfo, which the
node facts report as the kubelet registers it in the CSINode), detach steps too. A detach whose node has no facts
(gone, out of service, outside the run: a record-only release) is still unpublished by the controller, with the node id
its VolumeAttachment kept (the external-attacher's way), and recorded only once the controller call succeeded.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.common.csi_controller import remote_controllers
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import CSI_NODE_ID_ANNOTATION

CONTROLLER_KINDS = (("detach", "device"), ("attach", "device"), ("expand", "controller"))
# nothing names the node's CSI node id: the node is gone or out of service, this run has no facts of it, and its
# VolumeAttachment has no csi.alpha.kubernetes.io/node-id annotation
UNKNOWN_NODE_ID = ("PV %s: released from node %s in the cluster's records only, without ControllerUnpublishVolume "
                   "(no CSI node id of driver %s is known for the node): unpublish the volume from node %s on the "
                   "storage system by hand if it is still exported there")


def mark(result, driver_options, inventory=None, node_facts=None, va_by_pair=None):
    """Mark ``result``'s (a plan_cluster result) controller steps of remote controllers, in place; add
    ``csi_controllers`` ({driver: {host, socket}}). Raises InvalidInput for a controller host not in ``inventory``
    (when given) or a missing controller_socket, naming the option.

    A volume the node mounts without attaching it in this run (its VolumeAttachment already says attached) gets
    that VolumeAttachment's attachmentMetadata as ``controller_publish_context``, as the kubelet reads it back
    (csi_attacher.go MountDevice): the node needs it when it has no record of its own (a run that stopped after
    the controller host published and before the node kept the answer). ``va_by_pair``: {(pv, node): VA}."""
    remote = remote_controllers(driver_options, inventory)
    if not remote:
        return result
    result["csi_controllers"] = remote
    warnings = []
    items = result.get("volume_items") or {}
    # the (node, volume) pairs this plan attaches, found once (not a scan of the plan per mounted volume)
    attaching = frozenset((s.get("node"), s.get("unique_volume_name")) for s in result.get("plan") or ()
                          if phases.step_kind(s) == ("attach", "device"))
    for step in result.get("plan") or ():
        kind = phases.step_kind(step)
        item = (items.get(step.get("node")) or {}).get(step.get("unique_volume_name"))
        if kind[0] == "mount" and item is not None and item.get("driver") in remote and \
                (step["node"], step["unique_volume_name"]) not in attaching:
            _from_attachment(step, item, va_by_pair)
        if kind not in CONTROLLER_KINDS:
            continue
        if item is None or item.get("driver") not in remote:
            continue
        if kind != ("expand", "controller") and item.get("attach_required") is False:
            continue  # no VolumeAttachment: nothing to publish (csi_plugin.go skipAttach)
        node_id = None
        if kind != ("expand", "controller"):
            node_id = _node_id(step, item, node_facts, va_by_pair)
            if step.get("record_only") and not node_id:
                warnings.append(UNKNOWN_NODE_ID % (item.get("pv_name"), step["node"], item["driver"], step["node"]))
                continue  # released in the records only, as before: nothing can name the node to the controller
        step["controller_host"] = remote[item["driver"]]["host"]
        item["controller_host"] = step["controller_host"]
        if kind != ("expand", "controller"):
            step["csi_node_id"] = node_id
    if warnings:
        result["warnings"] = list(result.get("warnings") or ()) + warnings
    return result


def _node_id(step, item, node_facts, va_by_pair):
    """The CSI node id of the step's node: NodeGetInfo's, from the node's facts (the CSINode the kubelet
    registered); else, for a detach, the one the volume was published to, kept on its VolumeAttachment
    (external-attacher csi_handler.go getNodeID: CSINode first, then the VA's csi.alpha.kubernetes.io/node-id)."""
    facts = (node_facts or {}).get(step["node"]) or {}
    node_id = (facts.get("csi_node_ids") or {}).get(item["driver"])
    if node_id or phases.step_kind(step) != ("detach", "device"):
        return node_id
    va = (va_by_pair or {}).get((item.get("pv_name"), step["node"]))
    return dict(va.annotations).get(CSI_NODE_ID_ANNOTATION) if va is not None else None


def _from_attachment(step, item, va_by_pair):
    """A volume this run mounts but does not attach: its VolumeAttachment's attachmentMetadata, when attached."""
    va = (va_by_pair or {}).get((item.get("pv_name"), step["node"]))
    if va is not None and va.attached and item.get("attach_required") is not False:
        item["controller_publish_context"] = dict(va.metadata)
