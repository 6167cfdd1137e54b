#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: volume_provision
short_description: Internal - one host's share of a volume plan's CreateVolume or DeleteVolume calls
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - Internal to the reconcile role (its provision and delete tasks), not meant to be called directly. An action
    plugin.
  - It takes a M(kubevol.volumes.volume_reconcile_plan) result and cuts from it the operations O(host) carries out -
    with O(task=provision) the CreateVolume of each claim to provision
    (RV(kubevol.volumes.volume_reconcile_plan#module:provisioning)), with O(task=delete) the DeleteVolume of each
    released volume to delete (RV(kubevol.volumes.volume_reconcile_plan#module:deletions)), minus those of volumes
    an earlier step of the run failed (a volume whose teardown failed is never deleted).
  - It reads the Secrets they name (a StorageClass's C(csi.storage.k8s.io/provisioner-secret-name), a PV's
    C(volume.kubernetes.io/provisioner-deletion-secret-name)) from the cluster store and runs
    M(kubevol.volumes.volume_provision_calls) over the connection of the host the task is delegated to, the secrets in
    its no_log option only. A CreateVolume whose Secret is missing is not called.
  - A failure does not fail the reconcile role's run at once; the role records what succeeded (the PVs made and their
    claims bound, the PVs deleted) and reports the failures with the nodes'.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.node_volumes.task_settings
  - ansible.builtin.action_common_attributes.flow
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
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  plan:
    description: A M(kubevol.volumes.volume_reconcile_plan) result, or its O(kubevol.volumes.volume_reconcile_plan#module:output=record) handle.
    type: dict
    required: true
  task:
    description: V(provision) (CreateVolume) or V(delete) (DeleteVolume).
    type: str
    required: true
    choices: [provision, delete]
  host:
    description: The inventory name of the host whose calls to make (the host the task is delegated to).
    type: str
    required: true
  failures:
    description: The run's failures so far (M(kubevol.volumes.reconcile_run)'s RV(kubevol.volumes.reconcile_run#module:failures)).
    type: dict
    default: {}
  driver_options:
    description: The operator's C(driver_options), as the plan's.
    type: dict
    default: {}
  kubelet_dir:
    description: The kubelet's root directory on the host (its node plugins' sockets are under it).
    type: str
    default: /var/lib/kubelet
  run_lock:
    description: The run's M(kubevol.volumes.cluster_run_lock) result; the lock is renewed while the calls run.
    type: dict
  cluster_store:
    description:
      - The cluster store's options, to read the Secrets and a plan record kept in the Kubernetes API. The play's
        module_defaults for C(group/kubevol.volumes.cluster_store) apply under them.
    type: dict
seealso:
  - module: kubevol.volumes.volume_provision_calls
    description: The module it runs on the host.
"""

EXAMPLES = r"""
- name: CreateVolume on each host the plan names (what the reconcile role's provision task does)
  kubevol.volumes.volume_provision:
    plan: "{{ kubevol_plan_result }}"
    task: provision
    host: "{{ item }}"
    cluster_store: {cluster_source: file, cluster_state: /srv/cluster.yaml}
  delegate_to: "{{ item }}"
  run_once: true
  loop: [node1]
"""

RETURN = r"""
operations:
  description: The calls made, as M(kubevol.volumes.volume_provision_calls) returns them.
  returned: always
  type: list
  elements: dict
failures:
  description: The calls that failed or were not made, as M(kubevol.volumes.volume_provision_calls) returns them.
  returned: always
  type: list
  elements: dict
host:
  description: O(host).
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.args import provision_argspec


def main():
    module = AnsibleModule(argument_spec=provision_argspec(), supports_check_mode=True)
    module.fail_json(msg="kubevol.volumes.volume_provision runs as an action plugin on the controller; it was run as a "
                         "module instead (is the collection's action plugin on the controller's path?)")


if __name__ == "__main__":
    main()
