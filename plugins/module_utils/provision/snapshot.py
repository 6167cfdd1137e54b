# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The VolumeSnapshotContent of a snapshot kubevol took and the status it gives the VolumeSnapshot, as the
external-snapshotter writes them (kubernetes-csi/external-snapshotter pkg/common-controller snapshot_controller.go
createSnapshotContent, updateSnapshotStatus; pkg/sidecar-controller snapshot_controller.go
updateSnapshotContentStatus): the content names the snapshot (``volumeSnapshotRef`` with its uid), its driver, its
class, ``source.volumeHandle``, ``sourceVolumeMode`` and the deletion policy, and keeps the snapshotter secret in its
deletion-secret annotations; its status has snapshotHandle, readyToUse, restoreSize (bytes) and creationTime
(nanoseconds since the epoch); the snapshot's status has boundVolumeSnapshotContentName, readyToUse, restoreSize (a
quantity) and creationTime (a timestamp).

Pure: the run's record step calls ``snapshot_created`` with CreateSnapshot's answer.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import re
import time

from ansible_collections.kubevol.volumes.plugins.module_utils.provision.volume import binary_si

API_VERSION = "snapshot.storage.k8s.io/v1"
DELETION_SECRET_NAME = "snapshot.storage.kubernetes.io/deletion-secret-name"
DELETION_SECRET_NAMESPACE = "snapshot.storage.kubernetes.io/deletion-secret-namespace"
_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$")


def nanoseconds(stamp):
    """An RFC 3339 UTC timestamp (as protobuf's JSON prints a Timestamp) in nanoseconds since the epoch; None when
    it is not one."""
    found = _RFC3339.match(stamp or "")
    if not found:
        return None
    seconds = calendar.timegm(time.strptime(found.group(1), "%Y-%m-%dT%H:%M:%S"))
    return seconds * 10 ** 9 + int((found.group(2) or "0").ljust(9, "0"))


def timestamp(stamp):
    """The timestamp as metav1.Time prints it (seconds, UTC)."""
    found = _RFC3339.match(stamp or "")
    return found.group(1) + "Z" if found else None


def snapshot_created(op, answer):
    """The ``snapshot_created`` record of a create_snapshot operation ``op`` and CreateSnapshot's ``answer``
    ({snapshot_id, size_bytes, creation_time, ready_to_use})."""
    namespace, name = op["snapshot"].split("/", 1)
    meta = {"name": op["content_name"]}
    if op.get("secret_ref"):
        secret_namespace, secret_name = op["secret_ref"].split("/", 1)
        meta["annotations"] = {DELETION_SECRET_NAME: secret_name, DELETION_SECRET_NAMESPACE: secret_namespace}
    size = int(answer.get("size_bytes") or 0)
    status = {"snapshotHandle": answer["snapshot_id"], "readyToUse": bool(answer.get("ready_to_use")),
              "restoreSize": size}
    created = nanoseconds(answer.get("creation_time"))
    if created is not None:
        status["creationTime"] = created
    content = {"apiVersion": API_VERSION, "kind": "VolumeSnapshotContent", "metadata": meta,
               "spec": {"deletionPolicy": op["deletion_policy"], "driver": op["driver"],
                        "source": {"volumeHandle": op["source_volume_id"]},
                        "volumeSnapshotClassName": op["class_name"],
                        "volumeSnapshotRef": {"apiVersion": API_VERSION, "kind": "VolumeSnapshot",
                                              "namespace": namespace, "name": name, "uid": op["snapshot_uid"]}},
               "status": status}
    if op.get("source_volume_mode"):
        content["spec"]["sourceVolumeMode"] = op["source_volume_mode"]
    snapshot_status = {"boundVolumeSnapshotContentName": op["content_name"], "readyToUse": status["readyToUse"],
                       "restoreSize": binary_si(size)}
    if timestamp(answer.get("creation_time")):
        snapshot_status["creationTime"] = timestamp(answer.get("creation_time"))
    return {"type": "snapshot_created", "snapshot": op["snapshot"], "snapshot_uid": op["snapshot_uid"],
            "content_name": op["content_name"], "content": content, "status": snapshot_status,
            "claim": op.get("claim")}
