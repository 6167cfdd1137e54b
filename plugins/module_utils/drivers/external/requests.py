# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CSI requests kubevol sends for a volume item, built as the kubelet and the external sidecars build them.

Pure functions (no I/O): the driver (driver.py) asks the plugin for its capabilities and passes what it learnt.
Requests are dicts with the spec's field names (csi/client.py turns them into messages). None of these
functions formats a secret into a text: a bad secret is refused naming its key only.

Sources (Kubernetes and kubernetes-csi):
- node side, the kubelet: pkg/volume/csi/csi_client.go (``asCSIAccessModeV1``,
  ``asSingleNodeMultiWriterCapableCSIAccessModeV1``: chosen by the node capability SINGLE_NODE_MULTI_WRITER;
  the PV's FIRST access mode, ReadWriteOnce when it has none: csi_attacher.go MountDevice, csi_mounter.go
  SetUpAt, expander.go), csi_mounter.go ``getPodInfoAttrs`` and ``mergeMap`` (pod info overrides the PV's
  attributes), the fsGroup given as ``volume_mount_group`` only with VOLUME_MOUNT_GROUP;
- controller side: csi-lib-utils accessmodes ``ToCSIAccessMode`` (external-attacher, by the controller
  capability SINGLE_NODE_MULTI_WRITER: ReadWriteOncePod alone, ReadWriteMany first, ReadOnlyMany with
  ReadWriteOnce refused), external-attacher ``GetVolumeCapabilities`` (Block or mount with fsType and the PV's
  mountOptions) and csiAttach/csiDetach (readonly = the PV's spec.csi.readOnly, volume_context = its
  volumeAttributes, controllerPublishSecretRef for both calls), external-resizer (capacity_range
  required_bytes = the PVC's request, controllerExpandSecretRef).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

RWO, ROX, RWX, RWOP = "ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"
ACCESS_MODES = (RWO, ROX, RWX, RWOP)

# csi_client.go asCSIAccessModeV1: a plugin without SINGLE_NODE_MULTI_WRITER
NODE_ACCESS_MODES = {RWO: "SINGLE_NODE_WRITER", ROX: "MULTI_NODE_READER_ONLY", RWX: "MULTI_NODE_MULTI_WRITER",
                     RWOP: "SINGLE_NODE_WRITER"}
# csi_client.go asSingleNodeMultiWriterCapableCSIAccessModeV1
NODE_ACCESS_MODES_SNMW = {RWO: "SINGLE_NODE_MULTI_WRITER", ROX: "MULTI_NODE_READER_ONLY",
                          RWX: "MULTI_NODE_MULTI_WRITER", RWOP: "SINGLE_NODE_SINGLE_WRITER"}

POD_NAME = "csi.storage.k8s.io/pod.name"
POD_NAMESPACE = "csi.storage.k8s.io/pod.namespace"
POD_UID = "csi.storage.k8s.io/pod.uid"
POD_SERVICE_ACCOUNT = "csi.storage.k8s.io/serviceAccount.name"
POD_EPHEMERAL = "csi.storage.k8s.io/ephemeral"

# the PV's secret references (spec.csi.*SecretRef), by the name kubevol's item carries them under
SECRET_KINDS = ("controller_publish", "node_stage", "node_publish", "controller_expand", "node_expand")


class RequestRefused(ValueError):
    """What kubevol will not send (the reason names no secret value). driver.py turns it into a volume error."""


def access_modes(item):
    """The PV's spec.accessModes, in order. An item without them (kubevol's before the external driver) says
    ReadWriteMany when it may attach to several nodes, else ReadWriteOnce."""
    modes = tuple(getattr(item, "access_modes", None) or ())
    if modes:
        return modes
    return (RWX,) if getattr(item, "multi_attach", False) else (RWO,)


def node_access_mode(modes, single_node_multi_writer):
    """The kubelet's access mode for NodeStage/NodePublish/NodeExpand: the PV's first mode, mapped."""
    first = modes[0] if modes else RWO
    table = NODE_ACCESS_MODES_SNMW if single_node_multi_writer else NODE_ACCESS_MODES
    if first not in table:
        # the kubelet would send UNKNOWN and let the driver refuse it; kubevol refuses before the call
        raise RequestRefused("access mode %r is not a Kubernetes access mode (%s)" % (first, ", ".join(ACCESS_MODES)))
    return table[first]


def controller_access_mode(modes, single_node_multi_writer):
    """csi-lib-utils accessmodes.ToCSIAccessMode / ToSingleNodeMultiWriterCapableCSIAccessMode."""
    unique = set(modes)
    unknown = sorted(unique - set(ACCESS_MODES))
    if unknown:
        raise RequestRefused("access mode %r is not a Kubernetes access mode (%s)" % (unknown[0], ", ".join(ACCESS_MODES)))
    if RWOP in unique:
        if len(unique) > 1:
            raise RequestRefused("Kubernetes does not support use of ReadWriteOncePod with other access modes on "
                                 "the same PersistentVolume")
        return "SINGLE_NODE_SINGLE_WRITER" if single_node_multi_writer else "SINGLE_NODE_WRITER"
    if RWX in unique:
        return "MULTI_NODE_MULTI_WRITER"  # ReadWriteMany takes precedence
    if ROX in unique and RWO in unique:
        raise RequestRefused("CSI does not support ReadOnlyMany and ReadWriteOnce on the same PersistentVolume")
    if ROX in unique:
        return "MULTI_NODE_READER_ONLY"
    if RWO in unique:
        return "SINGLE_NODE_MULTI_WRITER" if single_node_multi_writer else "SINGLE_NODE_WRITER"
    raise RequestRefused("unsupported AccessMode combination: %s" % list(modes))


def volume_capability(item, mode, fs_group=None, with_mount_flags=True):
    """VolumeCapability: ``block`` for a Block volume, else ``mount`` with the PV's fsType and mountOptions and,
    only when given (the plugin has VOLUME_MOUNT_GROUP), the fsGroup as volume_mount_group."""
    if getattr(item, "mode", "Filesystem") == "Block":
        return {"block": {}, "access_mode": {"mode": mode}}
    mount = {"fs_type": getattr(item, "fs_type", "") or ""}
    flags = list(getattr(item, "mount_options", ()) or ())
    if with_mount_flags and flags:
        mount["mount_flags"] = flags
    if fs_group is not None:
        mount["volume_mount_group"] = str(int(fs_group))
    return {"mount": mount, "access_mode": {"mode": mode}}


def pod_info(pod, ephemeral):
    """csi_mounter.go getPodInfoAttrs: what a CSIDriver with podInfoOnMount gets in volume_context. kubevol's pod
    item names a pod "namespace/name" (docs/contracts.md section 1) unless it carries ``namespace`` itself."""
    name = getattr(pod, "name", "") or ""
    namespace = getattr(pod, "namespace", "") or ""
    if not namespace and "/" in name:
        namespace, name = name.split("/", 1)
    return {POD_NAME: name, POD_NAMESPACE: namespace,
            POD_UID: getattr(pod, "uid", "") or "",
            POD_SERVICE_ACCOUNT: getattr(pod, "service_account", "") or "",
            POD_EPHEMERAL: "true" if ephemeral else "false"}


def volume_context(item, pod=None, pod_info_on_mount=False):
    """The PV's volumeAttributes, with the pod's info merged over them when the CSIDriver says podInfoOnMount
    (csi_mounter.go: ``volAttribs = mergeMap(volAttribs, getPodInfoAttrs(pod, mode))``)."""
    context = dict(getattr(item, "volume_attributes", ()) or ())
    if pod_info_on_mount and pod is not None:
        context.update(pod_info(pod, getattr(item, "ephemeral", False)))
    return context


def secrets(item, kind):
    """The secret data for ``kind`` (SECRET_KINDS) the item carries (read from the Secret its PV references),
    as {str: str}; {} when none. Refuses a malformed map naming the key only, never a value."""
    if kind not in SECRET_KINDS:
        raise ValueError("no secret kind %r (%s)" % (kind, ", ".join(SECRET_KINDS)))
    every = getattr(item, "secrets", None) or {}
    if not isinstance(every, dict):
        every = dict(every)
    data = every.get(kind) or {}
    if not isinstance(data, dict):
        raise RequestRefused("the %s secrets are not a map of strings" % kind)
    for key, value in data.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise RequestRefused("the %s secrets: key %r has a value that is not a string" % (kind, str(key)))
    return dict(data)


def _with(request, **optional):
    """``request`` plus the optional fields that are set (empty maps and paths are left out, as the kubelet's
    nil maps and "" paths are absent on the wire)."""
    for name, value in optional.items():
        if value:
            request[name] = value
    return request


def controller_publish(item, node_id, capability, secret):
    return _with({"volume_id": item.volume_handle, "node_id": node_id, "volume_capability": capability,
                  "readonly": bool(getattr(item, "read_only", False))},
                 secrets=secret, volume_context=volume_context(item))


def controller_unpublish(item, node_id, secret):
    return _with({"volume_id": item.volume_handle, "node_id": node_id}, secrets=secret)


def node_stage(item, staging_path, publish_context, capability, secret):
    """csi_attacher.go MountDevice: the PV's volumeAttributes only (no pod info at staging)."""
    return _with({"volume_id": item.volume_handle, "staging_target_path": staging_path,
                  "volume_capability": capability},
                 publish_context=dict(publish_context or {}), secrets=secret, volume_context=volume_context(item))


def node_unstage(item, staging_path):
    return {"volume_id": item.volume_handle, "staging_target_path": staging_path}


def node_publish(item, target_path, staging_path, publish_context, capability, readonly, secret, context):
    """csi_mounter.go SetUpAt: staging_target_path only when the plugin stages."""
    return _with({"volume_id": item.volume_handle, "target_path": target_path, "volume_capability": capability,
                  "readonly": bool(readonly)},
                 staging_target_path=staging_path, publish_context=dict(publish_context or {}), secrets=secret,
                 volume_context=context)


def node_unpublish(item, target_path):
    return {"volume_id": item.volume_handle, "target_path": target_path}


def controller_expand(item, new_bytes, capability, secret):
    return _with({"volume_id": item.volume_handle, "capacity_range": {"required_bytes": int(new_bytes)},
                  "volume_capability": capability}, secrets=secret)


def node_expand(item, volume_path, staging_path, new_bytes, capability, secret):
    """expander.go nodeExpandWithClient: staging_target_path only when set."""
    return _with({"volume_id": item.volume_handle, "volume_path": volume_path,
                  "capacity_range": {"required_bytes": int(new_bytes)}, "volume_capability": capability},
                 staging_target_path=staging_path, secrets=secret)


def rpc_capabilities(response):
    """The RPC capability names of a NodeGetCapabilities/ControllerGetCapabilities answer (as a dict)."""
    return frozenset(c["rpc"].get("type", "UNKNOWN") for c in (response or {}).get("capabilities", ()) if "rpc" in c)


def plugin_capabilities(response):
    """(services, volume expansion types) of a GetPluginCapabilities answer (as a dict)."""
    services, expansion = set(), set()
    for cap in (response or {}).get("capabilities", ()):
        if "service" in cap:
            services.add(cap["service"].get("type", "UNKNOWN"))
        if "volume_expansion" in cap:
            expansion.add(cap["volume_expansion"].get("type", "UNKNOWN"))
    return frozenset(services), frozenset(expansion)
