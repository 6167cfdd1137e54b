# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_volume_audit: what a node holds that nothing may need any more, and the one safe cleaning.

The kubelet's housekeeping finds the same leaks on its node: cleanupOrphanedPodDirs
(pkg/kubelet/kubelet_volumes.go) lists ``<kubelet>/pods/<uid>`` directories of pods the pod manager no longer
has and removes them only when no volume is mounted under them and only empty directories are left
(removeall.RemoveDirsOneFilesystem, "orphaned pod found but volume paths are still present on disk" otherwise).
This module reports:

- the node's facts (node_facts.node_facts: the planner finds the orphaned pod volumes and unused global mounts),
- every ``pods/<uid>`` directory of a pod not in ``pod_uids`` (the pods the cluster binds to this node): what is
  mounted under it, what files are left, whether only empty directories remain,
- every image in the node's loop pools (``driver_options`` loop.kubevol.io ``pools``, the operator's configuration): size, allocated size,
  what ``blkid -p`` finds in the file (read only; "unknown" when the probe is inconclusive), the loop device
  bound to it (by inode) and this node's driver record naming it.

With ``clean`` it removes, in the orphan pod directories only, empty directories: ``rmdir`` bottom-up, never
recursive, never into or through a mountpoint or a symlink, a directory holding a file is kept. No image, no
file and no mount is ever touched. Check mode reports what would be removed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options, names

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import DRIVER_REGISTRY
from ansible_collections.kubevol.volumes.plugins.module_utils.node import context
from ansible_collections.kubevol.volumes.plugins.module_utils.node import facts as node_facts
from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node import mount
from ansible_collections.kubevol.volumes.plugins.module_utils.node.blockdev import BLKID_NOTHING_FOUND, parse_blkid_export

FS_PROBE = ["blkid", "-p", "-o", "export"]
NONE, FILESYSTEM, SIGNATURE, UNKNOWN = "none", "filesystem", "signature", "unknown"
MAX_LISTED = 20  # files and mounts named per orphan pod directory


def argspec():
    """node_volume_audit's options (documented in plugins/modules/node_volume_audit.py)."""
    return node_args.node_argspec(
        pod_uids=dict(type="list", elements="str"),
        clean=dict(type="bool", default=False),
        fs_sizes=dict(type="bool", default=False),
    )


# -- pool images ---------------------------------------------------------------------------------
def probe_image(runner, path):
    """(content, detail) of an image file as ``blkid -p`` reads it (the file itself, read only, never a device):
    FILESYSTEM/SIGNATURE with the type, NONE when blkid knows no signature in it, UNKNOWN when it could not tell."""
    argv = FS_PROBE + [path]
    rc, out, err = runner(argv)
    if rc == BLKID_NOTHING_FOUND and not out.strip():
        return NONE, None
    if rc != 0:
        return UNKNOWN, "`%s` failed (exit %s: %s)" % (" ".join(argv), rc, (err or out or "").strip())
    try:
        values = parse_blkid_export(out, " ".join(argv))
    except Exception:  # pylint: disable=broad-except
        values = {}
    if values.get("TYPE"):
        kind = FILESYSTEM if values.get("USAGE", "filesystem") == "filesystem" else SIGNATURE
        return kind, values["TYPE"]
    if values.get("PTTYPE"):
        return SIGNATURE, "partition table " + values["PTTYPE"]
    return UNKNOWN, "`%s` succeeded without naming a type: %s" % (" ".join(argv), out.strip())


def _bound(loops, st):
    for dev in loops or ():
        if dev.backs(st.st_dev, st.st_ino):
            return dev.name
    return None


def pool_images(ctx, pools):
    """One entry per regular file in each pool (dot files, such as the holders directory, are the driver's)."""
    driver = DRIVER_REGISTRY[names.LOOP_DRIVER].reader(ctx.runner, ctx.kubelet_dir, ctx.node_name,
                                                       {"loop_pools": pools})
    records = {}
    for record in driver._records():  # pylint: disable=protected-access
        if record.get("image"):
            records[os.path.realpath(record["image"])] = record
    loops = driver.loop_devices()
    found, problems = [], []
    for pool in pools:
        real = os.path.realpath(pool)
        try:
            entries = sorted(os.listdir(real))
        except OSError as err:
            problems.append({"pool": pool, "reason": "cannot list pool %s on node %s: %s" % (
                pool, ctx.node_name, err.strerror or err)})
            continue
        for name in entries:
            path = os.path.join(real, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if name.startswith(".") or not stat.S_ISREG(st.st_mode):
                continue
            content, detail = probe_image(ctx.runner, path)
            record = records.get(path)
            found.append({
                "pool": pool, "pool_real": real, "name": name, "path": path,
                "size_bytes": st.st_size, "allocated_bytes": st.st_blocks * 512,
                "content": content, "content_detail": detail,
                "loop_device": _bound(loops, st),
                "record": None if record is None else {
                    "volume_handle": record.get("volume_handle"), "ephemeral": bool(record.get("ephemeral")),
                    "pod_uid": record.get("pod_uid"), "volume_name": record.get("volume_name")},
            })
    return found, problems


# -- orphan pod directories ----------------------------------------------------------------------
def _mounted(mounts, path):
    return mounts.mounted(path) or os.path.ismount(path)


def scan_tree(root, mounts):
    """(dirs bottom-up, files, mounts, symlinks) below ``root``, never entering a mountpoint or a symlink."""
    dirs, files, mounted, links = [], [], [], []

    def walk(path):
        if _mounted(mounts, path):
            mounted.append(path)
            return False
        try:
            entries = sorted(os.listdir(path))
        except OSError:
            files.append(path)  # unreadable: counts as content, never removed
            return False
        empty = True
        for name in entries:
            child = os.path.join(path, name)
            try:
                st = os.lstat(child)
            except OSError:
                empty = False
                continue
            if stat.S_ISLNK(st.st_mode):
                links.append(child)
                empty = False
            elif stat.S_ISDIR(st.st_mode):
                empty = walk(child) and empty
            else:  # a file, or a Block volume's bind-mounted device file
                (mounted if _mounted(mounts, child) else files).append(child)
                empty = False
        dirs.append(path)
        return empty
    walk(root)
    return dirs, files, mounted, links


def orphan_pod_dirs(ctx, mounts, live_uids):
    """The ``pods/<uid>`` directories of pods the cluster does not bind to this node (kubelet_volumes.go
    getPodVolumePathListFromDisk / cleanupOrphanedPodDirs)."""
    base = os.path.join(ctx.kubelet_dir, "pods")
    try:
        uids = sorted(os.listdir(base))
    except OSError:
        return []
    live = set(live_uids)
    found = []
    for uid in uids:
        path = os.path.join(base, uid)
        if uid in live or os.path.islink(path) or not os.path.isdir(path):
            continue
        dirs, files, mounted, links = scan_tree(path, mounts)
        volume_dirs = []
        for sub in ("volumes", "volumeDevices"):
            top = os.path.join(path, sub)
            if os.path.isdir(top) and not os.path.islink(top):
                for plugin in sorted(os.listdir(top)):
                    pdir = os.path.join(top, plugin)
                    if os.path.isdir(pdir) and not os.path.islink(pdir):
                        volume_dirs.extend(os.path.join(pdir, v) for v in sorted(os.listdir(pdir)))
        found.append({
            "pod_uid": uid, "path": path, "volume_dirs": volume_dirs,
            "mounted": mounted[:MAX_LISTED], "mounted_count": len(mounted),
            "files": files[:MAX_LISTED], "file_count": len(files),
            "symlinks": links[:MAX_LISTED],
            "empty": not (files or mounted or links),
            "empty_dirs": [d for d in dirs if _only_empty(d, dirs, files, mounted, links)],
        })
    return found


def _only_empty(path, dirs, files, mounted, links):
    prefix = path + os.sep
    return not any(p == path or p.startswith(prefix) for p in files + mounted + links)


def remove_empty_dirs(ctx, entry, mounts):
    """rmdir each empty directory of one orphan pod directory, deepest first; (removed, kept reasons). Each
    directory is checked again just before its rmdir (still a real directory, not a mountpoint); rmdir itself
    refuses a directory that is not empty, so nothing holding a file or a mount is ever removed."""
    removed, kept = [], []
    for path in sorted(entry["empty_dirs"], key=lambda p: (-p.count(os.sep), p)):
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or _mounted(mounts, path):
            kept.append({"path": path, "reason": "no longer an unmounted directory"})
            continue
        if ctx.check_mode:
            removed.append(path)
            continue
        try:
            os.rmdir(path)
        except OSError as err:
            kept.append({"path": path, "reason": "rmdir failed: %s" % (err.strerror or err)})
            continue
        removed.append(path)
    return removed, kept


def audit(ctx, params):
    """The node's share of the audit: {node_facts, pool_images, pool_problems, orphan_pod_dirs, removed, kept,
    changed}."""
    facts = node_facts.node_facts(ctx, fs_sizes=params["fs_sizes"])
    images, problems = pool_images(ctx, driver_options.loop_pools(ctx.driver_options))
    result = {"node_facts": facts, "pool_images": images, "pool_problems": problems, "orphan_pod_dirs": [],
              "removed": [], "kept": [], "changed": False}
    if params["pod_uids"] is None:
        return result  # which pods the node should have is the cluster's to say: no orphan without it
    for uid in params["pod_uids"]:
        names.check_component("pod uid", uid)
    mounts = mount.list_mounts(ctx.runner)
    result["orphan_pod_dirs"] = orphan_pod_dirs(ctx, mounts, params["pod_uids"])
    if params["clean"]:
        would = []
        for entry in result["orphan_pod_dirs"]:
            removed, kept = remove_empty_dirs(ctx, entry, mounts)
            # check mode: what would go, never reported as removed
            entry["removed"] = [] if ctx.check_mode else removed
            would.extend(removed)
            result["kept"].extend(kept)
        result["removed"] = [] if ctx.check_mode else would
        result["would_remove"] = would
        result["changed"] = bool(would)
    return result


def run(module):
    """node_volume_audit's work; ends in module.exit_json or module.fail_json."""
    try:
        ctx = context.node_context(module.params, check_mode=module.check_mode)
        result = audit(ctx, module.params)
    except KubevolError as err:
        module.fail_json(msg=err.msg, **err.to_result())
    module.exit_json(**result)
