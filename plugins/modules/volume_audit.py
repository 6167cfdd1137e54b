#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: volume_audit
short_description: Report what the nodes and the cluster hold that nothing needs any more, and clean what is safe
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - The operator's audit - orphaned pod volume directories and pod directories of gone pods, global mounts no pod
    uses, images in the loop pools that no PV names, VolumeAttachments of PVs or nodes that are gone, attach
    intents no node reports, node status entries (C(volumesAttached), C(volumesInUse)) that contradict the node,
    and a run lock left by a run that is over. Each finding says what it is, where (node and path, or object),
    why it is a leak, and whether O(clean) removes it or what the operator must do.
  - An action plugin, run in two steps (the playbook C(kubevol.volumes.audit) does both). With O(scope=node), on
    the nodes' hosts - each host runs M(kubevol.volumes.node_volume_audit) over its own connection with the pods
    the cluster binds to its node, and judges the answer against the cluster store. With O(scope=cluster), once
    (C(run_once)) with every host's result in O(node_reports) - plans as M(kubevol.volumes.volume_reconcile_plan)
    over all the nodes' facts (its unmount and cleanup steps and its C(in_use_repairs) are the orphaned volumes,
    unused global mounts and contradicting status), and reads the VolumeAttachments, node status and run lock.
  - Read only by default. With O(clean), only what is provably safe - empty directories of orphan pod directories
    (C(rmdir), never recursive, never through a mount or a symlink), records that contradict no node (a
    VolumeAttachment of a missing PV or node, or an attach intent, that its node - reachable in this audit - does
    not report; C(volumesInUse) and C(volumesAttached) entries a reachable node contradicts), written through the
    store's records under the cluster's run lock, and the lock of a run that expired or whose process is gone.
    No image is ever deleted, nothing is ever unmounted, nothing is removed through a mount.
  - A record of a node that did not answer is never cleaned. While a live run holds the run lock, no record is
    cleaned and intents are not called stale.
options:
  scope:
    description: V(node) for a host's node, V(cluster) for the cluster's share (run once, with O(node_reports)).
    type: str
    choices: [node, cluster]
    default: node
  clean:
    description: Clean what is safe (see the description). Check mode cleans nothing.
    type: bool
    default: false
  node_name:
    description: This host's Kubernetes node name (O(scope=node)). Default C(kubevol_node_name), else the inventory hostname.
    type: str
  kubelet_dir:
    description: The kubelet root directory on the nodes.
    type: str
    default: /var/lib/kubelet
  known_drivers:
    description: The CSI drivers kubevol manages (as M(kubevol.volumes.volume_reconcile_plan) takes them).
    type: list
    elements: str
  node_reports:
    description: With O(scope=cluster), the results of the O(scope=node) task of every host (failed ones included).
    type: list
    elements: raw
    default: []
  lock_timeout:
    description: Seconds to wait for the cluster file's own lock.
    type: int
    default: 30
  lease_namespace:
    description: Where the kubernetes store keeps the run lock's Lease.
    type: str
    default: kube-system
  lease_name:
    description: The run lock Lease's name.
    type: str
    default: kubevol-reconcile
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.node_volumes.task_settings
  - kubevol.volumes.driver_options
  - kubevol.volumes.driver_options.loop_pools
  - ansible.builtin.action_common_attributes.flow
  - kubevol.volumes.cluster_store
  - kubevol.volumes.k8s_auth
  - kubevol.volumes.words
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: Reports; changes nothing even with O(clean).
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - module: kubevol.volumes.node_volume_audit
  - module: kubevol.volumes.volume_reconcile_plan
"""

EXAMPLES = r"""
- name: Audit each node
  kubevol.volumes.volume_audit:
    cluster_state: /srv/kubevol/cluster.yaml
  register: node_audit

- name: Audit the cluster, cleaning what is safe
  kubevol.volumes.volume_audit:
    scope: cluster
    cluster_state: /srv/kubevol/cluster.yaml
    clean: true
    node_reports: "{{ ansible_play_hosts_all | map('extract', hostvars) | map(attribute='node_audit', default={}) }}"
  run_once: true
"""

RETURN = r"""
findings:
  description:
    - One per leak - C(kind), C(what), C(node) (null for the cluster's run lock), C(where) (a path, or
      C(Kind/name)), C(why), C(cleanable), C(cleaned), C(action) (what to do), and per kind more (C(size_bytes),
      C(allocated_bytes), C(content), C(loop_device) of a leaked image; C(unique_volume_name) of a status entry).
    - O(scope=cluster) lists the hosts' findings too.
    - Kinds - V(orphan_pod_dir), V(orphaned_pod_volume), V(stale_volume_dir), V(unused_global_mount),
      V(leaked_image), V(stale_volume_attachment), V(stale_attach_intent), V(status_in_use_not_mounted),
      V(status_mounted_not_in_use), V(status_attached_no_device), V(status_device_not_attached), V(stale_run_lock).
  returned: success
  type: list
  elements: dict
summary:
  description: C(findings), C(by_kind), C(cleanable), C(cleaned).
  returned: success
  type: dict
report:
  description: One line per finding, for a person.
  returned: success
  type: list
  elements: str
node_facts:
  description: With O(scope=node), the node's facts (for the cluster step).
  returned: success
  type: dict
removed:
  description: With O(scope=node), the directories removed on the node.
  returned: success
  type: list
  elements: str
unreachable_nodes:
  description: With O(scope=cluster), the nodes whose audit failed, with why; their records are never cleaned.
  returned: success
  type: dict
notes:
  description: With O(scope=cluster), why something cleanable was not cleaned (a live run holds the lock).
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.audit.audit_task import REQUIRED_IF, argspec


def main():
    module = AnsibleModule(argument_spec=argspec(), required_if=REQUIRED_IF, supports_check_mode=True)
    module.fail_json(msg="kubevol.volumes.volume_audit runs as an action plugin on the controller; it was run as a "
                         "module instead (is the collection's action plugin on the controller's path?)")


if __name__ == "__main__":
    main()
