# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``loop.kubevol.io`` driver: a volume is an image file in a pool, attached as a loop device.

A DeviceDriver (drivers/device.py): this file is what the driver is (its data, its pools and refusals) and what it
reads of the node (its records, the kernel's loop devices, the pool's holders, find_device); its verbs that act
(attach, detach, expand, rescan, record writes, holds) are node/driver_loop.py ``LoopNode``, which the class names by
dotted path (``NODE_OPERATIONS``), and CSI's node verbs are the shared code (node/driver_device.py). A loop device
is identified only by the (st_dev, st_ino) of its backing file as the kernel reports it (drivers/loop_kernel.py),
never by path text (``losetup -j`` falls back to string matching). Every node of a test cluster shares one kernel
and sees every loop device, so the driver also keeps a per-node attachment record (drivers/loop_records.py),
``<kubelet_dir>/plugins/kubevol.io/loop/attachments/<sha256(handle)>.json``: a device is attached to *this* node
only when the record and the kernel agree (the device is still backed by the recorded inode).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import (
    DeviceNotFound, InvalidInput, UnsafeName)
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import (
    ATTACHABLE, BLOCK, CONTROLLER_EXPAND, EPHEMERAL, NODE_EXPAND, STAGE_LOCKED, STAGE_UNSTAGE, AttachedDevice,
    EphemeralVolume)
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.device import DeviceDriver
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop_holders import Holders
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop_kernel import (
    LOSETUP_LIST, _kernel_loop_device, _Unreadable, kernel_loop_devices, parse_losetup)
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop_records import Records

DEFAULT_POOL = "/var/lib/kubevol/pool"


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
    NODE_OPERATIONS = "node.driver_loop.LoopNode"  # its verbs that act on the node (drivers/base.py)

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
                                      "directory: if the operator means this pool, add it to the pools of %s"
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
