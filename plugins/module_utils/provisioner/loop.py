# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CreateVolume and DeleteVolume of kubevol's loop driver (``loop.kubevol.io``), on a node that reaches its pool,
through the same operations an external CSI driver gets (provisioner/calls.py).

CreateVolume makes the image ``<pool>/<name>`` as a sparse file of the requested size, as ``provision=true`` does at
attach; the pool is the StorageClass's ``pool`` parameter (default /var/lib/kubevol/pool), and must be one of the
node's own pools (driver_options ``loop.kubevol.io.pools``), else it is refused naming that option. The answer's
volume_context is ``{pool: <pool>}`` (the PV's volumeAttributes) and it has no accessible_topology: the loop driver
has no topology, its pool is one directory every node of the cluster is given (on the test nodes, one shared
directory), so the PV gets no nodeAffinity. The same name again answers the image made before when it is at least
the size asked for (CreateVolume is idempotent by name); a smaller one is ALREADY_EXISTS's refusal.

A claim restored from a snapshot or cloned from a claim gets a copy of its source (provisioner/loop_snapshot.py,
which also takes the loop driver's snapshots). DeleteVolume removes the image, only when no loop device of the shared kernel is bound to it (by inode) and the
pool records no node holding it; else it is refused and nothing is removed. An image already gone is deleted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop import DEFAULT_POOL
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner import loop_snapshot
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.loop_refusals import _item, _refused

PARAMETERS = ("pool",)


def create_volume(driver, op, check_mode=False):
    """CreateVolume for the loop driver ``driver`` (a LoopDriver on this node); returns {called, volume,
    topology_supported}."""
    request = op["request"]
    unknown = sorted(set(request["parameters"]) - set(PARAMETERS))
    if unknown:
        raise _refused("CreateVolume " + op["name"], driver, "StorageClass %s has parameter(s) %s, and the loop driver "
                       "takes only %s; nothing was made" % (op.get("storage_class"), ", ".join(unknown),
                                                            ", ".join(PARAMETERS)))
    size = int(request["capacity_bytes"] or 0)
    if size <= 0:
        raise _refused("CreateVolume " + op["name"], driver, "claim %s requests no storage size; nothing was made"
                       % op.get("claim"))
    pool = request["parameters"].get("pool") or DEFAULT_POOL
    item = _item(driver, op["name"], pool, size)
    image = driver.image_path(item)  # the pool must be the node's own
    # the pool as the operator names it (the PV's volumeAttributes, checked against driver_options at plan time)
    volume = {"volume_id": op["name"], "capacity_bytes": size, "volume_context": {"pool": os.path.normpath(pool)}}
    if os.path.lexists(image):
        st = os.lstat(image)
        if not stat.S_ISREG(st.st_mode) or st.st_size < size:
            raise _refused("CreateVolume " + op["name"], driver, "%s exists and is not an image of at least %d bytes "
                           "(ALREADY_EXISTS); nothing was changed: remove it, or give the claim another size"
                           % (image, size))
        volume["capacity_bytes"] = st.st_size
        return {"called": False, "volume": volume, "topology_supported": False}
    if check_mode:
        return {"called": False, "volume": None, "topology_supported": False}
    if request.get("content_source"):  # a restore or a clone: a copy of its source, grown to the size asked for
        volume["capacity_bytes"] = loop_snapshot.fill_from_source(driver, op, image, size)
        return {"called": True, "volume": volume, "topology_supported": False}
    os.makedirs(os.path.dirname(image), mode=0o750, exist_ok=True)
    fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.ftruncate(fd, size)  # sparse: no block is written
    finally:
        os.close(fd)
    return {"called": True, "volume": volume, "topology_supported": False}


def delete_volume(driver, op, pool, check_mode=False):
    """DeleteVolume of the loop image ``op["volume_id"]`` in ``pool`` (the PV's volumeAttributes pool, or None);
    returns {called}. Refused while any node holds it."""
    item = _item(driver, op["volume_id"], pool)
    image = driver.image_path(item)
    if not os.path.lexists(image):
        return {"called": False}  # gone already: DeleteVolume is idempotent
    st = os.lstat(image)
    if not stat.S_ISREG(st.st_mode):
        raise _refused("DeleteVolume of PV " + op["pv_name"], driver, "%s is not an image file; nothing was removed"
                       % image)
    held = sorted(d.name for d in driver.loop_devices() if d.backs(st.st_dev, st.st_ino))
    holders = sorted(driver.read_holders(item))
    if held or holders:
        raise _refused("DeleteVolume of PV " + op["pv_name"], driver, "its image %s is still attached (%s); nothing was "
                       "removed: the volume is deleted once every node has detached it" % (
                           image, ", ".join(["device %s" % d for d in held] + ["held by node %s" % n for n in holders])))
    if not check_mode:
        os.unlink(image)
    return {"called": not check_mode}
