# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Snapshots, restores and clones of kubevol's loop driver (``loop.kubevol.io``), through the same operations an
external CSI driver gets (provisioner/calls.py):

- CreateSnapshot copies the source volume's image to ``<its pool>/snapshots/<name>`` (``cp --sparse=always``, an
  argument list: the holes stay holes); the snapshot id is ``<name>``, its size the image's, ready at once. The same
  name again answers the copy made before (CreateSnapshot is idempotent by name).
- DeleteSnapshot removes that copy; one already gone is deleted.
- A restore (content source ``snapshot``) or a clone (``volume``) copies the snapshot's or the source volume's image
  into the new volume's image, then grows the copy to the size asked for (the filesystem in it keeps its size
  until it is grown).

The snapshot copies and the source images are looked for in this node's own pools only (driver_options
``loop.kubevol.io.pools``). A copy is crash-consistent: what the source's filesystem had not written back is not in
it, as with a storage array's snapshot. Node-side code.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop import DEFAULT_POOL
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.loop_refusals import _item, _refused

SNAPSHOTS = "snapshots"


def _copy(driver, source, target, size):
    """``source`` copied sparse to ``target`` (through a temporary name beside it), grown to ``size`` bytes."""
    tmp = target + ".kubevol-copy"
    if os.path.lexists(tmp):
        os.unlink(tmp)  # a copy an earlier run left half done
    driver.runner.check(["cp", "--sparse=always", "--no-dereference", "--", source, tmp], step="copy %s" % source)
    if size > os.path.getsize(tmp):
        os.truncate(tmp, size)
    os.chmod(tmp, 0o600)
    os.rename(tmp, target)


def _regular(path):
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def snapshot_path(pool, snapshot_id):
    names.check_component("snapshot id", snapshot_id)
    return os.path.join(pool, SNAPSHOTS, snapshot_id)


def find_snapshot(driver, snapshot_id):
    """The copy of snapshot ``snapshot_id`` in this node's pools, or None."""
    for pool in driver.allowed_pools():
        path = snapshot_path(pool, snapshot_id)
        if _regular(path):
            return path
    return None


def _find_volume(driver, volume_id, first_pool):
    names.check_component("volume id", volume_id)
    for pool in [first_pool] + [p for p in driver.allowed_pools() if p != first_pool]:
        path = os.path.join(pool, volume_id)
        if _regular(path):
            return path
    return None


def fill_from_source(driver, op, image, size):
    """The new image ``image`` made from the request's content source (a restore or a clone). Returns its size."""
    source = op["request"]["content_source"]
    if "snapshot" in source:
        found = find_snapshot(driver, source["snapshot"]["snapshot_id"])
        what = "snapshot %s" % source["snapshot"]["snapshot_id"]
    else:
        found = _find_volume(driver, source["volume"]["volume_id"], os.path.dirname(image))
        what = "volume %s" % source["volume"]["volume_id"]
    if found is None:
        raise _refused("CreateVolume " + op["name"], driver, "its source %s is in none of this node's pools (%s) "
                       "(NOT_FOUND); nothing was made: restore from a snapshot that exists" % (
                           what, ", ".join(driver.allowed_pools())))
    os.makedirs(os.path.dirname(image), mode=0o750, exist_ok=True)
    _copy(driver, found, image, size)
    return os.path.getsize(image)


def create_snapshot(driver, op, check_mode=False):
    """CreateSnapshot for the loop driver ``driver`` on this node; returns {called, taken}."""
    item = _item(driver, op["source_volume_id"], (op.get("volume_attributes") or {}).get("pool") or DEFAULT_POOL)
    source = driver.image_path(item)  # the pool must be the node's own
    target = snapshot_path(os.path.dirname(source), op["name"])
    answer = {"snapshot_id": op["name"], "ready_to_use": True}
    if _regular(target):
        st = os.stat(target)
        answer.update(size_bytes=st.st_size, creation_time=_rfc3339(st.st_mtime))
        return {"called": False, "taken": answer}
    if not _regular(source):
        raise _refused("CreateSnapshot " + op["name"], driver, "the image %s of claim %s's volume is not there "
                       "(NOT_FOUND); nothing was copied: check the volume's pool" % (source, op.get("claim")))
    if check_mode:
        return {"called": False, "taken": None}
    os.makedirs(os.path.dirname(target), mode=0o750, exist_ok=True)
    _copy(driver, source, target, 0)
    st = os.stat(target)
    answer.update(size_bytes=st.st_size, creation_time=_rfc3339(st.st_mtime))
    return {"called": True, "taken": answer}


def delete_snapshot(driver, op, check_mode=False):
    """DeleteSnapshot of the loop snapshot ``op["snapshot_id"]``; returns {called}."""
    found = find_snapshot(driver, op["snapshot_id"])
    if found is None:
        return {"called": False}  # gone already: DeleteSnapshot is idempotent
    if not check_mode:
        os.unlink(found)
    return {"called": not check_mode}


def _rfc3339(seconds):
    """A file's time as protobuf's JSON prints a Timestamp (RFC 3339, UTC), as an external driver's answer has it."""
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + "%06dZ" % moment.microsecond
