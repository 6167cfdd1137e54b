# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The storage side of the ``loop.kubevol.io`` driver: which node holds each image.

The pool keeps, per image, ``<pool>/.kubevol-holders/<sha256(handle)>.json`` (``{volume_handle, nodes: {node:
since}}``), read and written under an exclusive flock on ``<sha256(handle)>.lock`` by every node using the pool,
as a cloud disk API keeps the attachment on its side (its VolumeInUse answer: csi-attacher / the cloud's
AttachDisk). Only the holding node's own detach, or the operator (``force_release_holders``), releases a hold.

Here: where the record is and how it is read. Taking the lock, writing and releasing holds run on the node, with the
node's safe directory code: node/driver_loop_holders.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

HOLDERS_DIR = ".kubevol-holders"  # in the pool: which node holds each image (the storage side's view)


class Holders:
    """Mixed into LoopDriver: ``pool(item)``, ``image_path(item)``, ``node_name`` and ``options`` are the driver's."""

    # -- the storage side: who holds each image (kept in the pool, shared by every node using it) ----
    def _holders_dir(self, item):
        return os.path.join(self.pool(item), HOLDERS_DIR)

    def _holder_path(self, item, suffix=".json"):
        return os.path.join(self._holders_dir(item), hashlib.sha256(item.volume_handle.encode("utf-8")).hexdigest()
                            + suffix)

    def read_holders(self, item):
        """{node: since} of the nodes the pool records as holding the image ({} when none)."""
        try:
            with open(self._holder_path(item)) as handle:
                data = json.load(handle)
            holders = data.get("nodes") if isinstance(data, dict) else None
            return dict(holders) if isinstance(holders, dict) else {}
        except (IOError, OSError, ValueError):
            return {}
