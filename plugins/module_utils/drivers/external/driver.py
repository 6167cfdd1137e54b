# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``ExternalCsiDriver``: CSI's verbs forwarded to a real CSI plugin over its unix socket.

It decides as the kubelet (pkg/volume/csi: csi_client.go, csi_attacher.go, csi_mounter.go, csi_block.go,
expander.go) and the external-attacher and external-resizer decide, and does nothing of its own to a device:
the plugin formats, mounts and grows. One class serves any driver name: ``external_driver_class(name)``.

- The node plugin's socket (``node_socket``): ``<kubelet>/plugins_registry/<driver>-reg.sock`` (the
  registrar's GetInfo names the endpoint: registration.py), else ``<kubelet>/plugins/<driver>/csi.sock``, else
  ``driver_options[<driver>]["socket"]``. Every verb opens one connection (csi_client.go newGrpcConn), checks that
  GetPluginInfo names this driver and that Probe does not say "not ready", then asks for the capabilities it
  decides by.
- The Controller service: ``driver_options[<driver>]["controller"] == "node"``: this node's plugin serves it
  (csi-driver-host-path does). An inventory hostname (with ``controller_socket``): the controller plugin runs on
  that host, and only the run's controller task calls it there (``serve_controller_at``, module csi_controller);
  on a node a controller call is refused.
- Check mode makes only GetPluginInfo, Probe, NodeGetInfo, the capability calls (and the registrar's GetInfo).
- Errors: errors.py (final -> CsiVolumeFailed, non-final -> CsiVolumeUncertain, socket -> CsiDriverUnreachable).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import os
import re

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.common.value import REQUIRED, Value
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.csi import client as csi_client
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import CsiError
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import base
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external import requests as req
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.endpoint import find_node_socket
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.errors import from_csi, refused
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.settings import (  # noqa: F401
    CONTROLLER_ON_NODE, OPTIONS, driver_settings)

STAGE_UNSTAGE = getattr(base, "STAGE_UNSTAGE", "stage_unstage")  # drivers/base.py gains it with the verbs


def _extend(cls, name, extra):
    """``cls`` with the fields of ``extra`` it lacks (drivers/base.py's values gain them with the verbs)."""
    have = set(field for field, _default in cls.FIELDS)
    return type(name, (cls,), {"FIELDS": cls.FIELDS + tuple(f for f in extra if f[0] not in have),
                               "__module__": __name__})


# device "" as csi_attacher.go Attach returns: a CSI volume's node device is the plugin's business
CsiAttachment = _extend(base.Attachment, "CsiAttachment", (
    ("publish_context", None),  # Dict[str, str]: for status.attachmentMetadata, NodeStage and NodePublish
    ("node_id", ""),  # str: the plugin's node id (NodeGetInfo), as the CSINode records it
    ("by_record", False),  # bool: no ControllerPublishVolume: attached by the VolumeAttachment alone
    ("skipped", None)))  # Optional[str]: why no call was made
CsiExpansion = _extend(base.Expansion, "CsiExpansion", (
    ("node_expansion_required", False), ("called", False), ("skipped", None)))


class CsiStep(Value):
    """What a node verb (or controller_unpublish) did: ``called`` False with ``skipped`` saying why no call
    was due. In check mode ``called`` says the call a real run makes."""
    FIELDS = (
        ("called", REQUIRED),  # bool
        ("skipped", None),  # Optional[str]
        ("fs_group_delegated", False),  # bool: the plugin applies fsGroup (VOLUME_MOUNT_GROUP): kubevol must not
        ("readonly", False),  # bool: published read-only
        ("capacity_bytes", None),  # Optional[int]: NodeExpandVolume's answer
    )


class ExternalCsiDriver(base.Driver):
    """A CSI driver kubevol drives over its socket. Subclasses made by ``external_driver_class`` set NAME.

    CAPABILITIES say what the driver MAY do: each verb asks the plugin and decides as Kubernetes does (a
    missing STAGE_UNSTAGE_VOLUME makes node_stage a no-op, a controller without PUBLISH_UNPUBLISH_VOLUME
    attaches by record alone, ...). Inline ephemeral volumes: node/external_ephemeral.py (node_publish, unstaged)."""

    NAME = None
    CAPABILITIES = frozenset((base.ATTACHABLE, base.BLOCK, base.CONTROLLER_EXPAND, base.NODE_EXPAND, STAGE_UNSTAGE))
    NODE_HANDLER = "node.external_ops.ExternalHandler"  # its phases over the plugin's socket (drivers/base.py)
    OPTIONS = OPTIONS

    def __init__(self, runner, kubelet_dir, node_name, options=None):
        base.Driver.__init__(self, runner, kubelet_dir, node_name, options)
        self.settings = driver_settings(self.NAME, options)
        self.timeout = self.settings["timeout"]
        self.calls = []  # the CSI methods called, in order (names only: never a request)
        self._socket = None
        self.controller_only = False  # serve_controller_at: the controller plugin on its controller host

    def serve_controller_at(self, socket):
        """This driver as its controller host reaches it (module csi_controller): the Controller service at
        ``socket``, a plugin that may serve nothing else (no Node service: the external-attacher and -resizer
        talk to the controller plugin alone)."""
        self._socket = socket
        self.controller_only = True
        return self

    # -- connection --------------------------------------------------------------------------------------
    def node_socket(self, item=None):
        if self._socket is None:
            volume = item.pv_name if item is not None else ""
            self._socket = find_node_socket(self, volume)
        return self._socket

    def _refuse(self, item, step, detail, hint=""):
        return refused(item.pv_name, self.node_name, self.NAME, detail, step, hint)

    @contextlib.contextmanager
    def _plugin(self, item, step, controller=False):
        """An open client to the node plugin (or the controller: the same socket, 'controller: node'), its
        identity checked; every CSI error inside becomes the volume's error (errors.from_csi)."""
        if controller and not self.controller_only and self.settings["controller"] != CONTROLLER_ON_NODE:
            raise self._refuse(item, step, "%s needs driver %s's Controller service and %s" % (
                step, self.NAME, "it runs on host %s: only the run's controller task calls it there"
                % self.settings["remote"]["host"] if self.settings["remote"] else "kubevol does not know where it runs"),
                "set %s to {controller: node} when each node's plugin serves it (as csi-driver-host-path's does), "
                "or to {controller: <inventory host>, controller_socket: <its socket there>}"
                % setting("driver_options", key=self.NAME))
        csi = None
        try:
            csi = csi_client.CsiClient(self.node_socket(item), timeout=self.timeout, driver=self.NAME,
                                       node=self.node_name)
            csi.open()
            self._identify(csi, item, step)
            yield csi
        except CsiError as exc:
            raise from_csi(exc, item.pv_name, self.node_name, self.NAME) from None
        except req.RequestRefused as exc:
            raise self._refuse(item, step, str(exc), "fix the PersistentVolume (or its Secret)") from None
        finally:
            if csi is not None:
                csi.close()

    def _call(self, csi, method, request=None):
        self.calls.append(method)
        return csi.call(method, request)

    def _identify(self, csi, item, step):
        """GetPluginInfo must name this driver (the kubelet registers a plugin by that name); Probe must not say
        "not ready" (an unset ``ready`` means ready: CSI spec, Probe)."""
        name = self._call(csi, "GetPluginInfo").name
        if name != self.NAME:
            raise self._refuse(item, step, "the CSI plugin at %s is %r, not %r" % (csi.socket_path, name, self.NAME),
                               "point the socket of %s (or the registration) at %s's own socket"
                               % (setting("driver_options", key=self.NAME), self.NAME))
        probe = self._call(csi, "Probe")
        if probe.HasField("ready") and not probe.ready.value:
            raise self._refuse(item, step, "the CSI plugin at %s says it is not ready (Probe)" % csi.socket_path,
                               "nothing was done: run again once the driver is ready (its log says why it is not)")

    def _node_caps(self, csi):
        return req.rpc_capabilities(csi.to_dict(self._call(csi, "NodeGetCapabilities")))

    def _controller_caps(self, csi):
        """The controller's RPC capabilities; none when the plugin offers no CONTROLLER_SERVICE (the
        external-attacher's and -resizer's "trivial" handlers)."""
        services, _expansion = req.plugin_capabilities(csi.to_dict(self._call(csi, "GetPluginCapabilities")))
        if "CONTROLLER_SERVICE" not in services:
            return frozenset()
        return req.rpc_capabilities(csi.to_dict(self._call(csi, "ControllerGetCapabilities")))

    def node_id(self, csi):
        """NodeGetInfo's node id: what the CSINode records and ControllerPublishVolume takes."""
        return self._call(csi, "NodeGetInfo").node_id

    def node_info(self, item):
        """The node plugin's node id (NodeGetInfo), for a controller host's ControllerPublishVolume: what the
        kubelet registers in the CSINode (csi_plugin.go) and the external-attacher reads back."""
        with self._plugin(item, "node info") as csi:
            return self.node_id(csi)

    def node_get_info(self, item):
        """NodeGetInfo whole (node_id, max_volumes_per_node, accessible_topology), as the kubelet registers the
        plugin with it (node/csi_registration.py)."""
        with self._plugin(item, "node info") as csi:
            return csi.to_dict(self._call(csi, "NodeGetInfo"))

    # -- controller verbs (the external-attacher, the external-resizer) ----------------------------------
    def controller_publish(self, item, node_id=None, check_mode=False):
        """external-attacher csiAttach: ControllerPublishVolume when the CSIDriver requires attach and the
        controller has PUBLISH_UNPUBLISH_VOLUME, else attached by the record alone; publish_context returned."""
        step = "controller publish"
        if not getattr(item, "attach_required", True):
            return CsiAttachment(device="", publish_context={}, skipped="CSIDriver %s has attachRequired false: no "
                                 "VolumeAttachment, nothing to publish (csi_plugin.go skipAttach)" % self.NAME)
        with self._plugin(item, step, controller=True) as csi:
            caps = self._controller_caps(csi)
            node_id = node_id or self.node_id(csi)
            if "PUBLISH_UNPUBLISH_VOLUME" not in caps:
                return CsiAttachment(device="", publish_context={}, node_id=node_id, by_record=True)
            mode = req.controller_access_mode(req.access_modes(item), "SINGLE_NODE_MULTI_WRITER" in caps)
            request = req.controller_publish(item, node_id, req.volume_capability(item, mode),
                                             req.secrets(item, "controller_publish"))
            if check_mode:
                return CsiAttachment(device=None, publish_context={}, node_id=node_id)
            response = self._call(csi, "ControllerPublishVolume", request)
            return CsiAttachment(device="", attached=True, publish_context=dict(response.publish_context),
                                 node_id=node_id)

    def controller_unpublish(self, item, node_id=None, check_mode=False):
        """external-attacher csiDetach: ControllerUnpublishVolume (with controllerPublishSecretRef's secrets)."""
        step = "controller unpublish"
        if not getattr(item, "attach_required", True):
            return CsiStep(called=False, skipped="CSIDriver %s has attachRequired false" % self.NAME)
        with self._plugin(item, step, controller=True) as csi:
            caps = self._controller_caps(csi)
            node_id = node_id or self.node_id(csi)
            if "PUBLISH_UNPUBLISH_VOLUME" not in caps:
                return CsiStep(called=False, skipped="the controller has no PUBLISH_UNPUBLISH_VOLUME: detached by "
                                                     "the record alone")
            request = req.controller_unpublish(item, node_id, req.secrets(item, "controller_publish"))
            if not check_mode:
                self._call(csi, "ControllerUnpublishVolume", request)
            return CsiStep(called=True)

    def controller_expand(self, item, check_mode=False):
        """external-resizer: nothing when the PV already has the size; ControllerExpandVolume when the controller
        has EXPAND_VOLUME; else, when the node plugin has EXPAND_VOLUME, the "trivial resizer" (node expansion
        required, no controller call); else refused."""
        step = "controller expand"
        new = getattr(item, "capacity_bytes", None)
        old = getattr(item, "pv_capacity_bytes", None)
        if new is None:
            raise self._refuse(item, step, "the volume item has no capacity_bytes to expand to",
                               "this is a bug in the caller")
        if old is not None and new <= old:
            return CsiExpansion(old_bytes=old, new_bytes=old, skipped="the PV already has %d bytes" % old)
        with self._plugin(item, step, controller=True) as csi:
            caps = self._controller_caps(csi)
            if "EXPAND_VOLUME" not in caps:
                # on its controller host the node plugin is out of reach: the node decides (node_expand)
                if self.controller_only or "EXPAND_VOLUME" in self._node_caps(csi):
                    return CsiExpansion(old_bytes=old, new_bytes=new, node_expansion_required=True,
                                        skipped="the controller has no EXPAND_VOLUME: the node expands it")
                raise self._refuse(item, step, "driver %s supports no expansion (neither the controller nor the node "
                                   "plugin has EXPAND_VOLUME)" % self.NAME,
                                   "nothing was changed: restore the PVC's request to %s bytes" % old)
            mode = req.controller_access_mode(req.access_modes(item), "SINGLE_NODE_MULTI_WRITER" in caps)
            request = req.controller_expand(item, new, req.volume_capability(item, mode),
                                            req.secrets(item, "controller_expand"))
            if check_mode:
                return CsiExpansion(old_bytes=old, new_bytes=new, node_expansion_required=(
                    self.controller_only or "EXPAND_VOLUME" in self._node_caps(csi)))
            response = self._call(csi, "ControllerExpandVolume", request)
            return CsiExpansion(old_bytes=old, new_bytes=int(response.capacity_bytes) or new, called=True,
                                node_expansion_required=bool(response.node_expansion_required))

    # -- node verbs (the kubelet) ---------------------------------------------------------------------------
    def _fs_group(self, item, pod, caps):
        """The fsGroup the plugin applies itself: only with VOLUME_MOUNT_GROUP (csi_mounter.go SetUpAt), for a
        Filesystem volume, when the item carries the pod's fsGroup (the planner gives it only when the CSIDriver's
        fsGroupPolicy lets it be applied). Else None: kubevol applies it as the kubelet does."""
        if pod is None or "VOLUME_MOUNT_GROUP" not in caps or getattr(item, "mode", "Filesystem") == "Block":
            return None
        if getattr(item, "fs_group_policy", None) == "None":
            return None
        return getattr(pod, "fs_group", None)

    def _need_dir(self, item, step, path, what):
        if not path or not os.path.isdir(path):
            raise self._refuse(item, step, "%s %r is not a directory on node %s" % (what, path, self.node_name),
                               "the node code creates it before calling the driver: this is a bug in the caller")

    def node_stage(self, item, staging_path, publish_context=None, check_mode=False):
        """csi_attacher.go MountDevice (csi_block.go stageVolumeForBlock): NodeStageVolume at the staging path
        only with STAGE_UNSTAGE_VOLUME, else nothing ("Skipping MountDevice")."""
        step = "node stage"
        with self._plugin(item, step) as csi:
            caps = self._node_caps(csi)
            if "STAGE_UNSTAGE_VOLUME" not in caps:
                return CsiStep(called=False, skipped="the plugin has no STAGE_UNSTAGE_VOLUME: nothing to stage")
            pods = getattr(item, "pods", ()) or ()
            fs_group = self._fs_group(item, pods[0] if pods else None, caps)
            mode = req.node_access_mode(req.access_modes(item), "SINGLE_NODE_MULTI_WRITER" in caps)
            request = req.node_stage(item, staging_path, publish_context, req.volume_capability(item, mode, fs_group),
                                     req.secrets(item, "node_stage"))
            if not check_mode:
                self._need_dir(item, step, staging_path, "staging path")
                self._call(csi, "NodeStageVolume", request)
            return CsiStep(called=True, fs_group_delegated=fs_group is not None)

    def node_unstage(self, item, staging_path, check_mode=False):
        """csi_attacher.go UnmountDevice: NodeUnstageVolume only with STAGE_UNSTAGE_VOLUME."""
        with self._plugin(item, "node unstage") as csi:
            if "STAGE_UNSTAGE_VOLUME" not in self._node_caps(csi):
                return CsiStep(called=False, skipped="the plugin has no STAGE_UNSTAGE_VOLUME: nothing to unstage")
            if not check_mode:
                self._call(csi, "NodeUnstageVolume", req.node_unstage(item, staging_path))
            return CsiStep(called=True)

    def node_publish(self, item, target_path, staging_path=None, publish_context=None, pod=None, check_mode=False):
        """csi_mounter.go SetUpAt (csi_block.go publishVolumeForBlock): NodePublishVolume to the target (the
        plugin creates it; its parent exists), the staging path only with STAGE_UNSTAGE_VOLUME, read-only per
        pod, the pod's info in volume_context with podInfoOnMount, fsGroup with VOLUME_MOUNT_GROUP."""
        step = "node publish"
        with self._plugin(item, step) as csi:
            caps = self._node_caps(csi)
            # an inline (ephemeral) volume is never staged: csi_mounter.go computes the staging path for a PV only
            stages = "STAGE_UNSTAGE_VOLUME" in caps and not getattr(item, "ephemeral", False)
            if stages and not staging_path:
                raise self._refuse(item, step, "the plugin stages volumes (STAGE_UNSTAGE_VOLUME) and no staging path "
                                   "was given", "this is a bug in the caller: stage the volume first")
            fs_group = self._fs_group(item, pod, caps)
            readonly = bool(getattr(item, "read_only", False) or getattr(pod, "read_only", False))
            mode = req.node_access_mode(req.access_modes(item), "SINGLE_NODE_MULTI_WRITER" in caps)
            context = req.volume_context(item, pod, getattr(item, "pod_info_on_mount", False))
            request = req.node_publish(item, target_path, staging_path if stages else "", publish_context,
                                       req.volume_capability(item, mode, fs_group), readonly,
                                       req.secrets(item, "node_publish"), context)
            if not check_mode:
                self._need_dir(item, step, os.path.dirname(target_path.rstrip("/")), "the target's parent")
                self._call(csi, "NodePublishVolume", request)
            return CsiStep(called=True, fs_group_delegated=fs_group is not None, readonly=readonly)

    def node_unpublish(self, item, target_path, check_mode=False):
        """csi_mounter.go TearDownAt: NodeUnpublishVolume (the plugin removes the target)."""
        with self._plugin(item, "node unpublish") as csi:
            if not check_mode:
                self._call(csi, "NodeUnpublishVolume", req.node_unpublish(item, target_path))
            return CsiStep(called=True)

    def node_expand(self, item, volume_path, staging_path=None, check_mode=False):
        """expander.go nodeExpandWithClient: NodeExpandVolume when the plugin has EXPAND_VOLUME (else not
        supported: nothing to do); volume_path is the mount (or the device, Block)."""
        step = "node expand"
        new = getattr(item, "capacity_bytes", None)
        if new is None:
            raise self._refuse(item, step, "the volume item has no capacity_bytes to expand to",
                               "this is a bug in the caller")
        with self._plugin(item, step) as csi:
            caps = self._node_caps(csi)
            if "EXPAND_VOLUME" not in caps:
                return CsiStep(called=False, skipped="the plugin has no node EXPAND_VOLUME: nothing to grow on the node")
            mode = req.node_access_mode(req.access_modes(item), "SINGLE_NODE_MULTI_WRITER" in caps)
            request = req.node_expand(item, volume_path, staging_path if "STAGE_UNSTAGE_VOLUME" in caps else "", new,
                                      req.volume_capability(item, mode), req.secrets(item, "node_expand"))
            if check_mode:
                return CsiStep(called=True)
            response = self._call(csi, "NodeExpandVolume", request)
            return CsiStep(called=True, capacity_bytes=int(response.capacity_bytes) or None)

    # -- the checks and the older interface -------------------------------------------------------------------
    def validate(self, item):
        if item.driver != self.NAME:
            raise InvalidInput(field="driver", value=item.driver, reason="this is driver %s's class" % self.NAME)

    def attached_volumes(self):
        return []  # the plugin keeps its own state; kubevol's records say what it attached

    def _old_interface(self, *_args, **_kwargs):
        raise NotImplementedError("driver %s is an external CSI driver: it is driven through CSI's verbs "
                                  "(controller_publish, node_stage, node_publish, ...)" % self.NAME)

    attach = find_device = detach = expand = rescan = _old_interface


_CLASSES = {}


def external_driver_class(name):
    """The ExternalCsiDriver subclass for CSI driver ``name`` (one per name and process)."""
    if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$", name):
        raise InvalidInput(field="CSI driver name", value=name,
                           reason="must be at most 63 characters of letters, digits, '-', '_' and '.', starting and "
                                  "ending with a letter or digit (CSIDriver name rules)")
    if name not in _CLASSES:
        _CLASSES[name] = type("ExternalCsiDriver[%s]" % name, (ExternalCsiDriver,), {"NAME": name,
                                                                                     "__module__": __name__})
    return _CLASSES[name]


def configured_drivers(driver_options, builtin=()):
    """The driver names ``driver_options`` configures as external CSI drivers: an entry with a ``socket`` or a
    ``controller`` key, other than the ``builtin`` ones (kubevol's own drivers and volume plugins). The registry
    serves these with external_driver_class."""
    return sorted(name for name, own in (driver_options or {}).items()
                  if name not in builtin and isinstance(own, dict) and ("socket" in own or "controller" in own))
