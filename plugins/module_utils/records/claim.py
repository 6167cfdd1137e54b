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
``node_expanded``                      removed                            resize conditions removed (MarkFSResizeFinished)
=====================================  =================================  ==================================

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

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import compare, format_bytes

# Condition types MergeResizeConditionOnPVC treats as resize conditions (resize_util.go knownResizeConditions).
RESIZE_CONDITION_TYPES = frozenset(["Resizing", "FileSystemResizePending", "ControllerResizeError", "NodeResizeError"])
RESIZING = "Resizing"
FS_RESIZE_PENDING = "FileSystemResizePending"
# resize_util.go MarkForFSResize, external-resizer markForPendingNodeExpansion: what kubectl describe pvc shows
FS_RESIZE_PENDING_MESSAGE = "Waiting for user to (re-)start a pod to finish file system resize of volume on node."


def is_resize_condition(condition_type):
    """True for a condition MarkFSResizeFinished removes."""
    return condition_type in RESIZE_CONDITION_TYPES or "Resiz" in (condition_type or "")


def utc_now():
    """metav1.Now() as the API serializes it (RFC 3339, seconds, UTC)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def resize_condition(condition_type, at, message=None):
    condition = {"type": condition_type, "status": "True", "lastProbeTime": None, "lastTransitionTime": at}
    if message:
        condition["message"] = message
    return condition


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

    def _change_claim_status(self, pvc_key, reason, change):
        """Apply ``change(status)`` to a PVC's status dict; the labels of what changed (none when nothing did)."""
        namespace, name = pvc_key.split("/")
        pvc = self.pvcs.get((namespace, name))
        if pvc is None:
            self._missing("PersistentVolumeClaim", pvc_key, reason)
        before = copy.deepcopy(pvc)
        status = pvc.get("status") if isinstance(pvc.get("status"), dict) else {}
        change(status)
        pvc["status"] = status
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
        return self._change_claim_status(record["pvc"], "cannot record that its file system was expanded", change)
