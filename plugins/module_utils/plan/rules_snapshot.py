# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's snapshot rules, as the external-snapshotter's two controllers decide them
(kubernetes-csi/external-snapshotter pkg/common-controller snapshot_controller.go syncUnreadySnapshot,
createSnapshotContent, checkandRemovePVCFinalizer; pkg/sidecar-controller snapshot_controller.go syncContent,
createSnapshotWrapper, deleteCSISnapshotOperation; pkg/utils util.go GetSnapshotContentNameForSnapshot):

- **create**: a VolumeSnapshot not being deleted, whose ``spec.source.persistentVolumeClaimName`` names a bound claim
  of its namespace whose PV is a CSI volume of a driver kubevol drives, and that is not yet ready: CreateSnapshot
  ``snapshot-<snapshot uid>`` of that volume handle with the class's parameters (without the
  ``csi.storage.k8s.io/`` keys) and its snapshotter secret; then the content ``snapcontent-<snapshot uid>`` is
  written with ``spec.source.volumeHandle``, ``spec.sourceVolumeMode`` (the source PV's volumeMode, as
  createSnapshotContent writes it with --prevent-volume-mode-conversion, its default) and the answer in its status,
  and the snapshot's status bound to it.
  The class is the snapshot's ``volumeSnapshotClassName``, else the one default class of that driver.
- **bind**: a pre-provisioned snapshot (``spec.source.volumeSnapshotContentName``) whose content names it back and
  has ``spec.source.snapshotHandle`` is bound without CreateSnapshot.
- **delete**: a content of a driver kubevol drives whose snapshot is gone (absent, another uid, or being deleted)
  and whose deletionPolicy is Delete gets DeleteSnapshot, then the content goes; Retain keeps it. The absence is
  trusted as a claim's is (plan/rules_delete.py): the run is not scoped and no claim still restores from that
  snapshot; the deletion guard counts these beside the volumes.
- **release**: a VolumeSnapshot being deleted (``kubectl delete`` on a real API server only marks it, held by the
  finalizers kubevol wrote) loses them once its content is gone or kept (Retain) and no claim restores from it;
  a content being deleted that is kept on the storage loses its own (common-controller
  checkandRemoveSnapshotFinalizersAndCheckandDeleteContent; records/snapshot.py).

Pure: no I/O. Each refusal is a blocked entry (action ``snapshot``) that names the snapshot and what to do.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.provision import storage_class as sc

SNAPSHOT_NAME_PREFIX = "snapshot"        # the sidecar's --snapshot-name-prefix default
CONTENT_NAME_PREFIX = "snapcontent"      # utils.GetDynamicSnapshotContentNameForSnapshot
# the external-snapshotter's finalizers (pkg/utils util.go), which records/snapshot.py writes and removes
CONTENT_FINALIZER = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"
SNAPSHOT_FINALIZERS = ("snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection",
                       "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection")
DELETION_SECRET_NAME = "snapshot.storage.kubernetes.io/deletion-secret-name"
DELETION_SECRET_NAMESPACE = "snapshot.storage.kubernetes.io/deletion-secret-namespace"
SECRET_NAME_KEY = sc.PREFIX + "snapshotter-secret-name"
SECRET_NAMESPACE_KEY = sc.PREFIX + "snapshotter-secret-namespace"
KNOWN_KEYS = frozenset((SECRET_NAME_KEY, SECRET_NAMESPACE_KEY, sc.PREFIX + "snapshotter-list-secret-name",
                        sc.PREFIX + "snapshotter-list-secret-namespace"))


class SnapshotRefused(KubevolError):
    """A VolumeSnapshot kubevol cannot take (yet): CreateSnapshot is not called."""

    code = "KV-SNAPSHOT"

    def __init__(self, text):
        super(SnapshotRefused, self).__init__("%s [%s]" % (text, self.code))


def snapshot_name(uid):
    return "%s-%s" % (SNAPSHOT_NAME_PREFIX, uid)


def content_name(uid):
    return "%s-%s" % (CONTENT_NAME_PREFIX, uid)


def _parameters(cls):
    """The CreateSnapshot parameters: the class's without the csi.storage.k8s.io/ keys (removePrefixedParameters)."""
    kept = {}
    for key, value in cls.parameters:
        if key.startswith(sc.PREFIX):
            if key not in KNOWN_KEYS:
                raise SnapshotRefused('VolumeSnapshotClass %s has the unknown parameter key "%s" in the reserved '
                                      'namespace %s; remove it from the class' % (cls.name, key, sc.PREFIX))
            continue
        kept[key] = value
    return kept


def _secret(cls, snapshot, content):
    """"namespace/name" of the class's snapshotter secret (templates as GetSecretReference's for snapshots), or
    None."""
    params = dict(cls.parameters)
    name, namespace = params.get(SECRET_NAME_KEY), params.get(SECRET_NAMESPACE_KEY)
    if name is None and namespace is None:
        return None
    if not name or not namespace:
        raise SnapshotRefused("VolumeSnapshotClass %s names only one of %s and %s; set both, or neither"
                              % (cls.name, SECRET_NAME_KEY, SECRET_NAMESPACE_KEY))
    ns_params = {"volumesnapshotcontent.name": content, "volumesnapshot.namespace": snapshot.namespace}
    name_params = dict(ns_params, **{"volumesnapshot.name": snapshot.name})
    try:
        namespace, name = sc.resolve_template(namespace, ns_params), sc.resolve_template(name, name_params)
    except sc.ClassRefused as err:
        raise SnapshotRefused("VolumeSnapshotClass %s: its snapshotter secret has %s; fix the class"
                              % (cls.name, err.text))
    if not sc.is_dns1123_label(namespace) or not sc.is_dns1123_subdomain(name):
        raise SnapshotRefused("VolumeSnapshotClass %s: its snapshotter secret resolves to %s/%s, which is no valid "
                              "Secret; fix the class" % (cls.name, namespace, name))
    return "%s/%s" % (namespace, name)


def _class(index, snapshot, driver):
    classes = index.cluster.snapshot_classes
    if snapshot.class_name:
        cls = next((c for c in classes if c.name == snapshot.class_name), None)
        if cls is None:
            raise SnapshotRefused("its VolumeSnapshotClass %s does not exist; create it, or name another class"
                                  % snapshot.class_name)
        return cls
    defaults = [c for c in classes if c.is_default and c.driver == driver]
    if len(defaults) != 1:
        found = "%d default classes" % len(defaults) if defaults else "no default class"
        raise SnapshotRefused("it names no VolumeSnapshotClass and driver %s has %s; name a class in "
                              "spec.volumeSnapshotClassName" % (driver, found))
    return defaults[0]


class Snapshots:
    """``operations`` (create_snapshot), ``records`` written at the run's start (pre-provisioned bindings) and
    ``blocked`` entries."""

    def __init__(self):
        self.operations, self.records, self.blocked = [], [], []


def _block(out, key, reason):
    out.blocked.append({"node": None, "volume": None, "pod": None, "action": "snapshot",
                        "reason": "VolumeSnapshot %s: %s" % (key, reason)})


def plan_snapshots(index, options, hosts, scope=None):
    """The Snapshots of this plan (the run's first plan only: its creations run in the provision task)."""
    out = Snapshots()
    if options.stage == "node" or not index.cluster.snapshots:
        return out
    known = frozenset(options.known_drivers or ())
    contents = dict((c.name, c) for c in index.cluster.snapshot_contents)
    for snapshot in sorted(index.cluster.snapshots, key=lambda s: (s.namespace, s.name)):
        key = snapshot.namespace + "/" + snapshot.name
        if snapshot.deletion_timestamp or not snapshot.uid or (snapshot.ready_to_use and snapshot.bound_content):
            continue
        if snapshot.source_content:
            _bind(out, snapshot, key, contents.get(snapshot.source_content), known)
            continue
        if not snapshot.source_claim:
            continue
        claim = index.pvc_by_key.get(snapshot.namespace + "/" + snapshot.source_claim)
        pv = index.pv_by_name.get(claim.volume_name) if claim is not None and claim.volume_name else None
        if pv is None or pv.csi is None:
            ours = any(c.driver in known for c in index.cluster.snapshot_classes)
            if pv is None and ours:  # else not a CSI volume, or no class of ours: another snapshotter's
                _block(out, key, "its source claim %s/%s is %s, so nothing was snapshotted; the next run takes the "
                                 "snapshot once the claim is bound" % (snapshot.namespace, snapshot.source_claim,
                                                                       "missing" if claim is None else "not bound"))
            continue
        driver = pv.csi.driver
        if driver not in known:
            continue  # another driver's snapshotter takes it
        if scope is not None and not _in_scope(index, scope, snapshot.namespace, snapshot.source_claim):
            continue
        try:
            cls = _class(index, snapshot, driver)
            if cls.driver != driver:
                raise SnapshotRefused("its VolumeSnapshotClass %s is of driver %s and its source claim %s/%s is a "
                                      "volume of driver %s; name a class of driver %s"
                                      % (cls.name, cls.driver, snapshot.namespace, snapshot.source_claim, driver,
                                         driver))
            params = _parameters(cls)
            secret = _secret(cls, snapshot, content_name(snapshot.uid))
        except SnapshotRefused as err:
            _block(out, key, err.msg)
            continue
        host, why_not = hosts.for_delete(driver, pv, "CreateSnapshot")
        if host is None:
            _block(out, key, why_not)
            continue
        out.operations.append({
            "op": "create_snapshot", "host": host, "driver": driver, "snapshot": key, "snapshot_uid": snapshot.uid,
            "name": snapshot_name(snapshot.uid), "content_name": content_name(snapshot.uid),
            "claim": snapshot.namespace + "/" + snapshot.source_claim, "pv_name": pv.name,
            "source_volume_id": pv.csi.volume_handle, "volume_attributes": dict(pv.csi.volume_attributes),
            "parameters": params, "secret_ref": secret, "class_name": cls.name,
            "deletion_policy": cls.deletion_policy, "source_volume_mode": pv.volume_mode or claim.volume_mode,
            "reason": "VolumeSnapshot %s of claim %s/%s (VolumeSnapshotClass %s) is not ready"
                      % (key, snapshot.namespace, snapshot.source_claim, cls.name)})
    return out


def _in_scope(index, scope, namespace, claim_name):
    for pod in index.cluster.pods:
        if pod.namespace + "/" + pod.name in scope and any(v.claim_name == claim_name for v in pod.volumes) \
                and pod.namespace == namespace:
            return True
    return False


def _bind(out, snapshot, key, content, known):
    """A pre-provisioned snapshot: bound to its content when the content names it back (checkandBindSnapshotContent)."""
    if content is None:
        _block(out, key, "its VolumeSnapshotContent %s does not exist; create it, or fix "
                         "spec.source.volumeSnapshotContentName" % snapshot.source_content)
        return
    if content.driver not in known:
        return
    ref_ns, ref_name, ref_uid = content.snapshot_ref
    if (ref_ns, ref_name) != (snapshot.namespace, snapshot.name) or (ref_uid and ref_uid != snapshot.uid):
        _block(out, key, "its VolumeSnapshotContent %s is bound to another snapshot (%s/%s); name a content whose "
                         "spec.volumeSnapshotRef is this snapshot" % (content.name, ref_ns, ref_name))
        return
    handle = content.snapshot_handle or content.source_snapshot_handle
    if not handle:
        _block(out, key, "its VolumeSnapshotContent %s has no spec.source.snapshotHandle; set it to the driver's "
                         "snapshot id" % content.name)
        return
    out.records.append({"type": "snapshot_bound", "snapshot": key, "snapshot_uid": snapshot.uid,
                        "content_name": content.name, "snapshot_handle": handle,
                        "restore_size": content.restore_size_bytes})


def snapshot_deletions(index, options, hosts, scope):
    """(the delete_snapshot operations, blocked entries, records) of the contents whose snapshot is gone; the records
    release the VolumeSnapshots and contents being deleted that no DeleteSnapshot waits for (their finalizers)."""
    operations, blocked, records = [], [], []
    if options.stage == "node" or not (index.cluster.snapshot_contents or index.cluster.snapshots):
        return operations, blocked, records
    known = frozenset(options.known_drivers or ())
    snapshots = dict(((s.namespace, s.name), s) for s in index.cluster.snapshots)
    restoring = set()
    for claim in index.cluster.claims:
        if claim.data_source and claim.data_source[1] == "VolumeSnapshot" and not claim.volume_name:
            restoring.add((claim.namespace, claim.data_source[2]))
    for content in sorted(index.cluster.snapshot_contents, key=lambda c: c.name):
        ns, name, uid = content.snapshot_ref
        snapshot = snapshots.get((ns, name))
        gone = snapshot is None or (uid and snapshot.uid != uid) or bool(snapshot.deletion_timestamp)
        if not gone or content.deletion_policy != "Delete" or content.driver not in known:
            continue  # Retain keeps the content and the snapshot on the storage
        handle = content.snapshot_handle or content.source_snapshot_handle
        if not handle:
            continue  # no snapshot was ever made for it
        what = "VolumeSnapshotContent %s (VolumeSnapshot %s/%s is gone, deletionPolicy Delete)" % (
            content.name, ns, name)
        if scope is not None:
            blocked.append(_held(content, "%s is kept: this run is scoped to some pods (%s) and deletes no snapshot; "
                                          "run without it" % (what, setting("scope"))))
            continue
        if (ns, name) in restoring:
            blocked.append(_held(content, "%s is kept: claim(s) still restore from snapshot %s/%s, so the cluster "
                                          "snapshot may be incomplete; check it" % (what, ns, name)))
            continue
        host, why_not = hosts.for_delete(content.driver, None, "DeleteSnapshot")
        if host is None:
            blocked.append(_held(content, "%s: %s" % (what, why_not)))
            continue
        operations.append({"op": "delete_snapshot", "host": host, "driver": content.driver,
                           "content_name": content.name, "snapshot": "%s/%s" % (ns, name), "snapshot_uid": uid,
                           "snapshot_id": handle, "volume_attributes": {}, "secret_ref": _deletion_secret(content),
                           "reason": what})
    if scope is None:
        records.extend(_releases(index, known, restoring, operations))
    return operations, blocked, records


def _releases(index, known, restoring, operations):
    """The snapshot_released records of the VolumeSnapshots being deleted that hold kubevol's finalizers and whose
    content no DeleteSnapshot of this run removes (Retain, or no content): the common-controller removes them then,
    unless a claim still restores from the snapshot (volumesnapshot-as-source-protection); and the
    snapshot_content_released ones of the contents being deleted whose snapshot is gone and that are kept on the
    storage (Retain). A DeleteSnapshot's own record releases its snapshot after the call."""
    deleting = frozenset(op["content_name"] for op in operations)
    contents = dict((c.name, c) for c in index.cluster.snapshot_contents)
    snapshots = dict(((s.namespace, s.name), s) for s in index.cluster.snapshots)
    out = []
    for snapshot in sorted(index.cluster.snapshots, key=lambda s: (s.namespace, s.name)):
        if not snapshot.deletion_timestamp or not set(snapshot.finalizers) & set(SNAPSHOT_FINALIZERS):
            continue
        content = contents.get(snapshot.bound_content)
        if (snapshot.namespace, snapshot.name) in restoring or (content is not None and (
                content.name in deleting or (content.deletion_policy == "Delete" and content.driver in known
                                             and (content.snapshot_handle or content.source_snapshot_handle)))):
            continue  # held for its restore, or released after its DeleteSnapshot (or that waits: it stays)
        out.append({"type": "snapshot_released", "snapshot": snapshot.namespace + "/" + snapshot.name,
                    "snapshot_uid": snapshot.uid})
    for content in sorted(index.cluster.snapshot_contents, key=lambda c: c.name):
        ns, name, uid = content.snapshot_ref
        snapshot = snapshots.get((ns, name))
        gone = snapshot is None or (uid and snapshot.uid != uid)
        if content.deletion_timestamp and CONTENT_FINALIZER in content.finalizers and gone and \
                content.name not in deleting and (content.deletion_policy != "Delete" or content.driver not in known):
            out.append({"type": "snapshot_content_released", "content_name": content.name})
    return out


def _held(content, reason):
    return {"node": None, "volume": content.name, "pod": None, "action": "delete", "reason": reason}


def _deletion_secret(content):
    annotations = dict(content.annotations)
    name, namespace = annotations.get(DELETION_SECRET_NAME), annotations.get(DELETION_SECRET_NAMESPACE)
    return "%s/%s" % (namespace, name) if name and namespace else None
