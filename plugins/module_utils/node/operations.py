# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each node module's phase for a CSI volume: attach, mount (stage + publish), expand, detach.

Every phase decides from the node's actual state first, then calls the driver's CSI verbs (drivers/base.py) only
where needed, in the kubelet's order: ControllerPublish; NodeStage (STAGE_UNSTAGE) then NodePublish per pod;
ControllerExpand, NodeExpand; at teardown NodeUnpublish per pod, NodeUnstage, ControllerUnpublish. A second run
changes nothing. In check mode it decides and reports but the verbs run no mutating command.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    DeviceNotFound, KubevolError, StillMounted)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import plugin_ops
from ansible_collections.kubevol.volumes.plugins.module_utils.common.volume_attachment import attached_volume_attachment
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import DEVICE_PATH, STAGE_UNSTAGE
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.device import DeviceDriver
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, ephemeral, external_ops, layout, mount
from ansible_collections.kubevol.volumes.plugins.module_utils.node import external_ephemeral
from ansible_collections.kubevol.volumes.plugins.module_utils.node import expand as node_expand
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act as _act
# for Ansible's finder (it ships what import statements name): the node verbs of each registered driver, which a
# driver's constructor builds from its NODE_OPERATIONS dotted path (drivers/base.py), in every module that acts
from ansible_collections.kubevol.volumes.plugins.module_utils.node import driver_loop  # noqa: F401 pylint: disable=unused-import


def _external(ctx, item):
    """A volume of an external CSI driver (drivers/external/), served by node/external_ops.py."""
    is_external = getattr(ctx, "is_external", None)
    return bool(is_external and is_external(item.driver))


# -- attach ----------------------------------------------------------------------------------------
def attach_volume(ctx, item, provision=False):
    if not item.csi:
        return plugin_ops.attach(ctx, item)  # local, hostPath: not attachable
    if _external(ctx, item):
        return external_ops.attach(ctx, item)  # ControllerPublishVolume over the driver's socket
    att = ctx.driver(item).controller_publish(item, ctx.node_name, check_mode=ctx.check_mode, provision=provision)
    released = dict(att.released or {})
    if released:
        ctx.warn("volume %s: node %s %s the hold of node(s) %s on its image, forced by the operator "
                 "(%s), not by their own detach" % (
                     item.pv_name, ctx.node_name, "would release" if ctx.check_mode else "released",
                     ", ".join("%s (held since %s)" % (n, released[n]) for n in sorted(released)),
                     setting("force_release_holders")))
    return {
        "pv_name": item.pv_name,
        "unique_volume_name": item.unique_name,
        "device": att.device,
        "attached": att.attached,
        "provisioned": att.provisioned,
        "adopted": att.adopted,
        "released_holders": released,  # {node: since}: holds the operator released (force_release_holders)
        "changed": att.attached or att.provisioned or bool(released),  # adopting only records what the kernel already has
        "volume_attachment": attached_volume_attachment(item.driver, item.volume_handle, ctx.node_name, item.pv_name,
                                                        att.device),
        "volumes_attached": {"name": item.unique_name, "devicePath": att.device or ""},
        "diff": {"before": {item.unique_name: None if att.attached else att.device},
                 "after": {item.unique_name: att.device or "(attached in a real run)"}},
    }


# -- mount -----------------------------------------------------------------------------------------
def _result(item, **extra):
    res = {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "mode": item.mode, "changed": False,
           "actions": [], "diff": {"before": {}, "after": {}}}
    res.update(extra)
    return res


def mount_volume(ctx, item, force=False, device_timeout=30):
    if not item.csi:
        return plugin_ops.mount(ctx, item)  # local, hostPath: their plugin file's node_setup (volume/)
    if item.ephemeral:
        # an inline volume: no attach, no staging (csi_mounter.go SetUpAt); an external driver's plugin creates it
        return (external_ephemeral if _external(ctx, item) else ephemeral).publish(ctx, item)
    if _external(ctx, item):
        return external_ops.mount(ctx, item, _result(item, device=None, global_mount_path=None, published=[]))
    runner = ctx.runner_for(item)
    driver = ctx.driver(item)
    res = _result(item, device=None, formatted=False, fs_type=None, fs_type_mismatch=None, grown_offline=None,
                  global_mount_path=None, published=[])
    # WaitForAttach (csi_attacher.go): the attached device, as the attachment's devicePath says it
    device = driver.find_device(item)
    if device is None and not ctx.check_mode:
        device = blockdev.wait_for_device(lambda: driver.find_device(item), device_timeout)
    backing = None
    if device is None:
        if not ctx.check_mode:
            raise DeviceNotFound(step="mount", node=ctx.node_name, volume=item.pv_name,
                                 reason="it is not attached to this node after waiting %ss; attach it first"
                                        % device_timeout)
        if not isinstance(driver, DeviceDriver):
            # a driver with node verbs of its own: nothing kubevol can look at before its attach
            res.update(changed=True, pending="the volume is not attached to this node yet; it would be mounted "
                                             "after its attach")
            return res
        # check mode before the attach (the plan attaches it first): every check the real run makes on the
        # device runs on what the attach would give, read only (a file: the device's bytes; None: a new backing)
        device = backing = driver.check_backing(item) or NEW_BACKING
    res["device"] = None if backing else device
    context = {DEVICE_PATH: None if device is NEW_BACKING else device}
    mounts = mount.list_mounts(runner)
    staging = _staging_path(ctx, driver, item)
    source = None
    if staging is not None:
        source = driver.node_stage(item, staging, context, check_mode=ctx.check_mode, ctx=ctx, res=res,
                                   mounts=mounts, force=force)
    for pod in item.pods:
        driver.node_publish(item, _named_path(ctx, item, pod.uid), source, context, pod, check_mode=ctx.check_mode,
                            ctx=ctx, res=res, mounts=mounts)
    if backing:
        res["checked_on"] = None if backing is NEW_BACKING else backing
        _as_attached(res, backing)
    return res


NEW_BACKING = "(a new volume: the attach creates it)"  # check mode: a backing that does not exist yet


def _as_attached(res, backing):
    """A check run's diff names the device the real run mounts, not the backing it probed in its place."""
    after = res["diff"]["after"]
    for target, source in list(after.items()):
        if source in (None, backing):
            after[target] = "(the device its attach makes)"


def _staging_path(ctx, driver, item):
    """The global (staging) mount path of a Filesystem volume whose driver stages (STAGE_UNSTAGE_VOLUME), else None:
    kubevol maps a Block volume's device straight into each pod."""
    if item.block or not driver.can(STAGE_UNSTAGE):
        return None
    return names.device_mount_path(ctx.kubelet_dir, item.driver, item.volume_handle)


# -- expand ----------------------------------------------------------------------------------------
def expand_controller(ctx, item):
    if not item.csi:
        return plugin_ops.expand_controller(ctx, item)
    if _external(ctx, item):
        return external_ops.expand_controller(ctx, item)
    exp = ctx.driver(item).controller_expand(item, check_mode=ctx.check_mode)
    return {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "stage": "controller",
            "changed": exp.changed, "backing_size_bytes": {"old": exp.old_bytes, "new": exp.new_bytes},
            "skipped": None, "diff": {"before": {item.pv_name: {"backing_size_bytes": exp.old_bytes}},
                                      "after": {item.pv_name: {"backing_size_bytes": exp.new_bytes}}}}


def expand_node(ctx, item):
    """NodeExpandVolume of one volume. A grow that fails or cannot run yet is returned as the volume's pending grow
    (node/expand.py pending), never raised: the node's other volumes, and its later work, go on."""
    res = {}
    try:
        if not item.csi:
            res = plugin_ops.expand_node(ctx, item)
        else:
            _expand_node(ctx, item, res)
        res.setdefault("pending", None)
        return res
    except KubevolError as err:
        return node_expand.pending(ctx, item, res, err)
    finally:
        if "diff" not in res:
            dev, fs = res.get("device_size_bytes") or {}, res.get("fs_size_bytes") or {}
            res["diff"] = {
                "before": {item.pv_name: {"device_size_bytes": dev.get("old"), "fs_size_bytes": fs.get("old")}},
                "after": {item.pv_name: {"device_size_bytes": dev.get("new"), "fs_size_bytes": fs.get("new")}}}


def _expand_node(ctx, item, res):
    res.update({"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "stage": "node",
                "changed": False, "device": None, "fs_type": None, "mount_path": None, "skipped": None,
                "device_size_bytes": {"old": None, "new": None}, "fs_size_bytes": {"old": None, "new": None}})
    if _external(ctx, item):
        return external_ops.expand_node(ctx, item, res)
    staging = names.device_mount_path(ctx.kubelet_dir, item.driver, item.volume_handle)
    ctx.driver(item).node_expand(item, None, staging, check_mode=ctx.check_mode, ctx=ctx, res=res)
    return res


# -- detach ----------------------------------------------------------------------------------------
def _pod_paths(ctx, item):
    """Every pod's publish path for this PV on the node (all pods, not only the named ones)."""
    pods = os.path.join(ctx.kubelet_dir, "pods")
    if item.block:
        pattern = os.path.join(glob.escape(pods), "*", "volumeDevices", names.CSI_PLUGIN_DIR, glob.escape(item.pv_name))
    else:
        pattern = os.path.join(glob.escape(pods), "*", "volumes", names.CSI_PLUGIN_DIR, glob.escape(item.pv_name),
                               "mount")
    return sorted(glob.glob(pattern))


def _named_path(ctx, item, uid):
    if item.block:
        return names.pod_device_path(ctx.kubelet_dir, uid, item.pv_name)
    return names.pod_mount_path(ctx.kubelet_dir, uid, item.pv_name)


def _refuse_unsafe(ctx, paths):
    """Teardown reads vol_data.json and removes directories beside each pod path: every directory on the way
    must be a real one inside the kubelet directory (UnsafePath for a symlink or a file), as for setup."""
    for path in paths:
        layout.check_dir(ctx.kubelet_dir, os.path.dirname(path), ctx.node_name)


def _names_another(path, item):
    """A pod's mount of the same PV name whose vol_data.json names another volume (a PV of that name created since
    this one's was deleted): not this volume's to count or unmount. Mounted from this volume's device, it is still
    refused below (a mount of the device outside the planned paths)."""
    if item.block:
        return False  # one vol_data.json per PV name (block_data_dir): no per-pod identity to tell them apart
    data, problem = layout.load_vol_data(os.path.dirname(path))
    return problem is None and not layout.is_ours(data, item)


def plan_detach(ctx, item, force=False):
    """Decide everything for one volume before acting; raise StillMounted when blocked."""
    if item.ephemeral:
        return (external_ephemeral if _external(ctx, item) else ephemeral).plan_unpublish(ctx, item)
    runner = ctx.runner_for(item)
    mounts = mount.list_mounts(runner)
    # an external CSI driver's device is its plugin's business (csi_attacher.go: devicePath "")
    device = None if _external(ctx, item) else ctx.driver(item).find_device(item)
    named = [_named_path(ctx, item, pod.uid) for pod in item.pods]
    _refuse_unsafe(ctx, named)
    plan = {"mounts": mounts, "device": device, "named": named,
            "unmount": [p for p in named if mounts.mounted(p)], "global": None, "detach": False}
    if not item.unmount_device:
        return plan
    others = [p for p in _pod_paths(ctx, item) if p not in named and mounts.mounted(p) and not _names_another(p, item)]
    if others and not force:
        raise StillMounted(step="detach", volume=item.pv_name, node=ctx.node_name, paths=", ".join(others))
    _refuse_unsafe(ctx, others)
    plan["unmount"] += others
    plan["named"] += others
    gpath = names.device_mount_path(ctx.kubelet_dir, item.driver, item.volume_handle)
    if device:
        planned = set(plan["unmount"]) | {gpath}
        foreign = [m.target for m in mounts.of_device(blockdev.device_number(device)) if m.target not in planned]
        if foreign:
            # outside kubevol's pod mounts: force does not unmount these
            raise StillMounted(step="detach", volume=item.pv_name, node=ctx.node_name, paths=", ".join(foreign),
                               remedy="those mounts are not kubevol's: check what they are and unmount them by hand")
    plan["global"] = gpath
    plan["detach"] = item.detach and device is not None
    return plan


def detach_volume(ctx, item, force=False):
    if not item.csi:
        return plugin_ops.unmount(ctx, item, force)  # unmount the pods (and a local disk's mount); nothing to detach
    if item.ephemeral:
        # loop: unmount, detach, delete the image created for the pod; external: NodeUnpublishVolume
        return (external_ephemeral if _external(ctx, item) else ephemeral).unpublish(ctx, item)
    runner = ctx.runner_for(item)
    plan = plan_detach(ctx, item, force)
    mounts = plan["mounts"]
    res = _result(item, device=plan["device"], unmounted=[], removed=[], detached=None)
    if _external(ctx, item):
        external_ops.teardown(ctx, item, plan, res)
        if not ctx.check_mode:
            res["removed"] += _cleanup(ctx, runner, item, plan)
        return res
    driver = ctx.driver(item)
    for path in plan["unmount"]:
        driver.node_unpublish(item, path, check_mode=ctx.check_mode, ctx=ctx, res=res, mounts=mounts)
    gpath = plan["global"]
    if gpath and mounts.mounted(gpath):
        driver.node_unstage(item, gpath, check_mode=ctx.check_mode, ctx=ctx, res=res, mounts=mounts)
    if plan["detach"]:
        _act(ctx, res, "detach %s" % plan["device"])
        res["detached"] = driver.controller_unpublish(item, ctx.node_name, check_mode=ctx.check_mode)
    elif item.detach and not ctx.check_mode:
        driver.controller_unpublish(item, ctx.node_name)  # drops a stale record, if any; runs no command
    if not ctx.check_mode:
        res["removed"] = _cleanup(ctx, runner, item, plan)
        res["changed"] = res["changed"] or bool(res["removed"])
    return res


def _cleanup(ctx, runner, item, plan):
    """Remove only the empty directories and vol_data.json files kubevol created, never through a mount."""
    mounts = mount.list_mounts(runner)  # after the unmounts
    removed = []

    def keep(path):
        if path:
            removed.append(path)

    for path in plan["named"]:
        if item.block:
            keep(layout.unlink_publish_file(path, mounts))
            keep(layout.rmdir_safe(os.path.dirname(path), mounts))
        else:
            removed.extend(layout.remove_pod_volume_dir(path, item, mounts))
        removed.extend(layout.remove_empty_pod_volumes_dir(ctx.kubelet_dir, path, mounts))  # a moved pod's
    if plan["global"] and not mounts.mounted(plan["global"]):
        gpath = plan["global"]
        keep(layout.rmdir_safe(gpath, mounts))
        if not os.path.exists(gpath):
            keep(layout.remove_vol_data(os.path.dirname(gpath), item, mounts))
            keep(layout.rmdir_safe(os.path.dirname(gpath), mounts))
        if item.block:
            data_dir = layout.block_data_dir(ctx.kubelet_dir, item.pv_name)
            others = [p for p in _pod_paths(ctx, item) if mounts.mounted(p)]
            if not others:
                keep(layout.remove_vol_data(data_dir, item, mounts))
                keep(layout.rmdir_safe(data_dir, mounts))
                keep(layout.rmdir_safe(os.path.dirname(data_dir), mounts))
    return removed
