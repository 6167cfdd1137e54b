# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one builder of an attached VolumeAttachment (storage.k8s.io/v1).

Used by the node side (k8s_volume_attach returns the object to record) and by the records
(``attached`` creates it), so both describe an attachment the same way. Standard library only:
it is imported on the nodes.

- name: ``csi-<sha256(handle + driver + node)>`` (pkg/volume/csi/csi_attacher.go getAttachmentName);
- spec: the attacher is the CSI driver, ``nodeName`` and ``source.persistentVolumeName`` (csi_attacher.go Attach);
- status: ``attached: true`` with the device path in ``attachmentMetadata`` (what the external-attacher sets).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import CSI_NODE_ID_ANNOTATION, volume_attachment_name

API_VERSION = "storage.k8s.io/v1"
KIND = "VolumeAttachment"


def attached_volume_attachment(driver, volume_handle, node_name, pv_name, device_path, attached=True, metadata=None,
                               node_id=None):
    """The VolumeAttachment of ``pv_name`` (``driver``, ``volume_handle``) attached to ``node_name``.

    ``device_path`` None is recorded as ``""``. ``attached=False`` is the intent the A/D controller writes
    before the attacher acts (csi_attacher.go Attach creates the object, the external-attacher sets
    attached). A new dict each call (the caller may keep or change it). ``metadata``: an external CSI driver's
    ControllerPublishVolume publish_context, recorded as the attachmentMetadata (external-attacher csiAttach),
    with devicePath only when the driver gave one. ``node_id``: the CSI node id ControllerPublishVolume was given,
    kept as the ``csi.alpha.kubernetes.io/node-id`` annotation (external-attacher prepareVANodeID), so that the
    volume can be unpublished from that node once its facts and its Node are gone.
    """
    if metadata is not None:
        status = {"attached": True, "attachmentMetadata": dict(metadata)}
    else:
        status = {"attached": True, "attachmentMetadata": {"devicePath": device_path or ""}}
    if not attached:
        status = {"attached": False}
    meta = {"name": volume_attachment_name(volume_handle, driver, node_name)}
    if node_id:
        meta["annotations"] = {CSI_NODE_ID_ANNOTATION: node_id}
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": meta,
        "spec": {"attacher": driver, "nodeName": node_name, "source": {"persistentVolumeName": pv_name}},
        "status": status,
    }
