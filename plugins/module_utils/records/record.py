# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write back to the cluster what the node operations did, as Kubernetes records it.

Pure functions on the raw List dict (``{"apiVersion": "v1", "kind": "List", "items": [...]}``).
They change it in place and say whether anything changed, so applying a record twice is a no-op.

Record kinds and the Kubernetes code each one mimics (docs/stores.md has the full table):

- ``attached``: pkg/volume/csi/csi_attacher.go ``Attach`` (the VolumeAttachment) plus the external
  attacher's ``status.attached``/``attachmentMetadata``, and the A/D controller's node status
  updater (``node.status.volumesAttached``, sorted by name).
- ``detached``: csi_attacher.go ``Detach`` (delete the VolumeAttachment) and the A/D controller's
  ``RemoveVolumeFromReportAsAttached``; the kubelet drops the name from ``volumesInUse``.
- ``in_use``: kubelet volume_manager.go ``GetVolumesInUse`` -> ``node.status.volumesInUse``.
- ``resize_intent``, ``controller_expanded``, ``node_expanded``, ``node_expansion_pending``: the PV's capacity and
  the claim's expansion state and resize conditions, as the external-resizer and the kubelet write them (claim.py).
- ``detach_requested`` / ``detach_request_cleared``: the A/D controller's ``SetDetachRequestTime`` /
  ``ResetDetachRequestTime``, kept on the VolumeAttachment because kubevol has no memory between runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    InvalidInput,
    KubevolError,
    MalformedObject,
)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (
    CSI_NODE_ID_ANNOTATION,
    DETACH_REQUESTED_AT_ANNOTATION,
    unique_volume_name,
    volume_attachment_name,
)
from ansible_collections.kubevol.volumes.plugins.module_utils.records.claim import ClaimRecords
from ansible_collections.kubevol.volumes.plugins.module_utils.records import provision
from ansible_collections.kubevol.volumes.plugins.module_utils.records.shape import detached_by_name, validate_record
from ansible_collections.kubevol.volumes.plugins.module_utils.common.volume_attachment import attached_volume_attachment


class ObjectNotFound(KubevolError):
    message = ("{kind} {name} is not in the cluster state: {reason}; check the name, "
               "or refresh the state (kubectl get nodes,pods,pv,pvc,volumeattachments,csidrivers -A -o yaml)")


def _label(obj):
    meta = obj.get("metadata") or {}
    if meta.get("namespace"):
        return "%s/%s/%s" % (obj.get("kind"), meta["namespace"], meta.get("name"))
    return "%s/%s" % (obj.get("kind"), meta.get("name"))


class _NodeStatus:
    """A Node's status.volumesAttached (by unique volume name) and volumesInUse (a set) while records apply to it:
    each record changes these, and write_back() writes the lists once, sorted, as the kubelet and the A/D
    controller keep them."""

    __slots__ = ("node", "attached", "in_use", "dirty")

    def __init__(self, node):
        status = node.get("status")
        if not isinstance(status, dict):
            status = {}
        self.node = node
        self.attached = dict((e.get("name"), e) for e in (status.get("volumesAttached") or []) if isinstance(e, dict))
        self.in_use = set(status.get("volumesInUse") or [])
        self.dirty = False

    def write_back(self):
        status = self.node.get("status")
        if not isinstance(status, dict):
            status = self.node["status"] = {}
        if self.attached:
            status["volumesAttached"] = [self.attached[k] for k in sorted(self.attached)]
        else:
            status.pop("volumesAttached", None)
        if self.in_use:
            status["volumesInUse"] = sorted(self.in_use)
        else:
            status.pop("volumesInUse", None)


class RecordApplier(ClaimRecords, provision.ProvisionRecords):
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

    def _node_status(self, node):
        """The node's status lists (_NodeStatus), read once per node for this run and written back by finish()."""
        label = _label(node)
        cached = self._dirty_nodes.get(label)
        if cached is None:
            cached = self._dirty_nodes[label] = _NodeStatus(node)
        return cached

    # -- node status ----------------------------------------------------------------------------
    def _set_attached(self, node, name, device_path):
        cached = self._node_status(node)
        entry = cached.attached.get(name)
        if entry is not None and entry.get("devicePath", "") == device_path:
            return False
        self._touch(node)
        cached.attached[name] = {"devicePath": device_path, "name": name}
        cached.dirty = True
        return True

    def _remove_attached(self, node, name):
        cached = self._node_status(node)
        if name not in cached.attached:
            return False
        self._touch(node)
        del cached.attached[name]
        cached.dirty = True
        return True

    def _set_in_use(self, node, names, in_use):
        cached = self._node_status(node)
        current = cached.in_use
        todo = [n for n in names if (n in current) != in_use]
        if not todo:
            return False
        self._touch(node)
        if in_use:
            current.update(todo)
        else:
            current.difference_update(todo)
        cached.dirty = True
        return True

    def _flush_nodes(self):
        for cached in self._dirty_nodes.values():
            if cached.dirty:
                cached.write_back()
        self._dirty_nodes = {}

    # -- VolumeAttachments ----------------------------------------------------------------------
    @staticmethod
    def _va_name(record):
        if record.get("driver") is None and record.get("volume_handle") is None and record.get("name"):
            return record["name"]
        return volume_attachment_name(record["volume_handle"], record["driver"], record["node"])

    @staticmethod
    def _va_differs(va, wanted_spec, device_path, wanted_metadata=None, node_id=None):
        """Whether recording an attach would change this VolumeAttachment."""
        annotations = va["metadata"].get("annotations")
        annotations = annotations if isinstance(annotations, dict) else {}
        if node_id and annotations.get(CSI_NODE_ID_ANNOTATION) != node_id:
            return True
        spec = va.get("spec") if isinstance(va.get("spec"), dict) else {}
        if any(spec.get(key) != value for key, value in wanted_spec.items()):
            return True
        status = va.get("status") if isinstance(va.get("status"), dict) else {}
        metadata = status.get("attachmentMetadata") if isinstance(status.get("attachmentMetadata"), dict) else {}
        if status.get("attached") is not True or "attachError" in status:
            return True
        if wanted_metadata is not None:
            if metadata != wanted_metadata:
                return True
        elif metadata.get("devicePath") != device_path:
            return True
        return DETACH_REQUESTED_AT_ANNOTATION in annotations

    def _delete_va(self, va):
        label = self._touch(va)
        del self.vas[va["metadata"]["name"]]
        self._deleted.add(id(va))
        self._touched[label] = None

    # -- record kinds ---------------------------------------------------------------------------
    def _attached(self, record):
        node = self._node(record["node"], True, "cannot record that %s is attached to it" % record["pv_name"])
        # an external CSI driver's publish_context is the whole attachmentMetadata (external-attacher csiAttach)
        wanted_metadata = record.get("attachment_metadata") if isinstance(record.get("attachment_metadata"),
                                                                          dict) else None
        # the CSI node id a remote controller published to (run/controller_outcome.py)
        node_id = record.get("node_id") if isinstance(record.get("node_id"), str) else None
        wanted = attached_volume_attachment(record["driver"], record["volume_handle"], record["node"],
                                            record["pv_name"], record["device_path"], metadata=wanted_metadata,
                                            node_id=node_id)
        name = wanted["metadata"]["name"]
        device_path = record["device_path"] or ""
        wanted_spec = wanted["spec"]
        objects = []
        va = self.vas.get(name)
        if va is None:
            va = wanted
            provision.insert_in_kubectl_order(self.items, va)
            self.vas[name] = va
            objects.append(self._created(va))
        elif self._va_differs(va, wanted_spec, device_path, wanted_metadata, node_id):
            objects.append(self._touch(va))
            spec = va.get("spec") if isinstance(va.get("spec"), dict) else {}
            spec.update(wanted_spec)
            va["spec"] = spec
            status = va.get("status") if isinstance(va.get("status"), dict) else {}
            status["attached"] = True
            status.pop("attachError", None)
            metadata = status.get("attachmentMetadata") if isinstance(status.get("attachmentMetadata"), dict) else {}
            if wanted_metadata is not None:
                metadata = dict(wanted_metadata)
            else:
                metadata["devicePath"] = device_path
            status["attachmentMetadata"] = metadata
            va["status"] = status
            annotations = va["metadata"].get("annotations")
            if isinstance(annotations, dict) and DETACH_REQUESTED_AT_ANNOTATION in annotations:
                del annotations[DETACH_REQUESTED_AT_ANNOTATION]
                if not annotations:
                    del va["metadata"]["annotations"]
            if node_id:
                if not isinstance(va["metadata"].get("annotations"), dict):
                    va["metadata"]["annotations"] = {}
                va["metadata"]["annotations"][CSI_NODE_ID_ANNOTATION] = node_id
        uvn = unique_volume_name(record["driver"], record["volume_handle"])
        if self._set_attached(node, uvn, device_path):
            objects.append(_label(node))
        return objects

    def _detached(self, record):
        objects = []
        va = self.vas.get(self._va_name(record))
        if va is not None:
            self._delete_va(va)
            objects.append(_label(va))
        node = self._node(record["node"], False, "")
        if node is not None and not detached_by_name(record):
            uvn = unique_volume_name(record["driver"], record["volume_handle"])
            changed = self._remove_attached(node, uvn)
            changed = self._set_in_use(node, [uvn], False) or changed
            if changed:
                objects.append(_label(node))
        return objects

    def _in_use(self, record):
        node = self._node(record["node"], record["in_use"], "cannot mark volumes in use on it")
        if node is not None and self._set_in_use(node, record["unique_volume_names"], record["in_use"]):
            return [_label(node)]
        return []

    def _detach_requested(self, record):
        va = self.vas.get(self._va_name(record))
        if va is None:
            return []
        meta = va.get("metadata")
        annotations = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}
        if DETACH_REQUESTED_AT_ANNOTATION in annotations:
            return []  # SetDetachRequestTime keeps the first request time
        label = self._touch(va)
        annotations[DETACH_REQUESTED_AT_ANNOTATION] = record["requested_at"]
        meta["annotations"] = annotations
        return [label]

    def _detach_request_cleared(self, record):
        va = self.vas.get(self._va_name(record))
        if va is None:
            return []
        annotations = va["metadata"].get("annotations")
        if not isinstance(annotations, dict) or DETACH_REQUESTED_AT_ANNOTATION not in annotations:
            return []
        label = self._touch(va)
        del annotations[DETACH_REQUESTED_AT_ANNOTATION]
        if not annotations:
            del va["metadata"]["annotations"]
        return [label]

    def _attach_intent(self, record):
        """The A/D controller's first write (csi_attacher.go Attach): the VolumeAttachment, not yet attached, before
        the node acts. A run killed after the node attached still leaves the cluster knowing the attachment may
        exist: the planner counts it for Multi-Attach until the node reports otherwise."""
        self._node(record["node"], True, "cannot record the intent to attach %s to it" % record["pv_name"])
        wanted = attached_volume_attachment(record["driver"], record["volume_handle"], record["node"],
                                            record["pv_name"], None, attached=False)
        if wanted["metadata"]["name"] in self.vas:
            return []  # an attachment (confirmed or not) is already recorded
        provision.insert_in_kubectl_order(self.items, wanted)
        self.vas[wanted["metadata"]["name"]] = wanted
        return [self._created(wanted)]

    _HANDLERS = {
        "attach_intent": _attach_intent,
        "attached": _attached,
        "detached": _detached,
        "in_use": _in_use,
        "controller_expanded": ClaimRecords._controller_expanded,
        "node_expanded": ClaimRecords._node_expanded,
        "resize_intent": ClaimRecords._resize_intent,
        "node_expansion_pending": ClaimRecords._node_expansion_pending,
        "detach_requested": _detach_requested,
        "detach_request_cleared": _detach_request_cleared,
    }
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
