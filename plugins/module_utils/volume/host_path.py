# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hostPath volume plugin (pkg/volume/hostpath/host_path.go): kubernetes.io/host-path.

The kubelet mounts nothing for a hostPath volume: the container runtime bind-mounts the path. The kubelet checks
the path's type (host_path.go checkType; DirectoryOrCreate and FileOrCreate create it) before the pod starts.
kubevol records that a pod's check passed with an empty marker directory pods/<uid>/volumes/kubernetes.io~host-path/
<pv> (the kubelet keeps that in memory). Not attachable, not device-mountable, not expandable (host_path.go has no
expander), no Block mode (hostPath is a filesystem source only).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import VolumePlugin

# pkg/apis/core/types.go HostPathType: "" (no check) and the seven types host_path.go checks
HOST_PATH_TYPES = ("", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice",
                   "BlockDevice")


class HostPathPlugin(VolumePlugin):
    NAME = "kubernetes.io/host-path"
    DIR = "kubernetes.io~host-path"
    ATTACHABLE = False
    DEVICE_MOUNTABLE = False
    CONTROLLER_EXPANDABLE = False
    NODE_EXPANDABLE = False
    BLOCK = False
    EPHEMERAL = False
