#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
module: node_volume_audit
short_description: List what a node holds that nothing may need any more (orphan pod directories, pool images)
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - The node's share of the audit (playbook C(kubevol.volumes.audit), action M(kubevol.volumes.volume_audit), which
    runs this module over each node's connection and judges its answer against the cluster).
  - Returns the node's facts (as M(kubevol.volumes.node_volume_info)), every C(<kubelet_dir>/pods/<uid>) directory
    of a pod not in O(pod_uids) with what is mounted and what files are left under it, and every image file in the
    node's loop pools with its size, allocated size, what C(blkid -p) finds in the file (read only; C(unknown)
    when the probe is inconclusive), the loop device bound to it and this node's driver record naming it.
  - With O(clean), removes the empty directories of those orphan pod directories, deepest first, with C(rmdir)
    only, the way the kubelet's C(cleanupOrphanedPodDirs) does. Never recursive, never into or through a mountpoint
    or a symlink; a directory that holds a file or a mount is kept. No image, file or mount is ever touched.
options:
  pod_uids:
    description:
      - The UIDs of the pods the cluster binds to this node. A C(pods/<uid>) directory of any other pod is an orphan.
      - When omitted, no pod directory is reported (and none is cleaned); the node cannot know its pods alone.
    type: list
    elements: str
  clean:
    description: Remove the empty directories of the orphan pod directories (C(rmdir) only).
    type: bool
    default: false
  fs_sizes:
    description: Read each mounted filesystem's size into the facts (as M(kubevol.volumes.node_volume_info)).
    type: bool
    default: false
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.driver_options.loop_pools
  - kubevol.volumes.node_volumes.node
  - kubevol.volumes.words
  - kubevol.volumes.node_volumes.settings
attributes:
  check_mode:
    support: full
    details: Reports what O(clean) would remove and removes nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - module: kubevol.volumes.volume_audit
    description: Runs this module on each node and reports the leaks of the node and the cluster.
'''

EXAMPLES = r'''
- name: List this node's pool images and orphan pod directories
  kubevol.volumes.node_volume_audit:
    node_name: node1
    pod_uids: [0b3c1f8e-6c41-4b5e-9a51-2d9b7a8a1c11]
  register: audit
'''

RETURN = r'''
node_facts:
  description: The node's facts, as M(kubevol.volumes.node_volume_info) returns them.
  returned: success
  type: dict
pool_images:
  description:
    - One per regular file in each pool, with C(pool), C(pool_real) (symlinks resolved), C(name), C(path),
      C(size_bytes), C(allocated_bytes), C(content) (V(filesystem), V(signature), V(none) or V(unknown)),
      C(content_detail) (the type, or why unknown), C(loop_device) (bound to this very file, else null) and
      C(record) (this node's loop driver record naming it, with C(volume_handle), C(ephemeral), C(pod_uid),
      C(volume_name); else null).
  returned: success
  type: list
  elements: dict
pool_problems:
  description: The pools that could not be listed (C(pool), C(reason)).
  returned: success
  type: list
  elements: dict
orphan_pod_dirs:
  description:
    - One per C(pods/<uid>) directory of a pod not in O(pod_uids) - C(pod_uid), C(path), C(volume_dirs), C(mounted)
      (mountpoints under it), C(files) (files left; the first 20, C(file_count) all), C(symlinks), C(empty) (only
      empty directories), C(empty_dirs) (what O(clean) may remove) and, with O(clean), C(removed).
  returned: success
  type: list
  elements: dict
removed:
  description: The directories removed (none in check mode).
  returned: success
  type: list
  elements: str
would_remove:
  description: With O(clean), the directories removed, or in check mode that would be removed.
  returned: when O(clean) and O(pod_uids) are given
  type: list
  elements: str
kept:
  description: Directories O(clean) meant to remove and kept, with C(path) and C(reason).
  returned: success
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.node import audit


def main():
    module = AnsibleModule(argument_spec=audit.argspec(), supports_check_mode=True)
    audit.run(module)


if __name__ == "__main__":
    main()
