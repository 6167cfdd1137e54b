#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cluster_run_lock
short_description: Take or release the cluster's run lock, so that reconciles never interleave
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - One reconcile at a time per cluster, as kube-controller-manager runs one active attach/detach controller. The
    reconcile role takes the lock before it reads the cluster and releases it after its last record.
  - With O(cluster_source=file) the lock is a record beside the state file (C(<cluster_state>.run-lock)), read and
    written under the state file's own lock. With O(cluster_source=kubernetes) it is a C(coordination.k8s.io/v1)
    Lease (O(lease_namespace)/O(lease_name)), written with the resourceVersion it read.
  - While another run holds a live lock, waits up to O(timeout) seconds, then fails naming that run (holder, pid,
    host, since when, when it expires). A lock is taken over when it expired (not renewed for O(duration) seconds)
    or when its holder ran on this host and that process is gone.
  - Every M(kubevol.volumes.cluster_volume_record) write given the lock (its C(run_lock) option) renews it, and
    refuses to write once the run no longer holds it.
  - Runs on the controller, in Ansible's own process (an action plugin); the owner of the lock is the ansible process
    running the play. Check mode takes no lock (a check run only reads).
  - Never reports C(changed), because the lock is the run's bookkeeping, not a change of the cluster.
options:
  state:
    description: C(acquired) takes the lock (waiting for another run's), C(released) releases this run's.
    type: str
    choices: [acquired, released]
    default: acquired
  holder:
    description:
      - This run's identity. Generated when taking the lock (returned as RV(holder)); required to release it.
    type: str
  timeout:
    description: Seconds to wait for another run's live lock before failing.
    type: int
    default: 60
  duration:
    description:
      - Seconds the lock lives without a renewal (each record write renews it). Longer than the longest node task
        of a run; a run whose lock expired stops writing.
    type: int
    default: 600
  lease_namespace:
    description: Namespace of the Lease (O(cluster_source=kubernetes)).
    type: str
    default: kube-system
  lease_name:
    description: Name of the Lease (O(cluster_source=kubernetes)).
    type: str
    default: kubevol-reconcile
  lock_timeout:
    description: Seconds to wait for the state file's own lock while reading or writing the lock record (file store).
    type: int
    default: 30
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - kubevol.volumes.cluster_store
  - kubevol.volumes.k8s_auth
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
    details: Check mode takes no lock.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - module: kubevol.volumes.cluster_volume_record
    description: Renews and checks this lock with every record it writes (its O(kubevol.volumes.cluster_volume_record#module:run_lock) option).
  - name: The kubevol.volumes.reconcile role
    description: Takes this lock first and releases it at the end of a run.
    link: https://github.com/kubevol/kubevol.volumes/blob/main/roles/reconcile/README.md
"""

EXAMPLES = r"""
- name: Take the cluster's run lock
  kubevol.volumes.cluster_run_lock:
    cluster_state: /srv/kubevol/cluster.yaml
  register: run_lock
  run_once: true
  delegate_to: localhost

- name: Record what the nodes did, while holding it
  kubevol.volumes.cluster_volume_record:
    cluster_state: /srv/kubevol/cluster.yaml
    records: "{{ records }}"
    run_lock: "{{ run_lock }}"
  run_once: true
  delegate_to: localhost

- name: Release it
  kubevol.volumes.cluster_run_lock:
    cluster_state: /srv/kubevol/cluster.yaml
    state: released
    holder: "{{ run_lock.holder }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
holder:
  description: This run's identity (pass it to release the lock, and the whole result to cluster_volume_record).
  returned: always
  type: str
since:
  description: When this run took the lock (RFC 3339).
  returned: when taken
  type: str
took_over:
  description: The stale lock this run replaced (C(holder), C(reason)), or null.
  returned: when taken
  type: dict
location:
  description: Where the lock lives (the lock file, or C(Lease namespace/name)).
  returned: always
  type: str
acquired:
  description: True when the lock was taken.
  returned: when taken
  type: bool
released:
  description: Whether this run's lock was released (false when it did not hold it any more).
  returned: when state=released
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.run.run_lock_task import REQUIRED_IF, argspec, run


def main():
    module = AnsibleModule(argument_spec=argspec(), required_if=REQUIRED_IF, supports_check_mode=True)
    try:
        module.exit_json(**run(module.params, check_mode=module.check_mode))
    except KubevolError as err:
        module.fail_json(msg=err.msg, **err.to_result())


if __name__ == "__main__":
    main()
