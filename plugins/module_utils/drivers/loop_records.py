# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``loop.kubevol.io`` driver's per-node attachment records.

``<kubelet_dir>/plugins/kubevol.io/loop/attachments/<sha256(handle)>.json``: which loop device this node attached
for a volume handle, and the (st_dev, st_ino) of the image it was bound to. Every node of a test cluster shares one
kernel and sees every loop device: a device is attached to *this* node only when its record and the kernel agree.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os


class Records:
    """Mixin of LoopDriver (kubelet_dir, node_name, NAME)."""

    @property
    def records_dir(self):
        return os.path.join(self.kubelet_dir, "plugins", "kubevol.io", "loop", "attachments")

    def record_path(self, volume_handle):
        return os.path.join(self.records_dir, hashlib.sha256(volume_handle.encode("utf-8")).hexdigest() + ".json")

    def read_record(self, volume_handle):
        try:
            with open(self.record_path(volume_handle)) as handle:
                record = json.load(handle)
            return record if isinstance(record, dict) and record.get("device") else None
        except (IOError, OSError, ValueError):
            return None

    def write_record(self, item, image, device, st):
        from ansible_collections.kubevol.volumes.plugins.module_utils.node import layout  # node code: see device.py

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

    def _recorded_device(self, record, devices):
        """The recorded device if the kernel still backs it by the recorded inode, else None."""
        for dev in devices:
            if dev.name == record["device"] and dev.backs(record.get("backing_dev", -1), record.get("backing_ino", -1)):
                return dev.name
        return None

    def _records(self):
        """Every readable attachment record of this node."""
        try:
            files = sorted(f for f in os.listdir(self.records_dir) if f.endswith(".json"))
        except OSError:
            return []
        records = []
        for name in files:
            try:
                with open(os.path.join(self.records_dir, name)) as handle:
                    record = json.load(handle)
            except (IOError, OSError, ValueError):
                continue
            if isinstance(record, dict) and record.get("device") and record.get("volume_handle"):
                records.append(record)
        return records
