# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inline ephemeral CSI volumes (``pod.spec.volumes[].csi``) of an external CSI driver (drivers/external/).

As the kubelet does them (pkg/volume/csi/csi_mounter.go SetUpAt, TearDownAt, removeMountDir; csi_plugin.go
CanAttach/CanDeviceMount are false for them): no attach, no staging. SetUpAt creates the volume's directory
(``pods/<uid>/volumes/kubernetes.io~csi/<volume>``), saves vol_data.json there with ``volumeLifecycleMode:
Ephemeral``, then calls NodePublishVolume with the handle makeVolumeHandle gives, target ``.../mount`` (the
plugin creates it), the inline volumeAttributes (plus the pod's info with podInfoOnMount: getPodInfoAttrs, whose
``csi.storage.k8s.io/ephemeral`` is "true" here), a mount capability with the inline fsType, the inline
readOnly and the nodePublishSecretRef's Secret (read from the pod's namespace by run/csi_secrets.py). The
plugin creates the volume at that call and deletes it at NodeUnpublishVolume (CSI spec, "ephemeral volumes"):
kubevol creates no image and touches no device.

- A final error of NodePublishVolume removes the directory and vol_data.json again (SetUpAt: "If operation
  finished with error then we can remove the mount directory"); a non-final one (CsiVolumeUncertain) keeps
  them, so node facts report the volume and the next run publishes it again (pod alive) or unpublishes it (pod
  gone): never forgotten while the plugin may have created it.
- Teardown: NodeUnpublishVolume, then the ``mount`` directory, vol_data.json and the volume directory are
  removed (removeMountDir), never through a mount point: a target the plugin left mounted fails the volume.
- Node facts report it from vol_data.json (facts.pod_mounts, ephemeral.ephemeral_facts): a second run plans
  nothing, and a pod's deletion plans its teardown.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    ForeignMount, KubevolError, UnsafePath)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import layout, mount, ownership
from ansible_collections.kubevol.volumes.plugins.module_utils.node.ephemeral import (
    _repair_vol_data, _result, says_ephemeral, vol_data)


class LeftMounted(KubevolError):
    """NodeUnpublishVolume answered OK, yet the target is still mounted: the plugin did not undo its publish. The
    target's directory, vol_data.json and the volume directory are kept (nothing is removed through a mount point,
    as removeMountDir), so node facts still report the volume and the next run calls NodeUnpublishVolume again."""
    code = "KV-CSI-LEFT-MOUNTED"


def _pod_label(item):
    pod = item.pods[0]
    return pod.name or pod.uid


def _where(ctx, item):
    return "inline volume %s of pod %s (driver %s) on node %s" % (item.pv_name, _pod_label(item), item.driver,
                                                                  ctx.node_name)


def _refuse(ctx, item, step, text, error=KubevolError):
    """``error`` (its code, if any, ends the message) saying ``text`` of the inline volume, its pod and node."""
    return error("%s: %s" % (_where(ctx, item), text), node=ctx.node_name, volume=item.pv_name,
                 driver=item.driver, pod=_pod_label(item), step=step)


def _named(ctx, item, err):
    """The driver's error (errors.py: it names the volume, the node and the driver) with the pod named too; the
    class and its ``uncertain`` flag are kept (run_each marks an uncertain publish)."""
    kwargs = dict(err.kwargs)
    if "detail" in kwargs:
        kwargs["detail"] = "inline volume of pod %s: %s" % (_pod_label(item), kwargs["detail"])
        kwargs.setdefault("pod", _pod_label(item))
        return err.__class__(**kwargs)
    return err


def _calls(driver, start):
    return list(getattr(driver, "calls", ()))[start:]


def _check_ours(ctx, item, vol_dir, step):
    """vol_data.json in the volume's directory, when it is this pod's inline volume; a directory another volume's
    vol_data.json names (or one kubevol cannot read) is refused, never published over or removed."""
    if not os.path.lexists(os.path.join(vol_dir, layout.VOL_DATA)):
        return None
    data, problem = layout.load_vol_data(vol_dir)
    if problem is None and says_ephemeral(data, item):
        return data
    raise _refuse(ctx, item, step, "%s holds a vol_data.json that does not name this pod's inline volume (%s); "
                  "check what the directory is and remove it by hand"
                  % (vol_dir, problem or "driver %s, handle %s, mode %s" % (
                      data.get("driverName"), names.show_handle(data.get("volumeHandle")),
                      data.get("volumeLifecycleMode"))), error=UnsafePath)


# -- publish ---------------------------------------------------------------------------------------
def publish(ctx, item):
    """csi_mounter.go SetUpAt for an inline volume of an external driver: vol_data.json, then NodePublishVolume."""
    runner = ctx.runner_for(item)
    driver = ctx.driver(item)
    start = len(getattr(driver, "calls", ()))
    pod = item.pods[0]
    target = names.pod_mount_path(ctx.kubelet_dir, pod.uid, item.pv_name)
    vol_dir = os.path.dirname(target)
    # a symlink or a file on the way is refused before anything is read or created through it
    layout.check_dir(ctx.kubelet_dir, target, ctx.node_name)
    _check_ours(ctx, item, vol_dir, "publish")
    res = _result(item, device=None, published=[], mount_path=target, csi_calls=[])
    read_only = bool(pod.read_only or item.read_only)
    current = mount.list_mounts(runner).at(target)
    if current is not None:
        # published: the plugin's mount is at the target. A pod's spec cannot change: nothing to call again
        _repair_vol_data(ctx, res, vol_dir, vol_data(ctx, item, None))
        res["diff"]["before"][target] = res["diff"]["after"][target] = current.source
        ownership.apply_fs_group(ctx, res, item, pod, target, read_only, mounted=True)
        return res
    ctx.step = "node publish %s" % target
    if not ctx.check_mode:
        # the intent first (SetUpAt saves vol_data.json before NodePublishVolume): a run killed later leaves a
        # directory the node facts report as this pod's inline volume
        layout.ensure_dir(ctx.kubelet_dir, vol_dir, ctx.node_name)
        layout.write_vol_data(ctx.kubelet_dir, vol_dir, vol_data(ctx, item, None), ctx.node_name)
    try:
        step = driver.node_publish(item, target, None, {}, pod, check_mode=ctx.check_mode)
    except KubevolError as err:
        res["csi_calls"] = _calls(driver, start)
        if not getattr(err, "uncertain", False) and not ctx.check_mode:
            # a finished failure: the plugin created nothing; remove what SetUpAt wrote (removeMountDir)
            layout.remove_pod_volume_dir(target, item, mount.list_mounts(runner))
        raise _named(ctx, item, err) from None
    res["actions"].append("publish %s" % target)
    res["changed"] = True
    res["published"].append(pod.uid)
    res["read_only"] = step.readonly
    res["diff"]["before"][target] = None
    res["diff"]["after"][target] = "(published by driver %s)" % item.driver
    if not step.fs_group_delegated:
        ownership.apply_fs_group(ctx, res, item, pod, target, read_only, mounted=not ctx.check_mode)
    res["csi_calls"] = _calls(driver, start)
    return res


# -- unpublish -------------------------------------------------------------------------------------
def plan_unpublish(ctx, item):
    """Decide one inline volume's teardown before anything runs: its directory must be this pod's inline volume
    (its vol_data.json says so) or absent; a mount at the target with nothing naming it is refused."""
    runner = ctx.runner_for(item)
    pod = item.pods[0]
    target = names.pod_mount_path(ctx.kubelet_dir, pod.uid, item.pv_name)
    vol_dir = os.path.dirname(target)
    # its vol_data.json decides what is removed: never read (or removed) through a symlink
    layout.check_dir(ctx.kubelet_dir, vol_dir, ctx.node_name)
    evidence = _check_ours(ctx, item, vol_dir, "unpublish")
    mounts = mount.list_mounts(runner)
    mounted = mounts.at(target) is not None
    if evidence is None and mounted:
        raise _refuse(ctx, item, "unpublish", "%s is mounted from %s and no vol_data.json names it as this pod's "
                      "inline volume; check what is mounted there and unmount it by hand"
                      % (target, mounts.at(target).source), error=ForeignMount)
    return {"mounts": mounts, "target": target, "mounted": mounted, "evidence": evidence,
            "exists": os.path.lexists(vol_dir)}


def unpublish(ctx, item):
    """csi_mounter.go TearDownAt: NodeUnpublishVolume (the plugin unmounts the target and deletes the volume),
    then removeMountDir: the ``mount`` directory, vol_data.json, the volume directory."""
    runner = ctx.runner_for(item)
    driver = ctx.driver(item)
    start = len(getattr(driver, "calls", ()))
    plan = plan_unpublish(ctx, item)
    target = plan["target"]
    res = _result(item, device=None, unmounted=[], removed=[], csi_calls=[])
    if plan["evidence"] is None and not plan["exists"]:
        return res  # nothing of it on this node: already torn down
    if plan["evidence"] is not None:
        ctx.step = "node unpublish %s" % target
        try:
            driver.node_unpublish(item, target, check_mode=ctx.check_mode)
        except KubevolError as err:
            res["csi_calls"] = _calls(driver, start)
            raise _named(ctx, item, err) from None
        res["actions"].append("unpublish %s" % target)
        res["changed"] = True
        if plan["mounted"]:
            res["unmounted"].append(target)
        res["diff"]["before"][target] = plan["mounts"].at(target).source if plan["mounted"] else "(published)"
        res["diff"]["after"][target] = None
    res["csi_calls"] = _calls(driver, start)
    if ctx.check_mode:
        return res
    mounts = mount.list_mounts(runner)
    if mounts.at(target) is not None:
        raise _refuse(ctx, item, "unpublish", "NodeUnpublishVolume succeeded but %s is still mounted (from %s), so "
                      "its directories are kept; check the driver's node plugin log there (unmount the target by "
                      "hand if the plugin cannot), then run again" % (target, mounts.at(target).source),
                      error=LeftMounted)
    res["removed"] = layout.remove_pod_volume_dir(target, item, mounts)
    res["changed"] = res["changed"] or bool(res["removed"])
    return res
