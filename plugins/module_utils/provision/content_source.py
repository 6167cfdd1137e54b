# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The content source of a claim to restore or clone (``spec.dataSource``, else ``spec.dataSourceRef``), as the
external-provisioner reads it before CreateVolume (kubernetes-csi/external-provisioner pkg/controller/controller.go
getVolumeContentSource, getSnapshotSource, getPVCSource):

- a VolumeSnapshot (apiGroup snapshot.storage.k8s.io) in the claim's namespace, bound to its content, readyToUse,
  whose content's driver is the class's provisioner: ``{snapshot: {snapshot_id: <content's snapshotHandle>}}``;
  the claim asks for at least its restoreSize; when the content's ``spec.sourceVolumeMode`` differs from the
  claim's volumeMode, the content must carry ``snapshot.storage.kubernetes.io/allow-volume-mode-change: "true"``
  (the external-provisioner's ``--prevent-volume-mode-conversion``, true by default since its v4.0.0: a user who
  may create a claim must not turn a Filesystem snapshot into a raw Block device, or the other way round);
- a PersistentVolumeClaim in the claim's namespace, bound, not being deleted, of the same StorageClass, whose PV is a
  CSI volume of the class's provisioner and of the claim's volumeMode: ``{volume: {volume_id: <its volumeHandle>}}``;
  the claim asks for at least the source PV's capacity.

Anything else is refused (ContentSourceRefused, one sentence with the remedy) and nothing is provisioned: the
external-provisioner retries the same claim, so does the next run. Pure: reads the cluster model only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError

SNAPSHOT_GROUP = "snapshot.storage.k8s.io"
ALLOW_MODE_CHANGE = "snapshot.storage.kubernetes.io/allow-volume-mode-change"
# Go's strconv.ParseBool, which the external-provisioner reads that annotation with
_TRUE, _FALSE = ("1", "t", "T", "TRUE", "true", "True"), ("0", "f", "F", "FALSE", "false", "False")
KINDS = ("VolumeSnapshot", "PersistentVolumeClaim")


class ContentSourceRefused(KubevolError):
    """A claim's dataSource kubevol cannot restore or clone from (yet): CreateVolume is not called."""

    code = "KV-CONTENT-SOURCE"

    def __init__(self, text):
        super(ContentSourceRefused, self).__init__("%s [%s]" % (text, self.code))


def restores(claim):
    """True when the claim's dataSource is one this module handles (a snapshot or a claim); another kind is left
    to its volume populator."""
    if claim.data_source is None:
        return False
    group, kind, _name = claim.data_source
    return (kind == "VolumeSnapshot" and group == SNAPSHOT_GROUP) or (kind == "PersistentVolumeClaim" and not group)


def _snapshot_source(index, claim, cls, name):
    key = claim.namespace + "/" + name
    snapshot = next((s for s in index.cluster.snapshots if s.namespace == claim.namespace and s.name == name), None)
    if snapshot is None:
        raise ContentSourceRefused("VolumeSnapshot %s, the dataSource of claim %s/%s, does not exist; create it, or "
                                   "remove the dataSource" % (key, claim.namespace, claim.name))
    content = next((c for c in index.cluster.snapshot_contents if c.name == snapshot.bound_content), None)
    if snapshot.deletion_timestamp or not snapshot.ready_to_use or content is None or not content.snapshot_handle:
        raise ContentSourceRefused("VolumeSnapshot %s is not ready to use, so claim %s/%s cannot be restored from it "
                                   "yet; the next run restores it once the snapshot is ready"
                                   % (key, claim.namespace, claim.name))
    if content.driver != cls.provisioner:
        raise ContentSourceRefused("VolumeSnapshot %s was taken by driver %s, and claim %s/%s's StorageClass %s "
                                   "provisions with %s; restore it with a StorageClass of driver %s"
                                   % (key, content.driver, claim.namespace, claim.name, cls.name, cls.provisioner,
                                      content.driver))
    _check_mode_change(claim, content, key)
    size = snapshot.restore_size_bytes if snapshot.restore_size_bytes is not None else content.restore_size_bytes
    return {"snapshot": {"snapshot_id": content.snapshot_handle}}, size, "VolumeSnapshot " + key


def _check_mode_change(claim, content, key):
    """A restore into another volume mode than the snapshot's source needs the content's permission (controller.go
    getSnapshotSource with --prevent-volume-mode-conversion); a content without sourceVolumeMode is not checked."""
    mode = content.source_volume_mode
    if not mode or mode == claim.volume_mode:
        return
    allowed = dict(content.annotations).get(ALLOW_MODE_CHANGE)
    if allowed in _TRUE:
        return
    if allowed is None:
        found = 'lacks the annotation %s: "true"' % ALLOW_MODE_CHANGE
    elif allowed in _FALSE:
        found = 'has %s: "%s"' % (ALLOW_MODE_CHANGE, allowed)
    else:
        found = 'has %s: "%s", which is no boolean' % (ALLOW_MODE_CHANGE, allowed)
    raise ContentSourceRefused(
        "claim %s/%s (volumeMode %s) cannot be restored from VolumeSnapshot %s, a snapshot of a %s volume, because "
        "its VolumeSnapshotContent %s %s; set the claim's volumeMode to %s, or have a cluster admin set that "
        'annotation to "true" on the content' % (claim.namespace, claim.name, claim.volume_mode, key, mode,
                                                 content.name, found, mode))


def _claim_source(index, claim, cls, name):
    key = claim.namespace + "/" + name
    source = index.pvc_by_key.get(key)
    if source is None:
        raise ContentSourceRefused("claim %s, the dataSource of claim %s/%s, does not exist; create it, or remove the "
                                   "dataSource" % (key, claim.namespace, claim.name))
    pv = index.pv_by_name.get(source.volume_name) if source.volume_name else None
    if source.deletion_timestamp or pv is None or source.phase != "Bound":
        raise ContentSourceRefused("claim %s is not bound (or is being deleted), so claim %s/%s cannot be cloned from "
                                   "it yet; the next run clones it once the source is bound"
                                   % (key, claim.namespace, claim.name))
    if pv.csi is None or pv.csi.driver != cls.provisioner:
        raise ContentSourceRefused("claim %s is a volume of driver %s, and claim %s/%s's StorageClass %s provisions "
                                   "with %s; clone it with a StorageClass of the source's driver"
                                   % (key, pv.csi.driver if pv.csi else "none (not CSI)", claim.namespace, claim.name,
                                      cls.name, cls.provisioner))
    if source.storage_class is not None and source.storage_class != cls.name:
        raise ContentSourceRefused("claim %s is in StorageClass %s and claim %s/%s in %s: a clone must be in its "
                                   "source's StorageClass; use %s" % (key, source.storage_class, claim.namespace,
                                                                      claim.name, cls.name, source.storage_class))
    if (pv.volume_mode or "Filesystem") != claim.volume_mode:
        raise ContentSourceRefused("claim %s/%s (volumeMode %s) cannot be cloned from claim %s, a %s volume: a clone "
                                   "has its source's volume mode; set the claim's volumeMode to %s"
                                   % (claim.namespace, claim.name, claim.volume_mode, key, pv.volume_mode or
                                      "Filesystem", pv.volume_mode or "Filesystem"))
    return {"volume": {"volume_id": pv.csi.volume_handle}}, pv.capacity_bytes, "claim " + key


def content_source(index, claim, cls):
    """(the CreateVolume ``volume_content_source``, the source's size in bytes or None, what it is for messages) of
    ``claim`` (one ``restores`` is true of) provisioned with StorageClass ``cls``; raises ContentSourceRefused."""
    _group, kind, name = claim.data_source
    if kind == "VolumeSnapshot":
        source, size, what = _snapshot_source(index, claim, cls, name)
    else:
        source, size, what = _claim_source(index, claim, cls, name)
    if size and claim.request_bytes is not None and claim.request_bytes < size:
        raise ContentSourceRefused("claim %s/%s requests %d bytes, less than the %d bytes of its dataSource %s; "
                                   "request at least %d bytes" % (claim.namespace, claim.name, claim.request_bytes,
                                                                  size, what, size))
    return source, size, what
