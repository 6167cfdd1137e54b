# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The storage objects of the cluster model beside objects.py's: StorageClass and CSINode (storage.k8s.io/v1), and
VolumeSnapshot, VolumeSnapshotContent and VolumeSnapshotClass (snapshot.storage.k8s.io/v1, the external-snapshotter's
CRDs), kept as plain read-only NamedTuples with the fields provisioning, the CSI volume limits and snapshots read.

Each builder reads one object as kubectl or the API returns it and raises (objects.py names the object and the
field) on a field of the wrong type. Defaults are the API server's: a StorageClass without reclaimPolicy deletes,
without volumeBindingMode binds Immediately (pkg/apis/storage/v1 defaults.go); a VolumeSnapshotClass has a
deletionPolicy (required); a CSINode driver's allocatable.count is absent when the driver has no limit.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.common.fields import optional_str, pairs, require_str, strings
from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import to_bytes

_EMPTY = {}

# storageclass.kubernetes.io/is-default-class (and the beta annotation the DefaultStorageClass admission still reads)
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")
DEFAULT_SNAPSHOT_CLASS_ANNOTATION = "snapshot.storage.kubernetes.io/is-default-class"
IMMEDIATE = "Immediate"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
BINDING_MODES = (IMMEDIATE, WAIT_FOR_FIRST_CONSUMER)
RECLAIM_POLICIES = ("Delete", "Retain", "Recycle")

StorageClass = namedtuple("StorageClass", "name provisioner parameters reclaim_policy binding_mode "
                                          "allowed_topologies mount_options is_default created")
StorageClass.__doc__ = """parameters: sorted (key, value) pairs; allowed_topologies: a tuple of terms, each a tuple of
(key, values) label requirements (TopologySelectorTerm.matchLabelExpressions); is_default: the default-class
annotation says "true"; created: metadata.creationTimestamp (the newest default class wins, as the admission
plugin and the PV controller pick it)."""

CSINodeDriver = namedtuple("CSINodeDriver", "name node_id topology_keys count")
CSINodeDriver.__doc__ = """spec.drivers[]: the driver's name, its nodeID, topologyKeys (a tuple) and allocatable.count
(None: no limit), as the kubelet's registration writes them (pkg/volume/csi/nodeinfomanager)."""
CSINode = namedtuple("CSINode", "name drivers")
CSINode.__doc__ = """One per node (its name is the Node's): drivers is a tuple of CSINodeDriver."""

VolumeSnapshotClass = namedtuple("VolumeSnapshotClass", "name driver deletion_policy parameters is_default")
VolumeSnapshot = namedtuple("VolumeSnapshot", "namespace name uid source_claim source_content class_name "
                                              "bound_content ready_to_use restore_size_bytes deletion_timestamp "
                                              "finalizers")
VolumeSnapshot.__doc__ = """source_claim: spec.source.persistentVolumeClaimName (a dynamic snapshot), source_content:
spec.source.volumeSnapshotContentName (a pre-provisioned one); bound_content, ready_to_use, restore_size_bytes: its
status (boundVolumeSnapshotContentName, readyToUse, restoreSize in bytes, or None); finalizers: a tuple."""
VolumeSnapshotContent = namedtuple("VolumeSnapshotContent", "name driver deletion_policy snapshot_ref "
                                                            "source_volume_handle source_snapshot_handle class_name "
                                                            "snapshot_handle ready_to_use restore_size_bytes "
                                                            "annotations source_volume_mode deletion_timestamp "
                                                            "finalizers")
VolumeSnapshotContent.__doc__ = """snapshot_ref: (namespace, name, uid) of spec.volumeSnapshotRef; source_volume_handle
or source_snapshot_handle: spec.source's; snapshot_handle, ready_to_use, restore_size_bytes: its status;
annotations: (key, value) pairs (the deletion secret the snapshotter keeps there); source_volume_mode:
spec.sourceVolumeMode (the volume mode of the claim it was taken from), None on a content that does not say;
deletion_timestamp and finalizers (a tuple): its metadata's."""


def _is_default(meta, keys):
    annotations = meta.get("annotations") or _EMPTY
    return any(annotations.get(key) == "true" for key in keys)


def _allowed_topologies(raw):
    terms = []
    for i, term in enumerate(raw or ()):
        if not isinstance(term, dict):
            raise TypeError("allowedTopologies[%d] must be a mapping" % i)
        requirements = []
        for j, req in enumerate(term.get("matchLabelExpressions") or ()):
            where = "allowedTopologies[%d].matchLabelExpressions[%d]" % (i, j)
            requirements.append((require_str(req.get("key"), where + ".key"), strings(req.get("values"),
                                                                                      where + ".values")))
        terms.append(tuple(requirements))
    return tuple(terms)


def build_storage_class(obj):
    meta = obj["metadata"]
    name = require_str(meta["name"], "metadata.name")
    provisioner = require_str(obj.get("provisioner"), "provisioner")
    binding = obj.get("volumeBindingMode") or IMMEDIATE
    if binding not in BINDING_MODES:
        raise ValueError("volumeBindingMode %r is not one of %s" % (binding, ", ".join(BINDING_MODES)))
    reclaim = obj.get("reclaimPolicy") or "Delete"
    if reclaim not in RECLAIM_POLICIES:
        raise ValueError("reclaimPolicy %r is not one of %s" % (reclaim, ", ".join(RECLAIM_POLICIES)))
    options = strings(obj.get("mountOptions"), "mountOptions")
    return StorageClass(name, provisioner, pairs(obj.get("parameters"), "parameters"), reclaim, binding,
                        _allowed_topologies(obj.get("allowedTopologies")), options,
                        _is_default(meta, DEFAULT_CLASS_ANNOTATIONS), meta.get("creationTimestamp") or "")


def build_csinode(obj):
    name = require_str(obj["metadata"]["name"], "metadata.name")
    drivers = []
    for i, driver in enumerate((obj.get("spec") or _EMPTY).get("drivers") or ()):
        where = "spec.drivers[%d]" % i
        count = (driver.get("allocatable") or _EMPTY).get("count")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
            raise ValueError("%s.allocatable.count %r must be a non-negative integer" % (where, count))
        drivers.append(CSINodeDriver(require_str(driver.get("name"), where + ".name"),
                                     optional_str(driver.get("nodeID"), where + ".nodeID") or "",
                                     strings(driver.get("topologyKeys"), where + ".topologyKeys"), count))
    return CSINode(name, tuple(drivers))


def _quantity(value, where):
    return to_bytes(value, where) if value is not None else None


def build_snapshot_class(obj):
    meta = obj["metadata"]
    return VolumeSnapshotClass(require_str(meta["name"], "metadata.name"), require_str(obj.get("driver"), "driver"),
                               obj.get("deletionPolicy") or "Delete", pairs(obj.get("parameters"), "parameters"),
                               _is_default(meta, (DEFAULT_SNAPSHOT_CLASS_ANNOTATION,)))


def build_snapshot(obj):
    meta = obj["metadata"]
    spec = obj.get("spec") or _EMPTY
    source = spec.get("source") or _EMPTY
    status = obj.get("status") or _EMPTY
    return VolumeSnapshot(meta.get("namespace") or "default", require_str(meta["name"], "metadata.name"),
                          meta.get("uid") or "", optional_str(source.get("persistentVolumeClaimName"),
                                                              "spec.source.persistentVolumeClaimName"),
                          optional_str(source.get("volumeSnapshotContentName"),
                                       "spec.source.volumeSnapshotContentName"),
                          optional_str(spec.get("volumeSnapshotClassName"), "spec.volumeSnapshotClassName"),
                          optional_str(status.get("boundVolumeSnapshotContentName"),
                                       "status.boundVolumeSnapshotContentName"),
                          status.get("readyToUse") is True,
                          _quantity(status.get("restoreSize"), "status.restoreSize"),
                          meta.get("deletionTimestamp"), strings(meta.get("finalizers"), "metadata.finalizers"))


def build_snapshot_content(obj):
    spec = obj.get("spec") or _EMPTY
    ref = spec.get("volumeSnapshotRef") or _EMPTY
    source = spec.get("source") or _EMPTY
    status = obj.get("status") or _EMPTY
    restore = status.get("restoreSize")
    if restore is not None and (isinstance(restore, bool) or not isinstance(restore, int)):
        raise TypeError("status.restoreSize must be an integer number of bytes, got %r" % (restore,))
    return VolumeSnapshotContent(require_str(obj["metadata"]["name"], "metadata.name"),
                                 require_str(spec.get("driver"), "spec.driver"), spec.get("deletionPolicy") or "Delete",
                                 (ref.get("namespace") or "", ref.get("name") or "", ref.get("uid") or ""),
                                 optional_str(source.get("volumeHandle"), "spec.source.volumeHandle"),
                                 optional_str(source.get("snapshotHandle"), "spec.source.snapshotHandle"),
                                 optional_str(spec.get("volumeSnapshotClassName"), "spec.volumeSnapshotClassName"),
                                 optional_str(status.get("snapshotHandle"), "status.snapshotHandle"),
                                 status.get("readyToUse") is True, restore,
                                 pairs((obj["metadata"] or _EMPTY).get("annotations"), "metadata.annotations"),
                                 optional_str(spec.get("sourceVolumeMode"), "spec.sourceVolumeMode"),
                                 (obj["metadata"] or _EMPTY).get("deletionTimestamp"),
                                 strings((obj["metadata"] or _EMPTY).get("finalizers"), "metadata.finalizers"))


# kind -> builder, in the order the model's Cluster keeps them after objects.py's six
BUILDERS = (
    ("StorageClass", build_storage_class),
    ("CSINode", build_csinode),
    ("VolumeSnapshotClass", build_snapshot_class),
    ("VolumeSnapshot", build_snapshot),
    ("VolumeSnapshotContent", build_snapshot_content),
)
FIELDS = "storage_classes csi_nodes snapshot_classes snapshots snapshot_contents"


def default_class(classes):
    """The default StorageClass: the newest of those the annotation marks (the DefaultStorageClass admission plugin
    and the PV controller's retroactive assignment pick the newest since Kubernetes 1.26), or None."""
    marked = [c for c in classes if c.is_default]
    if not marked:
        return None
    return sorted(marked, key=lambda c: (c.created, c.name))[-1]


def csinode_driver(csinode, driver):
    """The CSINodeDriver of ``driver`` on a CSINode (None when the node registered no such driver)."""
    if csinode is None:
        return None
    for entry in csinode.drivers:
        if entry.name == driver:
            return entry
    return None
