#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: node_volume_mount
short_description: Format (only if blank), mount and publish volumes to pods as the kubelet does
version_added: 0.1.0
author: kubevol contributors (@kubevol)
description:
  - Waits for each volume's device, then in Filesystem mode formats it only when C(blkid -p), the partition probe
    (C(lsblk)) and C(wipefs) all positively report it blank, runs C(fsck -a) before a read-write mount, grows a
    smaller ext filesystem offline, mounts it at the global path
    C(<kubelet_dir>/plugins/kubernetes.io/csi/<driver>/<sha256 handle>/globalmount) and bind-mounts it at each
    pod's C(<kubelet_dir>/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount), writing C(vol_data.json) as the
    kubelet does.
  - A device that holds a filesystem of another type than O(volumes[].fs_type) is not mounted; that volume fails
    (as mount-utils words it, C(failed to mount the volume as "ext4", it already contains xfs)), its data is kept
    and never reformatted (only O(force) erases it); fix the PV's C(fsType) or move the data.
  - A partition table or a non-filesystem signature (swap, LUKS, ...) is
    never formatted; the call fails. A probe that fails or is inconclusive never leads to a format.
  - In Block mode the device node is bind-mounted onto a file at
    C(<kubelet_dir>/pods/<uid>/volumeDevices/kubernetes.io~csi/<pv>).
  - A mount already in place is never stacked again.
  - Read-only is per pod. The global mount is read-write unless O(volumes[].read_only) (the PV itself is read-only);
    a pod with O(volumes[].pods[].read_only) gets a read-only bind mount. A global mount found read-only (an older
    kubevol mounted it so for a reading first pod) is remounted read-write (C(mount -o remount,rw)) when the volume is
    not read-only and one of O(volumes[].pods) writes; a pod's bind mount found with the wrong per-mount flag is
    remounted (C(mount -o remount,bind,rw) or C(remount,bind,ro)). Each is reported in C(actions) and the diff.
  - A verified mount whose C(vol_data.json) is missing or unreadable gets it written again (action
    C(write <path>)), so the next facts identify the volume.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.node_volumes
  - kubevol.volumes.node_volumes.node
  - kubevol.volumes.words
  - kubevol.volumes.node_volumes.settings
  - kubevol.volumes.driver_options.loop_pools
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
seealso:
  - module: kubevol.volumes.k8s_volume_attach
    description: The step before, attach the device.
  - module: kubevol.volumes.fs_expand
    description: Grows a mounted filesystem.
  - module: kubevol.volumes.volume_detach
    description: The reverse, unmount and detach.
  - module: ansible.posix.mount
    description: A general mount module with fstab entries; this one mounts as the kubelet does.
options:
  force:
    description:
      - B(Destroys data.) When the device holds a filesystem of another type than O(volumes[].fs_type), a partition
        table or another signature, erase every signature with C(wipefs -a) and create a new filesystem; all data on
        that device is lost. A device that already holds the asked filesystem type is never reformatted, and a
        probe that fails still never formats, even with O(force=true).
    type: bool
    default: false
  device_timeout:
    description: Seconds to wait for each volume's device to appear on the node.
    type: int
    default: 30
'''

EXAMPLES = r'''
- name: Mount a volume and publish it to one pod, read-only to another
  kubevol.volumes.node_volume_mount:
    node_name: node1
    volumes:
      - pv_name: pv-a
        driver: loop.kubevol.io
        volume_handle: pvc-a.img
        fs_type: xfs
        mount_options: [noatime]
        pods:
          - {uid: 1b6f0d2e-0000-4000-8000-000000000001, name: default/web-0}
          - {uid: 1b6f0d2e-0000-4000-8000-000000000002, name: default/backup, read_only: true}
'''

RETURN = r'''
volumes:
  description:
    - What was done per volume, in the order given; when the call fails, only the volumes done (the failed ones,
      a driver without a kubevol backend on the node too, are in C(failures)).
    - C(actions) lists what was done (or would be, in check mode), for example C(format), C(mount device),
      C(remount read-write <global mount>), C(publish <pod path>), C(remount read-only <pod path>),
      C(remount read-write <pod path>), C(write <vol_data.json>), C(set group <gid> on <pod path> ...).
    - C(fs_group), when a pod has O(volumes[].pods[].fs_group), lists per pod its C(pod_uid), C(fs_group) and
      C(changed_entries) (how many files and directories were re-grouped; 0 when all were right).
    - An inline ephemeral volume (O(volumes[].ephemeral)) has no global mount. Its result has C(ephemeral=true),
      C(pod_uid), C(kubernetes_volume_name) (C(kubernetes.io/csi/<pod uid>-<volume name>)), C(image) (what was
      created for the pod), C(created), C(formatted), C(fs_type), C(mount_path) and C(published), and its C(actions)
      are C(create <image>), C(attach), C(format) and C(publish <pod path>).
  returned: always
  type: list
  elements: dict
  sample:
    - pv_name: pv-a
      unique_volume_name: kubernetes.io/csi/loop.kubevol.io^pvc-a.img
      mode: Filesystem
      device: /dev/loop3
      changed: true
      formatted: true
      fs_type: xfs
      fs_type_mismatch: null
      grown_offline: null
      global_mount_path: /var/lib/kubelet/plugins/kubernetes.io/csi/loop.kubevol.io/0a1b.../globalmount
      published: [1b6f0d2e-0000-4000-8000-000000000001]
      actions: [format, mount device, "publish /var/lib/kubelet/pods/1b6f.../volumes/kubernetes.io~csi/pv-a/mount"]
node_name:
  description: The Kubernetes node name used.
  returned: success
  type: str
completed:
  description: On failure, the PV names that were handled before the failing one.
  returned: failure
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry_mount as entry


def main():
    module = AnsibleModule(argument_spec=entry.argspec(), supports_check_mode=True)
    entry.run(module)


if __name__ == "__main__":
    main()
