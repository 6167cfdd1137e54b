#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: node_volume_info
short_description: Report the node's actual volume state, rebuilt from the node itself
version_added: 0.1.0
author: kubevol contributors (@kubevol)
description:
  - Rebuilds the node's actual state as the kubelet reconstructs it after a restart, attached devices (each
    driver's attachment records checked against the kernel; for C(loop.kubevol.io) a device counts only while it is
    still backed by the recorded image inode), global mounts and pod mounts from the kubelet directory layout,
    C(vol_data.json), C(findmnt -J), C(blockdev) and the filesystem tools.
  - Returns RV(node_facts), the value M(kubevol.volumes.volume_reconcile_plan) takes for this node in its
    O(kubevol.volumes.volume_reconcile_plan#module:node_facts) option (keyed by node name). Never changes anything.
  - Returns no C(ansible_facts); register the result. It was called C(kubevol.volumes.node_volume_facts) before
    0.2.0, a name that still works (deprecated, removed in 2.0.0).
  - Fails when O(kubelet_dir) does not exist or is not a directory, because a mistyped directory would otherwise look
    like a node with nothing mounted, and every mount would be planned again.
  - It takes the node's settings as the volume modules do. A CSI driver named in O(driver_options) with C(controller)
    or C(socket) is driven over its plugin's socket (an external CSI driver), its volumes are the node's own, never
    foreign, and those it published are listed in C(devices); one whose C(controller) is a host of the inventory (with
    C(controller_socket)) is asked for its node id (RV(node_facts.csi_node_ids)). Every command it runs (C(blkid),
    C(findmnt), ...) is bounded by O(command_timeout).
  - Reconstruction is per entry, as the kubelet's. A directory of another CSI driver (C(foreign)) or one whose
    C(vol_data.json) is missing or unreadable (C(uncertain)) is reported, never a failure.
options:
  fs_sizes:
    description:
      - Read each mounted filesystem's size with its own tool (C(dumpe2fs -h), C(xfs_info), ...) into
        C(fs_size_bytes), one command per mounted volume. With C(false), C(fs_size_bytes) is null.
      - The planner does not use it; the reconcile role turns it off, so a node's facts cost no command per volume.
    type: bool
    default: true
    version_added: 0.2.0
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.node_volumes.node
  - kubevol.volumes.words
  - kubevol.volumes.node_volumes.settings
  - kubevol.volumes.driver_options.loop_pools
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - module: kubevol.volumes.volume_reconcile_plan
    description: Plans the volume steps from these facts and the cluster.
  - module: kubevol.volumes.cluster_volume_info
    description: The other half of the planner's input, the cluster's objects.
  - module: kubevol.volumes.node_phases
    description: Runs a node's share of the plan with the node modules.
'''

EXAMPLES = r'''
- name: Gather the node's volume state
  kubevol.volumes.node_volume_info:
    node_name: node1
  register: facts

- name: Show attached devices
  ansible.builtin.debug:
    var: facts.node_facts.devices
'''

RETURN = r'''
node_facts:
  description: The node's volume state, as the planner takes it. Lists are sorted.
  returned: success
  type: dict
  contains:
    node_name:
      description: The Kubernetes node name.
      type: str
    reachable:
      description: Always true from this module (false is set by the controller when gathering failed).
      type: bool
    error:
      description: Always null from this module.
      type: str
    kubelet_dir:
      description: The kubelet directory scanned.
      type: str
    devices:
      description: Attached devices backing a volume kubevol knows.
      type: list
      elements: dict
    global_mounts:
      description:
        - One per C(<kubelet>/plugins/kubernetes.io/csi/<driver>/<hash>/globalmount) directory, of every driver (also
          the ones kubevol has no backend for).
        - Keys C(unique_volume_name), C(driver), C(volume_handle), C(pv_name), C(path), C(mounted), C(device),
          C(fs_type), C(fs_size_bytes), C(read_only), C(foreign), C(uncertain).
      type: list
      elements: dict
      contains:
        unique_volume_name:
          description:
            - C(kubernetes.io/csi/<driver>^<handle>) from the C(vol_data.json) beside C(globalmount), or derived from an
              attached device of the same driver whose handle hashes to the directory name; null when neither names it.
          type: str
        driver:
          description: C(driverName) of C(vol_data.json), else the C(<driver>) directory name.
          type: str
        foreign:
          description:
            - True when C(driver) has no kubevol backend on this node; such an entry is left to its own CSI node plugin
              (no tool runs on it, C(fs_size_bytes) is null).
          type: bool
        uncertain:
          description:
            - Null for a healthy entry. Otherwise why its C(vol_data.json) does not identify the volume (missing,
              unreadable, not JSON, no C(driverName)/C(volumeHandle), or disagreeing with the path), naming the file.
          type: str
        read_only:
          description: Nothing can be written through the mount (its own flag or its filesystem's superblock is ro).
          type: bool
    pod_mounts:
      description:
        - One per pod volume directory (Filesystem) or volumeDevices entry (Block), of every driver.
        - Keys C(pod_uid), C(pv_name), C(mode), C(path), C(mounted), C(read_only), C(device), C(unique_volume_name),
          C(driver), C(foreign), C(uncertain), C(root_gid), C(root_mode), C(size_bytes), C(ephemeral).
      type: list
      elements: dict
      contains:
        ephemeral:
          description:
            - True when its C(vol_data.json) says C(volumeLifecycleMode) C(Ephemeral) (an inline CSI volume, also
              listed in C(ephemeral_volumes)).
          type: bool
        unique_volume_name:
          description:
            - From C(vol_data.json); without a usable one, from the attached kubevol device it is mounted from; else
              null.
          type: str
        driver:
          description: The CSI driver, from C(vol_data.json) (or the device it is mounted from); null when unknown.
          type: str
        foreign:
          description: True when C(driver) is known and has no kubevol backend on this node (false when unknown).
          type: bool
        uncertain:
          description: Null for a healthy entry, else why its C(vol_data.json) does not identify the volume.
          type: str
        read_only:
          description: Nothing can be written through the mount (its own flag or its filesystem's superblock is ro).
          type: bool
        root_gid:
          description:
            - The group of the mounted volume's root directory (Filesystem, mounted), else null. The planner compares
              it with a pod's C(securityContext.fsGroup).
          type: int
        root_mode:
          description: The mode of the mounted volume's root directory as four octal digits (C(2775)), else null.
          type: str
        size_bytes:
          description: The size of a mapped Block volume's device, as the pod sees it (mounted Block entries), else null.
          type: int
    ephemeral_volumes:
      description:
        - One per inline ephemeral CSI volume (C(pod.spec.volumes[].csi)) of a kubevol driver on this node, from the
          pod volume directories whose C(vol_data.json) says C(Ephemeral) and from the driver's own records (an image
          whose pod directory a killed run left behind). The kubelet reports no attachment for them, so their loop
          devices are not in C(devices).
      type: list
      elements: dict
      contains:
        pod_uid:
          description: The pod the volume was created for.
          type: str
        volume_name:
          description: The pod's volume name (the directory name under C(kubernetes.io~csi)).
          type: str
        driver:
          description: The CSI driver.
          type: str
        volume_handle:
          description: C(csi-<sha256(pod uid + volume name)>), as the kubelet's makeVolumeHandle.
          type: str
        unique_volume_name:
          description: kubevol's key, C(kubernetes.io/csi/<driver>^<volume_handle>).
          type: str
        kubernetes_volume_name:
          description: Kubernetes' own unique name of an inline volume, C(kubernetes.io/csi/<pod uid>-<volume name>).
          type: str
        path:
          description: The pod's C(mount) directory.
          type: str
        mounted:
          description: Something is mounted at C(path).
          type: bool
        read_only:
          description: Nothing can be written through the mount.
          type: bool
        device:
          description: The device mounted there, else the one the driver's record names (null when none).
          type: str
        image:
          description: What backs it (loop driver, the image file the driver created for the pod), or null.
          type: str
        size_bytes:
          description: The size of C(image) in bytes, or null.
          type: int
        root_gid:
          description: The group of the mounted volume's root directory, else null (fsGroup).
          type: int
        root_mode:
          description: The mode of the mounted volume's root directory as four octal digits, else null.
          type: str
    csi_node_ids:
      description:
        - "C({driver: node id}): for each external CSI driver whose C(driver_options) C(controller) is a host of the
          inventory (with C(controller_socket)), its node plugin's NodeGetInfo node id (null, with a warning, when the
          plugin does not answer), for that host's ControllerPublish/UnpublishVolume. Empty otherwise."
      type: dict
    csi_nodes:
      description:
        - "C({driver: {node_id, max_volumes_per_node, topology}}): for each external CSI driver whose node plugin has a
          socket on this node, its NodeGetInfo, as the kubelet registers the plugin (the CSINode entry, the topology
          labels, the CSI volume limit); null, with a warning, when the plugin does not answer. kubevol's own drivers
          are not registered."
      type: dict
  sample:
    node_name: node1
    reachable: true
    error: null
    kubelet_dir: /var/lib/kubelet
    devices:
      - unique_volume_name: kubernetes.io/csi/loop.kubevol.io^pvc-a.img
        driver: loop.kubevol.io
        volume_handle: pvc-a.img
        device: /dev/loop3
        size_bytes: 1073741824
        read_only: false
    global_mounts: []
    pod_mounts: []
    ephemeral_volumes: []
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry_info as entry


def main():
    module = AnsibleModule(argument_spec=entry.argspec(), supports_check_mode=True)
    entry.run(module)


if __name__ == "__main__":
    main()
