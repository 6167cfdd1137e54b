# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pods of the cluster model: their volumes (by source kind), container mounts and devices, and the states of their
containers.

Split from objects.py: the Pod builder, which runs for every pod and every pod volume of the cluster. A malformed
field raises (objects.py turns it into MalformedObject naming the pod and the field, from the ``where`` marker of
build_pod's frame).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.common.fields import optional_str, pairs, require_str
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import CSISource

_EMPTY = {}
# pods and their volumes: every field given in order, the tuple built without the namedtuple's __new__
_make = tuple.__new__  # (a Python call per object, at 150,000 pods)

PodVolume = namedtuple("PodVolume", "name kind claim_name read_only driver csi")
PodVolume.__new__.__defaults__ = (None,)
PodVolume.__doc__ = """kind: the volume source key (persistentVolumeClaim, ephemeral, csi, nfs, ...).
claim_name: the PVC for persistentVolumeClaim and ephemeral (<pod>-<volume>) volumes, else None.
csi: for an inline CSI volume (kind csi), a CSISource without volume_handle."""
Pod = namedtuple("Pod", "namespace name uid node_name phase deletion_timestamp container_states "
                        "volumes volume_mounts volume_devices fs_group fs_group_change_policy creation_timestamp "
                        "service_account")
Pod.__new__.__defaults__ = (None, None, None, "")
Pod.__doc__ = """container_states: one of running/terminated/waiting per init, regular and ephemeral
container status, read only for a pod being deleted (IsPodTerminated), so () unless deletion_timestamp is set: one
tuple less per pod. volume_mounts: (name, read_only) per container mount, plain pairs (a namedtuple per mount is one
more object and call for every mount of the cluster: docs/performance.md); volume_devices: names.
fs_group, fs_group_change_policy: spec.securityContext's, as written (validated by the planner).
service_account: spec.serviceAccountName ("" when unset)."""


def _container_states(status):
    states = []
    for key in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(key) or ():
            state = cs.get("state") or _EMPTY
            states.append("terminated" if "terminated" in state else "waiting" if "waiting" in state
                          else "running" if "running" in state else "waiting")
    return tuple(states)


def _pod_volume(pod_name, vol):
    name = vol["name"]
    if not name or name.__class__ is not str:  # as in build_pod: _require_str only when the cheap test fails
        require_str(name, "spec.volumes[].name")
    if "persistentVolumeClaim" in vol:
        src = vol["persistentVolumeClaim"]
        claim = src["claimName"]
        if not claim or claim.__class__ is not str:
            require_str(claim, "claimName")
        return _make(PodVolume, (name, "persistentVolumeClaim", claim, bool(src.get("readOnly")), None, None))
    if "ephemeral" in vol:
        # util.go CreateVolumeSpec: a generic ephemeral volume's claim is <pod>-<volume>
        return _make(PodVolume, (name, "ephemeral", pod_name + "-" + name, False, None, None))
    if "csi" in vol:
        src = vol["csi"]
        driver = require_str(src["driver"], "csi.driver")
        # nodePublishSecretRef is a LocalObjectReference: a Secret in the pod's namespace (csi_mounter.go SetUpAt);
        # kept as its name alone, plan/inline.py adds the namespace
        ref = src.get("nodePublishSecretRef")
        refs = (("node_publish", str(ref.get("name") or "")),) if isinstance(ref, dict) else ()
        inline = CSISource(driver, None, src.get("fsType") or "", bool(src.get("readOnly")),
                           pairs(src.get("volumeAttributes"), "csi.volumeAttributes"), refs)
        return PodVolume(name, "csi", None, inline.read_only, driver, inline)
    for kind in vol:
        if kind != "name":
            return _make(PodVolume, (name, kind, None, False, None, None))
    return PodVolume(name, "unknown", None, False, None)


def build_pod(obj):
    where = "metadata"
    meta = obj["metadata"]
    name = meta["name"]
    uid = meta.get("uid")
    # _require_str called only when this cheap test fails: it runs for every pod and every pod volume
    if not name or not uid or name.__class__ is not str or uid.__class__ is not str:
        require_str(name, "metadata.name")
        require_str(uid, "metadata.uid")
    namespace = meta.get("namespace") or "default"
    if namespace.__class__ is not str:
        optional_str(namespace, "metadata.namespace")
    spec = obj["spec"]
    where = "spec.nodeName"
    node_name = spec.get("nodeName") or ""
    if node_name.__class__ is not str:
        optional_str(node_name, "spec.nodeName")
    status = obj.get("status") or _EMPTY
    where = "status"
    phase = status.get("phase") or "Pending"
    deleted = meta.get("deletionTimestamp")
    states = _container_states(status) if deleted else ()
    where = "spec.volumes"
    volumes = tuple([_pod_volume(name, v) for v in spec.get("volumes") or ()])
    where = "spec.containers"
    mounts = []
    devices = []
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(key) or ():
            for m in container.get("volumeMounts") or ():
                mount_name = m["name"]
                if mount_name.__class__ is not str:
                    require_str(mount_name, "volumeMounts[].name")
                mounts.append((mount_name, bool(m.get("readOnly"))))
            for d in container.get("volumeDevices") or ():
                devices.append(d["name"])
    where = "spec.serviceAccountName"
    service_account = spec.get("serviceAccountName")
    if service_account is not None and service_account.__class__ is not str:  # the call only when the test fails
        optional_str(service_account, where)
    where = "spec.securityContext"
    security = spec.get("securityContext") or _EMPTY
    return _make(Pod, (namespace, name, uid, node_name, phase, deleted, states, volumes,
                       tuple(mounts), tuple(devices), security.get("fsGroup"), security.get("fsGroupChangePolicy"),
                       meta.get("creationTimestamp"), service_account or ""))
