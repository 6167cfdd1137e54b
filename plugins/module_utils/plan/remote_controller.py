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
node facts report as the kubelet registers it in the CSINode), detach steps too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.common.csi_controller import remote_controllers

CONTROLLER_KINDS = (("detach", "device"), ("attach", "device"), ("expand", "controller"))


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
    items = result.get("volume_items") or {}
    for step in result.get("plan") or ():
        kind = phases.step_kind(step)
        item = (items.get(step.get("node")) or {}).get(step.get("unique_volume_name"))
        if kind[0] == "mount" and item is not None and item.get("driver") in remote:
            _from_attachment(result, step, item, va_by_pair)
        if kind not in CONTROLLER_KINDS or step.get("record_only"):
            continue  # a record-only release runs nothing anywhere (a node out of service or gone)
        if item is None or item.get("driver") not in remote:
            continue
        if kind != ("expand", "controller") and item.get("attach_required") is False:
            continue  # no VolumeAttachment: nothing to publish (csi_plugin.go skipAttach)
        step["controller_host"] = remote[item["driver"]]["host"]
        item["controller_host"] = step["controller_host"]
        if kind != ("expand", "controller"):
            facts = (node_facts or {}).get(step["node"]) or {}
            step["csi_node_id"] = (facts.get("csi_node_ids") or {}).get(item["driver"])
    return result


def _from_attachment(result, step, item, va_by_pair):
    attaches = any(phases.step_kind(other) == ("attach", "device") and other.get("node") == step["node"]
                   and other.get("unique_volume_name") == step["unique_volume_name"] for other in result["plan"])
    va = (va_by_pair or {}).get((item.get("pv_name"), step["node"]))
    if not attaches and va is not None and va.attached and item.get("attach_required") is not False:
        item["controller_publish_context"] = dict(va.metadata)
