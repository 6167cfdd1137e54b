# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The records of a volume's life from a claim, as the Kubernetes components that write them write them:

=============================  =================================================================================
record                         what it writes, and who does it in Kubernetes
=============================  =================================================================================
``node_registration``          the Node's topology labels and ``csi.volume.kubernetes.io/nodeid`` annotation, and
                               the node's CSINode driver entry (nodeID, topologyKeys, allocatable.count): the
                               kubelet's plugin registration (pkg/volume/csi/nodeinfomanager)
``provisioning_started``       the claim's ``volume.kubernetes.io/storage-provisioner`` (and its beta twin) and the
                               scheduler's ``volume.kubernetes.io/selected-node``, before CreateVolume: the PV
                               controller (pv_controller.go setClaimProvisioner) and the scheduler's volumebinding
``provisioning_uncertain``     a CreateVolume answered with a non-final status: the claim's
                               ``kubevol.io/provisioning-uncertain`` names the volume the next run asks for again
                               (the external-provisioner keeps it in memory, as ProvisioningInBackground)
``provisioned``                the PV the external-provisioner writes (pkg/controller/controller.go Provision),
                               then the claim bound to it as the PV controller binds (pv_controller.go bind:
                               claimRef, PV phase Bound, the claim's volumeName, its bind-completed and
                               bound-by-controller annotations, phase Bound, capacity and accessModes), unless
                               the claim is gone or bound to another volume meanwhile: then the PV is Released
``released``                   a PV whose claim is gone: phase Released (pv_controller.go syncVolume)
``pv_deleted``                 the PV object, once its volume was deleted (external-provisioner, then the
                               pv-protection controller's finalizer removal)
``claim_released``             a claim being deleted that no pod uses any more: its ``kubernetes.io/pvc-protection``
                               finalizer removed, so it goes (pkg/controller/volume/pvcprotection)
=============================  =================================================================================

``ProvisionRecords`` is a mixin of record.py's RecordApplier (``items``, ``nodes``, ``pvs``, ``pvcs``, ``_touch``,
``_created``, ``_missing``, ``_deleted``). A created object is put where kubectl prints it (insert_in_kubectl_order),
so a state file kubevol wrote reads as ``kubectl get`` wrote it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json

from ansible_collections.kubevol.volumes.plugins.module_utils.records import snapshot

NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid"  # nodeinfomanager: {driver: node id} as JSON
STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
SELECTED_NODE = "volume.kubernetes.io/selected-node"
PROVISIONING_UNCERTAIN = "kubevol.io/provisioning-uncertain"
BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
PVC_PROTECTION = "kubernetes.io/pvc-protection"

# the order `kubectl get nodes,csinodes,pods,pv,pvc,storageclasses,volumeattachments,csidrivers,
# volumesnapshotclasses,volumesnapshots,volumesnapshotcontents -A` prints kinds in (each sorted by namespace, name)
KUBECTL_KIND_ORDER = ("Node", "CSINode", "Pod", "PersistentVolume", "PersistentVolumeClaim", "StorageClass",
                      "VolumeAttachment", "CSIDriver", "VolumeSnapshotClass", "VolumeSnapshot",
                      "VolumeSnapshotContent")


def _key(obj):
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def insert_in_kubectl_order(items, obj):
    """Put ``obj`` into ``items`` where kubectl would print it: among the objects of its kind, sorted by namespace and
    name; a kind the List has none of goes before the first object of a kind kubectl prints after it
    (KUBECTL_KIND_ORDER), else at the end (after the kinds kubectl's command does not name, as they were)."""
    kind = obj.get("kind")
    rank = KUBECTL_KIND_ORDER.index(kind) if kind in KUBECTL_KIND_ORDER else len(KUBECTL_KIND_ORDER)
    same, after = [], None
    for position, item in enumerate(items):
        other = item.get("kind") if isinstance(item, dict) else None
        if other == kind:
            same.append(position)
        elif after is None and other in KUBECTL_KIND_ORDER and KUBECTL_KIND_ORDER.index(other) > rank:
            after = position
    if same:
        key = _key(obj)
        at = next((p for p in same if _key(items[p]) > key), same[-1] + 1)
    else:
        at = len(items) if after is None else after
    items.insert(at, obj)
    return obj


def _meta(obj):
    if not isinstance(obj.get("metadata"), dict):
        obj["metadata"] = {}
    return obj["metadata"]


def _map(parent, key):
    if not isinstance(parent.get(key), dict):
        parent[key] = {}
    return parent[key]


class ProvisionRecords(snapshot.SnapshotRecords):
    """The records of provisioning, binding, release and deletion, and of the kubelet's CSI registration; the
    snapshots' are records/snapshot.py's."""

    def _csinodes(self):
        found = getattr(self, "_csinode_index", None)
        if found is None:
            found = self._csinode_index = dict(
                (item["metadata"]["name"], item) for item in self.items
                if isinstance(item, dict) and item.get("kind") == "CSINode" and isinstance(item.get("metadata"), dict))
        return found

    def _create(self, obj):
        insert_in_kubectl_order(self.items, obj)
        return self._created(obj)

    def _changed(self, obj, change):
        """Apply ``change(obj)`` and return its label when it changed something (the diff keeps the object before)."""
        before = copy.deepcopy(obj)
        change(obj)
        if obj == before:
            return []
        label = self._label(obj)
        self._before.setdefault(label, before)
        self._touched[label] = obj
        return [label]

    # -- the kubelet's registration ------------------------------------------------------------------
    def _node_registration(self, record):
        node = self._node(record["node"], True, "cannot register driver %s on it" % record["driver"])
        topology = record.get("topology") or {}
        labels = []

        def node_change(obj):
            meta = _meta(obj)
            if topology:
                _map(meta, "labels").update(topology)
            annotations = _map(meta, "annotations")
            try:
                ids = json.loads(annotations.get(NODE_ID_ANNOTATION) or "{}")
            except ValueError:
                ids = {}
            if not isinstance(ids, dict):
                ids = {}
            if ids.get(record["driver"]) != record["node_id"]:
                ids[record["driver"]] = record["node_id"]
                annotations[NODE_ID_ANNOTATION] = json.dumps(ids, sort_keys=True, separators=(",", ":"))
        labels.extend(self._changed(node, node_change))
        entry = {"name": record["driver"], "nodeID": record["node_id"]}
        if topology:
            entry["topologyKeys"] = sorted(topology)
        if record.get("max_volumes"):
            entry["allocatable"] = {"count": record["max_volumes"]}
        csinode = self._csinodes().get(record["node"])
        if csinode is None:
            meta = {"name": record["node"]}
            uid = (node.get("metadata") or {}).get("uid")
            if uid:  # nodeinfomanager: the CSINode is owned by its Node
                meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": record["node"], "uid": uid}]
            csinode = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": meta,
                       "spec": {"drivers": [entry]}}
            self._csinodes()[record["node"]] = csinode
            labels.append(self._create(csinode))
            return labels

        def csinode_change(obj):
            drivers = _map(obj, "spec").get("drivers")
            drivers = obj["spec"]["drivers"] = list(drivers) if isinstance(drivers, list) else []
            for position, driver in enumerate(drivers):
                if isinstance(driver, dict) and driver.get("name") == record["driver"]:
                    drivers[position] = entry  # the same entry again changes nothing
                    return
            drivers.append(entry)
        labels.extend(self._changed(csinode, csinode_change))
        return labels

    # -- provisioning ------------------------------------------------------------------------------------
    def _claim(self, key, reason, required=True):
        namespace, name = key.split("/")
        pvc = self.pvcs.get((namespace, name))
        if pvc is None and required:
            self._missing("PersistentVolumeClaim", key, reason)
        return pvc

    def _provisioning_started(self, record):
        pvc = self._claim(record["pvc"], "cannot record that its volume is being provisioned")

        def change(obj):
            annotations = _map(_meta(obj), "annotations")
            annotations[STORAGE_PROVISIONER] = record["driver"]
            annotations[BETA_STORAGE_PROVISIONER] = record["driver"]
            if record.get("selected_node"):
                annotations[SELECTED_NODE] = record["selected_node"]
        return self._changed(pvc, change)

    def _provisioning_uncertain(self, record):
        pvc = self._claim(record["pvc"], "", required=False)
        if pvc is None:
            return []  # gone meanwhile: nothing to mark

        def change(obj):
            _map(_meta(obj), "annotations")[PROVISIONING_UNCERTAIN] = record["volume_name"]
        return self._changed(pvc, change)

    def _provisioned(self, record):
        wanted = record["pv"]
        name = wanted["metadata"]["name"]
        labels = []
        pv = self.pvs.get(name)
        if pv is None:
            pv = copy.deepcopy(wanted)
            self.pvs[name] = pv
            labels.append(self._create(pv))
        pvc = self._claim(record["pvc"], "", required=False)
        spec = pvc.get("spec") if pvc is not None and isinstance(pvc.get("spec"), dict) else {}
        bindable = (pvc is not None and (pvc.get("metadata") or {}).get("uid") == record["claim_uid"]
                    and not (pvc.get("metadata") or {}).get("deletionTimestamp")
                    and spec.get("volumeName") in (None, "", name))
        ref = (pv.get("spec") or {}).get("claimRef") or {}
        ours = ref.get("uid") == record["claim_uid"]
        phase = "Bound" if bindable and ours else "Released"

        def pv_change(obj):
            _map(obj, "status")["phase"] = phase
        labels.extend(self._changed(pv, pv_change))
        if not (bindable and ours):
            return labels  # pv_controller.go: a claim gone or bound elsewhere never gets this volume
        capacity = ((pv.get("spec") or {}).get("capacity") or {}).get("storage")
        modes = list((pv.get("spec") or {}).get("accessModes") or [])

        def claim_change(obj):
            annotations = _map(_meta(obj), "annotations")
            annotations.pop(PROVISIONING_UNCERTAIN, None)  # certain now
            annotations[BIND_COMPLETED] = "yes"
            annotations[BOUND_BY_CONTROLLER] = "yes"
            _map(obj, "spec")["volumeName"] = name
            status = _map(obj, "status")
            status["phase"] = "Bound"
            status["accessModes"] = modes
            if capacity is not None:
                _map(status, "capacity")["storage"] = capacity
        labels.extend(self._changed(pvc, claim_change))
        return labels

    # -- release and deletion -------------------------------------------------------------------------------
    def _released(self, record):
        pv = self.pvs.get(record["pv_name"])
        if pv is None:
            return []

        def change(obj):
            _map(obj, "status")["phase"] = "Released"
        return self._changed(pv, change)

    def _pv_deleted(self, record):
        pv = self.pvs.get(record["pv_name"])
        if pv is None:
            return []
        if record.get("uid") and (pv.get("metadata") or {}).get("uid") not in (None, record["uid"]):
            return []  # another PV of that name now: never deleted for the old one
        label = self._touch(pv)
        del self.pvs[record["pv_name"]]
        self._deleted.add(id(pv))
        self._touched[label] = None
        return [label]

    def _claim_released(self, record):
        pvc = self._claim(record["pvc"], "", required=False)
        meta = (pvc or {}).get("metadata") or {}
        if pvc is None or meta.get("uid") != record["uid"] or not meta.get("deletionTimestamp"):
            return []
        finalizers = [f for f in meta.get("finalizers") or [] if f != PVC_PROTECTION]
        if finalizers:  # someone else's finalizer holds it: only ours goes
            return self._changed(pvc, lambda obj: obj["metadata"].__setitem__("finalizers", finalizers))
        label = self._touch(pvc)  # no finalizer left: the API server removes it
        namespace, name = record["pvc"].split("/")
        del self.pvcs[(namespace, name)]
        self._deleted.add(id(pvc))
        self._touched[label] = None
        return [label]


HANDLERS = {
    "node_registration": ProvisionRecords._node_registration,
    "provisioning_started": ProvisionRecords._provisioning_started,
    "provisioning_uncertain": ProvisionRecords._provisioning_uncertain,
    "provisioned": ProvisionRecords._provisioned,
    "released": ProvisionRecords._released,
    "pv_deleted": ProvisionRecords._pv_deleted,
    "claim_released": ProvisionRecords._claim_released,
}
REQUIRED_KEYS = {
    "node_registration": ("node", "driver", "node_id"),
    "provisioning_started": ("pvc", "driver"),
    "provisioning_uncertain": ("pvc", "volume_name"),
    "provisioned": ("pvc", "claim_uid", "pv"),
    "released": ("pv_name",),
    "pv_deleted": ("pv_name",),
    "claim_released": ("pvc", "uid"),
}
HANDLERS.update(snapshot.HANDLERS)  # snapshots taken, bound and deleted: records/snapshot.py
REQUIRED_KEYS.update(snapshot.REQUIRED_KEYS)
