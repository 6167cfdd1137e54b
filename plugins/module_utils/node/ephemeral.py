# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inline ephemeral CSI volumes (``pod.spec.volumes[].csi``, volumeLifecycleMode Ephemeral) on the node.

As the kubelet's CSI plugin does them (pkg/volume/csi/csi_mounter.go SetUpAt, TearDownAt): no attach and no
staging for the cluster (the volume is not device-mountable), vol_data.json written beside the pod's ``mount``
directory with ``volumeLifecycleMode: Ephemeral``, then NodePublishVolume straight into that directory; at
teardown NodeUnpublishVolume, after which the driver deletes the volume it created for the pod. kubevol's
driver is the node plugin: publish creates the backing volume (loop: a sparse image of ``capacity_bytes`` in
the pool), attaches it, formats it only when the blank probe says so, and mounts it at the pod's directory.
Unpublish unmounts it, detaches it and deletes only the image the driver's record or the vol_data.json names
as this pod's ephemeral image.

Crash safety: vol_data.json is written before the image is created and removed last, so a run killed at
any point leaves a directory the node facts report as this pod's ephemeral volume, and the next run
finishes the publish (pod still running) or the unpublish (pod gone).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import EPHEMERAL_IMAGE_KEY
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    FilesystemMismatch, ForeignMount, KubevolError, UnsafePath, UnsafeToFormat)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import layout, mount, ownership, stage, tools
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act as _act
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import FILESYSTEMS, get_filesystem


def vol_data(ctx, item, image):
    """The kubelet's keys (csi_mounter.go SetUpAt) for an inline volume, plus the image kubevol created for it."""
    node = ctx.node_name
    data = {"specVolID": item.pv_name, "volumeHandle": item.volume_handle, "driverName": item.driver,
            "nodeName": node, "attachmentID": item.attachment_name(node),
            "volumeLifecycleMode": layout.EPHEMERAL_MODE}
    if image:
        data[EPHEMERAL_IMAGE_KEY] = image
    return data


def says_ephemeral(data, item):
    """vol_data.json names ``item`` and says Ephemeral."""
    return layout.is_ours(data, item) and data.get("volumeLifecycleMode") == layout.EPHEMERAL_MODE


def _result(item, **extra):
    res = {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "mode": item.mode, "ephemeral": True,
           "pod_uid": item.pods[0].uid, "kubernetes_volume_name": names.inline_volume_name(item.pods[0].uid,
                                                                                           item.pv_name),
           "changed": False, "actions": [], "diff": {"before": {}, "after": {}}}
    res.update(extra)
    return res


def _image(ctx, item):
    return ctx.driver(item).backing(item)


# -- publish ---------------------------------------------------------------------------------------
def publish(ctx, item):
    """NodePublishVolume of an inline ephemeral volume: create, attach, format if blank, mount at the pod's dir."""
    runner = ctx.runner_for(item)
    driver = ctx.driver(item)
    pod = item.pods[0]
    target = names.pod_mount_path(ctx.kubelet_dir, pod.uid, item.pv_name)
    vol_dir = os.path.dirname(target)
    # a symlink or a file on the way is refused before anything is read or created through it
    layout.check_dir(ctx.kubelet_dir, target, ctx.node_name)
    image = _image(ctx, item)
    res = _result(item, device=None, image=image, created=False, formatted=False, fs_type=None,
                  fs_type_mismatch=None, published=[], mount_path=target)
    mounts = mount.list_mounts(runner)
    current = mounts.at(target)
    device = driver.find_device(item)
    _refuse_unless_ours(ctx, driver, item, device, image, vol_dir)
    if current:
        if device is None or not mount.same_device(current, device):
            raise ForeignMount(what="pod mount of inline volume %s" % item.pv_name, target=target,
                               volume=item.pv_name, node=ctx.node_name, source=current.source,
                               expected="the volume kubevol created for it", step="publish")
        res.update(device=device, fs_type=current.fstype)
        _repair_vol_data(ctx, res, vol_dir, vol_data(ctx, item, image))
        res["diff"]["before"][target] = res["diff"]["after"][target] = current.source
        _fs_group(ctx, res, item, target, mounted=True)
        return res
    if not item.capacity_bytes:
        raise KubevolError("inline volume %s of pod %s has no size: set csi.volumeAttributes.size (e.g. 64Mi)"
                           % (item.pv_name, pod.name or pod.uid), node=ctx.node_name, volume=item.pv_name,
                           step="publish")
    if not ctx.check_mode:
        # the intent first (the kubelet saves vol_data.json before NodePublish): a run killed later leaves a
        # directory the node facts report as this pod's ephemeral volume, so it is finished or torn down
        layout.ensure_dir(ctx.kubelet_dir, target, ctx.node_name)
        layout.write_vol_data(ctx.kubelet_dir, vol_dir, vol_data(ctx, item, image), ctx.node_name)
    if device is None:
        ctx.step = "create and attach"
        att = driver.controller_publish(item, ctx.node_name, check_mode=ctx.check_mode, provision=True)
        device = att.device
        res["created"] = att.provisioned
        if att.provisioned:
            res["actions"].append("create %s" % (image or "the volume"))
        if att.attached:
            res["actions"].append("attach")
        res["changed"] = res["changed"] or att.attached or att.provisioned
    res["device"] = device
    backing = None
    if device is None:
        # check mode: nothing was created or attached; every check below runs on what the attach would give (the
        # image, read only, when an interrupted publish left it; a new image is blank)
        device = backing = driver.check_backing(item)
    ctx.step = "probe"
    found = stage.probe(ctx, runner, driver, item, device)  # UnsafeToFormat when inconclusive
    if found.blank:
        fs = stage.filesystem_for_format(ctx, runner, item)
        _act(ctx, res, "format", runner.check, fs.mkfs_argv(device), "format",
             "the image may be too small for %s; raise csi.volumeAttributes.size" % item.fs_type)
        res["formatted"] = True
    elif found.fs_type in FILESYSTEMS:
        # a run killed after mkfs: the filesystem is this volume's own (its image was created for this pod)
        fs = get_filesystem(found.fs_type)
        if found.fs_type != item.fs_type:
            # as for a PV (stage.check_mismatch): never mounted as another type, never reformatted
            res["fs_type_mismatch"] = {"expected": item.fs_type, "found": found.fs_type}
            raise FilesystemMismatch(volume=item.pv_name, node=ctx.node_name, expected=item.fs_type,
                                     found=found.fs_type, device=device, step="publish (FilesystemMismatch)")
    else:
        raise UnsafeToFormat(device=device, volume=item.pv_name, node=ctx.node_name,
                             reason="%s, which kubevol cannot mount; check what the image holds"
                                    % found.describe())
    res["fs_type"] = fs.NAME
    read_only = pod.read_only or item.read_only
    tools.require(runner, "mounting it", "mount")
    _act(ctx, res, "publish %s" % target, mount.mount_device, runner, device, target, fs.NAME, item.mount_options,
         read_only)
    res["published"].append(pod.uid)
    res["diff"]["before"][target] = None
    if device is None:
        res["diff"]["after"][target] = "(a new %s volume)" % fs.NAME
    else:
        res["diff"]["after"][target] = "(the device its attach makes)" if backing else device
    _fs_group(ctx, res, item, target, mounted=not ctx.check_mode)
    return res


def _fs_group(ctx, res, item, target, mounted):
    """The pod's fsGroup after NodePublish, as for a PV (csi_mounter.go SetUpAt); the planner sets it only where
    supportsFSGroup says the kubelet applies it."""
    pod = item.pods[0]
    ownership.apply_fs_group(ctx, res, item, pod, target, pod.read_only or item.read_only, mounted)


def _refuse_unless_ours(ctx, driver, item, device, image, vol_dir):
    """An attached device or an existing image for this handle must be this pod's own ephemeral volume (the
    driver's record, or the vol_data.json an earlier, interrupted publish wrote): never adopt another's."""
    if device is None and not (image and os.path.lexists(image)):
        return
    data, _problem = layout.load_vol_data(vol_dir)
    if driver.ephemeral_record(item) is not None or (says_ephemeral(data, item) and data.get(EPHEMERAL_IMAGE_KEY)
                                                     == image):
        return
    # no driver record, no vol_data.json saying Ephemeral: kubevol never adopts it
    raise UnsafePath(path=device or image, node=ctx.node_name, volume=item.pv_name, step="publish",
                     reason="it exists and nothing names it as inline volume %s of pod %s"
                     % (item.pv_name, item.pods[0].name or item.pods[0].uid))


def _repair_vol_data(ctx, res, directory, data):
    old, _problem = layout.load_vol_data(directory)
    if old == data:
        return
    res["actions"].append("write %s" % os.path.join(directory, layout.VOL_DATA))
    res["changed"] = True
    if not ctx.check_mode:
        layout.write_vol_data(ctx.kubelet_dir, directory, data, ctx.node_name)


# -- unpublish -------------------------------------------------------------------------------------
def plan_unpublish(ctx, item):
    """Decide one inline volume's teardown before anything runs: what is mounted, what backs it, and whether the
    image may be deleted (the driver's record or vol_data.json says it is this pod's ephemeral image)."""
    runner = ctx.runner_for(item)
    driver = ctx.driver(item)
    pod = item.pods[0]
    target = names.pod_mount_path(ctx.kubelet_dir, pod.uid, item.pv_name)
    # its vol_data.json decides what is deleted: never read (or removed) through a symlink
    layout.check_dir(ctx.kubelet_dir, os.path.dirname(target), ctx.node_name)
    mounts = mount.list_mounts(runner)
    data, _problem = layout.load_vol_data(os.path.dirname(target))
    record = driver.ephemeral_record(item)
    evidence = record or (data if says_ephemeral(data, item) else None)
    device = driver.find_device(item)
    if evidence is None and (device is not None or os.path.lexists(os.path.dirname(target))):
        # a device or a directory nothing names as this pod's ephemeral volume (a PV's, or by hand): hands off
        # neither its vol_data.json nor the driver's record says Ephemeral with the volume's handle
        raise UnsafePath(path=os.path.dirname(target), node=ctx.node_name, volume=item.pv_name, step="unpublish",
                         reason="it is not inline volume %s kubevol created" % item.pv_name)
    current = mounts.at(target)
    if current is not None and (device is None or not mount.same_device(current, device)):
        raise ForeignMount(what="pod mount of inline volume %s" % item.pv_name, target=target,
                           volume=item.pv_name, node=ctx.node_name, source=current.source,
                           expected="the volume kubevol created for it", step="unpublish")
    return {"mounts": mounts, "target": target, "mounted": current is not None, "device": device,
            "evidence": evidence}


def unpublish(ctx, item):
    """NodeUnpublishVolume of an inline ephemeral volume, then delete what the driver created for it."""
    runner = ctx.runner_for(item)
    driver = ctx.driver(item)
    plan = plan_unpublish(ctx, item)
    target = plan["target"]
    res = _result(item, device=plan["device"], unmounted=[], removed=[], detached=None, deleted=None)
    if plan["mounted"]:
        _act(ctx, res, "unmount %s" % target, mount.unmount, runner, target)
        res["unmounted"].append(target)
        res["diff"]["before"][target] = plan["mounts"].at(target).source
        res["diff"]["after"][target] = None
    if plan["device"]:
        _act(ctx, res, "detach %s" % plan["device"])
        res["detached"] = driver.controller_unpublish(item, ctx.node_name, check_mode=ctx.check_mode)
    elif plan["evidence"] is not None and not ctx.check_mode:
        # drops a stale record and the pool's holder entry; runs no command
        driver.controller_unpublish(item, ctx.node_name)
    ctx.step = "delete image"
    deleted = driver.delete_ephemeral(item, plan["evidence"], check_mode=True)
    if deleted:
        _act(ctx, res, "delete %s" % deleted, driver.delete_ephemeral, item, plan["evidence"])
        res["deleted"] = deleted
    if not ctx.check_mode:
        res["removed"] = layout.remove_pod_volume_dir(target, item, mount.list_mounts(runner))
        res["changed"] = res["changed"] or bool(res["removed"])
    return res
