# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The resize a device driver's NodeStageVolume ends with, as the real block drivers do it (gcp-compute-persistent-
disk-csi-driver and aws-ebs-csi-driver pkg/driver/node.go NodeStageVolume: after formatAndMount, mount-utils
``ResizeFs.NeedResize`` then ``Resize`` on the staging path, for a volume that is not read-only).

A volume restored from a snapshot, or cloned, into a larger claim gets a device as large as the claim and the
source's filesystem, which is smaller: the external-provisioner only warns ("Volume plugin needs to handle volume
expansion", controller.go getSnapshotSource), and no NodeExpandVolume follows, since the claim's capacity is the
PV's from the start. The stage grows it:

- an ext filesystem has been grown offline before the mount (node/stage.py grow_offline: this machine's kernel, and
  any without CAP_SYS_RESOURCE, refuses to grow a mounted ext4);
- a filesystem that grows only while mounted (xfs, btrfs) is grown here, at the staging path, right after the mount.

Only a filesystem the stage found on the device (blkid read it as its own type) and mounted in this call is grown:
a fresh one is as large as its device, a global mount that was already there is left as the drivers leave it
(their NodeStageVolume returns early; a grow of a mounted volume is NodeExpandVolume's, node/expand.py). Nothing is
formatted here. Check mode reports the grow (``grow filesystem`` in the actions, ``grown_online``) and runs none.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, tools
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act
from ansible_collections.kubevol.volumes.plugins.module_utils.node.expand import ONLINE_STEP, not_grown
from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import get_filesystem


def resize_staged(ctx, runner, item, device, gpath, mounts_before, res):
    """Grow the filesystem just mounted at ``gpath`` (the staging path) from ``device`` to the device's size, when
    it is smaller (NeedResize) and grows only while mounted; ``mounts_before`` are the node's mounts before the
    stage. Returns ``gpath``, as the stage does."""
    if not gpath or mounts_before.at(gpath) or not_grown(item) or res.get("formatted") or device is None:
        return gpath
    fs = get_filesystem(res.get("fs_type"))
    if fs is None or not fs.GROW_MOUNTPOINT_ONLY:
        return gpath  # an ext filesystem grew offline before the mount
    dev_size = blockdev.device_size(runner, device)
    # before the attach, a check run reads the backing (the image the device will show), unmounted
    fs_size = fs.fs_size(runner, device, None if ctx.check_mode else gpath)
    if not fs.needs_grow(dev_size, fs_size):
        return gpath
    tools.require_grow(runner, fs, gpath)
    act(ctx, res, "grow filesystem", runner.check, fs.grow_argv(device, gpath), ONLINE_STEP,
        "it stays mounted at its smaller size and no later run grows it: run `%s` on the node"
        % " ".join(fs.grow_argv(device, gpath)))
    res["grown_online"] = {"old": fs_size, "new": dev_size if ctx.check_mode else fs.fs_size(runner, device, gpath)}
    return gpath
