# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's release and deletion rule: a PV whose claim is gone is Released (pv_controller.go syncVolume); a
Released PV with reclaimPolicy Delete that a driver kubevol drives provisioned (``pv.kubernetes.io/provisioned-by``)
gets DeleteVolume, then the PV goes (external-provisioner Delete, shouldDelete, canDeleteVolume); Retain keeps both.
A claim being deleted that no pod uses loses its pvc-protection finalizer (pkg/controller/volume/pvcprotection), so
it goes, in this run, and its PV with it.

Deleting data is the most dangerous thing a storage tool does, so a volume is deleted only when all of this holds:

- the claim's absence is to be trusted: the cluster snapshot is whole (the file store refuses one cut short), the
  run is not scoped to some pods (``scope``), no pod the snapshot still has names the claim (pvc-protection keeps a
  claim while a pod uses it, so a pod naming a missing claim means the snapshot lost it), and the teardown guard
  did not trip (the planner refuses the whole plan then);
- no node has it: no node this run reaches reports its device, staging or pod mounts, no node's status lists it
  (also the nodes without facts), and no VolumeAttachment names it, unless this plan detaches it from that node
  (then the DeleteVolume follows the teardown, in the run's delete task, and only if the teardown succeeded);
- at most ``max_volume_deletions`` volumes in one run, unless ``allow_mass_deletion`` (the deletion guard, as the
  teardown guard).

Anything else waits, blocked with the reason, and nothing of it is deleted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import pv_unique_name
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.provision import storage_class as sc
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_snapshot import snapshot_deletions
from ansible_collections.kubevol.volumes.plugins.module_utils.provision.volume import (
    DELETION_SECRET_NAME, DELETION_SECRET_NAMESPACE, PROVISIONED_BY)

PVC_PROTECTION = "kubernetes.io/pvc-protection"
DEFAULT_MAX_VOLUME_DELETIONS = 3


def _claim_users(index):
    """{"ns/claim"} named by the volumes of pods that are not finished (pvcprotection isBeingUsed)."""
    users = set()
    for pod in index.cluster.pods:
        if pod.phase in ("Failed", "Succeeded"):
            continue
        for volume in pod.volumes:
            if volume.claim_name:
                users.add(pod.namespace + "/" + volume.claim_name)
    return users


def _holders(p, unique, pv_name):
    """{node: what holds the volume there} from every source: node facts, node status, VolumeAttachments."""
    held = {}
    for node, facts in p.reachable_facts.items():
        if unique in facts.devices or unique in facts.global_mounts:
            held.setdefault(node, "its device or staging mount")
        if any(pm.unique_name == unique for pm in facts.pod_mounts.values()) or any(
                u.pv_name == pv_name for u in facts.uncertain):
            held.setdefault(node, "a pod mount")
    for unique_name, node in p.actual.in_use:
        if unique_name == unique:
            held.setdefault(node, "node status volumesInUse")
    for (unique_name, node), _av in p.actual.attached.items():
        if unique_name == unique:
            held.setdefault(node, "an attachment (node status or VolumeAttachment)")
    for (name, node), va in p.index.va_by_pair.items():
        if name == pv_name:
            held.setdefault(node, "VolumeAttachment %s" % va.name)
    return held


class Deletions:
    """``operations`` (delete_volume), ``records`` written at the run's start (claims let go, PVs Released),
    ``blocked`` entries and the ``guard`` (deletion guard) of one plan."""

    def __init__(self):
        self.operations, self.records, self.blocked = [], [], []
        self.guard = {"deletions": 0, "max_volume_deletions": DEFAULT_MAX_VOLUME_DELETIONS,
                      "allow_mass_deletion": False, "tripped": False}


def plan_deletions(p, hosts, scope):
    """The Deletions of plan ``p`` (after its teardown rules: ``p.detached`` is what it detaches); ``hosts``:
    plan/provision_hosts.py Hosts; ``scope``: the pods in scope or None."""
    out = Deletions()
    opts = p.options
    out.guard.update(max_volume_deletions=opts.max_volume_deletions, allow_mass_deletion=opts.allow_mass_deletion)
    if opts.stage == "node":
        return out
    index = p.index
    # the pods' claims are read only when a claim is being deleted or a volume released (a pass over every pod)
    deleting = [c for c in index.cluster.claims if c.deletion_timestamp and PVC_PROTECTION in c.finalizers]
    users = _claim_users(index) if deleting else None
    letting_go = set()
    for claim in deleting:
        key = claim.namespace + "/" + claim.name
        if key not in users:
            out.records.append({"type": "claim_released", "pvc": key, "uid": claim.uid})
            if set(claim.finalizers) == {PVC_PROTECTION}:
                letting_go.add(key)  # no other finalizer: the claim goes with this run's records
    known = frozenset(opts.known_drivers or ())
    candidates = []
    released = []
    pvc_by_key = index.pvc_by_key
    for pv in index.cluster.persistent_volumes:  # one pass, nothing sorted but what is found
        ref = pv.claim_ref
        if ref is None or not ref.name or pv.deletion_timestamp:
            continue
        key = (ref.namespace or "default") + "/" + ref.name
        claim = pvc_by_key.get(key)
        gone = claim is None or key in letting_go or (ref.uid and claim.uid != ref.uid)
        if not gone and pv.phase != "Released":
            continue
        if pv.phase != "Released":
            released.append(pv.name)
        if pv.reclaim_policy != "Delete" or pv.csi is None:
            continue  # Retain keeps the PV (Released) and the data; Recycle is not done
        driver = dict(pv.annotations).get(PROVISIONED_BY)
        if driver != pv.csi.driver or driver not in known:
            continue  # provisioned by someone else, or by hand: its own provisioner deletes it
        candidates.append((pv, key, driver))
    out.records.extend({"type": "released", "pv_name": name} for name in sorted(released))
    if candidates and users is None:
        users = _claim_users(index)
    for pv, key, driver in sorted(candidates, key=lambda candidate: candidate[0].name):
        operation, reason = _deletion(p, hosts, scope, users, pv, key, driver)
        if operation is None:
            out.blocked.append({"node": None, "volume": pv.name, "pod": None, "reason": reason, "action": "delete"})
        else:
            out.operations.append(operation)
    snapshot_ops, held, releases = snapshot_deletions(index, opts, hosts, scope)  # plan/rules_snapshot.py
    out.operations.extend(snapshot_ops)
    out.blocked.extend(held)
    out.records.extend(releases)
    _guard(out, opts)
    return out


def _deletion(p, hosts, scope, users, pv, key, driver):
    """(the delete_volume operation, None) or (None, why it waits)."""
    if scope is not None:
        return None, ("PV %s is Released and its reclaimPolicy is Delete, but this run is scoped to some pods "
                      "(%s): a scoped run deletes no volume; run without it to delete the volume"
                      % (pv.name, setting("scope")))
    if key in users:
        return None, ("PV %s: its claim %s is missing from the cluster snapshot, yet a pod still names it (a claim is "
                      "never deleted while a pod uses it): the snapshot may be incomplete, so the volume is kept; "
                      "check the snapshot" % (pv.name, key))
    unique = pv_unique_name(pv)
    held = dict((node, what) for node, what in _holders(p, unique, pv.name).items() if (unique, node) not in p.detached)
    if held:
        where = "; ".join("node %s (%s)" % (node, held[node]) for node in sorted(held))
        return None, ("PV %s is Released and will be deleted once no node has it: %s still has it; the next run "
                      "deletes it after that node's teardown" % (pv.name, where))
    host, why_not = hosts.for_delete(driver, pv)
    if host is None:
        return None, "PV %s is Released: %s" % (pv.name, why_not)
    return {"op": "delete_volume", "host": host, "driver": driver, "pv_name": pv.name,
            "volume_id": pv.csi.volume_handle, "volume_attributes": dict(pv.csi.volume_attributes), "claim": key,
            "unique_volume_name": unique, "secret_ref": _deletion_secret(p.index, pv),
            "after_teardown": any(pair[0] == unique for pair in p.detached),
            "reason": "PV %s is Released (claim %s is gone) and its reclaimPolicy is Delete" % (pv.name, key)}, None


def _deletion_secret(index, pv):
    """"namespace/name" of the secret DeleteVolume gets: the PV's deletion-secret annotations, else the class's
    provisioner secret (handleSecretsForDeletion); None for none."""
    annotations = dict(pv.annotations)
    if DELETION_SECRET_NAME in annotations and DELETION_SECRET_NAMESPACE in annotations:
        name, namespace = annotations[DELETION_SECRET_NAME], annotations[DELETION_SECRET_NAMESPACE]
        return "%s/%s" % (namespace, name) if name and namespace else None
    cls = next((c for c in index.cluster.storage_classes if c.name == pv.storage_class), None)
    if cls is None:
        return None
    claim = _ClaimName(pv.claim_ref.namespace or "default", pv.claim_ref.name)
    try:
        return sc.secret_reference("provisioner", dict(cls.parameters), pv.name, claim)
    except sc.ClassRefused:
        return None


class _ClaimName(object):
    """The claim as getSecretsFromSC knows it at deletion: its namespace and name only."""

    def __init__(self, namespace, name):
        self.namespace, self.name, self.annotations = namespace, name, ()


def _guard(out, opts):
    count = len(out.operations)
    out.guard["deletions"] = count
    if count > opts.max_volume_deletions and not opts.allow_mass_deletion:
        out.guard["tripped"] = True
        names = ", ".join(op.get("pv_name") or op["content_name"] for op in out.operations)
        for op in out.operations:
            out.blocked.append({"node": None, "volume": op.get("pv_name") or op["content_name"], "pod": None,
                                "action": "delete", "reason": (
                                    "deletion guard: this run would delete %d volumes and snapshots (%s), over the "
                                    "limit of %d (%s), so none is deleted; if the snapshot is right and they are to "
                                    "go, allow it for one run with %s [KV-MASS-DELETION]" % (
                                        count, names, opts.max_volume_deletions, setting("max_volume_deletions"),
                                        setting("allow_mass_deletion", True)))})
        out.operations = []
