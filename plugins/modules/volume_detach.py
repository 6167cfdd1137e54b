#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: volume_detach
short_description: Unmount volumes from pods and the node, then detach their devices
version_added: 0.1.0
author: kubevol contributors (@kubevol)
description:
  - Unmounts the pod mounts named in O(volumes[].pods). With O(volumes[].detach=true) (the default) it then unmounts
    the global mount and detaches the device through the driver, but only when no pod mount of that PV remains
    on the node (every pod directory is checked, not only the named ones) and nothing else has the device mounted.
  - While another pod mount remains and O(force) is not set, it fails and changes nothing; everything is decided
    before anything is done.
  - It removes only what kubevol created and only when empty; the C(mount) directory, the C(vol_data.json) it wrote,
    the pod volume directory and an empty C(kubernetes.io~csi) parent, the global mount directory. It never removes
    a mountpoint and never deletes recursively.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.node_volumes
  - kubevol.volumes.node_volumes.node
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  force:
    description:
      - Also unmount the pod mounts of the PV that were not named (other pods still using the volume lose it), then
        unmount and detach. Use only when the node is fenced or those pods are gone. Mounts of the device outside
        the kubelet's pod directories still block the detach.
    type: bool
    default: false
'''

EXAMPLES = r'''
- name: Unmount one pod only (the volume stays mounted and attached)
  kubevol.volumes.volume_detach:
    volumes:
      - pv_name: pv-a
        driver: loop.kubevol.io
        volume_handle: pvc-a.img
        detach: false
        pods:
          - {uid: 1b6f0d2e-0000-4000-8000-000000000001}

- name: Unmount the last pod, the global mount, and detach
  kubevol.volumes.volume_detach:
    volumes:
      - pv_name: pv-a
        driver: loop.kubevol.io
        volume_handle: pvc-a.img
        pods:
          - {uid: 1b6f0d2e-0000-4000-8000-000000000002}
'''

RETURN = r'''
volumes:
  description: What was done per volume.
  returned: always
  type: list
  elements: dict
  sample:
    - pv_name: pv-a
      unique_volume_name: kubernetes.io/csi/loop.kubevol.io^pvc-a.img
      mode: Filesystem
      device: /dev/loop3
      changed: true
      unmounted:
        - /var/lib/kubelet/pods/1b6f.../volumes/kubernetes.io~csi/pv-a/mount
        - /var/lib/kubelet/plugins/kubernetes.io/csi/loop.kubevol.io/0a1b.../globalmount
      removed: [/var/lib/kubelet/pods/1b6f.../volumes/kubernetes.io~csi/pv-a/mount]
      detached: /dev/loop3
      actions: ["unmount /var/lib/kubelet/pods/1b6f.../volumes/kubernetes.io~csi/pv-a/mount"]
node_name:
  description: The Kubernetes node name used.
  returned: success
  type: str
paths:
  description: On a refused detach, the pod mounts that still use the volume.
  returned: failure
  type: str
completed:
  description: On failure, the PV names that were handled before the failing one.
  returned: failure
  type: list
  elements: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.node_args import volumes_argspec
from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import run_volumes
from ansible_collections.kubevol.volumes.plugins.module_utils.node.operations import detach_volume, plan_detach


def main():
    module = AnsibleModule(argument_spec=volumes_argspec(force=dict(type="bool", default=False)),
                           supports_check_mode=True)
    force = module.params["force"]
    # Decide for every volume before acting on any: a blocked detach fails with nothing changed.
    run_volumes(module, lambda ctx, item: detach_volume(ctx, item, force=force),
                prepare=lambda ctx, items: [plan_detach(ctx, item, force=force) for item in items])


if __name__ == "__main__":
    main()
