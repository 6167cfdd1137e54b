# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A driver that forwards CSI's verbs to a real CSI plugin over gRPC on its unix socket (issue 27, first part).

As the kubelet (pkg/volume/csi: csi_client.go, csi_attacher.go Attach/MountDevice/UnmountDevice/Detach,
csi_mounter.go SetUpAt/TearDownAt, expander.go) and the external-attacher and -resizer call a plugin:
GetPluginInfo must name the driver and Probe must answer ready before the first call; ControllerPublishVolume only
when the controller has PUBLISH_UNPUBLISH_VOLUME (else the volume is attached by the record alone, as the
external-attacher does), with the node id NodeGetInfo gives; NodeStageVolume only when the node plugin has
STAGE_UNSTAGE_VOLUME; NodeExpandVolume only when it has EXPAND_VOLUME and the controller said it is required.
The kubelet creates the staging directory and the target's parent; the plugin creates the target itself.

Not registered by default: a CSI driver name is mapped to ``ExternalDriver.named(name)`` by whoever wires it
(issue 27). Options (its driver_options entry): ``socket`` (default ``<kubelet>/plugins/<driver>/csi.sock``),
``controller_socket`` (default: the same socket, for a plugin that serves its controller on each node, as
csi-driver-host-path does), ``timeout`` (seconds per call, default 120 as the kubelet's csiTimeout).

Check mode makes only read-only calls (GetPluginInfo, Probe, capabilities, NodeGetInfo). A failed call fails the
volume with the driver's code and message; a non-final one (csi/errors.py) says the outcome is uncertain.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.client import DEFAULT_TIMEOUT, CsiClient
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import CsiError
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import (
    ATTACHABLE, BLOCK, CONTROLLER_EXPAND, NODE_EXPAND, STAGE_UNSTAGE, Attachment, Driver, Expansion)

# kubevol capability -> (service, CSI capability type) that grants it
_GRANTED_BY = {
    ATTACHABLE: ("controller", "PUBLISH_UNPUBLISH_VOLUME"),
    CONTROLLER_EXPAND: ("controller", "EXPAND_VOLUME"),
    STAGE_UNSTAGE: ("node", "STAGE_UNSTAGE_VOLUME"),
    NODE_EXPAND: ("node", "EXPAND_VOLUME"),
}


def access_mode(item):
    """The kubelet's asCSIAccessModeV1 (csi_client.go) from the PV's access modes, as the item carries them."""
    if item.multi_attach:
        return "MULTI_NODE_READER_ONLY" if item.read_only else "MULTI_NODE_MULTI_WRITER"
    return "SINGLE_NODE_WRITER"


def volume_capability(item):
    """csi_client.go: Block -> block access type; else mount with the PV's fsType and mountOptions."""
    if item.block:
        access = {"block": {}}
    else:
        access = {"mount": {"fs_type": item.fs_type, "mount_flags": list(item.mount_options)}}
    access["access_mode"] = {"mode": access_mode(item)}
    return access


class ExternalDriver(Driver):
    """CSI's verbs forwarded to the plugin serving ``NAME`` (see ``named``)."""

    NAME = None
    # what kubevol can forward; what the plugin has is asked at run time (can)
    CAPABILITIES = frozenset((ATTACHABLE, STAGE_UNSTAGE, CONTROLLER_EXPAND, NODE_EXPAND, BLOCK))
    OPTIONS = {"socket": {"type": "path"}, "controller_socket": {"type": "path"},
               "timeout": {"type": "float", "default": DEFAULT_TIMEOUT}}

    @classmethod
    def named(cls, name):
        """The driver class for CSI driver ``name``."""
        return type("ExternalDriver_%s" % name.replace(".", "_").replace("-", "_"), (cls,), {"NAME": name})

    def __init__(self, runner, kubelet_dir, node_name, options=None):
        super(ExternalDriver, self).__init__(runner, kubelet_dir, node_name, options)
        self._clients = {}
        self._caps = {}
        self._node_id = None

    # -- the plugin's sockets ----------------------------------------------------------------------
    def socket(self, service="node"):
        node = self.options.get("socket") or os.path.join(self.kubelet_dir, "plugins", self.NAME, "csi.sock")
        return (self.options.get("controller_socket") or node) if service == "controller" else node

    def _error(self, err, item, step):
        """A CsiError as the volume's failure: the driver's code and message, and whether the outcome is uncertain."""
        return KubevolError(str(err), node=self.node_name, volume=item.pv_name if item else None, step=step,
                            driver=self.NAME, code=err.code, uncertain=not err.final, socket=err.socket)

    def client(self, service="node", item=None):
        """An open client to the plugin's ``service`` socket, once checked: GetPluginInfo names this driver, Probe
        answers ready (csi_plugin.go: the kubelet registers a driver only after GetPluginInfo)."""
        path = self.socket(service)
        if path in self._clients:
            return self._clients[path]
        csi = CsiClient(path, timeout=float(self.options.get("timeout") or DEFAULT_TIMEOUT), driver=self.NAME,
                        node=self.node_name)
        try:
            csi.open()
            name = csi.call("GetPluginInfo").name
            probe = csi.call("Probe")
        except CsiError as err:
            csi.close()
            raise self._error(err, item, "find driver")
        problem = None
        if name != self.NAME:
            problem = "the plugin at %s is %r, not %s: point driver_options at %s's own socket" % (
                path, name, self.NAME, self.NAME)
        elif probe.HasField("ready") and not probe.ready.value:
            problem = "the plugin at %s answers Probe: not ready; check its log and run again" % path
        if problem:
            csi.close()
            raise KubevolError("driver %s on node %s: %s" % (self.NAME, self.node_name, problem), node=self.node_name,
                               volume=item.pv_name if item else None, step="find driver", driver=self.NAME)
        self._clients[path] = csi
        return csi

    def close(self):
        for csi in self._clients.values():
            csi.close()
        self._clients = {}

    def _call(self, service, method, request, item):
        csi = self.client(service, item)
        try:
            return csi.call(method, request)
        except CsiError as err:
            raise self._error(err, item, "CSI %s" % method)

    def plugin_capabilities(self, service, item=None):
        """The CSI capability types the plugin's ``service`` ("node" or "controller") has, asked once."""
        if service not in self._caps:
            method = "NodeGetCapabilities" if service == "node" else "ControllerGetCapabilities"
            csi = self.client(service, item)
            answer = csi.to_dict(self._call(service, method, None, item))
            self._caps[service] = frozenset(c.get("rpc", {}).get("type") for c in answer.get("capabilities", []))
        return self._caps[service]

    def can(self, capability):
        if capability not in self.CAPABILITIES:
            return False
        if capability not in _GRANTED_BY:
            return True
        service, csi_type = _GRANTED_BY[capability]
        return csi_type in self.plugin_capabilities(service)

    def node_id(self, item=None):
        """The plugin's id of this node (NodeGetInfo), as the kubelet puts it in CSINode."""
        if self._node_id is None:
            self._node_id = self._call("node", "NodeGetInfo", None, item).node_id
        return self._node_id

    # -- CSI's verbs -------------------------------------------------------------------------------
    def controller_publish(self, item, node_id, check_mode=False, provision=False):
        if not self.can(ATTACHABLE):
            return Attachment(device=None, publish_context={})  # attached by the record alone (external-attacher)
        csi_node = self.node_id(item)
        if check_mode:
            return Attachment(device=None, attached=True)
        answer = self._call("controller", "ControllerPublishVolume", {
            "volume_id": item.volume_handle, "node_id": csi_node, "volume_capability": volume_capability(item),
            "readonly": item.read_only, "volume_context": dict(item.volume_attributes)}, item)
        context = dict(answer.publish_context)
        return Attachment(device=context.get("devicePath"), attached=True, publish_context=context)

    def controller_unpublish(self, item, node_id, check_mode=False):
        if not self.can(ATTACHABLE):
            return None
        csi_node = self.node_id(item)
        if not check_mode:
            self._call("controller", "ControllerUnpublishVolume", {"volume_id": item.volume_handle,
                                                                   "node_id": csi_node}, item)
        return None

    def node_stage(self, item, staging_path, publish_context, check_mode=False, ctx=None, res=None, mounts=None,
                   force=False):
        if not self.can(STAGE_UNSTAGE):
            return None
        if res is not None:
            res["global_mount_path"] = staging_path
        if mounts is not None and mounts.mounted(staging_path):
            _note(res, staging_path, None, staging_path, staging_path)
            return staging_path
        _note(res, staging_path, "stage %s" % staging_path, None, staging_path)
        if not check_mode:
            os.makedirs(staging_path, mode=0o750, exist_ok=True)  # csi_attacher.go MountDevice creates it
            self._call("node", "NodeStageVolume", {
                "volume_id": item.volume_handle, "publish_context": dict(publish_context or {}),
                "staging_target_path": staging_path, "volume_capability": volume_capability(item),
                "volume_context": dict(item.volume_attributes)}, item)
        return staging_path

    def node_unstage(self, item, staging_path, check_mode=False, ctx=None, res=None, mounts=None):
        if not self.can(STAGE_UNSTAGE):
            return
        _note(res, staging_path, "unstage %s" % staging_path, staging_path, None, unmounted=True)
        if not check_mode:
            self._call("node", "NodeUnstageVolume", {"volume_id": item.volume_handle,
                                                     "staging_target_path": staging_path}, item)

    def node_publish(self, item, target_path, staging_path, publish_context, pod, check_mode=False, ctx=None,
                     res=None, mounts=None):
        if mounts is not None and mounts.mounted(target_path):
            _note(res, target_path, None, target_path, target_path)
            return
        _note(res, target_path, "publish %s" % target_path, None, target_path)
        if res is not None:
            res.setdefault("published", []).append(pod.uid)
        if check_mode:
            return
        os.makedirs(os.path.dirname(target_path), mode=0o750, exist_ok=True)  # the plugin creates the target
        request = {"volume_id": item.volume_handle, "publish_context": dict(publish_context or {}),
                   "target_path": target_path, "volume_capability": volume_capability(item),
                   "readonly": bool(pod.read_only or item.read_only), "volume_context": dict(item.volume_attributes)}
        if staging_path:
            request["staging_target_path"] = staging_path
        self._call("node", "NodePublishVolume", request, item)

    def node_unpublish(self, item, target_path, check_mode=False, ctx=None, res=None, mounts=None):
        _note(res, target_path, "unmount %s" % target_path, target_path, None, unmounted=True)
        if not check_mode:
            self._call("node", "NodeUnpublishVolume", {"volume_id": item.volume_handle, "target_path": target_path},
                       item)

    def controller_expand(self, item, check_mode=False):
        if not self.can(CONTROLLER_EXPAND):
            raise KubevolError("driver %s on node %s cannot expand volume %s: its controller has no EXPAND_VOLUME; "
                               "nothing was changed" % (self.NAME, self.node_name, item.pv_name),
                               node=self.node_name, volume=item.pv_name, step="expand (controller)")
        if check_mode:
            return Expansion(old_bytes=None, new_bytes=item.capacity_bytes)
        answer = self._call("controller", "ControllerExpandVolume", {
            "volume_id": item.volume_handle, "capacity_range": {"required_bytes": item.capacity_bytes},
            "volume_capability": volume_capability(item)}, item)
        return Expansion(old_bytes=None, new_bytes=int(answer.capacity_bytes),
                         node_expansion_required=bool(answer.node_expansion_required))

    def node_expand(self, item, volume_path, staging_path, check_mode=False, ctx=None, res=None):
        if not self.can(NODE_EXPAND):
            if res is not None:
                res["skipped"] = "driver %s's node plugin has no EXPAND_VOLUME: nothing to grow on the node" % self.NAME
            return res
        if res is not None:
            res["changed"] = True
        if check_mode:
            return res
        request = {"volume_id": item.volume_handle, "volume_path": volume_path or staging_path,
                   "capacity_range": {"required_bytes": item.capacity_bytes},
                   "volume_capability": volume_capability(item)}
        if staging_path:
            request["staging_target_path"] = staging_path
        answer = self._call("node", "NodeExpandVolume", request, item)
        if res is not None:
            res["fs_size_bytes"] = {"old": None, "new": int(answer.capacity_bytes) or None}
        return res


def _note(res, path, action, before, after, unmounted=False):
    """Report one verb in the volume's result (actions, changed, diff), as the device driver's steps do."""
    if res is None:
        return
    diff = res.setdefault("diff", {"before": {}, "after": {}})
    diff["before"][path] = before
    diff["after"][path] = after
    if action:
        res.setdefault("actions", []).append(action)
        res["changed"] = True
        if unmounted:
            res.setdefault("unmounted", []).append(path)
