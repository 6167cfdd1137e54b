# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's last pass (plan/step_refusals.py step_problem) over local and hostPath items: their path absolute,
normalized and under the operator's directories for the plugin; names, mode and type as a node accepts them."""

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.step_refusals import step_problem

POOLS = ("/var/lib/kubevol/pool",)


def item(plugin="kubernetes.io/local-volume", path="/mnt/disks/a", **extra):
    base = {"plugin": plugin, "pv_name": "pv1", "driver": None, "volume_handle": "pv1", "path": path,
            "host_path_type": "", "volume_attributes": {}, "capacity_bytes": 0, "mode": "Filesystem",
            "fs_type": "ext4", "mount_options": [], "read_only": False, "multi_attach": False}
    base.update(extra)
    return base


def problem(it, driver_options=None):
    return step_problem({"item": it, "pod_uid": "u1", "unique_volume_name": "x"}, POOLS, None, driver_options)


def test_local_item_under_allowed_root_passes():
    assert problem(item()) is None
    assert problem(item(path=None)) is None  # a teardown item built from node facts needs no path


@pytest.mark.parametrize("path", ["/etc", "/mnt/disks/../etc", "/mnt/disks//a", "mnt/disks/a", "/mnt/disks/a/"])
def test_local_item_path_refused(path):
    found = problem(item(path=path))
    assert found and "/mnt/disks" in found
    assert 'the paths of kubevol_driver_options["kubernetes.io/local-volume"]' in words.say(found, words.ROLE)


def test_host_path_item():
    hp = item("kubernetes.io/host-path", "/srv/a", host_path_type="Directory")
    assert "none" in problem(hp)  # nothing allowed by default
    assert problem(hp, {"kubernetes.io/host-path": {"paths": ["/srv"]}}) is None
    assert "hostPath type" in problem(item("kubernetes.io/host-path", "/srv/a", host_path_type="Dir"),
                                      {"kubernetes.io/host-path": {"paths": ["/srv"]}})
    assert "mode 'Block'" in problem(item("kubernetes.io/host-path", "/srv/a", mode="Block"),
                                     {"kubernetes.io/host-path": {"paths": ["/srv"]}})


def test_plugin_item_names_and_unknown_plugin():
    assert "PV name" in problem(item(pv_name="../x", volume_handle="../x"))
    assert "not a volume plugin kubevol serves" in problem(item(plugin="kubernetes.io/nfs"))
