# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The records of snapshots, as the external-snapshotter's controllers write them:

============================  ======================================================================================
record                        what it writes, and who does it in Kubernetes
============================  ======================================================================================
``snapshot_created``          the VolumeSnapshotContent of a snapshot CreateSnapshot made (``content``, with its
                              status), then the VolumeSnapshot's status bound to it (``status``), unless the
                              snapshot is gone or replaced meanwhile (then the content stays, and a later run
                              deletes it by its deletionPolicy): common-controller createSnapshotContent,
                              updateSnapshotStatus; sidecar-controller updateSnapshotContentStatus
``snapshot_bound``            a pre-provisioned snapshot bound to its content: the content's volumeSnapshotRef uid
                              and status (snapshotHandle, readyToUse), the snapshot's status: common-controller
                              checkandBindSnapshotContent, the sidecar's status from the handle
``snapshot_content_deleted``  the VolumeSnapshotContent, once DeleteSnapshot removed its snapshot
============================  ======================================================================================

``SnapshotRecords`` is a mixin of record.py's RecordApplier through records/provision.py's ProvisionRecords
(``items``, ``_touch``, ``_create``, ``_changed``, ``_deleted``, ``_touched``). The snapshot objects are few: they are
found by a pass over the items, not indexed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kubevol.volumes.plugins.module_utils.provision.volume import binary_si


def _find(items, kind, namespace, name):
    for obj in items:
        if isinstance(obj, dict) and obj.get("kind") == kind and isinstance(obj.get("metadata"), dict):
            meta = obj["metadata"]
            if meta.get("name") == name and (namespace is None or (meta.get("namespace") or "default") == namespace):
                return obj
    return None


def _section(obj, key):
    if not isinstance(obj.get(key), dict):
        obj[key] = {}
    return obj[key]


class SnapshotRecords:
    """The records of snapshots taken, bound and deleted."""

    def _snapshot(self, key, uid):
        namespace, name = key.split("/", 1)
        found = _find(self.items, "VolumeSnapshot", namespace, name)
        if found is None or (uid and (found.get("metadata") or {}).get("uid") != uid):
            return None
        return found

    def _snapshot_created(self, record):
        wanted = record.get("content")
        if not isinstance(wanted, dict) or not isinstance(record.get("status"), dict) or \
                (wanted.get("metadata") or {}).get("name") != record["content_name"]:
            self._missing("VolumeSnapshotContent", record["content_name"], "the record has no content and status")
        labels = []
        content = _find(self.items, "VolumeSnapshotContent", None, wanted["metadata"]["name"])
        if content is None:
            content = copy.deepcopy(wanted)
            labels.append(self._create(content))
        else:
            labels.extend(self._changed(content, lambda obj: _section(obj, "status").update(wanted["status"])))
        snapshot = self._snapshot(record["snapshot"], record["snapshot_uid"])
        if snapshot is None:
            return labels  # gone or replaced meanwhile: the content is deleted by its deletionPolicy later
        labels.extend(self._changed(snapshot, lambda obj: _section(obj, "status").update(record["status"])))
        return labels

    def _snapshot_bound(self, record):
        labels = []
        content = _find(self.items, "VolumeSnapshotContent", None, record["content_name"])
        snapshot = self._snapshot(record["snapshot"], record["snapshot_uid"])
        if content is None or snapshot is None:
            return labels
        size = record.get("restore_size")

        def content_change(obj):
            _section(_section(obj, "spec"), "volumeSnapshotRef")["uid"] = record["snapshot_uid"]
            status = _section(obj, "status")
            status.update(snapshotHandle=record["snapshot_handle"], readyToUse=True)
            if size is not None:
                status["restoreSize"] = size

        def snapshot_change(obj):
            status = _section(obj, "status")
            status.update(boundVolumeSnapshotContentName=record["content_name"], readyToUse=True)
            if size is not None:
                status["restoreSize"] = binary_si(size)
        labels.extend(self._changed(content, content_change))
        labels.extend(self._changed(snapshot, snapshot_change))
        return labels

    def _snapshot_content_deleted(self, record):
        content = _find(self.items, "VolumeSnapshotContent", None, record["content_name"])
        if content is None:
            return []
        label = self._touch(content)
        self._deleted.add(id(content))
        self._touched[label] = None
        return [label]


HANDLERS = {
    "snapshot_created": SnapshotRecords._snapshot_created,
    "snapshot_bound": SnapshotRecords._snapshot_bound,
    "snapshot_content_deleted": SnapshotRecords._snapshot_content_deleted,
}
REQUIRED_KEYS = {
    "snapshot_created": ("snapshot", "snapshot_uid", "content_name"),  # and content, status: mappings
    "snapshot_bound": ("snapshot", "snapshot_uid", "content_name", "snapshot_handle"),
    "snapshot_content_deleted": ("content_name",),
}
