# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CreateVolume and DeleteVolume of an external CSI driver, over its Controller service's socket, as the
external-provisioner makes them (kubernetes-csi/external-provisioner pkg/controller/controller.go
checkDriverCapabilities, getVolumeCapabilities, Provision, Delete, checkError, cleanupVolume).

- The plugin must report CONTROLLER_SERVICE and CREATE_DELETE_VOLUME, or nothing is called.
- One VolumeCapability per access mode of the claim (csi-lib-utils ToCSIAccessMode, with SINGLE_NODE_MULTI_WRITER
  when the controller has it), ``block`` for a Block claim, else ``mount`` with the class's fsType and mountOptions.
- The accessibility requirements go only to a plugin with VOLUME_ACCESSIBILITY_CONSTRAINTS, and only then does the
  PV get a nodeAffinity from the answer's accessible_topology (the run's record step is told).
- A final answer fails the claim, nothing made; RESOURCE_EXHAUSTED is final here (no other node is tried: kubevol
  does not reschedule); CANCELLED, DEADLINE_EXCEEDED, UNAVAILABLE and ABORTED leave it uncertain, and the next run
  calls CreateVolume again with the same name, which a CSI driver answers with the volume it made (no second one).
- An answer with less than the request is deleted again (DeleteVolume, up to five tries) and fails the claim.

Node-side code: it runs on the host the driver's Controller service is on (module volume_provision_calls).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import (
    CsiError, CsiFinalError, CsiUncertainError)
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external import requests as req
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.driver import external_driver_class
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.snapshotter import (
    Snapshotter, source_capability)

CLEANUP_TRIES = 5  # external-provisioner deleteVolumeRetryCount


class _Named(object):
    """What the driver's errors name: the volume being made or deleted."""

    def __init__(self, name):
        self.pv_name = name


def capabilities(op, controller_caps):
    """The VolumeCapabilities of a CreateVolume: one per access mode (getVolumeCapabilities)."""
    request = op["request"]
    snmw = "SINGLE_NODE_MULTI_WRITER" in controller_caps
    caps = []
    for mode in request["access_modes"] or ("ReadWriteOnce",):
        access = {"mode": req.controller_access_mode((mode,), snmw)}
        if request["volume_mode"] == "Block":
            caps.append({"block": {}, "access_mode": access})
        else:
            mount = {"fs_type": request.get("fs_type") or ""}
            if request.get("mount_flags"):
                mount["mount_flags"] = list(request["mount_flags"])
            caps.append({"mount": mount, "access_mode": access})
    return caps


def create_request(op, controller_caps, topology, secrets):
    """The CreateVolumeRequest of a create_volume operation (a dict with the spec's field names)."""
    request = op["request"]
    body = {"name": op["name"], "capacity_range": {"required_bytes": int(request["capacity_bytes"] or 0)},
            "volume_capabilities": capabilities(op, controller_caps), "parameters": dict(request["parameters"])}
    if secrets:
        body["secrets"] = dict(secrets)
    if topology and request.get("accessibility_requirements"):
        body["accessibility_requirements"] = request["accessibility_requirements"]
    if request.get("content_source"):
        body["volume_content_source"] = request["content_source"]
    return body


class Provisioner(object):
    """The external-provisioner's calls, mixed into a driver's ExternalCsiDriver class (``provisioner_class``)."""

    def _provisioning_caps(self, csi, item, step):
        services, _expansion = req.plugin_capabilities(csi.to_dict(self._call(csi, "GetPluginCapabilities")))
        if "CONTROLLER_SERVICE" not in services:
            raise self._refuse(item, step, "CSI driver does not support dynamic provisioning: plugin "
                                           "CONTROLLER_SERVICE capability is not reported",
                               "Nothing was called: its StorageClass must name a driver that provisions")
        caps = req.rpc_capabilities(csi.to_dict(self._call(csi, "ControllerGetCapabilities")))
        if "CREATE_DELETE_VOLUME" not in caps:
            raise self._refuse(item, step, "CSI driver does not support dynamic provisioning: controller "
                                           "CREATE_DELETE_VOLUME capability is not reported",
                               "Nothing was called: its StorageClass must name a driver that provisions")
        return services, caps

    def _source_caps(self, item, op, caps):
        """A restore needs CREATE_DELETE_SNAPSHOT, a clone CLONE_VOLUME (checkDriverCapabilities)."""
        needed = source_capability(op)
        if needed is not None and needed not in caps:
            what = "restores from a snapshot" if needed == "CREATE_DELETE_SNAPSHOT" else "clones"
            raise self._refuse(item, "create volume", "CSI driver does not support %s: controller %s capability is "
                                                      "not reported" % (what, needed),
                               "Nothing was called: provision the claim without dataSource")

    def create_volume(self, op, secrets=None, check_mode=False):
        """CreateVolume of ``op`` (a create_volume operation); returns {called, volume, topology_supported}."""
        item = _Named(op["name"])
        with self._plugin(item, "create volume", controller=True) as csi:
            services, caps = self._provisioning_caps(csi, item, "create volume")
            self._source_caps(item, op, caps)
            topology = "VOLUME_ACCESSIBILITY_CONSTRAINTS" in services
            request = create_request(op, caps, topology, secrets)
            if check_mode:
                return {"called": False, "volume": None, "topology_supported": topology}
            try:
                volume = csi.to_dict(self._call(csi, "CreateVolume", request)).get("volume") or {}
            except CsiUncertainError as exc:
                if exc.code != "RESOURCE_EXHAUSTED":
                    raise
                # checkError: out of space, not in progress (CSI: "Unable to provision in accessible_topology")
                raise CsiFinalError(exc.method, exc.socket, exc.details, code=exc.code, volume_id=op["name"],
                                    driver=self.NAME, node=self.node_name,
                                    hint="The driver has no room for it; nothing was made") from None
            wanted = int(op["request"]["capacity_bytes"] or 0)
            made = int(volume.get("capacity_bytes") or 0)
            if made and made < wanted:
                self._clean_up(csi, volume.get("volume_id") or op["name"], secrets)
                raise self._refuse(item, "create volume", "created volume capacity %d less than requested capacity "
                                                          "%d" % (made, wanted),
                                   "The volume was deleted again; give the claim a size the driver can make")
            return {"called": True, "volume": volume, "topology_supported": topology}

    def _clean_up(self, csi, volume_id, secrets):
        body = {"volume_id": volume_id}
        if secrets:
            body["secrets"] = dict(secrets)
        error = None
        for _attempt in range(CLEANUP_TRIES):
            try:
                self._call(csi, "DeleteVolume", body)
                return
            except CsiError as exc:
                error = exc
        raise CsiUncertainError(error.method, error.socket, "%s; cleanup of volume %s failed, volume is orphaned"
                                % (error.details, volume_id), code=error.code, volume_id=volume_id)

    def delete_volume(self, op, secrets=None, check_mode=False):
        """DeleteVolume of ``op`` (a delete_volume operation); returns {called}."""
        item = _Named(op["pv_name"])
        with self._plugin(item, "delete volume", controller=True) as csi:
            self._provisioning_caps(csi, item, "delete volume")
            body = {"volume_id": op["volume_id"]}
            if secrets:
                body["secrets"] = dict(secrets)
            if not check_mode:
                self._call(csi, "DeleteVolume", body)
            return {"called": not check_mode}


_CLASSES = {}


def provisioner_class(name):
    """ExternalCsiDriver of driver ``name`` with the provisioner's calls."""
    if name not in _CLASSES:
        base = external_driver_class(name)
        _CLASSES[name] = type("CsiProvisioner[%s]" % name, (Provisioner, Snapshotter, base),
                              {"__module__": __name__})
    return _CLASSES[name]
