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
``snapshot_content_deleted``  the VolumeSnapshotContent, once DeleteSnapshot removed its snapshot (its finalizer
                              removed first: the sidecar's removeContentFinalizer), then its VolumeSnapshot's
                              finalizers when it is being deleted, so it goes: common-controller
                              checkandRemoveSnapshotFinalizersAndCheckandDeleteContent
``snapshot_released``         a VolumeSnapshot being deleted whose content stays (Retain) or is gone: its
                              finalizers removed, so it goes (the same controller)
``snapshot_content_released`` a VolumeSnapshotContent being deleted whose snapshot is gone and that kubevol does
                              not delete on the storage (Retain): its finalizer removed, so it goes
============================  ======================================================================================

The finalizers, as the external-snapshotter writes them (pkg/utils util.go): a content kubevol writes or binds gets
``volumesnapshotcontent-bound-protection``; its VolumeSnapshot ``volumesnapshot-as-source-protection`` and
``volumesnapshot-bound-protection`` (NeedToAddSnapshotAsSourceFinalizer, NeedToAddSnapshotBoundFinalizer: a
``kubectl delete`` then only marks it, and kubevol removes them once the content went by its policy and no claim
restores from it); the source claim of a snapshot that CreateSnapshot answered not ready yet gets
``pvc-as-source-protection`` until a run finds the snapshot ready (checkandAddPVCFinalizer, checkandRemovePVCFinalizer).

``SnapshotRecords`` is a mixin of record.py's RecordApplier through records/provision.py's ProvisionRecords
(``items``, ``_touch``, ``_create``, ``_changed``, ``_deleted``, ``_touched``). The snapshot objects are few: they are
found by a pass over the items, not indexed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kubevol.volumes.plugins.module_utils.provision.volume import binary_si


PREFIX = "snapshot.storage.kubernetes.io/"
CONTENT_FINALIZER = PREFIX + "volumesnapshotcontent-bound-protection"
BOUND_FINALIZER = PREFIX + "volumesnapshot-bound-protection"
AS_SOURCE_FINALIZER = PREFIX + "volumesnapshot-as-source-protection"
PVC_FINALIZER = PREFIX + "pvc-as-source-protection"
SNAPSHOT_FINALIZERS = (AS_SOURCE_FINALIZER, BOUND_FINALIZER)


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


def _add_finalizers(*names):
    """A change that adds ``names`` to an object's finalizers (none to one being deleted, as NeedToAdd* checks)."""
    def change(obj):
        meta = _section(obj, "metadata")
        present = list(meta.get("finalizers") or [])
        if meta.get("deletionTimestamp"):
            return
        meta["finalizers"] = present + [name for name in names if name not in present]
    return change


def _without(obj, names):
    return [f for f in (obj.get("metadata") or {}).get("finalizers") or [] if f not in names]


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
            _add_finalizers(CONTENT_FINALIZER)(content)
            labels.append(self._create(content))
        else:
            def content_change(obj):
                _section(obj, "status").update(wanted["status"])
                _add_finalizers(CONTENT_FINALIZER)(obj)
            labels.extend(self._changed(content, content_change))
        labels.extend(self._source_claim(record))
        snapshot = self._snapshot(record["snapshot"], record["snapshot_uid"])
        if snapshot is None:
            return labels  # gone or replaced meanwhile: the content is deleted by its deletionPolicy later

        def snapshot_change(obj):
            _section(obj, "status").update(record["status"])
            _add_finalizers(*SNAPSHOT_FINALIZERS)(obj)
        labels.extend(self._changed(snapshot, snapshot_change))
        return labels

    def _source_claim(self, record):
        """pvc-as-source-protection on the snapshot's source claim while the snapshot is not ready; removed once it
        is."""
        if not record.get("claim"):
            return []
        namespace, name = record["claim"].split("/", 1)
        claim = _find(self.items, "PersistentVolumeClaim", namespace, name)
        if claim is None:
            return []
        if record["status"].get("readyToUse"):
            kept = _without(claim, (PVC_FINALIZER,))
            if kept == ((claim.get("metadata") or {}).get("finalizers") or []):
                return []
            return self._changed(claim, lambda obj: obj["metadata"].__setitem__("finalizers", kept))
        return self._changed(claim, _add_finalizers(PVC_FINALIZER))

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
            _add_finalizers(CONTENT_FINALIZER)(obj)

        def snapshot_change(obj):
            status = _section(obj, "status")
            status.update(boundVolumeSnapshotContentName=record["content_name"], readyToUse=True)
            if size is not None:
                status["restoreSize"] = binary_si(size)
            _add_finalizers(*SNAPSHOT_FINALIZERS)(obj)
        labels.extend(self._changed(content, content_change))
        labels.extend(self._changed(snapshot, snapshot_change))
        return labels

    def _snapshot_content_deleted(self, record):
        labels = []
        content = _find(self.items, "VolumeSnapshotContent", None, record["content_name"])
        if content is not None:
            labels.append(self._gone(content))
        if record.get("snapshot"):
            labels.extend(self._snapshot_released(record))
        return labels

    def _gone(self, obj):
        label = self._touch(obj)
        self._deleted.add(id(obj))
        self._touched[label] = None
        return label

    def _release(self, obj, names):
        """Remove kubevol's finalizers ``names`` from ``obj``, being deleted: it goes when no other is left (the API
        server removes it), else only those go."""
        kept = _without(obj, names)
        if not kept:
            return [self._gone(obj)]
        return self._changed(obj, lambda each: each["metadata"].__setitem__("finalizers", kept))

    def _snapshot_released(self, record):
        snapshot = self._snapshot(record["snapshot"], record.get("snapshot_uid"))
        if snapshot is None or not (snapshot.get("metadata") or {}).get("deletionTimestamp"):
            return []
        return self._release(snapshot, SNAPSHOT_FINALIZERS)

    def _snapshot_content_released(self, record):
        content = _find(self.items, "VolumeSnapshotContent", None, record["content_name"])
        if content is None or not (content.get("metadata") or {}).get("deletionTimestamp"):
            return []
        return self._release(content, (CONTENT_FINALIZER,))


HANDLERS = {
    "snapshot_created": SnapshotRecords._snapshot_created,
    "snapshot_bound": SnapshotRecords._snapshot_bound,
    "snapshot_content_deleted": SnapshotRecords._snapshot_content_deleted,
    "snapshot_released": SnapshotRecords._snapshot_released,
    "snapshot_content_released": SnapshotRecords._snapshot_content_released,
}
REQUIRED_KEYS = {
    "snapshot_created": ("snapshot", "snapshot_uid", "content_name"),  # and content, status: mappings
    "snapshot_bound": ("snapshot", "snapshot_uid", "content_name", "snapshot_handle"),
    "snapshot_content_deleted": ("content_name",),  # and snapshot, snapshot_uid: its VolumeSnapshot released
    "snapshot_released": ("snapshot",),
    "snapshot_content_released": ("content_name",),
}
