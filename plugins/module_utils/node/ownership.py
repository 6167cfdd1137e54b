# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A pod's fsGroup on its volume, as the kubelet applies it (pkg/volume/volume_linux.go SetVolumeOwnership).

Every file and directory gets the group fsGroup and group read-write (read-only for a read-only volume);
directories also get the setgid and exec bits, so new files inherit the group. Symlinks are re-grouped
(lchown) but never followed or chmod-ed. With fsGroupChangePolicy OnRootMismatch the walk is skipped when
the volume root already has the group and the bits (skipPermissionChange).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import act

RW_MASK = 0o660
RO_MASK = 0o440
EXEC_MASK = 0o110
ON_ROOT_MISMATCH = "OnRootMismatch"


def _wanted_mode(mode, read_only):
    wanted = mode | (RO_MASK if read_only else RW_MASK)
    if stat.S_ISDIR(mode):
        wanted |= stat.S_ISGID | EXEC_MASK
    return wanted


def root_matches(st, fs_group, read_only=False):
    """volume_linux.go requiresPermissionChange, inverted: the root has the group and the mode bits."""
    return st.st_gid == fs_group and stat.S_IMODE(st.st_mode) == stat.S_IMODE(_wanted_mode(st.st_mode, read_only))


def set_volume_ownership(root, fs_group, change_policy=None, read_only=False, check_mode=False):
    """Apply fs_group under ``root`` (a mounted volume). Returns how many entries changed (or would change).

    The walk stays on the volume's filesystem: a mount below the root belongs to something else."""
    root_st = os.lstat(root)
    if change_policy == ON_ROOT_MISMATCH and root_matches(root_st, fs_group, read_only):
        return 0
    changed = 0
    volume_dev = root_st.st_dev
    pending = [root]
    while pending:
        path = pending.pop()
        st = os.lstat(path)
        if st.st_dev != volume_dev:
            continue
        is_link = stat.S_ISLNK(st.st_mode)
        wanted = None if is_link else stat.S_IMODE(_wanted_mode(st.st_mode, read_only))
        if st.st_gid != fs_group or (wanted is not None and wanted != stat.S_IMODE(st.st_mode)):
            changed += 1
            if not check_mode:
                os.lchown(path, -1, fs_group)
                if wanted is not None:
                    os.chmod(path, wanted)  # after chown: chown clears setgid on some filesystems
        if stat.S_ISDIR(st.st_mode):
            with os.scandir(path) as entries:
                pending.extend(entry.path for entry in entries)
    return changed


def apply_fs_group(ctx, res, item, pod, target, read_only, mounted):
    """csi_mounter.go SetUpAt: after NodePublish the kubelet applies the pod's fsGroup (SetVolumeOwnership).
    A read-only bind cannot be re-grouped through; the planner leaves fs_group out where the CSIDriver's
    fsGroupPolicy says the kubelet must not touch it."""
    if pod.fs_group is None or read_only:
        return
    policy = pod.fs_group_change_policy or "Always"
    action = "set group %d on %s (fsGroupChangePolicy %s)" % (pod.fs_group, target, policy)
    if not mounted:  # check mode, not mounted yet: a fresh mount is re-grouped whatever it holds
        act(ctx, res, action)
        return
    ctx.step = action
    try:
        due = set_volume_ownership(target, pod.fs_group, pod.fs_group_change_policy, check_mode=True)
        if due:
            act(ctx, res, "%s: %d entries" % (action, due), set_volume_ownership, target, pod.fs_group,
                pod.fs_group_change_policy)
    except OSError as err:
        raise KubevolError("cannot apply fsGroup %d of pod %s to volume %s at %s on node %s: %s; fix the ownership "
                           "by hand or remove the pod's fsGroup" % (pod.fs_group, pod.name or pod.uid, item.pv_name,
                                                                    target, ctx.node_name, err),
                           node=ctx.node_name, volume=item.pv_name, step="fsGroup")
    res.setdefault("fs_group", []).append({"pod_uid": pod.uid, "fs_group": pod.fs_group, "changed_entries": due})
