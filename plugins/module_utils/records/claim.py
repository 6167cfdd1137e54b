# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PersistentVolume and PersistentVolumeClaim records of an expansion, as Kubernetes writes them.

The claim's status says where an expansion is, in two places that ``kubectl describe pvc`` shows:
``allocatedResourceStatuses.storage`` (RecoverVolumeExpansionFailure) and the resize conditions. They move
together, as the external-resizer (``pkg/controller/expand_and_recover.go``) and the kubelet
(``pkg/volume/util/resize_util.go``) write them:

=====================================  =================================  ==================================
record                                 allocatedResourceStatuses.storage  conditions
=====================================  =================================  ==================================
``resize_intent`` stage=controller     ControllerResizeInProgress         ``Resizing`` (markControllerResizeInProgress)
``controller_expanded`` with ``pvc``   NodeResizePending                  ``FileSystemResizePending`` with its message
                                                                          (markForPendingNodeExpansion)
``resize_intent`` stage=node           NodeResizeInProgress               unchanged (MarkNodeExpansionInProgress)
``node_expansion_pending``             NodeResizeInProgress               ``FileSystemResizePending`` kept (or set),
                                                                          ``NodeResizeError`` with the node's reason
                                                                          (MarkNodeExpansionFailedCondition)
``node_expanded``                      removed                            resize conditions removed (MarkFSResizeFinished)
=====================================  =================================  ==================================

A pending node-side grow also leaves, on the claim, the annotation ``kubevol.io/node-expansion-pending``: per node,
the conditions it failed under (pods, size, reason) and when it may be tried again. The kubelet keeps that in
memory (its actual state of world and the operation's exponential backoff); kubevol keeps nothing between runs but
the cluster, so the planner reads it there (plan/rules_expand.py). ``node_expanded`` removes it.

Conditions are merged as ``MergeResizeConditionsOfPVC`` merges them: conditions of other types are kept; a
resize condition of the type being set is kept as it is when its status is the same (so its
``lastTransitionTime`` stays and a second run writes nothing), replaced otherwise; the other resize
conditions are dropped.

``ClaimRecords`` is a mixin of record.py's RecordApplier (which provides ``pvs``, ``pvcs``, ``_touch``,
``_before``, ``_touched`` and ``_missing``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import datetime
import json

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import NODE_EXPANSION_PENDING_ANNOTATION
from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import compare, format_bytes

# Condition types MergeResizeConditionOnPVC treats as resize conditions (resize_util.go knownResizeConditions).
RESIZE_CONDITION_TYPES = frozenset(["Resizing", "FileSystemResizePending", "ControllerResizeError", "NodeResizeError"])
RESIZING = "Resizing"
FS_RESIZE_PENDING = "FileSystemResizePending"
NODE_RESIZE_ERROR = "NodeResizeError"
NODE_RESIZE_IN_PROGRESS = "NodeResizeInProgress"
# A pending grow whose cause the plan cannot see (a missing tool, a driver's error) is tried again after this long,
# doubled on each failed attempt under the same conditions, at most BACKOFF_MAX (docs/planner.md says why these).
BACKOFF_FIRST = 300
BACKOFF_MAX = 3600
# resize_util.go MarkForFSResize, external-resizer markForPendingNodeExpansion: what kubectl describe pvc shows
FS_RESIZE_PENDING_MESSAGE = "Waiting for user to (re-)start a pod to finish file system resize of volume on node."


def is_resize_condition(condition_type):
    """True for a condition MarkFSResizeFinished removes."""
    return condition_type in RESIZE_CONDITION_TYPES or "Resiz" in (condition_type or "")


def utc_now():
    """metav1.Now() as the API serializes it (RFC 3339, seconds, UTC)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def resize_condition(condition_type, at, message=None, reason=None):
    condition = {"type": condition_type, "status": "True", "lastProbeTime": None, "lastTransitionTime": at}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def parse_time(text):
    """An RFC 3339 time as the API writes it (``2026-11-25T10:00:00Z``), aware; None when it is not one."""
    if not isinstance(text, str):
        return None
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None


def format_time(when):
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def backoff_seconds(attempt):
    """exponentialbackoff's doubling, in kubevol's time scale: BACKOFF_FIRST after the first failed attempt, twice
    as long after each next one, at most BACKOFF_MAX."""
    return min(BACKOFF_FIRST * 2 ** max(0, min(attempt, 16) - 1), BACKOFF_MAX)


def pending_memos(text):
    """The kubevol.io/node-expansion-pending annotation's value: {node: what its pending grow recorded}; {} when
    absent or not kubevol's JSON (a hand-edited value counts as absent: the grow is then simply tried). One entry per
    node, as each kubelet keeps its own: a volume several nodes mount grows, or waits, on each."""
    if not isinstance(text, str):
        return {}
    try:
        memos = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(memos, dict):
        return {}
    return dict((node, memo) for node, memo in memos.items() if isinstance(memo, dict))


def pending_memo(text, node):
    """What node ``node``'s pending grow of the claim recorded (pending_memos), or None."""
    return pending_memos(text).get(node)


def merge_kept_resize_conditions(conditions, wanted):
    """MergeResizeConditionOnPVC with keepOldResizeConditions (MarkForFSResize, MarkNodeExpansionFailedCondition):
    as merge_resize_conditions, but the other resize conditions are kept, and a kept condition of a wanted type takes
    the wanted reason and message (its lastTransitionTime stays: the status did not change)."""
    by_type = dict((c["type"], c) for c in wanted)
    merged, done = [], set()
    for condition in conditions if isinstance(conditions, list) else ():
        kind = condition.get("type") if isinstance(condition, dict) else None
        if kind not in by_type or kind in done:
            merged.append(condition)
            continue
        new = by_type[kind]
        if condition.get("status") == new["status"]:
            condition = dict(condition)
            for key in ("reason", "message"):
                if new.get(key):
                    condition[key] = new[key]
                else:
                    condition.pop(key, None)
        else:
            condition = new
        merged.append(condition)
        done.add(kind)
    merged.extend(c for c in wanted if c["type"] not in done)
    return merged


def merge_resize_conditions(conditions, wanted):
    """external-resizer pkg/util MergeResizeConditionsOfPVC: the claim's conditions with the resize conditions
    ``wanted`` set. Non-resize conditions are kept in place; a resize condition of a wanted type with the same
    status is kept as it is (its lastTransitionTime too), one with another status replaced; the other resize
    conditions dropped; wanted ones not yet there appended."""
    by_type = dict((c["type"], c) for c in wanted)
    merged, done = [], set()
    for condition in conditions if isinstance(conditions, list) else ():
        kind = condition.get("type") if isinstance(condition, dict) else None
        if not is_resize_condition(kind):
            merged.append(condition)
        elif kind in by_type and kind not in done:
            same = condition.get("status") == by_type[kind]["status"]
            merged.append(condition if same else by_type[kind])
            done.add(kind)
    merged.extend(c for c in wanted if c["type"] not in done)
    return merged


def quantity(value):
    """What is stored: a string as given, bytes as the canonical BinarySI form (2147483648 -> 2Gi)."""
    return format_bytes(value) if isinstance(value, int) else value


def same_quantity(stored, value):
    """resource.Quantity.Cmp == 0: '1Gi' and '1024Mi' are the same capacity, so nothing to write."""
    if not isinstance(stored, str):
        return False
    try:
        return compare(stored, value) == 0
    except InvalidInput:
        return stored == value


def _set_conditions(status, conditions):
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)


class ClaimRecords:
    """The expansion records (controller_expanded, resize_intent, node_expanded) of RecordApplier."""

    def _controller_expanded(self, record):
        """external-resizer after ControllerExpandVolume: the PV's capacity (resize_util.go UpdatePVSize); with
        ``pvc``, the node's turn on the claim (markForPendingNodeExpansion): NodeResizePending and the
        FileSystemResizePending condition, which ``kubectl describe pvc`` shows until the kubelet grows the
        filesystem (a pod must use the volume for that)."""
        pv = self.pvs.get(record["pv_name"])
        if pv is None:
            self._missing("PersistentVolume", record["pv_name"], "cannot record its new capacity")
        capacity = quantity(record["capacity"])
        spec = pv.get("spec") if isinstance(pv.get("spec"), dict) else None
        labels = []
        if spec is None or not isinstance(spec.get("capacity"), dict) or not same_quantity(
                spec["capacity"].get("storage"), capacity):
            labels.append(self._touch(pv))
            if spec is None:
                spec = pv["spec"] = {}
            if not isinstance(spec.get("capacity"), dict):
                spec["capacity"] = {}
            spec["capacity"]["storage"] = capacity
        # The claim even when the PV already has the capacity: a conflict on the claim after the PV was written
        # (the API store re-applies the records), or a run killed between the two writes, must not leave it at
        # ControllerResizeInProgress, where the kubelet would never grow the filesystem (node_expander.go).
        if record.get("pvc"):
            pending = resize_condition(FS_RESIZE_PENDING, record.get("at") or utc_now(), FS_RESIZE_PENDING_MESSAGE)
            labels.extend(self._resize_status(record["pvc"], "NodeResizePending", capacity, [pending]))
        return labels

    def _resize_intent(self, record):
        """Before an expansion acts: the resizer's allocatedResources, ControllerResizeInProgress and the Resizing
        condition (markControllerResizeInProgress), or the kubelet's NodeResizeInProgress (node_expander.go,
        resize_util.go MarkNodeExpansionInProgress: conditions unchanged). A run killed mid-expansion leaves the
        claim saying so."""
        if record["stage"] == "controller":
            resizing = resize_condition(RESIZING, record.get("at") or utc_now())
            return self._resize_status(record["pvc"], "ControllerResizeInProgress", quantity(record["capacity"]),
                                       [resizing])
        return self._resize_status(record["pvc"], "NodeResizeInProgress", None, None)

    def _change_claim_status(self, pvc_key, reason, change, annotation=None):
        """Apply ``change(status)`` to a PVC's status dict, and ``annotation`` (text: set it; False: remove it) to
        its kubevol.io/node-expansion-pending annotation; the labels of what changed (none when nothing did)."""
        namespace, name = pvc_key.split("/")
        pvc = self.pvcs.get((namespace, name))
        if pvc is None:
            self._missing("PersistentVolumeClaim", pvc_key, reason)
        before = copy.deepcopy(pvc)
        status = pvc.get("status") if isinstance(pvc.get("status"), dict) else {}
        change(status)
        pvc["status"] = status
        if annotation is not None:
            _set_annotation(pvc, NODE_EXPANSION_PENDING_ANNOTATION, annotation or None)
        if pvc == before:
            return []
        label = self._label(pvc)
        self._before.setdefault(label, before)
        self._touched[label] = pvc
        return [label]

    def _resize_status(self, pvc_key, state, allocated, conditions):
        """Set allocatedResourceStatuses.storage (allocatedResources.storage when given; the resize conditions
        when given) on a PVC's status."""
        def change(status):
            statuses = status.get("allocatedResourceStatuses")
            if not isinstance(statuses, dict):
                statuses = status["allocatedResourceStatuses"] = {}
            statuses["storage"] = state
            if allocated is not None:
                resources = status.get("allocatedResources")
                if not isinstance(resources, dict):
                    resources = status["allocatedResources"] = {}
                if not same_quantity(resources.get("storage"), allocated):
                    resources["storage"] = allocated
            if conditions is not None:
                _set_conditions(status, merge_resize_conditions(status.get("conditions"), conditions))
        return self._change_claim_status(pvc_key, "cannot record its resize status", change)

    def _node_expanded(self, record):
        """resize_util.go MarkFSResizeFinished: the new capacity; the expansion state and the resize conditions
        (FileSystemResizePending among them) removed; allocatedResources left alone (the kubelet never writes it)."""
        capacity = quantity(record["capacity"])

        def change(status):
            if not isinstance(status.get("capacity"), dict):
                status["capacity"] = {}
            if not same_quantity(status["capacity"].get("storage"), capacity):
                status["capacity"]["storage"] = capacity
            allocated = status.get("allocatedResourceStatuses")
            if isinstance(allocated, dict):
                allocated.pop("storage", None)
                if not allocated:
                    del status["allocatedResourceStatuses"]
            if isinstance(status.get("conditions"), list):
                _set_conditions(status, merge_resize_conditions(status["conditions"], []))
        return self._change_claim_status(record["pvc"], "cannot record that its file system was expanded", change,
                                         annotation=False)

    def _node_expansion_pending(self, record):
        """resize_util.go MarkNodeExpansionFailedCondition after a node-side grow failed or could not run yet: the
        claim stays NodeResizeInProgress (the kubelet set it before it called the plugin, and a failure that is not
        infeasible leaves it so), FileSystemResizePending stays (set here when an older record left none), and the
        NodeResizeError condition says why, with the node's reason. The capacity is not recorded: nothing grew.
        The annotation keeps what the kubelet keeps in memory, under the node's name: the pods and the size it
        failed with and, for a cause the plan cannot see, when it may be tried again (backoff_seconds of the
        step's attempt)."""
        at = record.get("at") or utc_now()
        attempt = record.get("attempt") or 1
        retry = None
        if not record.get("offline"):
            when = parse_time(at)
            retry = format_time(when + datetime.timedelta(seconds=backoff_seconds(attempt))) if when else None
        memo = {"pods": sorted(record.get("pods") or ()), "size": record["capacity"], "reason": record["reason"],
                "offline": bool(record.get("offline")), "detail": record["message"][:300], "attempt": attempt,
                "at": at, "retryAfter": retry}
        wanted = [resize_condition(FS_RESIZE_PENDING, at, FS_RESIZE_PENDING_MESSAGE),
                  resize_condition(NODE_RESIZE_ERROR, at, "failed to expand pvc with %s" % record["message"],
                                   record["reason"])]

        def change(status):
            statuses = status.get("allocatedResourceStatuses")
            if not isinstance(statuses, dict):
                statuses = status["allocatedResourceStatuses"] = {}
            statuses["storage"] = NODE_RESIZE_IN_PROGRESS
            _set_conditions(status, merge_kept_resize_conditions(status.get("conditions"), wanted))
        pvc = self.pvcs.get(tuple(record["pvc"].split("/")))
        memos = pending_memos(_annotation(pvc, NODE_EXPANSION_PENDING_ANNOTATION)) if pvc is not None else {}
        memos[record["node_name"]] = memo  # the other nodes' pending grows are theirs
        return self._change_claim_status(record["pvc"], "cannot record that its file system grow is pending", change,
                                         annotation=json.dumps(memos, sort_keys=True, separators=(",", ":")))


def _annotation(obj, key):
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    return annotations.get(key) if isinstance(annotations, dict) else None


def _set_annotation(obj, key, value):
    """Set (``value`` a string) or remove (None) one annotation; an emptied annotations map goes too."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    annotations = meta.get("annotations")
    if value is None:
        if isinstance(annotations, dict) and key in annotations:
            del annotations[key]
            if not annotations:
                del meta["annotations"]
        return
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    annotations[key] = value
