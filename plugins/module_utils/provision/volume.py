# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The names and the PersistentVolume of a provisioned volume, as the external-provisioner and its library write
them (kubernetes-csi/external-provisioner pkg/controller/controller.go makeVolumeName, Provision;
sig-storage-lib-external-provisioner controller.go provisionClaimOperation: claimRef, the provisioned-by annotation,
storageClassName, the PV finalizer).

Pure: the planner fills ``template`` (everything known before CreateVolume) and the run's record step completes it
with CreateVolume's answer (``pv_object``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import format_quantity
from ansible_collections.kubevol.volumes.plugins.module_utils.provision.topology import node_affinity

VOLUME_NAME_PREFIX = "pvc"  # the external-provisioner's --volume-name-prefix default
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
DELETION_SECRET_NAME = "volume.kubernetes.io/provisioner-deletion-secret-name"
DELETION_SECRET_NAMESPACE = "volume.kubernetes.io/provisioner-deletion-secret-namespace"
PROVISIONER_IDENTITY = "storage.kubernetes.io/csiProvisionerIdentity"
IDENTITY = "kubevol"  # the identity kubevol writes into volumeAttributes, as each provisioner writes its own
PV_FINALIZER = "external-provisioner.volume.kubernetes.io/finalizer"


def volume_name(claim_uid):
    """makeVolumeName with the defaults: ``pvc-<claim uid>`` (the CSI name, and the PV's)."""
    return "%s-%s" % (VOLUME_NAME_PREFIX, claim_uid)


def binary_si(size):
    """bytes as resource.NewQuantity(size, BinarySI) prints them (bytesToQuantity)."""
    return format_quantity("%dKi" % (size // 1024)) if size and size % 1024 == 0 else str(size)


def template(name, driver, claim, storage_class, fs_type, deletion_secret, pv_secret_refs):
    """What the PV will say that CreateVolume's answer does not decide. ``claim``: the claim of the model;
    ``deletion_secret``: "namespace/name" of the provisioner secret (None: none)."""
    namespace, secret = deletion_secret.split("/", 1) if deletion_secret else ("", "")
    csi = {"driver": driver}
    csi.update(pv_secret_refs)
    if claim.volume_mode != "Block":
        csi["fsType"] = fs_type
    spec = {"accessModes": list(claim.access_modes), "persistentVolumeReclaimPolicy": storage_class.reclaim_policy,
            "storageClassName": storage_class.name, "volumeMode": claim.volume_mode, "csi": csi,
            "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": claim.namespace,
                         "name": claim.name, "uid": claim.uid}}
    if storage_class.mount_options:
        spec["mountOptions"] = list(storage_class.mount_options)
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name, "finalizers": [PV_FINALIZER],
                         "annotations": {PROVISIONED_BY: driver, DELETION_SECRET_NAME: secret,
                                         DELETION_SECRET_NAMESPACE: namespace}},
            "spec": spec}


def pv_object(pv_template, answer, request_bytes, topology_supported=True):
    """The PV of a volume CreateVolume made: ``answer`` is its Volume ({volume_id, capacity_bytes, volume_context,
    accessible_topology}); a capacity of 0 (unknown, as NFS answers) is the request's."""
    pv = {"apiVersion": pv_template["apiVersion"], "kind": pv_template["kind"],
          "metadata": dict(pv_template["metadata"], annotations=dict(pv_template["metadata"]["annotations"])),
          "spec": dict(pv_template["spec"], csi=dict(pv_template["spec"]["csi"]))}
    capacity = int(answer.get("capacity_bytes") or 0) or request_bytes
    pv["spec"]["capacity"] = {"storage": binary_si(capacity)}
    attributes = {PROVISIONER_IDENTITY: IDENTITY}
    attributes.update(answer.get("volume_context") or {})
    pv["spec"]["csi"]["volumeHandle"] = answer["volume_id"]
    pv["spec"]["csi"]["volumeAttributes"] = attributes
    affinity = node_affinity(answer.get("accessible_topology")) if topology_supported else None
    if affinity is not None:
        pv["spec"]["nodeAffinity"] = affinity
    return pv
