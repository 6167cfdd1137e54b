# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``loop.kubevol.io`` driver: a volume is an image file in a pool, attached as a loop device.

A DeviceDriver (drivers/device.py): this file is its device part only (attach, find_device, detach, expand,
rescan, its records); CSI's node verbs are the shared code. A loop device is identified only by the
(st_dev, st_ino) of its backing file as the kernel reports it (drivers/loop_kernel.py), never by path text
(``losetup -j`` falls back to string matching). Every node of a test cluster shares one kernel and sees every
loop device, so the driver also keeps a per-node attachment record (drivers/loop_records.py),
``<kubelet_dir>/plugins/kubevol.io/loop/attachments/<sha256(handle)>.json``: a device is attached
to *this* node only when the record and the kernel agree (the device is still backed by the
recorded inode).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import errno
import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    DeviceNotFound, InvalidInput, ParseError, UnsafeName)
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import (
    ATTACHABLE, BLOCK, CONTROLLER_EXPAND, EPHEMERAL, EPHEMERAL_IMAGE_KEY, NODE_EXPAND, STAGE_LOCKED, STAGE_UNSTAGE,
    AttachedDevice, Attachment, EphemeralVolume, Expansion)
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.device import DeviceDriver
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop_holders import Holders
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop_kernel import (
    LOSETUP_LIST, _kernel_loop_device, _Unreadable, kernel_loop_devices, parse_losetup)
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop_records import Records

DEFAULT_POOL = "/var/lib/kubevol/pool"


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
    return ("on node %s its image and record belong to %s; refusing to attach it for %s. Nothing was changed; %s"
            % (node, owner, wanted, fix))


def _require(runner, why, *names_):
    """node/tools.py require (node code: imported where it runs, see device.py)."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.node import tools

    tools.require(runner, why, *names_)


class ImageMissing(DeviceNotFound):
    """A loop volume's image is not in its pool and the run may not create it: nothing was attached."""
    code = "KV-IMAGE-MISSING"
    message = ("attach of volume {volume} on node {node} failed: its image {image} does not exist; create it in the "
               "pool, or set @{{provision=true}} to have kubevol create it")


class LoopDriver(Records, Holders, DeviceDriver):
    NAME = "loop.kubevol.io"
    CAPABILITIES = frozenset((ATTACHABLE, STAGE_UNSTAGE, NODE_EXPAND, CONTROLLER_EXPAND, BLOCK, EPHEMERAL,
                              STAGE_LOCKED))
    # driver_options["loop.kubevol.io"]: the directories this node keeps images in (the operator's, never a PV's)
    OPTIONS = {"pools": {"type": "list", "elements": "path", "default": [DEFAULT_POOL]}}
    HANDLE_IS_FILE_NAME = True  # the image is <pool>/<handle>: the planner and the node refuse any other handle

    # -- paths -------------------------------------------------------------------------------------
    def allowed_pools(self):
        # "pools" (driver_options), or the node modules' older loop_pools
        pools = self.options.get("pools") or self.options.get("loop_pools") or [DEFAULT_POOL]
        return [os.path.realpath(p) for p in pools if isinstance(p, str) and os.path.isabs(p) and "\x00" not in p]

    def pool(self, item):
        """The PV's pool, only when it is one of the node's own (loop_pools): the node's operator decides
        which directories hold images, never whoever writes a PV."""
        pool = item.attributes.get("pool") or DEFAULT_POOL
        if not os.path.isabs(pool) or "\x00" in pool:
            raise InvalidInput(field="volume_attributes.pool", value=pool, reason="must be an absolute path")
        real = os.path.realpath(pool)
        allowed = self.allowed_pools()
        if real not in allowed:
            owner = ("inline volume %s of pod %s" % (item.pv_name, item.pods[0].name or item.pods[0].uid)
                     if item.ephemeral else "PV %s" % item.pv_name)
            raise InvalidInput(field="volumeAttributes.pool of %s" % owner, value=pool,
                               reason="node %s keeps loop images only in %s; a volume cannot choose another "
                                      "directory. If the operator means this pool, add it to the pools of %s"
                                      % (self.node_name, ", ".join(allowed) or "no pool",
                                         setting("driver_options", key=names.LOOP_DRIVER)))
        return real

    def image_path(self, item):
        """<pool>/<handle>; refused when the handle is not one component or resolves outside the pool."""
        names.check_component("volume handle", item.volume_handle)
        pool = self.pool(item)
        image = os.path.join(pool, item.volume_handle)
        if os.path.lexists(image):
            real = os.path.realpath(image)
            if os.path.dirname(real) != pool:
                raise UnsafeName(field="volume handle", value=item.volume_handle,
                                 reason="it resolves to %s, outside the pool %s" % (real, pool))
        return image

    def backing(self, item):
        return self.image_path(item)

    def validate(self, item):
        super(LoopDriver, self).validate(item)
        item = self._as_recorded(item, self.read_record(item.volume_handle))
        if "pool" not in item.attributes and os.path.realpath(DEFAULT_POOL) not in self.allowed_pools():
            # no pool named (a volume whose PV is gone comes without its volumeAttributes) and none recorded: the
            # default pool is not this node's, so nothing is reached through it; attach, mount and expansion refuse
            # it where they need the image (image_path), a teardown finds no device of it
            names.check_component("volume handle", item.volume_handle)
            return
        self.image_path(item)

    def _as_recorded(self, item, record):
        """``item`` with the pool of this node's own attachment record when the item names none: a volume whose PV
        is gone is torn down by its unique name alone (the A/D controller's actual state keeps nothing else), and a
        PV in another pool than the default had its pool only in the gone PV's volumeAttributes. The recorded image
        counts only when it lies in one of the node's pools (loop_pools) under the handle's own name; the device is
        then still identified by the record's inode (find_device), never by that path."""
        image = (record or {}).get("image")
        if "pool" in item.attributes or not isinstance(image, str) or not os.path.isabs(image) or "\x00" in image:
            return item
        pool, name = os.path.split(image)
        real = os.path.realpath(pool)
        if name != item.volume_handle or real not in self.allowed_pools():
            return item
        values = dict((field, getattr(item, field)) for field, _default in item.FIELDS)
        values["volume_attributes"] = tuple(sorted(dict(item.volume_attributes, pool=real).items()))
        return type(item)(**values)

    # -- kernel ------------------------------------------------------------------------------------
    def loop_devices(self, only=None):
        """The bound loop devices (only those named in ``only``, when given: one sysfs read each instead of a
        scan of every loop device the node has)."""
        devices = kernel_loop_devices(only)
        if devices is not None:
            return devices
        rc, out, err = self.runner.check(LOSETUP_LIST, step="list loop devices")
        return parse_losetup(out)

    # -- the interface -----------------------------------------------------------------------------
    def find_device(self, item):
        record = self.read_record(item.volume_handle)
        if not record:
            return None
        image = self.image_path(self._as_recorded(item, record))
        try:
            st = os.stat(image)
            if (st.st_dev, st.st_ino) != (record.get("backing_dev"), record.get("backing_ino")):
                return None  # the image was replaced: the record is stale
        except OSError:
            pass  # image deleted under an attached device: still ours to find and detach
        # only the recorded device can be the answer (_recorded_device): no scan of every loop device
        return self._recorded_device(record, self.loop_devices(only=[record["device"]]))

    def attach(self, item, provision=False, check_mode=False):
        image = self.image_path(item)
        provisioned = False
        if not os.path.exists(image):
            if not provision:
                raise ImageMissing(step="attach", node=self.node_name, volume=item.pv_name, image=image)
            if not item.capacity_bytes:
                raise InvalidInput(field="capacity_bytes", value=item.capacity_bytes,
                                   reason="provisioning %s needs the PV capacity" % image)
            if check_mode:
                _require(self.runner, "attaching it", "losetup")
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
            _require(self.runner, "attaching it", "losetup")
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

    def check_backing(self, item):
        """A check run before the attach: what the attach would give, read only. The loop device already backed by the
        image when the pool gives it to this node (the attach adopts it), else the image itself (the device reads
        its bytes), or None when the image does not exist yet (the attach creates it sparse: blank)."""
        image = self.image_path(item)
        try:
            st = os.stat(image)
        except OSError:
            return None
        backing = sorted(d.name for d in self.loop_devices() if d.backs(st.st_dev, st.st_ino))
        holders = self.read_holders(item)
        if backing and (self.node_name in holders or (item.multi_attach and holders)):
            return backing[0]
        return image

    def reads_as_zeros(self, item, device):
        """The image the loop device is bound to has no data extent at all (lseek SEEK_DATA: ENXIO), so every byte
        the device reads is zero. Pages written through the device and not yet in the image are flushed to it
        first (fsync of the device). False when the device is not bound to this item's image (by inode), or when
        the image's filesystem cannot tell holes from data (it then reports the whole file as data). A check run
        before the attach asks it of the image itself (``device`` is the image: check_backing)."""
        try:
            image_path = self.image_path(item)
            bound = None
            if device != image_path:
                fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
                bound = _kernel_loop_device(os.path.basename(device))
                if bound is None:
                    return False
            fd = os.open(image_path, os.O_RDONLY | os.O_CLOEXEC)
        except (IOError, OSError, _Unreadable):
            return False
        try:
            image = os.fstat(fd)  # the open image itself: a path replaced since is not what is measured
            if not stat.S_ISREG(image.st_mode) or (bound is not None and not bound.backs(image.st_dev, image.st_ino)):
                return False
            try:
                os.lseek(fd, 0, os.SEEK_DATA)
            except OSError as err:
                return err.errno == errno.ENXIO  # no data from offset 0 to the end: all holes
            return False
        finally:
            os.close(fd)

    def detach(self, item, check_mode=False):
        item = self._as_recorded(item, self.read_record(item.volume_handle))  # the pool of its holders, too
        device = self.find_device(item)
        if device:
            _require(self.runner, "detaching it", "losetup")
        if check_mode:
            return device
        if device:
            self.runner.check(["losetup", "-d", device], step="detach",
                              hint="the device may still be open (mounted or used); unmount it first")
        self.remove_record(item.volume_handle)
        if "pool" not in item.attributes and os.path.realpath(DEFAULT_POOL) not in self.allowed_pools():
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
        stage = super(LoopDriver, self).node_stage
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
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev  # node code: see device.py

        if check_mode:
            try:
                return os.stat(self.image_path(item)).st_size
            except OSError:
                return blockdev.device_size(self.runner, device)
        self.runner.check(["losetup", "-c", device], step="rescan (losetup -c)")
        return blockdev.device_size(self.runner, device)

    def attached_volumes(self):
        devices = None
        found = []
        for record in self._records():
            if record.get("ephemeral"):
                continue  # an inline volume's image: ephemeral_volumes (the kubelet reports no attachment for it)
            if devices is None:
                devices = self.loop_devices()
            device = self._recorded_device(record, devices)
            if device:
                handle = record["volume_handle"]
                found.append(AttachedDevice(unique_volume_name=names.unique_volume_name(self.NAME, handle),
                                            driver=self.NAME, volume_handle=handle, device=device))
        return found

    # -- inline ephemeral volumes ------------------------------------------------------------------
    def ephemeral_volumes(self):
        devices = None
        found = []
        for record in self._records():
            if not record.get("ephemeral") or not record.get("pod_uid") or not record.get("volume_name"):
                continue
            if devices is None:
                devices = self.loop_devices()
            handle = record["volume_handle"]
            found.append(EphemeralVolume(unique_volume_name=names.unique_volume_name(self.NAME, handle),
                                         driver=self.NAME, volume_handle=handle, pod_uid=record["pod_uid"],
                                         volume_name=record["volume_name"], image=record.get("image"),
                                         device=self._recorded_device(record, devices)))
        return found

    def ephemeral_record(self, item):
        """This node's record of the inline ``item`` when it says the image is ephemeral and is ``item``'s own."""
        record = self.read_record(item.volume_handle)
        if (record and record.get("ephemeral") and record.get("pod_uid") == item.pods[0].uid
                and record.get("volume_name") == item.pv_name):
            return record
        return None

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
