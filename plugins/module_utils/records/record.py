# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write back to the cluster what the node operations did, as Kubernetes records it.

Pure functions on the raw List dict (``{"apiVersion": "v1", "kind": "List", "items": [...]}``).
They change it in place and say whether anything changed, so applying a record twice is a no-op.

RecordApplier indexes the List, keeps the diff's before and after, and hands each record to its kind's handler.
The kinds live by concern, each with the Kubernetes code it mimics (docs/stores.md has the full table):

- attachment.py: ``attach_intent``, ``attached``, ``detached``, ``in_use``, ``detach_requested``,
  ``detach_request_cleared`` (the VolumeAttachment and the Node's volumesAttached and volumesInUse).
- claim.py: ``resize_intent``, ``controller_expanded``, ``node_expanded``, ``node_expansion_pending`` (the PV's
  capacity and the claim's expansion state and resize conditions, as the external-resizer and the kubelet write them).
- provision.py and snapshot.py: a claim's life from provisioning to release, the kubelet's CSI registration, and
  snapshots.

shape.py validates each record's shape before any is applied; ``validate_record`` is importable from here too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    InvalidInput,
    KubevolError,
    MalformedObject,
)
from ansible_collections.kubevol.volumes.plugins.module_utils.records import attachment, provision
from ansible_collections.kubevol.volumes.plugins.module_utils.records.claim import ClaimRecords
from ansible_collections.kubevol.volumes.plugins.module_utils.records.shape import validate_record


class ObjectNotFound(KubevolError):
    """A record names a Node, PV, claim or snapshot content the cluster does not hold (deleted since the plan, or a
    record written by hand): kubevol writes records on the objects it is given and never creates one to hold them."""
    code = "KV-OBJECT-MISSING"
    message = ("{kind} {name} is not in the cluster state: {reason}; check the name, and if the object was deleted "
               "since the plan, run again to plan from the cluster as it is now (with a state file, write it again "
               "with kubectl get nodes,pods,pv,pvc,volumeattachments,csidrivers -A -o yaml)")


def _label(obj):
    meta = obj.get("metadata") or {}
    if meta.get("namespace"):
        return "%s/%s/%s" % (obj.get("kind"), meta["namespace"], meta.get("name"))
    return "%s/%s" % (obj.get("kind"), meta.get("name"))


class RecordApplier(attachment.AttachmentRecords, ClaimRecords, provision.ProvisionRecords):
    """Applies records to one List, with one index built up front.

    Indexing scans the items once (Nodes, PVs, PVCs, VolumeAttachments; Pods are skipped), so each
    record costs O(1) plus the size of the one node's status lists. Deleted VolumeAttachments leave
    the index at once and the items list is compacted once in finish(); node status lists touched
    are re-sorted once in finish(). The first touch of an object keeps a copy for the diff.
    """

    def __init__(self, cluster_list):
        if not isinstance(cluster_list, dict) or not isinstance(cluster_list.get("items"), list):
            raise MalformedObject(kind="List", name="cluster state", field="items",
                                  reason="expected a Kubernetes List ({'kind': 'List', 'items': [...]})")
        self.cluster_list = cluster_list
        self.items = cluster_list["items"]
        self.nodes = {}
        self.pvs = {}
        self.pvcs = {}
        self.vas = {}
        self._deleted = set()
        self._before = {}      # label -> deep copy before the first change (None: created here)
        self._touched = {}     # label -> the live object (None: deleted)
        self._dirty_nodes = {}
        tables = {"Node": self.nodes, "PersistentVolume": self.pvs, "VolumeAttachment": self.vas}
        for position, obj in enumerate(self.items):
            if not isinstance(obj, dict):
                continue
            kind = obj.get("kind")
            table = tables.get(kind)
            if table is None and kind != "PersistentVolumeClaim":
                continue
            meta = obj.get("metadata")
            name = meta.get("name") if isinstance(meta, dict) else None
            if not isinstance(name, str) or not name:
                raise MalformedObject(kind=kind, name="items[%d]" % position, field="metadata.name", reason="missing")
            if kind == "PersistentVolumeClaim":
                self.pvcs.setdefault((meta.get("namespace") or "default", name), obj)
            else:
                table.setdefault(name, obj)

    # -- bookkeeping ---------------------------------------------------------------------------
    def _touch(self, obj):
        label = _label(obj)
        if label not in self._before:
            self._before[label] = copy.deepcopy(obj)
        self._touched[label] = obj
        return label

    def _created(self, obj):
        label = _label(obj)
        self._before.setdefault(label, None)
        self._touched[label] = obj
        return label

    _label = staticmethod(_label)

    @staticmethod
    def _missing(kind, name, reason):
        raise ObjectNotFound(kind=kind, name=name, reason=reason)

    def _node(self, name, required, reason):
        node = self.nodes.get(name)
        if node is None and required:
            raise ObjectNotFound(kind="Node", name=name, reason=reason)
        return node

    # -- record kinds ---------------------------------------------------------------------------
    _HANDLERS = dict(attachment.HANDLERS)  # VolumeAttachments and node status: records/attachment.py
    _HANDLERS.update({
        "controller_expanded": ClaimRecords._controller_expanded,
        "node_expanded": ClaimRecords._node_expanded,
        "resize_intent": ClaimRecords._resize_intent,
        "node_expansion_pending": ClaimRecords._node_expansion_pending,
    })
    _HANDLERS.update(provision.HANDLERS)  # a claim's life and the kubelet's CSI registration: records/provision.py

    # -- public ---------------------------------------------------------------------------------
    def apply(self, record, index=None):
        """Apply one record; return the labels ("Kind/name") of the objects it changed."""
        rtype = validate_record(record, index)
        return self._HANDLERS[rtype](self, record)

    def apply_all(self, records):
        """Validate every record, then apply them in order; return the change summaries."""
        if not isinstance(records, list):
            raise InvalidInput(field="records", value=records, reason="must be a list of record dicts")
        for position, record in enumerate(records):
            validate_record(record, position)
        changes = []
        try:
            for position, record in enumerate(records):
                objects = self.apply(record, position)
                if objects:
                    changes.append(summarize(record, position, objects))
        finally:
            self.finish()
        return changes

    def finish(self):
        """Write back cached node status lists and drop deleted objects from the items."""
        self._flush_nodes()
        if self._deleted:
            deleted = self._deleted
            self.items[:] = [obj for obj in self.items if id(obj) not in deleted]
            self._deleted = set()

    def diff(self):
        """{before: {label: object}, after: {label: object}} for the objects that really changed."""
        before, after = {}, {}
        for label in sorted(self._touched):
            old, new = self._before.get(label), self._touched[label]
            if old == new:
                continue
            if old is not None:
                before[label] = old
            if new is not None:
                after[label] = copy.deepcopy(new)
        return {"before": before, "after": after}


def summarize(record, index, objects):
    """A JSON-friendly line per changed record."""
    summary = {"index": index, "type": record["type"], "objects": objects}
    for key in ("node", "pv_name", "volume", "pvc", "capacity", "in_use", "unique_volume_names", "requested_at"):
        if key in record:
            summary[key] = record[key]
    return summary


def apply_records(cluster_list, records):
    """Apply records in order to the List in place; return summaries of the records that changed something.

    All records are validated before any is applied. A record that names a missing object raises
    after the earlier records were applied: callers that need all-or-nothing apply to a copy (the
    stores re-read the file and write only when every record applied).
    """
    return RecordApplier(cluster_list).apply_all(records)
