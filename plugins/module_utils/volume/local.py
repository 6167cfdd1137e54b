# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The local volume plugin (pkg/volume/local/local.go): kubernetes.io/local-volume.

A directory-backed local PV is bind-mounted straight into pods/<uid>/volumes/kubernetes.io~local-volume/<pv>; a
block-device-backed one is mounted once at plugins/kubernetes.io/local-volume/mounts/<pv> (local.go
GetDeviceMountPath, deviceMounter.MountDevice: formatted only if blank) and bind-mounted into each pod. Never
attached (local.go NewAttacher returns a no-op attacher: the volume is already on the node). Expansion: local.go
NodeExpand grows a block-backed filesystem; there is no backing volume for a controller to grow.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import VolumePlugin, check_component


class LocalVolumePlugin(VolumePlugin):
    NAME = "kubernetes.io/local-volume"
    DIR = "kubernetes.io~local-volume"
    ATTACHABLE = False
    DEVICE_MOUNTABLE = True  # only when the path is a block device: the node decides (it sees the path)
    CONTROLLER_EXPANDABLE = False  # the controller step only records the PV's capacity
    NODE_EXPANDABLE = True  # a block-backed filesystem grows; a directory has nothing to grow
    BLOCK = True
    EPHEMERAL = False

    @classmethod
    def global_mount_path(cls, kubelet_dir, pv_name):
        """<kubelet>/plugins/kubernetes.io/local-volume/mounts/<pv> (local.go GetDeviceMountPath)."""
        check_component("PV name", pv_name)
        return os.path.join(kubelet_dir, "plugins", cls.NAME, "mounts", pv_name)
