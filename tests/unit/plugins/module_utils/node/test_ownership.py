# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SetVolumeOwnership on a real directory tree (volume_linux.go): group, group bits, setgid on directories,
symlinks re-grouped but never followed."""
import os
import stat

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.node import ownership

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another group needs root")


def tree(tmp_path):
    root = tmp_path / "vol"
    (root / "dir").mkdir(parents=True)
    (root / "dir" / "file").write_text("x")
    (root / "top").write_text("y")
    outside = tmp_path / "outside"
    outside.write_text("not part of the volume")
    os.symlink(str(outside), str(root / "link"))
    for path in (root, root / "dir"):
        os.chmod(str(path), 0o755)
    for path in (root / "dir" / "file", root / "top"):
        os.chmod(str(path), 0o644)
    return root, outside


def mode(path):
    return stat.S_IMODE(os.lstat(str(path)).st_mode)


def test_always_regroups_every_entry_and_leaves_the_symlink_target(tmp_path):
    root, outside = tree(tmp_path)
    assert ownership.set_volume_ownership(str(root), 2000, check_mode=True) == 5
    assert os.lstat(str(root)).st_gid == 0  # check mode changed nothing
    assert ownership.set_volume_ownership(str(root), 2000) == 5
    assert mode(root) == 0o2775 and mode(root / "dir") == 0o2775
    assert mode(root / "top") == 0o664 and mode(root / "dir" / "file") == 0o664
    assert all(os.lstat(str(p)).st_gid == 2000 for p in (root, root / "dir", root / "top", root / "link"))
    assert os.stat(str(outside)).st_gid == 0 and mode(outside) != 0o664
    assert ownership.set_volume_ownership(str(root), 2000) == 0  # idempotent


def test_read_only_masks(tmp_path):
    root, _outside = tree(tmp_path)
    ownership.set_volume_ownership(str(root), 3000, read_only=True)
    assert mode(root / "top") & 0o040 and mode(root) & 0o2050 == 0o2050


def test_on_root_mismatch_skips_when_the_root_is_right(tmp_path):
    root, _outside = tree(tmp_path)
    os.chown(str(root), -1, 2000)
    os.chmod(str(root), 0o2775)
    assert ownership.set_volume_ownership(str(root), 2000, "OnRootMismatch") == 0
    assert os.lstat(str(root / "top")).st_gid == 0  # not walked
    assert ownership.set_volume_ownership(str(root), 2000, "Always") == 4  # dir, file, top, link
