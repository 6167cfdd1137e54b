#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: fs_expand
short_description: Grow volumes' backing storage (controller stage) or their filesystems (node stage)
version_added: 0.1.0
author: kubevol contributors (@kubevol)
description:
  - O(stage=controller) grows each volume's backing volume through its driver to O(volumes[].capacity_bytes)
    (C(loop.kubevol.io) grows the image file; it never shrinks).
  - O(stage=node) rescans the device (C(losetup -c)), compares device and filesystem sizes and grows the filesystem
    as mount-utils' ResizeFs does, ext3/ext4 with C(resize2fs) on the device (online when mounted, else
    C(e2fsck -f) then C(resize2fs) offline), xfs with C(xfs_growfs -d) on the mount path (must be mounted), btrfs
    with C(btrfs filesystem resize max) on the mount path.
  - Block and read-only volumes are rescanned but their filesystem is not grown (C(skipped) says why).
  - A failed grow reports the tool's stderr and leaves the filesystem as it was. Where online C(resize2fs) is
    refused (no CAP_SYS_RESOURCE), the message says to grow offline (unmount, then the next mount grows it).
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.node_volumes
  - kubevol.volumes.node_volumes.node
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
    description: Attaches the volume whose backing volume this grows.
  - module: kubevol.volumes.node_volume_mount
    description: Mounts the filesystem this grows.
  - module: kubevol.volumes.node_volume_setup
    description: Attach, mount and expansion in one execution.
options:
  stage:
    description: Which side of the expansion to run.
    type: str
    default: node
    choices: [node, controller]
'''

EXAMPLES = r'''
- name: Grow the image file to the new PV capacity
  kubevol.volumes.fs_expand:
    stage: controller
    volumes:
      - {pv_name: pv-a, driver: loop.kubevol.io, volume_handle: pvc-a.img, capacity_bytes: 2147483648}

- name: Grow the filesystem on the node
  kubevol.volumes.fs_expand:
    volumes:
      - {pv_name: pv-a, driver: loop.kubevol.io, volume_handle: pvc-a.img, fs_type: xfs}
'''

RETURN = r'''
volumes:
  description:
    - Per volume, the sizes before and after in bytes.
    - When the call fails, only the volumes done; each failed one (a driver without a kubevol backend on the node
      too) is in C(failures).
  returned: always
  type: list
  elements: dict
  sample:
    - pv_name: pv-a
      unique_volume_name: kubernetes.io/csi/loop.kubevol.io^pvc-a.img
      stage: node
      changed: true
      device: /dev/loop3
      fs_type: xfs
      mount_path: /var/lib/kubelet/plugins/kubernetes.io/csi/loop.kubevol.io/0a1b.../globalmount
      skipped: null
      device_size_bytes: {old: 335544320, new: 419430400}
      fs_size_bytes: {old: 335544320, new: 419430400}
    - pv_name: pv-b
      stage: controller
      changed: true
      skipped: null
      backing_size_bytes: {old: 335544320, new: 419430400}
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

from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry


def main():
    module = AnsibleModule(argument_spec=entry.argspec("fs_expand"), supports_check_mode=True)
    entry.run("fs_expand", module)


if __name__ == "__main__":
    main()
