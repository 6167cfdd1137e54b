# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nodes did, turned into cluster records and the failures later steps must not build on.

Like the attach/detach controller's reconciler, a step whose precondition failed is not attempted: a failure on a
volume blocks every later step of that volume (a failed detach on node A must not let node B attach an RWO
volume), and an unreachable node blocks every later step on that node. A volume a node did not act on (skipped,
or missing from its result) is never counted as done, recorded attached or in use.

A ``record_only`` detach (a node that is out of service or gone, and that this run cannot reach) runs nothing on
the node: it is recorded as the controller's release.

A node-side grow the node reports ``pending`` (node/expand.py: it failed or cannot run yet) is neither done nor
failed: the claim records it as pending (``node_expansion_pending``, as the kubelet's
MarkNodeExpansionFailedCondition), the run lists it among its ``pending``, and nothing else stops for it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_expand import grow_pending_text
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import get_plugin, unique_name_of
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_view import phase_items
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_view


PENDING = "pending"  # _volume_outcomes: a volume whose node-side grow is pending


def _volume_outcomes(result):
    """Map unique volume name -> True for each volume a node module result says it completed, or the
    reason of its own failure.

    A node module that fails lists in `volumes` only the volumes it completed and, in `failures`, one
    entry per volume that failed (node/context.py run_each); a successful one lists them all.

    A volume result that says it was ``skipped`` (what an older node module returned for a driver it has no
    backend for) is not done: it is that volume's failure, and the node's, never an applied step or an
    attachment to record. Only a node-side expansion's ``skipped`` (a Block or read-only volume: nothing to grow,
    its result has a ``stage``) is a volume done.
    """
    failed_msg = result.get("msg") if result.get("failed") or result.get("unreachable") else None
    outcomes = {}
    skipped = []
    for vol in result.get("volumes") or ():
        key = vol.get("unique_volume_name") or _unique_name(vol)
        if not key:
            continue
        if vol.get("pending") and vol.get("stage") == "node":
            outcomes[key] = PENDING  # its grow is pending: not done, not the node's failure
        elif vol.get("skipped") and not vol.get("stage"):
            outcomes[key] = "the node did not act on volume %s: %s" % (vol.get("pv_name") or key, vol["skipped"])
            skipped.append(outcomes[key])
        else:
            outcomes[key] = True
    if skipped and not failed_msg:
        failed_msg = "; ".join(skipped)
    for entry in result.get("failures") or ():
        if isinstance(entry, dict) and entry.get("unique_volume_name"):
            outcomes[entry["unique_volume_name"]] = entry.get("msg") or failed_msg or "failed"
    return outcomes, failed_msg


def _unique_name(item):
    return unique_name_of(item)


def _copy_failures(failures):
    return {"nodes": dict((failures or {}).get("nodes", {})), "volumes": dict((failures or {}).get("volumes", {}))}


def _record_only(view, phase, failures):
    """Records of the steps the controller records without the node (record_only detaches); one that a remote
    controller host unpublishes is recorded by the controller task, once its call succeeded (controller_outcome)."""
    return [record for step in view.steps(phase, None, failures, record_only=True) if not step.get("controller_host")
            for record in _records_for(phase, step["node"], dict(view.item(step), detach=True), {}, [step])]


def _not_run_msg(node, phase):
    return ("node %s has work in phase %s but did not run it: add it to this play's inventory, or run again without "
            "--limit" % (node, phase))


def _outside_node(view, task_phases, node, start, merged):
    """The errors of a node outside the run's hosts that has work in ``task_phases`` (nothing ran there): one per
    phase with steps, naming its volumes, which stop elsewhere too (added to ``merged``, in place). One pass over the
    node's own steps in the view's (phase, node) index, and no copy of the run's failures per node: the outside nodes
    can be nearly all of the cluster's (a sliced or --limit run). Each phase's steps are those the failures
    before the task and this node's earlier phases leave, as the node itself would have carried them."""
    if node in start["nodes"]:
        return []
    before, added, errors = start["volumes"], {}, []
    for phase in task_phases:
        reason, volumes, work, found = "%s on node %s failed" % (phase, node), [], False, {}
        for step in view.by_phase_node.get((phase, node), ()):
            key = step.get("unique_volume_name")
            if step.get("record_only") or key in before or key in added:
                continue
            work = True
            if key is not None:
                found.setdefault(key, reason)  # (in added only after the phase: its other steps of the volume count)
                if step.get("volume") not in volumes:
                    volumes.append(step.get("volume"))
        if work:
            added.update(found)
            errors.append({"node": node, "phase": phase, "msg": _not_run_msg(node, phase), "volumes": volumes})
    for key, reason in added.items():
        merged["volumes"].setdefault(key, reason)
    return errors


def _node_phase(view, phase, node, result, failures, pending=None):
    """One node's result of one phase -> (records, errors); adds what failed to ``failures`` and the volumes whose
    grow is pending to ``pending`` (a list), in place."""
    steps = view.steps(phase, node, failures)
    items = phase_items(view, phase, node, failures)
    if result is None or result.get("skipped"):
        result = {"failed": True, "msg": _not_run_msg(node, phase)}
    # the reasons later steps are not attempted for say where it failed; its message is the node task's (printed once)
    if result.get("unreachable"):
        failures["nodes"][node] = "node unreachable: %s, in phase %s" % (node, phase)
    outcomes, failed_msg = _volume_outcomes(result)
    for step in steps:
        key = step["unique_volume_name"]
        if key is None:
            continue  # a stale directory: nothing later depends on it
        done = outcomes.get(key, None if failed_msg else True)
        if done is True or done == PENDING:
            continue
        failures["volumes"].setdefault(key, "%s on node %s failed" % (phase, node))
    records = []
    failed_volumes = []
    for item in items:
        key = _unique_name(item)
        done = outcomes.get(key, None if failed_msg else True)
        if done == PENDING:
            found = _pending_grow(node, item, _result_volume(result, key), steps)
            records.extend(found["records"])
            if pending is not None:
                pending.extend(found["pending"])
            continue
        if done is not True:
            failed_volumes.append(item["pv_name"])
            continue
        records.extend(_records_for(phase, node, item, _result_volume(result, key), steps))
    if not failed_msg:
        return records, []
    # the volumes named, also when the module died without saying (killed, a lost connection)
    msg = failed_msg
    missing = [v for v in failed_volumes if v not in msg]
    if missing:
        msg = "%s (volumes not done: %s)" % (msg, ", ".join(missing))
    error = {"node": node, "phase": phase, "msg": msg, "volumes": failed_volumes}
    if result.get("unreachable"):
        error["unreachable"] = True  # the node could not be reached (or was given up): its host is unreachable
    return records, [error]


def _not_attempted(steps, selected, failures, before=None):
    """The steps ``selected(step)`` picks that ``failures`` (minus those already in ``before``) stop."""
    before = before or {"nodes": {}, "volumes": {}}
    blocked = []
    for step in steps or ():
        if not selected(step):
            continue
        node, key = step.get("node"), step.get("unique_volume_name")
        reason = None
        if node in failures["nodes"] and node not in before["nodes"]:
            reason = failures["nodes"][node]
        elif key in failures["volumes"] and key not in before["volumes"]:
            reason = failures["volumes"][key]
        if reason:
            blocked.append({"node": node, "volume": step.get("volume"), "pod": step.get("pod"),
                            "action": step.get("action"), "reason": "not attempted: " + reason})
    return blocked


def _blocked_later(plan, last, inside, failures, before):
    """The steps of the phases after ``last`` (in plan order) that the failures new since ``before`` stop: those of
    the run's nodes, and those the controller carries out without a node task (record_only, a controller host's).
    With no new failure there is none, and the plan is not walked."""
    if all(node in before["nodes"] for node in failures["nodes"]) and \
            all(key in before["volumes"] for key in failures["volumes"]):
        return []
    later = frozenset(kind for kind, phase in phases.KIND_PHASE.items() if phases.BY_NAME[phase].order > last)
    if not later:
        return []
    return _not_attempted(plan, lambda s: (s.get("action"), s.get("target")) in later and (
        inside(s.get("node")) or s.get("record_only") or s.get("controller_host")), failures, before)


def _pending_grow(node, item, outcome, steps):
    """{records, pending} of a volume whose node-side grow the node reports pending: the claim's
    node_expansion_pending record (records/claim.py) and the run's pending entry, in the reader's words: what waits,
    where, why, and what to do (its pods restarted or moved, for a grow that works offline)."""
    found = {"records": [], "pending": []}
    detail = outcome.get("pending") or {}
    for step in steps:
        if step["unique_volume_name"] != unique_name_of(item) or step.get("size_to") is None:
            continue
        found["pending"].append({"node": node, "volume": step.get("volume"), "pod": None, "action": "expand",
                                 "pvc": step.get("pvc"), "reason": grow_pending_text(
                                     step, detail.get("detail") or detail.get("msg"), detail.get("offline"))})
        if step.get("pvc"):
            found["records"].append({
                "type": "node_expansion_pending", "pvc": step["pvc"], "capacity": step["size_to"], "node_name": node,
                "reason": detail.get("reason") or "ExpansionFailed",
                "message": detail.get("detail") or detail.get("msg") or "the node did not say why",
                "pods": list(step.get("pod_uids") or ()), "offline": bool(detail.get("offline")),
                "attempt": step.get("attempt") or 1})
    return found


def advance(plan_result, phase, node, result, failures):
    """Failures after ``node`` ran ``phase`` with ``result`` (a new dict; ``failures`` is not changed)."""
    failures = _copy_failures(failures)
    _node_phase(plan_view.as_view(plan_result), phase, node, result, failures)
    return failures


def task_outcome(plan_result, task_phases, results, failures=None):
    """The outcome of one role task in which every node ran ``task_phases`` in order (plugins/action/node_phases.py).

    results: {node name: the task's result on that host (its ``phase_results``: {phase: module result}),
    or None when the host did not run it}. Each node's phases ran on that node alone, one after the
    other, so failures are carried node by node, as the node itself carried them; the union is returned
    for the later tasks (a failed detach on node A stops node B's attach of that volume). Linear in the
    plan: each node's steps are looked up in one index. Returns {records, failures, blocked, errors}."""
    view = plan_view.as_view(plan_result)
    start = _copy_failures(failures)
    merged = _copy_failures(failures)
    records, errors, pending = [], [], []
    for phase in task_phases:
        records.extend(_record_only(view, phase, start))
    blocked = []
    # A node outside the run's hosts (no node facts: not in the play, a --limit) runs none of its steps: each is one
    # error of its node, and the volumes stop elsewhere too; its own later steps are not listed one by one as not
    # attempted (the report counts the outside nodes' steps as not run, in one line: at 5,000 nodes they would be
    # most of the run's state).
    run_nodes = plan_result.get("run_nodes") if isinstance(plan_result, dict) else None
    inside = (lambda node: True) if run_nodes is None else frozenset(run_nodes).__contains__
    results = results or {}
    # every node with steps in these phases (one whose steps earlier failures all stop yields nothing below)
    nodes = sorted(set(node for phase in task_phases for node in view.nodes_by_phase[phase]))
    for node in nodes:
        host = results.get(node)
        if host is None and not inside(node):
            errors.extend(_outside_node(view, task_phases, node, start, merged))
            continue
        node_failures = _copy_failures(start)
        for phase in task_phases:
            # this node's steps of this phase that its failures in an earlier phase of the task stopped
            if inside(node):
                blocked.extend(_not_attempted(view.by_phase_node.get((phase, node), ()), lambda s: True,
                                              node_failures, start))
            if node in node_failures["nodes"] or not view.steps(phase, node, node_failures):
                continue
            node_records, node_errors = _node_phase(view, phase, node, _phase_result(host, phase, node),
                                                    node_failures, pending)
            records.extend(node_records)
            errors.extend(node_errors)
        merged["nodes"].update(node_failures["nodes"])
        for key, reason in node_failures["volumes"].items():
            merged["volumes"].setdefault(key, reason)
    blocked.extend(_blocked_later(view.plan, max(phases.BY_NAME[phase].order for phase in task_phases), inside,
                                  merged, start))
    return {"records": records, "failures": merged, "blocked": blocked, "errors": errors, "pending": pending}


def timed_out(result, node):
    """The error of a node task that Ansible stopped at its time limit (the task keyword ``timeout``, the role's
    kubevol_node_timeout), or None. Such a node counts as unreachable for the rest of the run: whatever it was
    doing may still be going on there, and nothing more is sent to it (the A/D controller never waits on a node)."""
    info = result.get("timedout") if isinstance(result, dict) else None
    if not info:
        return None
    period = info.get("period") if isinstance(info, dict) else None
    return ("node %s did not answer within %ss (kubevol_node_timeout) and was given up for this run: it may be hung "
            "(a stuck disk, a frozen kernel) or its work slow (mkfs of a large device); check the node, raise "
            "kubevol_node_timeout if it was only slow, and run again" % (node, period if period is not None else "?"))


def _phase_result(host, phase, node):
    """A node's module result for one phase from its node_phases task result (None: the host did not run it)."""
    if host is None or host.get("skipped"):
        return None
    late = timed_out(host, node)
    if late is not None:
        return {"unreachable": True, "failed": True, "msg": late}
    if "phase_results" not in host:
        return {"unreachable": bool(host.get("unreachable")), "failed": True,
                "msg": host.get("msg") or "the node_phases task failed on node %s" % node}
    # (a node found unreachable in a later phase still has the results of the phases it ran before: recorded)
    result = (host.get("phase_results") or {}).get(phase)
    if result is None:  # the node found no work where the controller sees some: never count it as done
        return {"failed": True, "msg": "node %s did not run phase %s although the plan has work for it there; "
                                       "run again" % (node, phase)}
    return result


def _result_volume(result, key):
    for vol in result.get("volumes") or ():
        if (vol.get("unique_volume_name") or _unique_name(vol)) == key:
            return vol
    return {}


def _records_for(phase, node, item, outcome, steps):
    """The cluster records Kubernetes would write after this phase succeeded for one volume."""
    if item.get("ephemeral"):
        # an inline ephemeral volume: no VolumeAttachment, no volumesAttached, and no volumesInUse entry (the
        # kubelet reports only attachable volumes in use: kubelet_node_status.go, volume_manager.go)
        return []
    key = unique_name_of(item)
    if not get_plugin(item.get("plugin")).ATTACHABLE and phase in ("teardown", "attach", "mount"):
        # local and hostPath: never attached, so no VolumeAttachment, no volumesAttached and no volumesInUse entry
        # (the kubelet reports only attachable volumes in use); only their expansion is recorded
        return []
    base = {"node": node, "pv_name": item["pv_name"], "driver": item["driver"],
            "volume_handle": item["volume_handle"]}
    remote = item.get("controller_host")  # its controller calls, and their records, are the controller task's
    if phase == "teardown":
        if item.get("detach") and not remote:
            return [dict(base, type="detached")]
        if item.get("detach"):
            return [{"type": "in_use", "node": node, "unique_volume_names": [key], "in_use": False}]
        if item.get("unmount_device"):
            return [{"type": "in_use", "node": node, "unique_volume_names": [key], "in_use": False}]
        return []
    if phase == "attach" and remote:
        return []  # recorded with its publish_context after the controller host's ControllerPublishVolume
    if phase == "attach":
        device = outcome.get("device_path") or outcome.get("device")
        record = dict(base, type="attached", device_path=device)
        if isinstance(outcome.get("attachment_metadata"), dict):  # an external CSI driver's publish_context
            record["attachment_metadata"] = outcome["attachment_metadata"]
        return [record]
    if phase == "mount":
        return [{"type": "in_use", "node": node, "unique_volume_names": [key], "in_use": True}]
    records = []
    for step in steps:
        # size_to is bytes; the store writes it back as a canonical quantity (2147483648 -> 2Gi).
        capacity = step.get("capacity", step.get("size_to"))
        if step["unique_volume_name"] != key or capacity is None:
            continue
        if phase == "expand_controller":
            record = {"type": "controller_expanded", "pv_name": item["pv_name"], "capacity": capacity}
            if step.get("pvc"):
                record["pvc"] = step["pvc"]  # the claim's allocatedResources and NodeResizePending
            records.append(record)
        elif phase == "expand_node" and step.get("pvc"):
            records.append({"type": "node_expanded", "pvc": step["pvc"], "capacity": capacity})
    return records
