# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volume/: the plugins' unique names, kubelet layout and capabilities, the lazy registry, FindPluginBySpec, and
the tables planning reads instead of driver and node code (kept equal to the drivers' and filesystems' own)."""

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils import volume
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import cluster_from_data
from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options, names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import UnsafeName
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import FS_TYPES
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import (
    CSIPlugin, driver_capabilities, driver_can, own_drivers)
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.host_path import HostPathPlugin
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.local import LocalVolumePlugin

K = "/var/lib/kubelet"


def test_registry_names_match():
    assert volume.names() == ("kubernetes.io/csi", "kubernetes.io/local-volume", "kubernetes.io/host-path")
    assert [cls.SPEC_KEY for cls in volume.plugins()] == ["csi", "local", "hostPath"]  # FindPluginBySpec's order
    for name in volume.names():
        cls = volume.get_plugin(name)
        assert cls.NAME == name and cls.DIR == name.replace("/", "~")
    assert volume.in_tree_plugins() == (LocalVolumePlugin, HostPathPlugin)
    assert volume.is_in_tree("kubernetes.io/host-path") and not volume.is_in_tree("kubernetes.io/csi")
    assert volume.get_plugin(None) is CSIPlugin
    with pytest.raises(KeyError):
        volume.get_plugin("kubernetes.io/nfs")


def test_capabilities_as_kubernetes_declares_them():
    assert (CSIPlugin.ATTACHABLE, CSIPlugin.DEVICE_MOUNTABLE, CSIPlugin.BLOCK, CSIPlugin.EPHEMERAL) == (
        True, True, True, True)
    assert not LocalVolumePlugin.ATTACHABLE and LocalVolumePlugin.DEVICE_MOUNTABLE and LocalVolumePlugin.BLOCK
    assert LocalVolumePlugin.NODE_EXPANDABLE and not LocalVolumePlugin.CONTROLLER_EXPANDABLE
    assert not LocalVolumePlugin.plans_device_mount() and CSIPlugin.plans_device_mount()
    for flag in ("ATTACHABLE", "DEVICE_MOUNTABLE", "CONTROLLER_EXPANDABLE", "NODE_EXPANDABLE", "BLOCK", "EPHEMERAL"):
        assert getattr(HostPathPlugin, flag) is False


def test_unique_names():
    assert CSIPlugin.unique_name({"driver": "loop.kubevol.io", "volume_handle": "h"}) == "kubernetes.io/csi/loop.kubevol.io^h"
    assert CSIPlugin.unique_name_of("loop.kubevol.io", "h") == "kubernetes.io/csi/loop.kubevol.io^h"
    assert LocalVolumePlugin.unique_name({"pv_name": "pv1"}) == "kubernetes.io/local-volume/pv1"
    assert HostPathPlugin.unique_name({"pv_name": "pv1"}) == "kubernetes.io/host-path/pv1"
    assert names.unique_volume_name("d", "h") == "kubernetes.io/csi/d^h"
    assert names.split_unique_volume_name("kubernetes.io/local-volume/pv1") is None
    assert volume.plugin_name_of("kubernetes.io/local-volume/pv1") == "kubernetes.io/local-volume"
    assert volume.plugin_name_of("kubernetes.io/csi/d^h") == "kubernetes.io/csi"
    assert volume.plugin_name_of("other/x") is None


def test_kubelet_layout():
    assert LocalVolumePlugin.pod_mount_path(K, "u1", "pv1") == K + "/pods/u1/volumes/kubernetes.io~local-volume/pv1"
    assert LocalVolumePlugin.pod_device_path(K, "u1", "pv1") == K + "/pods/u1/volumeDevices/kubernetes.io~local-volume/pv1"
    assert LocalVolumePlugin.global_mount_path(K, "pv1") == K + "/plugins/kubernetes.io/local-volume/mounts/pv1"
    assert HostPathPlugin.pod_mount_path(K, "u1", "pv1") == K + "/pods/u1/volumes/kubernetes.io~host-path/pv1"
    assert HostPathPlugin.global_mount_path(K, "pv1") is None
    # the CSI layout is unchanged, and names.py's functions are the CSI plugin's
    assert names.pod_mount_path(K, "u1", "pv1") == K + "/pods/u1/volumes/kubernetes.io~csi/pv1/mount"
    assert names.pod_device_path(K, "u1", "pv1") == K + "/pods/u1/volumeDevices/kubernetes.io~csi/pv1"
    assert names.device_mount_path(K, "d", "h") == CSIPlugin.global_mount_path(K, "d", "h") == (
        K + "/plugins/kubernetes.io/csi/d/" + names.handle_hash("h") + "/globalmount")
    for bad in ("..", "a/b", "", "a\x00"):
        with pytest.raises(UnsafeName):
            LocalVolumePlugin.pod_mount_path(K, "u1", bad)
        with pytest.raises(UnsafeName):
            LocalVolumePlugin.global_mount_path(K, bad)


def test_find_plugin_by_spec():
    data = {"apiVersion": "v1", "items": [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "a"},
         "spec": {"csi": {"driver": "d", "volumeHandle": "h"}}},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "b"},
         "spec": {"local": {"path": "/mnt/disks/b"}}},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "c"},
         "spec": {"hostPath": {"path": "/srv/c"}}},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "d"},
         "spec": {"nfs": {"path": "/", "server": "s"}}}], "kind": "List", "metadata": {}}
    pvs = cluster_from_data(data).persistent_volumes
    assert [volume.find_plugin_by_spec(pv) for pv in pvs] == [CSIPlugin, LocalVolumePlugin, HostPathPlugin, None]
    assert [volume.find_plugin_by_spec(obj) for obj in data["items"]] == [
        CSIPlugin, LocalVolumePlugin, HostPathPlugin, None]


def test_the_csi_plugin_asks_the_drivers_for_their_capabilities():
    """The plugin's answers are the driver classes' own class data (one place: the driver's file), and a driver
    kubevol does not have (an external one) has none at plan time."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import DRIVERS
    assert own_drivers() == tuple(sorted(DRIVERS)) == ("loop.kubevol.io",)
    for name, cls in DRIVERS.items():
        assert driver_capabilities(name) == cls.CAPABILITIES, name
        assert all(driver_can(name, c) for c in cls.CAPABILITIES)
    assert driver_capabilities("hostpath.csi.k8s.io") is None and not driver_can("hostpath.csi.k8s.io", "block")
    assert driver_capabilities(["unhashable"]) is None


def test_filesystem_types_match_the_node():
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.filesystems import FILESYSTEMS
    assert set(FILESYSTEMS) == set(FS_TYPES)


@pytest.mark.parametrize("path,roots,expected", [
    ("/mnt/disks/a", ["/mnt/disks"], True),
    ("/mnt/disks", ["/mnt/disks"], True),
    ("/mnt/disks", ["/mnt/disks/"], False),  # a root that is not normalized allows nothing (validate refuses it)
    ("/mnt/disksX", ["/mnt/disks"], False),
    ("/mnt/disks/../x", ["/mnt/disks"], False),
    ("/mnt/disks//a", ["/mnt/disks"], False),
    ("/mnt/disks/a/", ["/mnt/disks"], False),
    ("mnt/disks/a", ["/mnt/disks"], False),
    ("/anything", ["/"], True),
    ("/srv/a", [], False),
    ("/srv/a", ["relative", None], False),
])
def test_allowed(path, roots, expected):
    assert driver_options.allowed(path, roots) is expected


def test_options_for_merges_defaults():
    assert driver_options.options_for(None, "kubernetes.io/local-volume") == {"paths": ["/mnt/disks"]}
    assert driver_options.options_for({}, "kubernetes.io/host-path") == {"paths": []}
    assert driver_options.options_for({"kubernetes.io/host-path": {"paths": ["/srv"]}},
                                      "kubernetes.io/host-path") == {"paths": ["/srv"]}
    assert driver_options.options_for(None, "loop.kubevol.io") == {"pools": ["/var/lib/kubevol/pool"]}
    defaults = driver_options.options_for(None, "kubernetes.io/local-volume")
    defaults["paths"].append("/x")  # a copy: the defaults never change
    assert driver_options.options_for(None, "kubernetes.io/local-volume") == {"paths": ["/mnt/disks"]}
    assert LocalVolumePlugin.DEFAULT_OPTIONS == {"paths": ["/mnt/disks"]}
