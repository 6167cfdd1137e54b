# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the Kubernetes API store sends what the records changed: in which order, and each object's requests.

The order is the attach/detach controller's (docs/stores.md section 7, "Writes"):

- **Stages.** Records are written in their order, in stages: a stage ends before a record that acquires an
  attachment (``attach_intent``, ``attached``, ``in_use`` true) follows one that releases one (``detached``,
  ``in_use`` false). Every write of a stage is answered before the next stage is read and written, so a
  teardown's deleted VolumeAttachments and cleared node status are in the API before the next setup's
  VolumeAttachments are created: reconciler.go detaches before it attaches ("so that volumes referenced by
  pods that are rescheduled to a different node are detached first"), and the API never shows an RWO volume
  attached to two nodes.
- **Within a stage**: VolumeAttachments created or updated first (an attach: the attacher's
  ``status.attached`` before node_status_updater.go reports the volume in ``volumesAttached``), then the other
  changed objects in the order the records touched them, deletions last (a detach: the A/D reconciler's
  ``RemoveVolumeFromReportAsAttached`` and node status update before csi_attacher.go ``Detach`` deletes the
  VolumeAttachment).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

RELEASES = ("detached",)
ACQUIRES = ("attach_intent", "attached")
# the finalizers kubevol removes before it deletes an object, as their controllers would once nothing uses it: the
# pv-protection and pvc-protection controllers' (pkg/controller/volume/{pv,pvc}protection), which the admission plugin
# StorageObjectInUseProtection adds to every PV and claim, and the external-provisioner's on the PVs it provisions.
# Without kube-controller-manager nothing else removes them, and a deleted object would wait for ever.
# The external-snapshotter's on the snapshots and contents kubevol takes and binds (records/snapshot.py), as its
# common-controller removes them once a snapshot's content is gone or kept.
RELEASED_FINALIZERS = frozenset(("kubernetes.io/pv-protection", "kubernetes.io/pvc-protection",
                                 "external-provisioner.volume.kubernetes.io/finalizer",
                                 "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection",
                                 "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection",
                                 "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"))


def _direction(record):
    """'release', 'acquire' or None (a record that neither gives up nor takes an attachment)."""
    rtype = record["type"]
    if rtype == "in_use":
        return "acquire" if record["in_use"] else "release"
    if rtype in RELEASES:
        return "release"
    if rtype in ACQUIRES:
        return "acquire"
    return None


def write_stages(records):
    """The records' positions cut into stages: a new stage at each acquiring record that follows a releasing one
    in the same stage."""
    stages, current, released = [], [], False
    for position, record in enumerate(records):
        direction = _direction(record)
        if direction == "acquire" and released:
            stages.append(current)
            current, released = [], False
        released = released or direction == "release"
        current.append(position)
    if current:
        stages.append(current)
    return stages


def write_order(changes, diff):
    """One stage's changed objects (labels): VolumeAttachments created or updated first, then the others in the
    order the records touched them, deletions last."""
    order, seen = [], set()
    for summary in changes:
        for label in summary["objects"]:
            if label not in seen:
                seen.add(label)
                order.append(label)
    for label in list(diff["before"]) + list(diff["after"]):
        if label not in seen:
            seen.add(label)
            order.append(label)
    kept = [label for label in order if label in diff["after"]]
    attachments = [label for label in kept if label.startswith("VolumeAttachment/")]
    return (attachments + [label for label in kept if label not in attachments]
            + [label for label in order if label in diff["before"] and label not in diff["after"]])


def merge_patch(before, after):
    """The JSON merge patch (RFC 7386) that turns ``before`` into ``after``; {} when equal."""
    patch = {}
    for key in before:
        if key not in after:
            patch[key] = None
    for key, value in after.items():
        old = before.get(key, _MISSING)
        if old is _MISSING:
            patch[key] = copy.deepcopy(value)
        elif isinstance(old, dict) and isinstance(value, dict):
            sub = merge_patch(old, value)
            if sub:
                patch[key] = sub
        elif old != value:
            patch[key] = copy.deepcopy(value)
    return patch


_MISSING = object()


class Retry(Exception):
    """A write lost a race (409, or 404 on an update): re-read and apply the records again."""

    def __init__(self, what):
        super(Retry, self).__init__(what)
        self.what = what


def write_object(store, resource, label, current, wanted):
    """Send one object's change: create, delete, or patch object and status with the read resourceVersion.
    Returns the object as the API server answered it after the last request (None: deleted)."""
    obj = wanted if wanted is not None else current
    meta = obj["metadata"]
    name, namespace = meta["name"], meta.get("namespace")
    if current is None:
        body = dict((k, v) for k, v in wanted.items() if k != "status")
        status, data = store._request("POST", resource.path(namespace=namespace), body=body)
        if status == 409:
            raise Retry(label)  # AlreadyExists: someone created it meanwhile
        if status not in (200, 201):
            raise store._error("POST", resource, label, status, data)
        if wanted.get("status"):
            rv = (data.get("metadata") or {}).get("resourceVersion")
            data = _patch(store, resource, label, name, namespace, "status",
                          {"metadata": {"resourceVersion": rv}, "status": wanted["status"]})
        return _typed(resource, data)
    rv = current["metadata"].get("resourceVersion")
    if wanted is None:
        finalizers = current["metadata"].get("finalizers") or []
        kept = [f for f in finalizers if f not in RELEASED_FINALIZERS]
        if kept != finalizers:
            # the protection finalizers first (a claim being deleted goes with them); someone else's stay
            answer = _patch(store, resource, label, name, namespace, None,
                            {"metadata": {"resourceVersion": rv, "finalizers": kept or None}})
            rv = (answer.get("metadata") or {}).get("resourceVersion", rv)
            if current["metadata"].get("deletionTimestamp"):
                return None  # already being deleted: it goes now (or once the finalizers kept are removed)
        body = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if rv:
            body["preconditions"] = {"resourceVersion": rv}
        status, data = store._request("DELETE", resource.path(name, namespace), body=body)
        if status == 409:
            raise Retry(label)
        if status not in (200, 202, 404):  # 404: already gone, which is what we wanted
            raise store._error("DELETE", resource, label, status, data)
        return None
    answer = current
    patch = merge_patch(_without_status(current), _without_status(wanted))
    if patch:
        patch.setdefault("metadata", {})["resourceVersion"] = rv
        answer = _patch(store, resource, label, name, namespace, None, patch)
        rv = (answer.get("metadata") or {}).get("resourceVersion", rv)
    status_patch = merge_patch({"status": current.get("status") or {}}, {"status": wanted.get("status") or {}})
    if status_patch:
        status_patch["metadata"] = {"resourceVersion": rv}
        answer = _patch(store, resource, label, name, namespace, "status", status_patch)
    return _typed(resource, answer)


def _without_status(obj):
    return dict((k, v) for k, v in obj.items() if k != "status")


def _typed(resource, data):
    data = data if isinstance(data, dict) else {}
    data.setdefault("kind", resource.kind)
    data.setdefault("apiVersion", resource.api_version)
    return data


def _patch(store, resource, label, name, namespace, subresource, patch):
    status, data = store._request("PATCH", resource.path(name, namespace, subresource), body=patch,
                                  content_type="application/merge-patch+json")
    if status in (404, 409):
        raise Retry(label)
    if status != 200:
        raise store._error("PATCH", resource, label + ("/" + subresource if subresource else ""), status, data,
                           subresource)
    return data if isinstance(data, dict) else {}
