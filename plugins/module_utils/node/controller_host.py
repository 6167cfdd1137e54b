# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller calls of external CSI drivers, made on the host their controller plugin runs on (module
csi_controller, delegated there by the reconcile role's controller task): what the external-attacher
(csi_handler.go csiAttach/csiDetach) and the external-resizer (csi_resizer.go) do beside the controller plugin.

Operations come in the run's order (run/controller_outcome.py controller_work): every ControllerUnpublishVolume,
then every ControllerPublishVolume, then ControllerExpandVolume. A volume whose call failed gets no later call in
this task (a failed detach from one node never lets another node attach it). The node id is the node plugin's
(NodeGetInfo, reported by the node facts): the one its CSINode would record. Errors name the controller host, the
driver, the socket and the node; secrets go in the requests only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import DEFAULT_KUBELET_DIR
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.driver import external_driver_class
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.errors import refused
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.settings import driver_settings
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item


def _operation(driver, op, item, node_id, check_mode):
    """One call: the result entry's fields (publish_context, capacity_bytes, ...)."""
    if op in ("publish", "unpublish") and item.attach_required and not node_id:
        raise refused(item.pv_name, driver.node_name, driver.NAME,
                      "node %s's plugin of driver %s gave no node id (NodeGetInfo) when its state was gathered, so "
                      "nothing was called" % (driver.node_name, driver.NAME), "Controller%sVolume" % op.capitalize(),
                      "check that the driver's node plugin runs on node %s, then run again" % driver.node_name)
    if op == "unpublish":
        step = driver.controller_unpublish(item, node_id, check_mode=check_mode)
        return {"called": bool(step.called), "skipped": step.skipped}
    if op == "publish":
        att = driver.controller_publish(item, node_id, check_mode=check_mode)
        return {"called": not att.by_record and not att.skipped, "by_record": bool(att.by_record),
                "skipped": att.skipped, "publish_context": dict(att.publish_context or {})}
    exp = driver.controller_expand(item, check_mode=check_mode)
    return {"called": bool(exp.called), "skipped": exp.skipped, "capacity_bytes": exp.new_bytes,
            "node_expansion_required": bool(exp.node_expansion_required)}


def run_operations(runner, host, operations, driver_options, check_mode=False):
    """(results, failures) of ``operations`` ([{op, node, node_id, volume}]) on controller host ``host``."""
    results, failures, failed = [], [], {}
    for raw in operations:
        op, node = raw["op"], raw["node"]
        entry = {"op": op, "node": node, "pv_name": (raw.get("volume") or {}).get("pv_name")}
        try:
            item = volume_item(raw["volume"])
            entry["unique_volume_name"] = item.unique_name
            if item.unique_name in failed:
                raise KubevolError("not attempted: %s" % failed[item.unique_name].msg)
            remote = driver_settings(item.driver, driver_options or {})["remote"]
            if not remote:
                raise refused(item.pv_name, node, item.driver, "driver %s has no controller host on host %s, so "
                              "nothing was called" % (item.driver, host), "Controller%sVolume" % op.capitalize(),
                              "give the host running its Controller service in %s (controller, controller_socket)"
                              % setting("driver_options", key=item.driver))
            driver = external_driver_class(item.driver)(runner, DEFAULT_KUBELET_DIR, node, driver_options)
            driver.serve_controller_at(remote["socket"])
            try:
                entry.update(_operation(driver, op, item, raw.get("node_id"), check_mode))
            except KubevolError as err:
                raise err.add(prefix="controller host %s (driver %s, socket %s): controller %s of volume %s for node "
                              "%s: " % (host, item.driver, remote["socket"], op, item.pv_name, node))
            entry["csi_calls"] = list(driver.calls)
            results.append(entry)
        except KubevolError as err:
            cause = failed.get(entry.get("unique_volume_name"), err)  # a call not attempted: its cause's codes
            entry.update(msg=err.msg, uncertain=bool(getattr(err, "uncertain", False)), code=cause.code,
                         grpc_code=cause.kwargs.get("grpc_code"))
            if entry.get("unique_volume_name"):
                failed.setdefault(entry["unique_volume_name"], err)
            failures.append(entry)
    return results, failures
