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
  - A grow that fails or cannot run yet (online C(resize2fs) refused without CAP_SYS_RESOURCE, a missing tool, an
    unmounted xfs, a CSI driver's NodeExpandVolume error) does not fail the call. The filesystem is left as it was,
    and the C(pending) of the volume's result says why, and what to do. An ext filesystem grows offline at its next
    mount. The call's other volumes go on. This is how the kubelet leaves a claim C(FileSystemResizePending) and
    goes on with its other work; the reconcile role records it on the claim and tries it again when that may work.
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
    description: Attaches the volume whose backing volume this grows.
  - module: kubevol.volumes.node_volume_mount
    description: Mounts the filesystem this grows.
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
      pending: null
      device_size_bytes: {old: 335544320, new: 419430400}
      fs_size_bytes: {old: 335544320, new: 419430400}
    - pv_name: pv-b
      stage: controller
      changed: true
      skipped: null
      backing_size_bytes: {old: 335544320, new: 419430400}
pending:
  description:
    - With O(stage=node), one entry per volume whose grow is pending (it failed or cannot run yet). The volume is
      also in RV(volumes), with the same C(pending) dict there. The entry has C(volume), C(unique_volume_name),
      C(node), C(reason), C(msg), C(detail), C(offline) (true when the grow works on the unmounted filesystem, at
      its next mount), C(step) and C(code) (C(KV-GROW-PENDING)).
    - C(reason) is the one the claim's C(NodeResizeError) condition gets. It is one of C(OnlineExpansionFailed),
      C(ToolMissing), C(VolumeNotMounted), C(VolumeNotAttached), C(NodeExpandVolumeFailed) or C(ExpansionFailed).
    - A pending grow does not fail the call.
  returned: with O(stage=node)
  type: list
  elements: dict
  sample:
    - volume: pv-a
      unique_volume_name: kubernetes.io/csi/loop.kubevol.io^pvc-a.img
      node: node1
      reason: OnlineExpansionFailed
      offline: true
      detail: "`resize2fs /dev/loop3` exited 1: Permission denied to resize filesystem"
      msg: "volume pv-a on node node1: the filesystem was not grown: ...; it grows offline at the volume's next mount:
        unmount it from its pods and the node (volume_detach), then mount it again (node_volume_mount) [KV-GROW-PENDING]"
      step: grow filesystem online
      code: KV-GROW-PENDING
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

from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry_expand as entry


def main():
    module = AnsibleModule(argument_spec=entry.argspec(), supports_check_mode=True)
    entry.run(module)


if __name__ == "__main__":
    main()
