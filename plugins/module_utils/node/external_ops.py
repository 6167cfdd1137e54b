# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each node phase for a volume of an external CSI driver (drivers/external/): the kubelet's and the sidecars'
calls over the plugin's socket, in their order.

- attach: ControllerPublishVolume (the external-attacher's csiAttach); its ``publish_context`` becomes the
  VolumeAttachment's ``status.attachmentMetadata`` and is kept on the node (``<run_dir>/csi-published/``) for
  NodeStage and NodePublish, as the kubelet reads it back from the VolumeAttachment (csi_attacher.go
  MountDevice, csi_mounter.go SetUpAt). That file is also the node's evidence the volume is published here
  (node facts' ``devices``), so a second run plans no attach.
- mount: the staging directory and its vol_data.json (csi_attacher.go MountDevice saveVolumeData), NodeStageVolume;
  per pod the target's parent and its vol_data.json (csi_mounter.go SetUpAt), NodePublishVolume (the plugin
  creates the target), then the pod's fsGroup applied by kubevol unless the plugin took it (VOLUME_MOUNT_GROUP).
- teardown: NodeUnpublishVolume per pod, NodeUnstageVolume, then ControllerUnpublishVolume.
- a Controller service on a host of the inventory (driver_options controller/controller_socket): the node never
  calls it; the run's controller task does, between the nodes' teardown and their setup (module csi_controller),
  and the node's attach keeps the publish_context that task got (remote_published).
- expand: ControllerExpandVolume, then NodeExpandVolume when the controller says it is required.

A non-final gRPC status (CsiVolumeUncertain) fails the volume and marks it ``uncertain`` (NodeContext.run_each):
the next run retries or tears it down; it is never recorded absent.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import DeviceNotFound, GrowPending
from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import load
from ansible_collections.kubevol.volumes.plugins.module_utils.common.volume_attachment import attached_volume_attachment
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import DEVICE_PATH
from ansible_collections.kubevol.volumes.plugins.module_utils.node import external_ephemeral, layout, ownership, phase
from ansible_collections.kubevol.volumes.plugins.module_utils.node import mount as mount_table
from ansible_collections.kubevol.volumes.plugins.module_utils.node.expand import NOT_MOUNTED
# the node's records of what it published and staged (published_volumes: the node facts read them there)
from ansible_collections.kubevol.volumes.plugins.module_utils.node.external_records import (  # noqa: F401 pylint: disable=unused-import
    drop_published, drop_staged, is_staged, load_published, mark_staged, published_volumes, save_published)


def _calls(driver, start=0):
    """The CSI methods this phase called (names only, never a request)."""
    return list(getattr(driver, "calls", ()))[start:]


# -- attach ----------------------------------------------------------------------------------------------
def attach(ctx, item):
    driver = ctx.driver(item)
    start = len(getattr(driver, "calls", ()))
    remote = driver.settings.get("remote")
    # a controller on a host of the inventory: the run's controller task made ControllerPublishVolume there; the
    # node keeps its answer, as the kubelet reads the VolumeAttachment's attachmentMetadata (csi_attacher.go)
    att = remote_published(ctx, item, remote) if remote else driver.controller_publish(item, check_mode=ctx.check_mode)
    context = dict(att.publish_context or {})
    if not ctx.check_mode and not att.skipped:
        save_published(ctx, item, context, att.node_id)
    device = context.get(DEVICE_PATH, "")
    return {
        "pv_name": item.pv_name,
        "unique_volume_name": item.unique_name,
        "device": device,
        "attached": not ctx.check_mode,
        "provisioned": False,
        "adopted": False,
        "released_holders": {},
        "changed": True,
        "by_record": bool(att.by_record),
        "attachment_metadata": context,
        "csi_calls": _calls(driver, start),
        "volume_attachment": attached_volume_attachment(item.driver, item.volume_handle, ctx.node_name, item.pv_name,
                                                        device, metadata=context),
        "volumes_attached": {"name": item.unique_name, "devicePath": device},
        "diff": {"before": {item.unique_name: None}, "after": {item.unique_name: device or "(published)"}},
    }


def remote_published(ctx, item, remote):
    """What the controller host's ControllerPublishVolume answered for this node (the item's
    controller_publish_context); a volume it did not publish here fails, naming host and socket."""
    # loaded on demand (common/registry.py ON_DEMAND): a phase on a node without an external driver never compiles
    # the CSI client
    CsiAttachment = load("drivers.external.driver.CsiAttachment")  # pylint: disable=invalid-name
    if not item.attach_required:
        return CsiAttachment(device="", publish_context={}, skipped="CSIDriver %s has attachRequired false"
                             % item.driver)
    if item.controller_publish_context is None:
        if ctx.check_mode:
            return CsiAttachment(device=None, publish_context={})
        raise DeviceNotFound(step="attach", node=ctx.node_name, volume=item.pv_name,
                             reason="driver %s's controller on host %s (socket %s) has not published it to this node "
                                    "in this run (no ControllerPublishVolume answer reached the node); run again"
                                    % (item.driver, remote["host"], remote["socket"]))
    return CsiAttachment(device="", attached=True, publish_context=dict(item.controller_publish_context))


# -- mount -----------------------------------------------------------------------------------------------
def _publish_context(ctx, item):
    record = load_published(ctx, item.unique_name)
    if record is not None:
        return record.get("publish_context") or {}
    if not item.attach_required:
        return {}
    if item.controller_publish_context is not None:
        # a controller host published it and the VolumeAttachment says so, but this node kept no record (a run
        # that stopped between the two): its attachmentMetadata, as csi_attacher.go MountDevice reads it
        context = dict(item.controller_publish_context)
        if not ctx.check_mode:
            save_published(ctx, item, context, "")
        return context
    return None


def block_staging_path(ctx, item):
    """csi_block.go getStagingPath: <kubelet>/plugins/kubernetes.io/csi/volumeDevices/staging/<pv> (a directory the
    plugin stages the block volume at; nothing is mounted there by kubevol)."""
    names.check_component("PV name", item.pv_name)
    return os.path.join(ctx.kubelet_dir, "plugins", names.CSI_PLUGIN_NAME, "volumeDevices", "staging", item.pv_name)


def _target(ctx, item, pod):
    return (names.pod_device_path if item.block else names.pod_mount_path)(ctx.kubelet_dir, pod.uid, item.pv_name)


def _stage_block(ctx, item, driver, context, mounts, res):
    """csi_block.go SetUpDevice: NodeStageVolume with a block capability at the staging directory, when a pod's
    device is not mapped yet (the call is idempotent); vol_data.json in the volume's data directory, where node
    facts read a Block volume's identity."""
    staging = block_staging_path(ctx, item)
    if all(mounts.mounted(_target(ctx, item, pod)) for pod in item.pods):
        return staging
    ctx.step = "node stage %s" % staging
    if not ctx.check_mode:
        layout.ensure_dir(ctx.kubelet_dir, staging, ctx.node_name)
        data_dir = layout.block_data_dir(ctx.kubelet_dir, item.pv_name)
        layout.ensure_dir(ctx.kubelet_dir, data_dir, ctx.node_name)
        layout.write_vol_data(ctx.kubelet_dir, data_dir, layout.device_vol_data(item), ctx.node_name)
    if driver.node_stage(item, staging, context, check_mode=ctx.check_mode).called:
        res["actions"].append("stage %s" % staging)
        res["changed"] = True
    return staging


def mount(ctx, item, res):
    driver = ctx.driver(item)
    start = len(getattr(driver, "calls", ()))
    context = _publish_context(ctx, item)
    if context is None and ctx.check_mode:
        # check mode before the attach (the plan attaches it first): the node plugin is asked what the real run asks
        # it before staging and publishing (its socket, identity and capabilities), with no publish_context yet
        context = {}
    if context is None:
        raise DeviceNotFound(step="mount", node=ctx.node_name, volume=item.pv_name,
                             reason="driver %s has not published it to this node (no ControllerPublishVolume "
                                    "recorded in %s); run the attach first" % (item.driver, ctx.run_dir))
    res["attachment_metadata"] = context
    mounts = mount_table.list_mounts(ctx.runner_for(item))
    staging = _stage_block(ctx, item, driver, context, mounts, res) if item.block else None
    if not item.block:
        staging = names.device_mount_path(ctx.kubelet_dir, item.driver, item.volume_handle)
        if not mounts.mounted(staging) and not is_staged(ctx, item.unique_name, staging):
            ctx.step = "node stage %s" % staging
            if not ctx.check_mode:
                layout.ensure_dir(ctx.kubelet_dir, staging, ctx.node_name)
                layout.write_vol_data(ctx.kubelet_dir, os.path.dirname(staging), layout.device_vol_data(item),
                                      ctx.node_name)
            step = driver.node_stage(item, staging, context, check_mode=ctx.check_mode)
            if step.called:
                res["actions"].append("stage %s" % staging)
                res["changed"] = True
            if not ctx.check_mode:
                mark_staged(ctx, item, staging)
        res["global_mount_path"] = staging
    for pod in item.pods:
        target = _target(ctx, item, pod)
        read_only = bool(pod.read_only or item.read_only)
        if not mounts.mounted(target):
            ctx.step = "node publish %s" % target
            if not ctx.check_mode:
                layout.ensure_dir(ctx.kubelet_dir, os.path.dirname(target), ctx.node_name)
                if not item.block:  # a Block volume's identity is in its data directory (_stage_block)
                    layout.write_vol_data(ctx.kubelet_dir, os.path.dirname(target),
                                          layout.pod_vol_data(item, ctx.node_name), ctx.node_name)
            step = driver.node_publish(item, target, staging, context, pod, check_mode=ctx.check_mode)
            res["actions"].append("publish %s" % target)
            res["changed"] = True
            res["published"].append(pod.uid)
            delegated = step.fs_group_delegated
            mounted = not ctx.check_mode
        else:
            delegated, mounted = False, True
        if not item.block and not delegated:
            ownership.apply_fs_group(ctx, res, item, pod, target, read_only, mounted=mounted)
    res["csi_calls"] = _calls(driver, start)
    return res


# -- teardown --------------------------------------------------------------------------------------------
def teardown(ctx, item, plan, res):
    """NodeUnpublish per pod, NodeUnstage, then ControllerUnpublish (after the node is done)."""
    driver = ctx.driver(item)
    start = len(getattr(driver, "calls", ()))
    mounts = plan["mounts"]
    for path in plan["unmount"]:
        ctx.step = "node unpublish %s" % path
        driver.node_unpublish(item, path, check_mode=ctx.check_mode)
        res["actions"].append("unpublish %s" % path)
        res["unmounted"].append(path)
        res["changed"] = True
    gpath = plan["global"]
    block_staging = block_staging_path(ctx, item) if item.block and item.unmount_device else None
    if block_staging and os.path.isdir(block_staging):
        ctx.step = "node unstage %s" % block_staging
        driver.node_unstage(item, block_staging, check_mode=ctx.check_mode)
        res["actions"].append("unstage %s" % block_staging)
        res["changed"] = True
        if not ctx.check_mode:
            removed = layout.rmdir_safe(block_staging, mount_table.list_mounts(ctx.runner_for(item)))
            if removed:
                res["removed"].append(removed)
    elif gpath and (mounts.mounted(gpath) or is_staged(ctx, item.unique_name, gpath)):
        ctx.step = "node unstage %s" % gpath
        driver.node_unstage(item, gpath, check_mode=ctx.check_mode)
        res["actions"].append("unstage %s" % gpath)
        res["unmounted"].append(gpath)
        res["changed"] = True
        if not ctx.check_mode:
            drop_staged(ctx, item)
    if item.detach and item.unmount_device and (load_published(ctx, item.unique_name) is not None
                                                or item.attach_required):
        remote = driver.settings.get("remote")
        if remote:
            # the node is done: the run's controller task calls ControllerUnpublishVolume on its host next (and
            # records the detach); the node forgets its publish_context now (an unpublish that fails leaves the
            # VolumeAttachment attached, so the next run plans the detach again)
            res["actions"].append("detach: ControllerUnpublishVolume next, on controller host %s" % remote["host"])
            res["detached"] = None
        else:
            ctx.step = "controller unpublish"
            step = driver.controller_unpublish(item, check_mode=ctx.check_mode)
            res["actions"].append("detach (ControllerUnpublishVolume)" if step.called else "detach (by record)")
            res["detached"] = step.called or None
        res["changed"] = True
        if not ctx.check_mode:
            drop_published(ctx, item)
    res["csi_calls"] = _calls(driver, start)
    return res


# -- expand ----------------------------------------------------------------------------------------------
def expand_controller(ctx, item):
    driver = ctx.driver(item)
    start = len(getattr(driver, "calls", ()))
    exp = driver.controller_expand(item, check_mode=ctx.check_mode)
    return {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "stage": "controller",
            "changed": exp.changed, "backing_size_bytes": {"old": exp.old_bytes, "new": exp.new_bytes},
            "node_expansion_required": exp.node_expansion_required, "skipped": exp.skipped,
            "csi_calls": _calls(driver, start),
            "diff": {"before": {item.pv_name: {"backing_size_bytes": exp.old_bytes}},
                     "after": {item.pv_name: {"backing_size_bytes": exp.new_bytes}}}}


def expand_node(ctx, item, res):
    driver = ctx.driver(item)
    start = len(getattr(driver, "calls", ()))
    staging = block_staging_path(ctx, item) if item.block else names.device_mount_path(
        ctx.kubelet_dir, item.driver, item.volume_handle)
    mounts = mount_table.list_mounts(ctx.runner_for(item))
    volume_path = staging
    for pod in item.pods:
        target = _target(ctx, item, pod)
        if mounts.mounted(target):
            volume_path = target
            break
    if volume_path is None:
        # nothing recorded as grown: the grow waits for a mount (expand.pending)
        raise GrowPending(volume=item.pv_name, node=ctx.node_name, reason=NOT_MOUNTED, step="node expand",
                          detail="it is not mounted on this node", remedy="mount it, then grow it again")
    step = driver.node_expand(item, volume_path, staging, check_mode=ctx.check_mode)
    res.update(changed=step.called, skipped=step.skipped, mount_path=volume_path, csi_calls=_calls(driver, start))
    if step.capacity_bytes:
        res["fs_size_bytes"] = {"old": None, "new": step.capacity_bytes}
    return res


class ExternalHandler:
    """Attacher, Mounter and Expander of a volume of an external CSI driver (drivers/external/ExternalCsiDriver's
    NODE_HANDLER): the phases above over the plugin's socket; an inline ephemeral volume is
    node/external_ephemeral.py's."""

    def attach(self, ctx, item, provision=False):
        return attach(ctx, item)  # ControllerPublishVolume over the driver's socket (or its controller host's answer)

    def mount(self, ctx, item, force=False, device_timeout=30):
        return mount(ctx, item, phase.result(item, device=None, global_mount_path=None, published=[]))

    def publish_ephemeral(self, ctx, item):
        """An inline volume: NodePublishVolume, the plugin creates it (csi_mounter.go SetUpAt)."""
        return external_ephemeral.publish(ctx, item)

    def unpublish_ephemeral(self, ctx, item, force=False):
        """NodeUnpublishVolume: the plugin deletes it."""
        return external_ephemeral.unpublish(ctx, item)

    def expand_controller(self, ctx, item):
        return expand_controller(ctx, item)

    def expand_node(self, ctx, item, res):
        return expand_node(ctx, item, phase.node_expand_result(item, res))

    def plan_teardown(self, ctx, item, force=False):
        # an external CSI driver's device is its plugin's business (csi_attacher.go: devicePath "")
        return phase.plan_teardown(ctx, item, lambda: None, force)

    def unmount(self, ctx, item, force=False):
        runner = ctx.runner_for(item)
        plan = self.plan_teardown(ctx, item, force)
        res = phase.result(item, device=plan["device"], unmounted=[], removed=[], detached=None)
        teardown(ctx, item, plan, res)
        if not ctx.check_mode:
            res["removed"] += phase.cleanup(ctx, runner, item, plan)
        return res
