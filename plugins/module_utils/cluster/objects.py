# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster as plain, read-only objects, loaded from a Kubernetes List.

Input is what ``kubectl get nodes,pods,pv,pvc,volumeattachments,csidrivers -A
-o yaml`` (or ``-o json``) prints (a file the file store accepts whole: stores/file.py), or the same data
already parsed (a List, a list of documents, one object). Only the fields the planner reads are kept; sizes become integer bytes
(quantity.py). Unknown kinds are ignored; a malformed object raises
MalformedObject naming the object and the field.

Loading must stay cheap at 150,000 pods: objects are NamedTuples built straight
from the dicts, and field names are tracked in a local string, not per-field
helper calls. The Pod builder is cluster/pod.py, the PersistentVolume builder cluster/pv.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import gc
from collections import namedtuple
from contextlib import contextmanager

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    InvalidInput, MalformedObject, QuantityError)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (
    MANAGED_ATTACH_DETACH_ANNOTATION, NODE_EXPANSION_PENDING_ANNOTATION)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.fields import optional_str, pairs, require_str, strings
from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import to_bytes
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import (  # noqa: F401  # pylint: disable=unused-import
    ClaimRef, CSISource, PersistentVolume, build_pv, node_matches, pv_unique_name)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pod import (  # noqa: F401  # pylint: disable=unused-import
    Pod, PodVolume, build_pod)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.index import ClusterIndex  # noqa: F401  # pylint: disable=unused-import
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster import storage

Taint = namedtuple("Taint", "key value effect")
AttachedVolumeStatus = namedtuple("AttachedVolumeStatus", "name device_path")
Node = namedtuple("Node", "name annotations taints ready volumes_attached volumes_in_use labels")
Node.__new__.__defaults__ = ((),)
Node.__doc__ = """annotations, labels: tuples of (key, value); ready: True, False or None (no Ready condition)."""

PersistentVolumeClaim = namedtuple("PersistentVolumeClaim", "namespace name uid phase volume_name request_bytes "
                                                            "capacity_bytes access_modes conditions owner_uids "
                                                            "allocated_bytes resize_status expansion_pending "
                                                            "storage_class annotations volume_mode data_source "
                                                            "deletion_timestamp has_selector finalizers")
PersistentVolumeClaim.__new__.__defaults__ = (None, None, None, None, (), "Filesystem", None, None, False, ())
PersistentVolumeClaim.__doc__ = """allocated_bytes: status.allocatedResources.storage; resize_status:
status.allocatedResourceStatuses.storage (ControllerResizeInProgress, NodeResizePending, ..., or None);
expansion_pending: the kubevol.io/node-expansion-pending annotation as written (a JSON text), or None.
storage_class: spec.storageClassName as written (None: unset, the default class applies; "": no class, never
provisioned); annotations: (key, value) pairs; data_source: (apiGroup, kind, name) of spec.dataSource (else of
spec.dataSourceRef), or None; has_selector: spec.selector is set (the external-provisioner refuses it); finalizers:
metadata.finalizers (a claim being deleted stays until they are gone)."""
VolumeAttachment = namedtuple("VolumeAttachment",
                              "name attacher node_name pv_name attached device_path annotations metadata")
# metadata: status.attachmentMetadata as sorted (key, value) pairs (an external CSI driver's publish_context)
VolumeAttachment.__new__.__defaults__ = ((),)
CSIDriver = namedtuple("CSIDriver", "name attach_required lifecycle_modes fs_group_policy pod_info_on_mount")
CSIDriver.__new__.__defaults__ = (("Persistent",), "ReadWriteOnceWithFSType", False)
CSIDriver.__doc__ = """lifecycle_modes: spec.volumeLifecycleModes (default Persistent); fs_group_policy:
spec.fsGroupPolicy as written (default ReadWriteOnceWithFSType; the planner rejects unknown values);
pod_info_on_mount: spec.podInfoOnMount (the pod's name, namespace, uid and service account in NodePublishVolume's
volume_context)."""
Cluster = namedtuple("Cluster", "nodes pods persistent_volumes claims volume_attachments csi_drivers " + storage.FIELDS)
Cluster.__new__.__defaults__ = ((),) * len(storage.BUILDERS)
Cluster.__doc__ = """The model, by kind: the six this file builds (Pods through cluster/pod.py, PVs through
cluster/pv.py), then cluster/storage.py's (StorageClass, CSINode, VolumeSnapshotClass, VolumeSnapshot,
VolumeSnapshotContent)."""

_EMPTY = {}
# claims (and pods, cluster/pod.py): every field given in order, the tuple built without the namedtuple's __new__
_make = tuple.__new__  # (a Python call per object, at 150,000 pods)


def node_is_managed(node):
    """attach_detach_controller.go addNodeToDswp: the annotation key alone decides."""
    return any(key == MANAGED_ATTACH_DETACH_ANNOTATION for key, _value in node.annotations)


def annotation(obj, key, default=None):
    for k, v in obj.annotations:
        if k == key:
            return v
    return default


def _name_of(obj):
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return "<no metadata>"
    name = meta.get("name")
    ns = meta.get("namespace")
    return "%s/%s" % (ns, name) if ns else str(name)


def _node(obj):
    where = "metadata"
    meta = obj["metadata"]
    name = require_str(meta["name"], "metadata.name")
    annotations = pairs(meta.get("annotations"), "metadata.annotations")
    where = "metadata.labels"
    labels = pairs(meta.get("labels"), "metadata.labels")
    where = "spec.taints"
    taints = tuple(Taint(t["key"], t.get("value"), t.get("effect")) for t in (obj.get("spec") or _EMPTY).get("taints") or ())
    status = obj.get("status") or _EMPTY
    where = "status.conditions"
    ready = None
    for cond in status.get("conditions") or ():
        if cond["type"] == "Ready":
            ready = cond.get("status") == "True"
    where = "status.volumesAttached"
    attached = tuple([_make(AttachedVolumeStatus, (require_str(v["name"], "name"), v.get("devicePath") or ""))
                      for v in status.get("volumesAttached") or ()])
    where = "status.volumesInUse"
    in_use = tuple([require_str(v, "entry") for v in status.get("volumesInUse") or ()])
    return Node(name, annotations, taints, ready, attached, in_use, labels)


def _pvc(obj):
    where = "metadata"
    meta = obj["metadata"]
    name = meta["name"]
    if not name or name.__class__ is not str:
        require_str(name, "metadata.name")
    spec = obj.get("spec") or _EMPTY
    status = obj.get("status") or _EMPTY
    where = "spec.resources.requests.storage"
    request = ((spec.get("resources") or _EMPTY).get("requests") or _EMPTY).get("storage")
    request = to_bytes(request, where) if request is not None else 0
    where = "status.capacity.storage"
    capacity = (status.get("capacity") or _EMPTY).get("storage")
    capacity = to_bytes(capacity, where) if capacity is not None else None
    where = "status.conditions"
    conditions = tuple([c["type"] for c in status.get("conditions") or ()])
    where = "metadata.ownerReferences"
    owners = tuple([o["uid"] for o in meta.get("ownerReferences") or ()])
    where = "status.allocatedResources.storage"
    allocated = (status.get("allocatedResources") or _EMPTY).get("storage")
    allocated = to_bytes(allocated, where) if allocated is not None else None
    resize_status = (status.get("allocatedResourceStatuses") or _EMPTY).get("storage")
    annotations = meta.get("annotations")
    pending = annotations.get(NODE_EXPANSION_PENDING_ANNOTATION) if isinstance(annotations, dict) else None
    where = "metadata.namespace"
    namespace = meta.get("namespace") or "default"
    if namespace.__class__ is not str:  # the call only when the cheap test fails: this runs for every claim
        optional_str(namespace, "metadata.namespace")
    where = "spec.volumeName"
    volume_name = spec.get("volumeName") or ""
    if volume_name.__class__ is not str:
        optional_str(volume_name, "spec.volumeName")
    where = "spec.accessModes"
    modes = strings(spec.get("accessModes"), "accessModes")
    where = "spec.storageClassName"
    storage_class = spec.get("storageClassName")
    if storage_class is not None and storage_class.__class__ is not str:
        optional_str(storage_class, where)
    where = "metadata.annotations"
    annotations = pairs(annotations, where) if annotations else ()
    finalizers = meta.get("finalizers")
    where = "spec.dataSource"
    source = spec.get("dataSource") or spec.get("dataSourceRef")
    data_source = (source.get("apiGroup") or "", require_str(source.get("kind"), "kind"),
                   require_str(source.get("name"), "name")) if source else None
    return _make(PersistentVolumeClaim, (
        namespace, name, meta.get("uid"), status.get("phase") or "Pending", volume_name, request, capacity, modes,
        conditions, owners, allocated, resize_status, pending if isinstance(pending, str) else None, storage_class,
        annotations, spec.get("volumeMode") or "Filesystem", data_source, meta.get("deletionTimestamp"),
        spec.get("selector") is not None, strings(finalizers, "metadata.finalizers") if finalizers else ()))


def _va(obj):
    where = "metadata"
    meta = obj["metadata"]
    name = require_str(meta["name"], "metadata.name")
    where = "spec"
    spec = obj["spec"]
    node_name = require_str(spec["nodeName"], "spec.nodeName")
    status = obj.get("status") or _EMPTY
    annotations = pairs(meta.get("annotations"), "metadata.annotations")
    where = "spec.source.persistentVolumeName"
    pv_name = optional_str((spec.get("source") or _EMPTY).get("persistentVolumeName"), "persistentVolumeName")
    where = "status.attachmentMetadata"
    metadata = status.get("attachmentMetadata") or _EMPTY
    device_path = metadata.get("devicePath") or ""
    return VolumeAttachment(name, spec.get("attacher"), node_name, pv_name,
                            bool(status.get("attached")), device_path, annotations,
                            tuple(sorted((str(k), str(v)) for k, v in metadata.items())))


def _csidriver(obj):
    name = require_str(obj["metadata"]["name"], "metadata.name")
    spec = obj.get("spec") or _EMPTY
    required = spec.get("attachRequired")
    # csi_plugin.go skipAttach: nil attachRequired means attach is required; the API server defaults
    # volumeLifecycleModes to [Persistent] and fsGroupPolicy to ReadWriteOnceWithFSType
    return CSIDriver(name, True if required is None else bool(required),
                     tuple(spec.get("volumeLifecycleModes") or ("Persistent",)),
                     spec.get("fsGroupPolicy") or "ReadWriteOnceWithFSType", spec.get("podInfoOnMount") is True)


KIND_BUILDERS = {  # kind -> (builder, Cluster slot)
    "Node": (_node, 0), "Pod": (build_pod, 1), "PersistentVolume": (build_pv, 2), "PersistentVolumeClaim": (_pvc, 3),
    "VolumeAttachment": (_va, 4), "CSIDriver": (_csidriver, 5),
}
KIND_BUILDERS.update((kind, (builder, 6 + i)) for i, (kind, builder) in enumerate(storage.BUILDERS))


def _field_of(builder, obj, exc):
    """Which field failed: read the builder's `where` marker from the failing frame."""
    tb = exc.__traceback__
    field = None
    while tb is not None:
        if tb.tb_frame.f_code is builder.__code__:
            field = tb.tb_frame.f_locals.get("where")
        tb = tb.tb_next
    return field or "metadata"


def _reason(exc):
    if isinstance(exc, KeyError):
        return "missing key %s" % exc
    if isinstance(exc, QuantityError):
        return exc.msg
    return str(exc) or exc.__class__.__name__


def iter_items(data):
    """The objects of a List (or of several documents, each a List or one object)."""
    docs = data if isinstance(data, (list, tuple)) else (data,)
    for doc in docs:
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InvalidInput(field="cluster", value=type(doc).__name__, reason="expected a Kubernetes List or object")
        kind = doc.get("kind") or "List"
        if not isinstance(kind, str):  # isinstance: Ansible hands a module's arguments over as str subclasses
            raise InvalidInput(field="cluster kind", value=kind, reason="must be a string: List, or an object's kind")
        if "items" in doc and kind.endswith("List"):
            items = doc.get("items") or ()
            if not isinstance(items, (list, tuple)):
                raise InvalidInput(field="cluster items", value=type(items).__name__, reason="must be a list")
            yield from items
        else:
            yield doc


@contextmanager
def gc_paused(freeze=False):
    """Pause the cyclic GC while building many acyclic objects.

    With a big cluster in memory every gen-2 collection walks the whole parsed List, again and again
    while it is built (docs/performance.md). The previous state is restored.

    ``freeze``: for a process that exits soon after (a module, an action plugin's worker). Every object
    allocated while paused is still in the youngest generation, so the first allocation after re-enabling
    walks them all, for nothing in a process about to exit; gc.freeze() moves them out of the collector's
    reach instead. Refcounting still frees them; only cyclic garbage among them would stay."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if freeze:
                gc.freeze()
            gc.enable()


def cluster_from_data(data):
    """Build a Cluster from parsed data: a List dict, a list of documents, or one object."""
    with gc_paused():
        return _cluster_from_data(data)


def _cluster_from_data(data):
    return cluster_from_objects(iter_items(data))


def cluster_from_objects(objects):
    """Build a Cluster from an iterable of objects, each dropped once its model object is built (the caller pauses the
    GC: gc_paused)."""
    buckets = tuple([] for _slot in Cluster._fields)
    builders = KIND_BUILDERS
    for obj in objects:
        if obj.__class__ is not dict and not isinstance(obj, dict):  # the call only for what is not a plain dict
            raise MalformedObject(kind="item", name="?", field="", reason="not a mapping: %r" % (obj,))
        entry = builders.get(obj.get("kind"))
        if entry is None:
            continue
        builder, slot = entry
        try:
            buckets[slot].append(builder(obj))
        except (KeyError, TypeError, AttributeError, ValueError, QuantityError) as exc:
            raise MalformedObject(kind=obj.get("kind"), name=_name_of(obj), field=_field_of(builder, obj, exc),
                                  reason=_reason(exc))
    return Cluster(*(tuple(b) for b in buckets))
