#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: k8s_volume_attach
short_description: Attach volumes to this node as the attach/detach controller does
version_added: 0.1.0
author: kubevol contributors (@kubevol)
description:
  - Attaches each volume to the node through its driver (for C(loop.kubevol.io) a C(losetup --find --show) of the
    image file) and returns the device path, the VolumeAttachment the cluster must record and the
    C(node.status.volumesAttached) entry.
  - Idempotent. An image already attached is found by the inode of its backing file and never attached twice.
  - Every volume is locked on the node while it is handled; a failure reports which volumes completed.
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
  - module: kubevol.volumes.node_volume_mount
    description: The next step, format if blank and mount.
  - module: kubevol.volumes.volume_detach
    description: The reverse, unmount and detach.
  - module: kubevol.volumes.node_volume_info
    description: Reports the devices attached now.
options:
  provision:
    description:
      - Create a missing image file of C(capacity_bytes) (sparse) in the pool before attaching. For demos and
        tests; without it a missing image is an error.
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: Attach two loop volumes to this node
  kubevol.volumes.k8s_volume_attach:
    node_name: node1
    volumes:
      - pv_name: pv-a
        driver: loop.kubevol.io
        volume_handle: pvc-a.img
        capacity_bytes: 1073741824
      - pv_name: pv-b
        driver: loop.kubevol.io
        volume_handle: pvc-b.img
        volume_attributes:
          pool: /srv/kubevol/pool
  register: attached
'''

RETURN = r'''
volumes:
  description:
    - One entry per volume, in the order given.
    - When the call fails, only the volumes done; each failed one (a driver without a kubevol backend on the node
      too) is in C(failures).
    - C(released_holders) is C({node - since}) of the other nodes' holds this attach dropped because the operator
      listed them in O(force_release_holders) (empty otherwise). An image another node holds is otherwise refused
      (C(VolumeInUse), naming the holder and since when), never adopted.
  returned: always
  type: list
  elements: dict
  sample:
    - pv_name: pv-a
      unique_volume_name: kubernetes.io/csi/loop.kubevol.io^pvc-a.img
      device: /dev/loop3
      attached: true
      provisioned: false
      adopted: false
      released_holders: {}
      changed: true
      volume_attachment:
        apiVersion: storage.k8s.io/v1
        kind: VolumeAttachment
        metadata: {name: csi-5e0c...}
        spec: {attacher: loop.kubevol.io, nodeName: node1, source: {persistentVolumeName: pv-a}}
        status: {attached: true, attachmentMetadata: {devicePath: /dev/loop3}}
      volumes_attached: {name: kubernetes.io/csi/loop.kubevol.io^pvc-a.img, devicePath: /dev/loop3}
volume_attachments:
  description: The VolumeAttachment objects of all volumes attached (the C(volume_attachment) of each entry).
  returned: success
  type: list
  elements: dict
volumes_attached:
  description: The C(node.status.volumesAttached) entries C({name, devicePath}) of all volumes attached.
  returned: success
  type: list
  elements: dict
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

from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry_attach as entry


def main():
    module = AnsibleModule(argument_spec=entry.argspec(), supports_check_mode=True)
    entry.run(module)


if __name__ == "__main__":
    main()
