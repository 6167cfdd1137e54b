# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CreateSnapshot and DeleteSnapshot of an external CSI driver, over its Controller service's socket, as the
external-snapshotter's sidecar makes them (kubernetes-csi/external-snapshotter pkg/sidecar-controller
snapshot_controller.go createSnapshotWrapper, deleteCSISnapshotOperation; pkg/snapshotter snapshotter.go).

- The plugin must report CONTROLLER_SERVICE and CREATE_DELETE_SNAPSHOT, or nothing is called.
- CreateSnapshot gets the name ``snapshot-<snapshot uid>``, the source volume's handle, the class's parameters and
  its snapshotter secret; the answer (snapshot_id, size_bytes, creation_time, ready_to_use) goes into the content's
  and the snapshot's status. A snapshot not yet ready to use is asked again by the next run (the sidecar polls
  CreateSnapshot with the same name, which a driver answers with the snapshot it made).
- DeleteSnapshot gets the content's snapshot handle (and the deletion secret); NOT_FOUND is success (the CSI spec's
  idempotence).

A restore or a clone is a CreateVolume with a content source: the plugin must then report CREATE_DELETE_SNAPSHOT or
CLONE_VOLUME (external-provisioner controller.go: "does not support snapshot"/"does not support clone").
Node-side code: mixed into the provisioner class (provisioner/external.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import CsiError
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external import requests as req


class _Named(object):
    """What the driver's errors name: the snapshot's content."""

    def __init__(self, name):
        self.pv_name = name


def source_capability(op):
    """The controller capability a CreateVolume with a content source needs (None: no source)."""
    source = (op.get("request") or {}).get("content_source") or {}
    if "snapshot" in source:
        return "CREATE_DELETE_SNAPSHOT"
    if "volume" in source:
        return "CLONE_VOLUME"
    return None


class Snapshotter(object):
    """The external-snapshotter's calls, mixed into a driver's provisioner class."""

    def _snapshot_caps(self, csi, item, step):
        services, _expansion = req.plugin_capabilities(csi.to_dict(self._call(csi, "GetPluginCapabilities")))
        caps = req.rpc_capabilities(csi.to_dict(self._call(csi, "ControllerGetCapabilities")))
        if "CONTROLLER_SERVICE" not in services or "CREATE_DELETE_SNAPSHOT" not in caps:
            raise self._refuse(item, step, "CSI driver does not support snapshots: controller CREATE_DELETE_SNAPSHOT "
                                           "capability is not reported",
                               "Nothing was called: name a VolumeSnapshotClass of a driver that takes snapshots")
        return caps

    def create_snapshot(self, op, secrets=None, check_mode=False):
        """CreateSnapshot of ``op`` (a create_snapshot operation); returns {called, taken}."""
        item = _Named(op["content_name"])
        with self._plugin(item, "create snapshot", controller=True) as csi:
            self._snapshot_caps(csi, item, "create snapshot")
            if check_mode:
                return {"called": False, "taken": None}
            body = {"source_volume_id": op["source_volume_id"], "name": op["name"],
                    "parameters": dict(op.get("parameters") or {})}
            if secrets:
                body["secrets"] = dict(secrets)
            answer = csi.to_dict(self._call(csi, "CreateSnapshot", body)).get("snapshot") or {}
            return {"called": True, "taken": {
                "snapshot_id": answer.get("snapshot_id") or "", "size_bytes": int(answer.get("size_bytes") or 0),
                "creation_time": answer.get("creation_time"), "ready_to_use": answer.get("ready_to_use") is True}}

    def delete_snapshot(self, op, secrets=None, check_mode=False):
        """DeleteSnapshot of ``op`` (a delete_snapshot operation); returns {called}."""
        item = _Named(op["content_name"])
        with self._plugin(item, "delete snapshot", controller=True) as csi:
            self._snapshot_caps(csi, item, "delete snapshot")
            if check_mode:
                return {"called": False}
            body = {"snapshot_id": op["snapshot_id"]}
            if secrets:
                body["secrets"] = dict(secrets)
            try:
                self._call(csi, "DeleteSnapshot", body)
            except CsiError as exc:
                if getattr(exc, "code", None) != "NOT_FOUND":
                    raise
            return {"called": True}
