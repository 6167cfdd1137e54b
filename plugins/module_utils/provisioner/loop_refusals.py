# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the loop driver's controller calls share (provisioner/loop.py CreateVolume and DeleteVolume,
provisioner/loop_snapshot.py the snapshots and the copies made from them): the volume item a call works on, and the
refusal it raises. Apart from both so that they import in one direction (loop.py runs loop_snapshot.py's copy)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item


class LoopProvisionRefused(KubevolError):
    """The loop driver refuses a CreateVolume or a DeleteVolume: nothing was made or removed."""

    code = "KV-LOOP-PROVISION"

    def __init__(self, text):
        super(LoopProvisionRefused, self).__init__("%s [%s]" % (text, self.code))


def _item(driver, name, pool, capacity=None):
    attributes = {"pool": pool} if pool else {}
    return volume_item({"pv_name": name, "driver": driver.NAME, "volume_handle": name, "volume_attributes": attributes,
                        "capacity_bytes": capacity})


def _refused(call, driver, why):
    return LoopProvisionRefused("%s refused by driver %s on node %s: %s" % (call, driver.NAME, driver.node_name, why))
