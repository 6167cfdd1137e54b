# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node handler of a volume of kubevol's own CSI drivers (drivers/: loop), the one drivers/base.py's
NODE_HANDLER names: each phase decides from the node's actual state first, then calls the driver's CSI verbs only
where needed, in the kubelet's order (ControllerPublish; NodeStage when the driver has STAGE_UNSTAGE, then
NodePublish per pod; ControllerExpand, NodeExpand; at teardown NodeUnpublish per pod, NodeUnstage,
ControllerUnpublish). The driver's verbs that act are its node/ class (NODE_OPERATIONS: node/driver_loop.py), built
by ``ctx.driver(item)``; an inline ephemeral volume is node/ephemeral.py's."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import DeviceNotFound
from ansible_collections.kubevol.volumes.plugins.module_utils.common.volume_attachment import attached_volume_attachment
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import DEVICE_PATH, STAGE_UNSTAGE
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.device import DeviceDriver
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, ephemeral, mount, phase
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act as _act

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


class DriverHandler:
    """Attacher, Mounter and Expander of a volume of kubevol's own drivers (pkg/volume/csi's csiAttacher,
    csiMountMgr and the resize calls), over the driver's CSI verbs."""

    def attach(self, ctx, item, provision=False):
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
            # adopting only records what the kernel already has
            "changed": att.attached or att.provisioned or bool(released),
            "volume_attachment": attached_volume_attachment(item.driver, item.volume_handle, ctx.node_name,
                                                            item.pv_name, att.device),
            "volumes_attached": {"name": item.unique_name, "devicePath": att.device or ""},
            "diff": {"before": {item.unique_name: None if att.attached else att.device},
                     "after": {item.unique_name: att.device or "(attached in a real run)"}},
        }

    def mount(self, ctx, item, force=False, device_timeout=30):
        runner = ctx.runner_for(item)
        driver = ctx.driver(item)
        res = phase.result(item, device=None, formatted=False, fs_type=None, fs_type_mismatch=None,
                           grown_offline=None, global_mount_path=None, published=[])
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
            driver.node_publish(item, phase.named_path(ctx, item, pod.uid), source, context, pod,
                                check_mode=ctx.check_mode, ctx=ctx, res=res, mounts=mounts)
        if backing:
            res["checked_on"] = None if backing is NEW_BACKING else backing
            _as_attached(res, backing)
        return res

    def publish_ephemeral(self, ctx, item):
        """An inline volume: the image created for the pod, no attach, no staging (csi_mounter.go SetUpAt)."""
        return ephemeral.publish(ctx, item)

    def unpublish_ephemeral(self, ctx, item, force=False):
        """Unmount, detach, delete the image created for the pod."""
        return ephemeral.unpublish(ctx, item)

    def expand_controller(self, ctx, item):
        exp = ctx.driver(item).controller_expand(item, check_mode=ctx.check_mode)
        return {"pv_name": item.pv_name, "unique_volume_name": item.unique_name, "stage": "controller",
                "changed": exp.changed, "backing_size_bytes": {"old": exp.old_bytes, "new": exp.new_bytes},
                "skipped": None, "diff": {"before": {item.pv_name: {"backing_size_bytes": exp.old_bytes}},
                                          "after": {item.pv_name: {"backing_size_bytes": exp.new_bytes}}}}

    def expand_node(self, ctx, item, res):
        phase.node_expand_result(item, res)
        staging = names.device_mount_path(ctx.kubelet_dir, item.driver, item.volume_handle)
        ctx.driver(item).node_expand(item, None, staging, check_mode=ctx.check_mode, ctx=ctx, res=res)
        return res

    def plan_teardown(self, ctx, item, force=False):
        """Everything the teardown does, decided before it acts (StillMounted when blocked)."""
        return phase.plan_teardown(ctx, item, lambda: ctx.driver(item).find_device(item), force)

    def unmount(self, ctx, item, force=False):
        """NodeUnpublish per pod, NodeUnstage, ControllerUnpublish, then the directories kubevol made."""
        runner = ctx.runner_for(item)
        plan = self.plan_teardown(ctx, item, force)
        mounts = plan["mounts"]
        res = phase.result(item, device=plan["device"], unmounted=[], removed=[], detached=None)
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
            res["removed"] = phase.cleanup(ctx, runner, item, plan)
            res["changed"] = res["changed"] or bool(res["removed"])
        return res
