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
  - A volume whose driver has no kubevol backend on the node fails (named in C(failures) with its driver and what the
    node drives); nothing runs on it and it is never reported done. The other volumes are handled.
  - One volume that cannot be torn down (still mounted outside kubevol's pod mounts, a failing C(umount)) fails
    alone; every other volume of the call is torn down and returned in C(volumes). An empty
    C(pods/<uid>/volumes) or C(pods/<uid>/volumeDevices) directory left by the teardown is removed (only when
    empty, never through a mount), as the kubelet's orphaned pod cleanup does.
  - O(stale_paths) removes volume directories the planner found stale (no C(vol_data.json) names their volume and
    nothing is mounted there), after the volumes. This needs no O(volumes).
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
    description: The reverse, format if blank and mount.
  - module: kubevol.volumes.k8s_volume_attach
    description: The reverse, attach.
  - module: kubevol.volumes.node_volume_info
    description: Reports what is still mounted.
options:
  volumes:
    description:
      - The volumes to unmount and detach (see the volume item below). Optional for this module (default none), so
        that a call can do only O(stale_paths).
      - Every name is checked before anything runs; a PV name, pod uid or handle with C(/), C(..), NUL or
        control characters is refused.
    required: false
    default: []
  stale_paths:
    description:
      - Stale volume directories to remove, as the planner lists them from the node facts (entries with
        C(uncertain) set, no volume identified and not mounted).
      - Each must be exactly C(<kubelet_dir>/plugins/kubernetes.io/csi/<driver>/<64 hex>/globalmount) or
        C(<kubelet_dir>/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount), normalized, with no symlink in any component
        below O(kubelet_dir); anything else fails the whole call before anything runs, naming the path.
      - A path that is a mountpoint, is not empty, whose C(vol_data.json) does name a volume, or whose driver has no
        kubevol backend is kept (returned in C(stale_kept) with the reason), not a failure.
      - Otherwise the empty directory is removed with C(rmdir), then the C(vol_data.json) beside it (it names no
        volume), then the parent directory if now empty; for a pod path also an empty C(kubernetes.io~csi) directory
        and then the pod's C(volumes) directory if empty.
        Never recursive, never through a symlink. In check mode nothing is removed and C(stale_removed) lists what
        would be.
    type: list
    elements: str
    default: []
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

- name: Remove stale directories the planner found (unidentifiable, not mounted)
  kubevol.volumes.volume_detach:
    stale_paths:
      - /var/lib/kubelet/plugins/kubernetes.io/csi/loop.kubevol.io/9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08/globalmount

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
  description:
    - What was done per volume, in the order given; when the call fails, only the volumes done (the others are in
      C(failures)).
    - An inline ephemeral volume (O(volumes[].ephemeral)) is unmounted from its pod and detached. Then the image created
      for it is deleted, C(deleted) (null when there was none), but only when the driver's record or its
      C(vol_data.json) names that image as the pod's ephemeral one. A directory that nothing names as
      ephemeral fails the call before anything is done. Its C(actions) are C(unmount <pod path>),
      C(detach <device>) and C(delete <image>).
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
stale_removed:
  description:
    - Every path removed for O(stale_paths), in order (the directory, the C(vol_data.json) beside it, the emptied
      parent directories); in check mode what would be removed.
  returned: success
  type: list
  elements: str
  sample:
    - /var/lib/kubelet/pods/1b6f.../volumes/kubernetes.io~csi/pv-a/mount
    - /var/lib/kubelet/pods/1b6f.../volumes/kubernetes.io~csi/pv-a/vol_data.json
    - /var/lib/kubelet/pods/1b6f.../volumes/kubernetes.io~csi/pv-a
stale_kept:
  description: The O(stale_paths) left in place, each with why (mountpoint, not empty, identified, foreign driver).
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: The stale path as given.
      type: str
    reason:
      description: Why it was kept, naming the path.
      type: str
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

from ansible_collections.kubevol.volumes.plugins.module_utils.node import entry_detach as entry


def main():
    module = AnsibleModule(argument_spec=entry.argspec(), supports_check_mode=True)
    entry.run(module)


if __name__ == "__main__":
    main()
