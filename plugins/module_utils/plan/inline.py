# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inline ephemeral CSI volumes of the desired state (pod.spec.volumes[].csi, volumeLifecycleMode Ephemeral).

Split from desired_state.py. Kubernetes: csi_plugin.go getVolumeLifecycleMode and supportsVolumeLifecycleMode,
csi_mounter.go makeVolumeHandle and supportsFSGroup. The driver's capability comes from volume/csi.py
driver_capabilities (planning imports no node code).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (
    ephemeral_volume_handle, inline_volume_name, unique_volume_name)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import to_bytes
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import OBJECT_REFUSED, coded
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.validation import inline_refusals, label, refused_text
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import DEFAULT_FS_TYPE, FS_TYPES
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import (
    driver_capabilities, EPHEMERAL as EPHEMERAL_CAPABILITY)

FS_GROUP_POLICIES = ("ReadWriteOnceWithFSType", "File", "None")
DEFAULT_LOOP_POOLS = ("/var/lib/kubevol/pool",)


def _blocked(node, volume, pod, reason):
    return {"node": node, "volume": volume, "pod": pod, "reason": reason}


EPHEMERAL_MODE = "Ephemeral"
INLINE_SIZE_ATTRIBUTE = "size"  # csi.volumeAttributes key: the size of the volume a kubevol driver creates

InlineVolume = namedtuple("InlineVolume", "node pod pod_uid volume_name driver volume_handle unique_name "
                                          "kubernetes_name volume_attributes capacity_bytes fs_type read_only "
                                          "fs_group fs_group_change_policy external pod_info_on_mount secret_ref "
                                          "service_account")
InlineVolume.__new__.__defaults__ = (None, None, False, False, None, "")
InlineVolume.__doc__ = """One inline ephemeral CSI volume (pod.spec.volumes[].csi) of one pod, volumeLifecycleMode
Ephemeral: volume_handle is csi-sha256(pod uid + volume name) (csi_mounter.go makeVolumeHandle); unique_name is
kubevol's key (kubernetes.io/csi/<driver>^<handle>), kubernetes_name Kubernetes' own
(kubernetes.io/csi/<pod uid>-<volume name>, util.go GetUniqueVolumeNameFromSpecWithPod). read_only: csi.readOnly.
fs_group: the pod's fsGroup when the kubelet applies it to this volume (inline_fs_group), else None.
external: an external CSI driver's (driver_options): its node plugin creates the volume, capacity_bytes is None and
fs_type is csi.fsType as written ("" when unset). pod_info_on_mount: its CSIDriver's podInfoOnMount; secret_ref:
"namespace/name" of csi.nodePublishSecretRef in the pod's namespace, or None; service_account: the pod's."""


def lifecycle_mode_error(driver_object, driver, mode=EPHEMERAL_MODE):
    """csi_plugin.go supportsVolumeLifecycleMode: None when the CSIDriver lists ``mode``, else Kubernetes' error.

    No CSIDriver object supports Persistent only; the modes print as Go's %q of a slice: ["Persistent"]."""
    if driver_object is None:
        return None if mode == "Persistent" else "volume mode %s not supported by driver %s (no CSIDriver object)" % (
            _go_quote(mode), driver)
    modes = tuple(driver_object.lifecycle_modes or ())
    if mode in modes:
        return None
    return "volume mode %s not supported by driver %s (only supports [%s])" % (
        _go_quote(mode), driver, " ".join(_go_quote(m) for m in modes))


def _go_quote(text):
    return '"%s"' % str(text).replace("\\", "\\\\").replace('"', '\\"')


def inline_volume(index, known_drivers, pod, node, volume, use):
    """An inline CSI volume of a scheduled, live pod -> InlineVolume, None (not kubevol's: another driver, or no
    container mounts it), or a str reason (blocked).

    Kubernetes: csi_plugin.go getVolumeLifecycleMode (a pod's csi source is Ephemeral), supportsVolumeLifecycleMode
    (the CSIDriver must list Ephemeral); the populator adds only volumes a container mounts or maps
    (desired_state_of_world_populator.go processPodVolumes, GetPodVolumeNames); csi_plugin.go CanAttach and
    CanDeviceMount are false for it: no attach and no staging, a publish straight into the pod's directory.
    kubevol's drivers need csi.volumeAttributes.size (a quantity) to create the volume."""
    csi = volume.csi
    driver = csi.driver if csi is not None else volume.driver
    if csi is None or driver not in known_drivers:
        return None  # another CSI driver's inline volume: its own node plugin's
    if use is None:
        return None  # no container mounts it: the kubelet does not mount it either
    where = "inline volume %s of pod %s/%s" % (volume.name, pod.namespace, pod.name)
    error = lifecycle_mode_error(index.csidriver_by_name.get(driver), driver)
    if error is not None:
        return ("%s: %s: list Ephemeral in the CSIDriver %s's spec.volumeLifecycleModes, or use a PVC (a generic "
                "ephemeral volume)" % (where, error, driver))
    capabilities = driver_capabilities(driver)
    if capabilities is None:  # an external CSI driver (driver_options): its node plugin creates the volume
        return _external_inline(index, pod, node, volume, use, where, driver)
    if EPHEMERAL_CAPABILITY not in capabilities:
        return "%s: kubevol's driver %s cannot create inline ephemeral volumes: use a PVC" % (where, driver)
    if use[0] != "Filesystem":
        return "%s: an inline CSI volume is a filesystem: mount it with volumeMounts, not volumeDevices" % where
    attributes = dict(csi.volume_attributes or ())
    size = attributes.get(INLINE_SIZE_ATTRIBUTE)
    if size is None or size == "":
        return ("%s has no size: set csi.volumeAttributes.%s to a quantity (e.g. 64Mi) for the volume kubevol "
                "creates for the pod" % (where, INLINE_SIZE_ATTRIBUTE))
    try:
        capacity = to_bytes(str(size), "csi.volumeAttributes.%s" % INLINE_SIZE_ATTRIBUTE)
    except (KubevolError, ValueError, TypeError) as exc:
        return "%s: csi.volumeAttributes.%s %r is not a quantity (%s): write it as 64Mi or 1Gi" % (
            where, INLINE_SIZE_ATTRIBUTE, size, getattr(exc, "msg", None) or exc)
    if capacity <= 0:
        return "%s: csi.volumeAttributes.%s %r must be above zero (e.g. 64Mi)" % (where, INLINE_SIZE_ATTRIBUTE, size)
    driver_object = index.csidriver_by_name.get(driver)
    refused = _unknown_fs_group_policy(driver_object, where, driver)
    if refused:
        return refused
    fs_type = csi.fs_type or DEFAULT_FS_TYPE
    if fs_type not in FS_TYPES:
        return "%s: csi.fsType %r is not one kubevol formats: set one of %s" % (where, fs_type, ", ".join(sorted(FS_TYPES)))
    handle = ephemeral_volume_handle(pod.uid, volume.name)
    unique = unique_volume_name(driver, handle)
    clash = index.pv_by_unique_name.get(unique)
    if clash is not None:
        # one handle names one image and one record on the node: the image created for the pod would be the PV's,
        # and unpublishing the pod's volume deletes it
        return ("%s: its volume handle %s is also PV %s's csi.volumeHandle, so it would share that PV's image: rename "
                "the pod's inline volume (its handle is made of the pod UID and the volume name)"
                % (where, handle, clash.name))
    return InlineVolume(node, pod.namespace + "/" + pod.name, pod.uid, volume.name, driver, handle,
                        unique, inline_volume_name(pod.uid, volume.name),
                        tuple(sorted(attributes.items())), capacity, fs_type, bool(csi.read_only),
                        inline_fs_group(pod, csi, driver_object), pod.fs_group_change_policy)


def _unknown_fs_group_policy(driver_object, where, driver):
    """The refusal of a CSIDriver whose spec.fsGroupPolicy kubevol does not know, or None."""
    if driver_object is None or driver_object.fs_group_policy in FS_GROUP_POLICIES:
        return None
    return ("%s: CSIDriver %s has an unknown spec.fsGroupPolicy %r: set one of %s"
            % (where, driver, driver_object.fs_group_policy, ", ".join(FS_GROUP_POLICIES)))


def _external_inline(index, pod, node, volume, use, where, driver):
    """An inline volume of an external CSI driver: csi_mounter.go SetUpAt for a CSIVolumeSource (volAttribs =
    csi.volumeAttributes, fsType = csi.fsType, readOnly, nodePublishSecretRef read from the pod's namespace, no
    mountOptions, access mode ReadWriteOnce), published into the pod's directory by the driver's node plugin,
    which creates the volume and deletes it at NodeUnpublishVolume (CSI spec: ephemeral volumes). kubevol
    creates, sizes and formats nothing for it: no size attribute is needed."""
    csi = volume.csi
    if use[0] != "Filesystem":
        return "%s: an inline CSI volume is a filesystem: mount it with volumeMounts, not volumeDevices" % where
    driver_object = index.csidriver_by_name.get(driver)
    refused = _unknown_fs_group_policy(driver_object, where, driver)
    if refused:
        return refused
    secret_ref = None
    for kind, name in getattr(csi, "secret_refs", ()) or ():
        if kind == "node_publish":
            if not name:
                return ("%s: csi.nodePublishSecretRef has no name: name a Secret in namespace %s (or remove the "
                        "reference)" % (where, pod.namespace))
            secret_ref = "%s/%s" % (pod.namespace, name)
    handle = ephemeral_volume_handle(pod.uid, volume.name)
    unique = unique_volume_name(driver, handle)
    clash = index.pv_by_unique_name.get(unique)
    if clash is not None:
        # one handle names one volume on the node: the pod's NodeUnpublishVolume would delete the PV's volume
        return ("%s: its volume handle %s is also PV %s's csi.volumeHandle: rename the pod's inline volume (its "
                "handle is made of the pod UID and the volume name)" % (where, handle, clash.name))
    attributes = tuple(sorted(dict(csi.volume_attributes or ()).items()))
    return InlineVolume(node, pod.namespace + "/" + pod.name, pod.uid, volume.name, driver, handle, unique,
                        inline_volume_name(pod.uid, volume.name), attributes, None, csi.fs_type or "",
                        bool(csi.read_only), inline_fs_group(pod, csi, driver_object), pod.fs_group_change_policy, True,
                        bool(driver_object is not None and driver_object.pod_info_on_mount), secret_ref,
                        pod.service_account or "")


def inline_fs_group(pod, csi, driver_object):
    """csi_mounter.go supportsFSGroup for an inline volume: the pod's fsGroup unless it has none, the volume is
    read-only or the CSIDriver's fsGroupPolicy is None; with the default ReadWriteOnceWithFSType only when the
    pod's csi.fsType is set (an inline volume counts as ReadWriteOnce). No CSIDriver: the default policy."""
    policy = driver_object.fs_group_policy if driver_object is not None else FS_GROUP_POLICIES[0]
    if pod.fs_group is None or csi.read_only or policy == "None":
        return None
    if policy == "File" or (policy == "ReadWriteOnceWithFSType" and csi.fs_type):
        return pod.fs_group
    return None


def _add_inline_volume(index, known_drivers, pod, key, node, volume, use, inline, blocked, holding=None,
                       loop_pools=DEFAULT_LOOP_POOLS):
    """build_desired_state's branch for pod.spec.volumes[].csi: True when the volume is kubevol's (added to
    ``inline`` or blocked), False when it is another driver's (counted as skipped, as before). holding: why the
    pod gets no new volume (terminating, or a bad securityContext, blocked once for the pod): nothing is published
    for it, and what it has stays (a live pod's inline volume is never unpublished)."""
    csi = volume.csi
    driver = csi.driver if csi is not None else volume.driver
    if driver not in known_drivers:
        return False
    if holding is not None:
        return True
    found = inline_volume(index, known_drivers, pod, node, volume, use)
    refusals = inline_refusals(found, loop_pools) if isinstance(found, InlineVolume) else ()
    if refusals:
        blocked.append(_blocked(node, label(volume.name), key, refused_text(refusals)))
    elif found.__class__ is str:
        blocked.append(_blocked(node, volume.name, key, coded(found, OBJECT_REFUSED)))
    elif found is not None:
        inline[(node, pod.uid, volume.name)] = found
    return True
