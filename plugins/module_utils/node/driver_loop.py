# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``loop.kubevol.io`` driver on the node: its verbs that act (attach, detach, expand, rescan, the staging of a
multi-attach image under its holder lock, the deletion of an inline volume's image) and its record writes.

What the driver is stays in drivers/loop.py (its data, pools, refusals, and what it reads: records, the kernel's loop
devices, the holders); LoopDriver names this class by dotted path (``NODE_OPERATIONS``), so that constructing a loop
driver on a node builds it, and reading the class imports no node code. CSI's node verbs are node/driver_device.py
``DeviceNode``'s, the holds node/driver_loop_holders.py's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    DeviceNotFound, InvalidInput, ParseError, UnsafeName)
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import loop
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import (
    EPHEMERAL_IMAGE_KEY, Attachment, Expansion)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, layout, tools
from ansible_collections.kubevol.volumes.plugins.module_utils.node.driver_device import DeviceNode
from ansible_collections.kubevol.volumes.plugins.module_utils.node.driver_loop_holders import HolderLocks


def _other_owner(record, item, node):
    """Why an attach is refused whose handle's record belongs to the other kind of volume (an inline ephemeral volume
    against a PV): one handle names one image and one record, and unpublishing an inline volume deletes its image."""
    if record.get("ephemeral"):
        owner = "the inline ephemeral volume %s of pod %s" % (record.get("volume_name"), record.get("pod_uid"))
        fix = "give the PV its own csi.volumeHandle"
    else:
        owner = "a PV attached at %s" % record.get("device")
        fix = "rename the pod's inline volume"
    wanted = ("inline volume %s" % item.pv_name) if item.ephemeral else ("PV %s" % item.pv_name)
    return ("on node %s its image and record belong to %s; refusing to attach it for %s, so nothing was changed; %s"
            % (node, owner, wanted, fix))


class LoopNode(HolderLocks, loop.LoopDriver, DeviceNode):
    """loop.kubevol.io on the node."""

    # -- records -----------------------------------------------------------------------------------
    def write_record(self, item, image, device, st):
        record = {"device": device, "image": image, "backing_dev": st.st_dev, "backing_ino": st.st_ino,
                  "volume_handle": item.volume_handle, "unique_volume_name": item.unique_name,
                  "driver": self.NAME, "node_name": self.node_name}
        if item.ephemeral:
            # the image was created for this pod's inline volume: unpublish deletes it (delete_ephemeral)
            record.update(ephemeral=True, pod_uid=item.pods[0].uid, volume_name=item.pv_name)
        path = self.record_path(item.volume_handle)
        layout.write_json(self.kubelet_dir, self.records_dir, os.path.basename(path), record, self.node_name)

    def remove_record(self, volume_handle):
        try:
            os.unlink(self.record_path(volume_handle))
        except OSError:
            pass

    # -- the verbs ---------------------------------------------------------------------------------
    def attach(self, item, provision=False, check_mode=False):
        image = self.image_path(item)
        provisioned = False
        if not os.path.exists(image):
            if not provision:
                raise loop.ImageMissing(step="attach", node=self.node_name, volume=item.pv_name, image=image)
            if not item.capacity_bytes:
                raise InvalidInput(field="capacity_bytes", value=item.capacity_bytes,
                                   reason="provisioning %s needs the PV capacity" % image)
            if check_mode:
                tools.require(self.runner, "attaching it", "losetup")
                return Attachment(device=None, attached=True, provisioned=True)
            os.makedirs(os.path.dirname(image), mode=0o750, exist_ok=True)
            fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.ftruncate(fd, item.capacity_bytes)  # sparse
            finally:
                os.close(fd)
            provisioned = True
        st = os.stat(image)
        with contextlib.nullcontext() if check_mode else self._holders_locked(item):
            holders = self.read_holders(item)
            released = self._release_forced(holders)
            # a check run: nothing was detached, so the holds this plan's teardown releases first still stand
            first = self._released_by_plan(item, holders) if check_mode else {}
            # the storage side answers first, as a cloud disk API does: held by another node, not for us
            self._refuse_if_held_elsewhere(item, holders)
            devices = self.loop_devices()
            record = self.read_record(item.volume_handle)
            if record and bool(record.get("ephemeral")) != bool(item.ephemeral):
                raise InvalidInput(field="volume handle", value=item.volume_handle, reason=_other_owner(
                    record, item, self.node_name))
            if record and (record.get("backing_dev"), record.get("backing_ino")) == (st.st_dev, st.st_ino):
                device = self._recorded_device(record, devices)
                if device:
                    if not check_mode:
                        self._hold(item, holders, released)
                    return Attachment(device=device, provisioned=provisioned, released=released)
            backing = sorted(d.name for d in devices if d.backs(st.st_dev, st.st_ino))
            if backing and not first:
                # Adopted only when the pool gives the image to this node: its own device whose local record was lost
                # (a run killed between the holder record and its own), or a multi-attach image another node of this
                # same kernel holds (test nodes: one device, one superblock, never a second one on the image).
                if self.node_name not in holders and not (item.multi_attach and holders):
                    self._refuse_foreign_device(item, image, backing, released)
                if not check_mode:
                    self._hold(item, holders, released)
                    self.write_record(item, image, backing[0], st)
                return Attachment(device=backing[0], provisioned=provisioned, adopted=True, released=released)
            # (a device that backs an image this plan detaches first is that node's, gone by the real run's setup)
            tools.require(self.runner, "attaching it", "losetup")
            if check_mode:
                return Attachment(device=None, attached=True, released=released)
            # the intent first: a run killed after losetup still leaves the pool saying who holds it
            self._hold(item, holders, released)
            argv = ["losetup", "--find", "--show"] + (["--read-only"] if item.read_only else []) + [image]
            hint = "check that a free loop device exists (losetup -f) and the image is readable"
            rc, out, err = self.runner.check(argv, step="attach", hint=hint)
            device = out.strip()
            if not device.startswith("/dev/loop"):
                raise ParseError(cmd=" ".join(argv), reason="expected a /dev/loopN path", output=out)
            self.write_record(item, image, device, st)
            return Attachment(device=device, attached=True, provisioned=provisioned, released=released)

    def detach(self, item, check_mode=False):
        item = self._as_recorded(item, self.read_record(item.volume_handle))  # the pool of its holders, too
        device = self.find_device(item)
        if device:
            tools.require(self.runner, "detaching it", "losetup")
        if check_mode:
            return device
        if device:
            self.runner.check(["losetup", "-d", device], step="detach",
                              hint="the device may still be open (mounted or used); unmount it first")
        self.remove_record(item.volume_handle)
        if "pool" not in item.attributes and os.path.realpath(loop.DEFAULT_POOL) not in self.allowed_pools():
            return device  # no pool known of a volume gone with its PV (nothing recorded): no holder to release
        # the storage side lets go of this node only once its device is gone
        with self._holders_locked(item) as remove_lock:
            holders = self.read_holders(item)
            if holders.pop(self.node_name, None) is not None:
                self._write_holders(item, holders)
            if not holders:
                remove_lock()  # nobody holds the image: the holder directory keeps nothing of it
        return device

    def node_stage(self, item, staging_path, publish_context, check_mode=False, ctx=None, res=None, mounts=None,
                   force=False):
        """A multi-attach image is staged under its holder lock, in turn with every node that stages it: nodes that
        probe one blank image at once could each format it, and one node's fsck opens the device exclusively while
        another mounts it ("already mounted or mount point busy", seen by the sliced storm on the test nodes, which
        share a kernel). The lock file is the holder record's: only a node holding the image stages it."""
        stage = super(LoopNode, self).node_stage
        if check_mode or item.block or not item.multi_attach:
            return stage(item, staging_path, publish_context, check_mode, ctx, res, mounts, force)
        with self._holders_locked(item):  # the pool attach locked it in (the PV names it, as for attach)
            return stage(item, staging_path, publish_context, check_mode, ctx, res, mounts, force)

    def expand(self, item, check_mode=False):
        image = self.image_path(item)
        if not item.capacity_bytes:
            raise InvalidInput(field="capacity_bytes", value=item.capacity_bytes,
                               reason="controller expansion needs the target capacity")
        try:
            old = os.stat(image).st_size
        except OSError as exc:
            if check_mode and not os.path.lexists(image) and self.find_device(item) is None:
                # a check run: no image and nothing attached: this run's attach creates it (else it fails first)
                return Expansion(old_bytes=0, new_bytes=item.capacity_bytes)
            raise DeviceNotFound(step="expand (controller)", node=self.node_name, volume=item.pv_name,
                                 reason="image %s: %s" % (image, exc))
        new = max(old, item.capacity_bytes)  # never shrink
        if new > old and not check_mode:
            os.truncate(image, new)
        return Expansion(old_bytes=old, new_bytes=new)

    def rescan(self, item, device, check_mode=False):
        if check_mode:
            try:
                return os.stat(self.image_path(item)).st_size
            except OSError:
                return blockdev.device_size(self.runner, device)
        self.runner.check(["losetup", "-c", device], step="rescan (losetup -c)")
        return blockdev.device_size(self.runner, device)

    def delete_ephemeral(self, item, evidence, check_mode=False):
        """Unlink the image of the inline ``item`` (after detach). ``evidence``: the driver's record or the pod's
        vol_data.json read before detach; it must say the image is ephemeral and name exactly this image. Never
        anything else: a PV-backed image has no such record (write_record) and no such vol_data.json."""
        image = self.image_path(item)
        named = (evidence or {}).get("image") or (evidence or {}).get(EPHEMERAL_IMAGE_KEY)
        if named != image:
            return None
        try:
            st = os.lstat(image)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeName(field="volume handle", value=item.volume_handle,
                             reason="%s is not a regular file; kubevol deletes only the image it created" % image)
        if not check_mode:
            os.unlink(image)
        return image
