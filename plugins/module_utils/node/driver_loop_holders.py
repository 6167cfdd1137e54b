# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``loop.kubevol.io`` driver's holds on the storage side, as a node takes and releases them: the exclusive flock
on an image's holder record, the record's writes, and the refusals of an attach another node's hold forbids
(drivers/loop_holders.py says where the record is and reads it)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import datetime
import errno
import fcntl
import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import UnsafePath, VolumeInUse
from ansible_collections.kubevol.volumes.plugins.module_utils.node import layout


def _same_file(st, name, dir_fd):
    """Whether ``name`` in ``dir_fd`` is still the file ``st`` describes (not removed, not replaced)."""
    try:
        current = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return False
    return (current.st_dev, current.st_ino) == (st.st_dev, st.st_ino)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class HolderLocks:
    """Mixed into node/driver_loop.py LoopNode, over drivers/loop_holders.py Holders (``_holder_path``,
    ``_holders_dir``, ``read_holders``) and the driver's ``pool``, ``image_path``, ``node_name`` and ``options``."""

    @contextlib.contextmanager
    def _holders_locked(self, item):
        """An exclusive flock on the image's holder record, ``<sha256(handle)>.lock``: attach and detach of one image
        on every node take it in turn, while other images attach in parallel (a pool-wide lock made ten nodes wait
        on each other's losetup). Yields a function that removes the lock file; detach calls it with the last
        holder gone, so a waiter checks once it has the lock that the name still points to the file it locked."""
        name = os.path.basename(self._holder_path(item, ".lock"))
        while True:
            with contextlib.ExitStack() as attempt:
                dir_fd = layout.open_dir(self.pool(item), self._holders_dir(item), True, self.node_name)
                attempt.callback(os.close, dir_fd)
                try:
                    fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
                except OSError as err:
                    if err.errno != errno.ELOOP:
                        raise
                    raise UnsafePath(path=os.path.join(self._holders_dir(item), name), node=self.node_name,
                                     kubelet_dir=self.pool(item), reason="a symlink where volume %s's holder lock "
                                                                         "belongs" % item.pv_name)
                attempt.callback(os.close, fd)  # closing the descriptor releases the flock
                fcntl.flock(fd, fcntl.LOCK_EX)
                if _same_file(os.fstat(fd), name, dir_fd):
                    held = attempt.pop_all()  # both stay open until the caller is done
                    break
            # removed (and maybe created anew) while this node waited: lock the current one

        def remove():
            try:
                os.unlink(name, dir_fd=dir_fd)
            except OSError:
                pass  # an empty lock file left behind is harmless: the next attach locks it again

        with held:
            yield remove

    def _write_holders(self, item, holders):
        path = self._holder_path(item)
        if not holders:
            try:
                os.unlink(path)
            except OSError:
                pass
            return
        layout.write_json(self.pool(item), self._holders_dir(item), os.path.basename(path),
                          {"volume_handle": item.volume_handle, "nodes": holders}, self.node_name)

    def _hold(self, item, holders, released=None):
        """Record this node as a holder of the image (under _holders_locked), without the holds the operator
        released (``released``)."""
        if self.node_name not in holders or released:
            holders.setdefault(self.node_name, _now())
            self._write_holders(item, holders)

    def _release_forced(self, holders):
        """Drop the holds of the nodes the operator listed (force_release_holders): {node: since} of those dropped.
        Only the operator's word releases another node's hold here. The out-of-service taint or a detach the
        controller recorded without the node does not: on a shared kernel (test nodes) or a node that was only
        unreachable, that node still has the device and may still write to it, and its own detach, when it comes
        back, would `losetup -d` a device another node had adopted, under a running pod."""
        forced = set(self.options.get("force_release_holders") or ())
        return dict((n, holders.pop(n)) for n in sorted(holders) if n in forced and n != self.node_name)

    def _released_by_plan(self, item, holders):
        """A check run only: drop the holds of the nodes this plan detaches the volume from first (the item's
        ``detached_first_from``, the planner's word) and return them ({node: since}). In a real run their teardown
        has run and released them by their own detach before this attach; a check run detached nothing, and must
        not refuse what the real run will do. A real run never calls this: only a node's own detach releases it."""
        first = set(getattr(item, "detached_first_from", None) or ())
        return dict((n, holders.pop(n)) for n in sorted(holders) if n in first and n != self.node_name)

    def _refuse_if_held_elsewhere(self, item, holders):
        others = sorted(n for n in holders if n != self.node_name)
        if others and not item.multi_attach:
            raise VolumeInUse(volume=item.pv_name, node=self.node_name, image=self.image_path(item),
                              holders=", ".join("node %s (since %s)" % (n, holders[n]) for n in others),
                              release=setting("force_release_holders", others), holder_nodes=others)

    def _refuse_foreign_device(self, item, image, backing, released):
        """A loop device backs the image, and the pool's holder record does not give it to this node: it is another
        node's (a node whose hold the operator released, on this shared kernel; or an attach that kept no record).
        Neither adopted (that node's detach would pull it from under this node's pods) nor doubled (a second
        loop device on the image is a second superblock on the same filesystem)."""
        if released:
            whose = ("node(s) %s, whose hold on it the operator released here (force_release_holders), still have it: "
                     "they are not down" % ", ".join(sorted(released)))
        else:
            whose = "the pool's holder record names no node for it, so it is no node's that kubevol knows"
        raise VolumeInUse(
            "attach of volume %s on node %s refused: loop device %s already backs image %s and %s; detach it on the "
            "node that has it (its own cleanup when it comes back) or, after checking that nothing mounts or uses it, "
            "run losetup -d %s, then run again"
            % (item.pv_name, self.node_name, ", ".join(backing), image, whose, backing[0]),
            volume=item.pv_name, node=self.node_name, image=image, device=backing[0])
