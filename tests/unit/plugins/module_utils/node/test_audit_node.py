# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_volume_audit's node code: the image probe (fail-closed) and the empty-directory removal (rmdir only)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import types

from ansible_collections.kubevol.volumes.plugins.module_utils.node import audit
from ansible_collections.kubevol.volumes.plugins.module_utils.node.mount import MountTable


def runner(rc, out="", err=""):
    return lambda argv, data=None: (rc, out, err)


def test_probe_image_reads_the_file_with_blkid_and_says_unknown_when_it_cannot_tell():
    assert audit.probe_image(runner(0, "TYPE=ext4\nUSAGE=filesystem\n"), "/p/i") == ("filesystem", "ext4")
    assert audit.probe_image(runner(0, "TYPE=crypto_LUKS\nUSAGE=crypto\n"), "/p/i") == ("signature", "crypto_LUKS")
    assert audit.probe_image(runner(0, "PTTYPE=gpt\n"), "/p/i") == ("signature", "partition table gpt")
    assert audit.probe_image(runner(2), "/p/i") == ("none", None)
    assert audit.probe_image(runner(4, "", "no such file"), "/p/i")[0] == "unknown"
    assert audit.probe_image(runner(2, "garbage"), "/p/i")[0] == "unknown"
    assert audit.probe_image(runner(0, "not key value"), "/p/i")[0] == "unknown"
    seen = []
    audit.probe_image(lambda argv, data=None: seen.append(argv) or (2, "", ""), "/p/i")
    assert seen == [["blkid", "-p", "-o", "export", "/p/i"]]


def _tree(tmp_path):
    pods = tmp_path / "pods"
    (pods / "gone" / "volumes" / "kubernetes.io~csi" / "pv" / "mount").mkdir(parents=True)
    (pods / "gone" / "plugins").mkdir()
    (pods / "files" / "volumes" / "kubernetes.io~empty-dir" / "c").mkdir(parents=True)
    (pods / "files" / "volumes" / "kubernetes.io~empty-dir" / "c" / "data").write_text("keep")
    (pods / "files" / "volumes" / "empty").mkdir()
    (pods / "link" / "volumes").mkdir(parents=True)
    os.symlink(str(tmp_path), str(pods / "link" / "volumes" / "out"))
    (pods / "live" / "volumes").mkdir(parents=True)
    return pods


def test_orphan_pod_dirs_and_their_cleaning_remove_only_empty_directories(tmp_path):
    pods = _tree(tmp_path)
    ctx = types.SimpleNamespace(kubelet_dir=str(tmp_path), check_mode=False)
    mounts = MountTable([])
    found = dict((e["pod_uid"], e) for e in audit.orphan_pod_dirs(ctx, mounts, ["live"]))
    assert sorted(found) == ["files", "gone", "link"]
    assert found["gone"]["empty"] and found["gone"]["volume_dirs"] == [
        str(pods / "gone" / "volumes" / "kubernetes.io~csi" / "pv")]
    assert not found["files"]["empty"] and found["files"]["files"] == [
        str(pods / "files" / "volumes" / "kubernetes.io~empty-dir" / "c" / "data")]
    assert not found["link"]["empty"] and found["link"]["symlinks"] == [str(pods / "link" / "volumes" / "out")]
    removed, kept = audit.remove_empty_dirs(ctx, found["gone"], mounts)
    assert removed[-1] == str(pods / "gone") and not (pods / "gone").exists() and kept == []
    removed, kept = audit.remove_empty_dirs(ctx, found["files"], mounts)
    assert removed == [str(pods / "files" / "volumes" / "empty")]
    assert (pods / "files" / "volumes" / "kubernetes.io~empty-dir" / "c" / "data").read_text() == "keep"
    assert audit.remove_empty_dirs(ctx, found["link"], mounts) == ([], [])
    assert os.path.islink(str(pods / "link" / "volumes" / "out")) and (tmp_path / "pods").exists()


def test_check_mode_and_mountpoints_remove_nothing(tmp_path):
    pods = _tree(tmp_path)
    ctx = types.SimpleNamespace(kubelet_dir=str(tmp_path), check_mode=True)
    mounted = str(pods / "gone" / "volumes" / "kubernetes.io~csi" / "pv" / "mount")
    entry = [e for e in audit.orphan_pod_dirs(ctx, MountTable([]), []) if e["pod_uid"] == "gone"][0]
    removed, _kept = audit.remove_empty_dirs(ctx, entry, MountTable([]))
    assert str(pods / "gone") in removed and (pods / "gone").exists()  # check mode: reported, nothing removed
    table = MountTable([types.SimpleNamespace(target=mounted)])
    entry = [e for e in audit.orphan_pod_dirs(ctx, table, []) if e["pod_uid"] == "gone"][0]
    assert not entry["empty"] and entry["mounted"] == [mounted]
    ctx.check_mode = False
    removed, _kept = audit.remove_empty_dirs(ctx, entry, table)
    assert removed == [str(pods / "gone" / "plugins")] and os.path.isdir(mounted)
