# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The records of attachment, as the A/D controller, the external attacher and the kubelet write them.

- ``attach_intent``: csi_attacher.go ``Attach``'s first write, the VolumeAttachment not yet attached.
- ``attached``: csi_attacher.go ``Attach`` (the VolumeAttachment) plus the external attacher's ``status.attached``/
  ``attachmentMetadata``, and the A/D controller's node status updater (``node.status.volumesAttached``, sorted by
  name).
- ``detached``: csi_attacher.go ``Detach`` (delete the VolumeAttachment) and the A/D controller's
  ``RemoveVolumeFromReportAsAttached``; the kubelet drops the name from ``volumesInUse``.
- ``in_use``: kubelet volume_manager.go ``GetVolumesInUse`` -> ``node.status.volumesInUse``.
- ``detach_requested`` / ``detach_request_cleared``: the A/D controller's ``SetDetachRequestTime`` /
  ``ResetDetachRequestTime``, kept on the VolumeAttachment because kubevol has no memory between runs.

``AttachmentRecords`` is a mixin of record.py's RecordApplier (``items``, ``vas``, ``_node``, ``_label``,
``_touch``, ``_created``, ``_deleted``, ``_touched``, ``_dirty_nodes``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (
    CSI_NODE_ID_ANNOTATION,
    DETACH_REQUESTED_AT_ANNOTATION,
    unique_volume_name,
    volume_attachment_name,
)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.volume_attachment import attached_volume_attachment
from ansible_collections.kubevol.volumes.plugins.module_utils.records import provision
from ansible_collections.kubevol.volumes.plugins.module_utils.records.shape import detached_by_name


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


class AttachmentRecords:
    """The records of VolumeAttachments and of a node's volumesAttached and volumesInUse."""

    # -- node status ----------------------------------------------------------------------------
    def _node_status(self, node):
        """The node's status lists (_NodeStatus), read once per node for this run and written back by finish()."""
        label = self._label(node)
        cached = self._dirty_nodes.get(label)
        if cached is None:
            cached = self._dirty_nodes[label] = _NodeStatus(node)
        return cached

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
            objects.append(self._label(node))
        return objects

    def _detached(self, record):
        objects = []
        va = self.vas.get(self._va_name(record))
        if va is not None:
            self._delete_va(va)
            objects.append(self._label(va))
        node = self._node(record["node"], False, "")
        if node is not None and not detached_by_name(record):
            uvn = unique_volume_name(record["driver"], record["volume_handle"])
            changed = self._remove_attached(node, uvn)
            changed = self._set_in_use(node, [uvn], False) or changed
            if changed:
                objects.append(self._label(node))
        return objects

    def _in_use(self, record):
        node = self._node(record["node"], record["in_use"], "cannot mark volumes in use on it")
        if node is not None and self._set_in_use(node, record["unique_volume_names"], record["in_use"]):
            return [self._label(node)]
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


HANDLERS = {
    "attach_intent": AttachmentRecords._attach_intent,
    "attached": AttachmentRecords._attached,
    "detached": AttachmentRecords._detached,
    "in_use": AttachmentRecords._in_use,
    "detach_requested": AttachmentRecords._detach_requested,
    "detach_request_cleared": AttachmentRecords._detach_request_cleared,
}
