# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``loop.kubevol.io`` driver's per-node attachment records.

``<kubelet_dir>/plugins/kubevol.io/loop/attachments/<sha256(handle)>.json``: which loop device this node attached
for a volume handle, and the (st_dev, st_ino) of the image it was bound to. Every node of a test cluster shares one
kernel and sees every loop device: a device is attached to *this* node only when its record and the kernel agree.
Here: where they are and how they are read; the node writes them (node/driver_loop.py).
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
