# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller task of a run: the Controller calls of external CSI drivers whose Controller service runs on a
host of the inventory (plan/remote_controller.py), what each controller host is given, and its results turned into
records and failures.

Kubernetes' order (the external-attacher's csiDetach only once the node is done, its csiAttach before the kubelet
stages; the external-resizer before the kubelet's NodeExpandVolume): the nodes' teardown, then on each controller
host ControllerUnpublishVolume, ControllerPublishVolume, ControllerExpandVolume (module csi_controller), recorded
(the detach, the attachment with its publish_context as status.attachmentMetadata, the PV's capacity), then the
nodes' setup, whose attach keeps that publish_context for NodeStage and NodePublish (``with_published``). A volume
whose controller call failed is not carried further (its node stage and publish are not attempted); a call whose
outcome is unknown (a non-final gRPC status) records nothing, so the attachment stays as uncertain as its intent
record says and the next run calls again.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_view
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import unique_name_of
from ansible_collections.kubevol.volumes.plugins.module_utils.run.outcome import _copy_failures, _not_attempted

OPS = {("detach", "device"): "unpublish", ("attach", "device"): "publish", ("expand", "controller"): "expand"}
ORDER = ("unpublish", "publish", "expand")  # every detach before any attach (reconciler.go), expansion last


def controller_work(plan_result, host, failures=None):
    """The operations controller host ``host`` carries out, in order: [{op, node, node_id, unique_volume_name,
    volume: the volume item (with capacity_bytes for an expansion)}]. A step blocked by an earlier failure (its
    node's teardown failed) is not given."""
    view = plan_view.as_view(plan_result)
    ops = []
    for step in view.controller_steps(host, failures):
        item = view.item(step)
        if item is None:
            continue
        item.pop("controller_host", None)
        op = OPS[phases.step_kind(step)]
        if op == "expand":
            item["capacity_bytes"] = step.get("size_to")
        ops.append({"op": op, "node": step["node"], "node_id": step.get("csi_node_id"),
                    "unique_volume_name": step["unique_volume_name"], "volume": item})
    return sorted(ops, key=lambda op: ORDER.index(op["op"]))


def with_published(items, published, node):
    """The node's attach items with the publish_context the controller task got for them on ``node``
    (``controller_publish_context``, node/external_ops.py remote_published)."""
    out = []
    for item in items or ():
        context = ((published or {}).get(item.get("unique_volume_name") or unique_name_of(item)) or {}).get(node)
        out.append(dict(item, controller_publish_context=context) if context is not None else item)
    return out


def _host_failure(host, result, ops, csi_controllers):
    """Why every operation of ``host`` failed when its task did not run them (unreachable, failed as a whole)."""
    where = ", ".join(sorted(set("driver %s (socket %s)" % (op["volume"].get("driver"),
                                                            csi_controllers.get(op["volume"].get("driver"), {})
                                                            .get("socket", "?")) for op in ops)))
    if result is None or result.get("skipped"):
        return ("controller host %s did not run its controller task (%s): is it in this play's inventory and "
                "reachable? Nothing was called" % (host, where))
    what = "is unreachable" if result.get("unreachable") else "failed"
    return "controller host %s %s (%s): %s" % (host, what, where, result.get("msg") or "no message")


def _records(op, entry, step_capacity):
    item = op["volume"]
    base = {"node": op["node"], "pv_name": item["pv_name"], "driver": item["driver"],
            "volume_handle": item["volume_handle"]}
    if op["op"] == "unpublish":
        return [dict(base, type="detached")]
    if op["op"] == "publish":
        context = entry.get("publish_context") if isinstance(entry.get("publish_context"), dict) else {}
        record = dict(base, type="attached", device_path=context.get("devicePath") or "", attachment_metadata=context)
        if op.get("node_id"):
            record["node_id"] = op["node_id"]  # the VolumeAttachment's csi.alpha.kubernetes.io/node-id
        return [record]
    if step_capacity is None:
        return []
    record = {"type": "controller_expanded", "pv_name": item["pv_name"], "capacity": step_capacity[0]}
    if step_capacity[1]:
        record["pvc"] = step_capacity[1]
    return [record]


def controller_outcome(plan_result, results, failures=None):
    """The outcome of the controller task: results {controller host: its csi_controller result}. Returns
    {records, failures, blocked, errors, published}; ``published``: {unique volume name: {node: publish_context}}
    for the nodes' attach."""
    view = plan_view.as_view(plan_result)
    start = _copy_failures(failures)
    merged = _copy_failures(failures)
    csi_controllers = (plan_result or {}).get("csi_controllers") or {} if isinstance(plan_result, dict) else {}
    records, errors, published = [], [], {}
    capacities = dict(((s["unique_volume_name"], s["node"]), (s.get("capacity", s.get("size_to")), s.get("pvc")))
                      for host in view.by_controller for s in view.by_controller[host]
                      if phases.step_kind(s) == ("expand", "controller"))
    for host in sorted(view.by_controller):
        ops = controller_work(view, host, start)
        if not ops:
            continue
        result = (results or {}).get(host)
        done, failed = {}, {}
        if result is not None and not result.get("skipped") and isinstance(result.get("operations"), list):
            done = dict(((e.get("op"), e.get("node"), e.get("unique_volume_name")), e) for e in result["operations"]
                        if isinstance(e, dict))
            failed = dict(((e.get("op"), e.get("node"), e.get("unique_volume_name")), e)
                          for e in result.get("failures") or () if isinstance(e, dict))
            whole = None
        else:
            whole = _host_failure(host, result, ops, csi_controllers)
        failed_volumes, messages = [], []
        for op in ops:
            key = (op["op"], op["node"], op["unique_volume_name"])
            if whole is None and key in done:
                records.extend(_records(op, done[key], capacities.get((op["unique_volume_name"], op["node"]))))
                if op["op"] == "publish":
                    published.setdefault(op["unique_volume_name"], {})[op["node"]] = \
                        done[key].get("publish_context") or {}
                continue
            msg = whole or (failed.get(key) or {}).get("msg") or (result or {}).get("msg") or \
                "controller host %s did not report controller %s of volume %s" % (host, op["op"], op["volume"]["pv_name"])
            merged["volumes"].setdefault(op["unique_volume_name"], "controller %s on host %s for node %s failed: %s"
                                         % (op["op"], host, op["node"], msg))
            failed_volumes.append(op["volume"]["pv_name"])
            if msg not in messages:
                messages.append(msg)
        if failed_volumes:
            errors.append({"node": host, "phase": "controller", "msg": "; ".join(messages),
                           "volumes": failed_volumes})
    blocked = _not_attempted(view.plan, lambda s: phases.order_of(phases.step_kind(s)) > 0, merged, start)
    return {"records": records, "failures": merged, "blocked": blocked, "errors": errors, "published": published}


def controller_state_after(plan_result, results, state):
    """The run's state after the controller task (executor.run_step): as run_state_after, plus ``published``."""
    outcome = controller_outcome(plan_result, results, state["failures"])
    return {"tasks": state["tasks"], "failures": outcome["failures"],
            "blocked": list(state["blocked"]) + outcome["blocked"], "errors": list(state["errors"]) + outcome["errors"],
            "pending": list(state.get("pending") or ()), "records": outcome["records"],
            "published": outcome["published"]}
