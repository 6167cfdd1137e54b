# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CSI volume plugin (pkg/volume/csi): kubernetes.io/csi, and what kubevol's CSI drivers can do.

Layout: csi_attacher.go makeDeviceMountPath (plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount),
csi_mounter.go getTargetPath (pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount), csi_block.go
(pods/<uid>/volumeDevices/kubernetes.io~csi/<pv>). Unique name: csi_plugin.go GetVolumeName (<driver>^<handle>).

What kubevol's own CSI drivers can do, the plugin asks the drivers themselves (``driver_capabilities``), as the
kubelet's CSI plugin asks its driver: the driver registry (common/registry.py, one dotted path per driver) imports
the class when first read, whose CAPABILITIES are class data.

A volume handle is opaque (common/handles.py): any non-empty string is one, hashed wherever it names a file or a
directory. Only a driver that keeps its volumes in files named after their handles refuses more, and says so on its
class; ``handle_refusal`` asks it, for the planner and the node alike.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.handles import handle_hash, handle_problem
from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import DRIVER_REGISTRY
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import VolumePlugin, field

# capability names as drivers/base.py spells them
ATTACHABLE = "attachable"
NODE_EXPAND = "node_expand"
CONTROLLER_EXPAND = "controller_expand"
BLOCK = "block"
EPHEMERAL = "ephemeral"
STAGE_LOCKED = "stage_locked"

VOLUME_NAME_SEP = "^"


def own_drivers():
    """The names of kubevol's own CSI drivers (the registry's), sorted."""
    return tuple(sorted(DRIVER_REGISTRY))


def driver_capabilities(driver):
    """The CAPABILITIES kubevol's own driver ``driver`` declares (a frozenset), or None for any other driver (an
    external one: its capabilities are its plugin's, asked on the node)."""
    return DRIVER_REGISTRY[driver].CAPABILITIES if driver in DRIVER_REGISTRY else None


def driver_can(driver, capability):
    """Whether kubevol's driver ``driver`` declares ``capability``; a driver kubevol does not know: False."""
    return capability in (driver_capabilities(driver) or ())


def handle_refusal(driver, volume_handle):
    """Why a CSI volume of ``driver`` cannot have ``volume_handle``, or None: the API's rule (a non-empty string) for
    every driver, then the rule of kubevol's own driver ``driver`` when it has one (its class's ``handle_refusal``: the
    loop driver names an image file after the handle). An external driver's handle is its plugin's business."""
    problem = handle_problem(volume_handle)
    if problem is not None:
        return problem
    cls = DRIVER_REGISTRY.get(driver)
    return cls.handle_refusal(volume_handle) if cls is not None else None


def check_driver_name(value):
    """A CSI driver name becomes a directory: one component of [A-Za-z0-9-._]."""
    return names.check_driver_name(value)


class CSIPlugin(VolumePlugin):
    NAME = "kubernetes.io/csi"
    DIR = "kubernetes.io~csi"
    SPEC_KEY = "csi"
    KIND = "CSI"
    NODE_HANDLER = None  # a CSI volume's handler is its driver's (drivers/base.py NODE_HANDLER)
    ATTACHABLE = True  # unless the CSIDriver says attachRequired: false (csi_plugin.go skipAttach)
    DEVICE_MOUNTABLE = True  # NodeStage (csi_attacher.go MountDevice)
    DEVICE_MOUNT_STEP = True
    CONTROLLER_EXPANDABLE = True
    NODE_EXPANDABLE = True
    BLOCK = True
    EPHEMERAL = True

    NAME_FIELDS = ("driver", "volume_handle")

    @classmethod
    def volume_name(cls, item_like):
        return cls.volume_name_of(field(item_like, "driver"), field(item_like, "volume_handle"))

    @staticmethod
    def volume_name_of(driver, volume_handle):
        """<driver>^<volumeHandle>: the CSI plugin's volume name (csi_plugin.go GetVolumeName)."""
        return "%s%s%s" % (driver, VOLUME_NAME_SEP, volume_handle)

    @classmethod
    def unique_name_of(cls, driver, volume_handle):
        """unique_name from the two fields themselves, with no item to read them from (the cluster index's PVs,
        common/names.py unique_volume_name)."""
        return "%s/%s" % (cls.NAME, cls.volume_name_of(driver, volume_handle))

    @classmethod
    def pod_mount_path(cls, kubelet_dir, pod_uid, pv_name):
        """The publish target: <pod volume dir>/mount."""
        return os.path.join(cls.pod_volume_dir(kubelet_dir, pod_uid, pv_name), "mount")

    @classmethod
    def global_mount_path(cls, kubelet_dir, driver, volume_handle):
        """<kubelet>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount."""
        check_driver_name(driver)
        return os.path.join(kubelet_dir, "plugins", cls.NAME, driver, handle_hash(volume_handle), "globalmount")

    @classmethod
    def not_served(cls, pv_name, driver, known_drivers):
        """A driver kubevol does not drive here: its own CSI node plugin publishes the volume (kubevol neither waits
        for it nor touches it)."""
        if driver in known_drivers:
            return None
        what = "PV %s" % pv_name if pv_name else "the inline volume"
        return ("%s belongs to CSI driver %s, which kubevol does not drive (its own node plugin publishes it; "
                "configure it in %s to have kubevol drive it)" % (what, driver, setting("driver_options", key=driver)))

    @classmethod
    def split_unique_name(cls, name):
        """(driver, handle) of kubernetes.io/csi/<driver>^<handle>, or None."""
        prefix = cls.NAME + "/"
        if not isinstance(name, str) or not name.startswith(prefix) or VOLUME_NAME_SEP not in name:
            return None
        driver, handle = name[len(prefix):].split(VOLUME_NAME_SEP, 1)
        return driver, handle
