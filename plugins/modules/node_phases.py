#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: node_phases
short_description: Run one node's share of phases of a volume plan
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - An action plugin. It takes a M(kubevol.volumes.volume_reconcile_plan) result (or this host's slice of it, as the
    P(kubevol.volumes.node_plan#filter) filter cuts it), and runs, over this host's own connection, one execution of each phase's node module that
    has work there (M(kubevol.volumes.volume_detach), M(kubevol.volumes.k8s_volume_attach),
    M(kubevol.volumes.node_volume_mount), M(kubevol.volumes.fs_expand)), in order. When the node has work in more
    than one of attach, mount and expansion, those run in one execution of M(kubevol.volumes.node_volume_setup).
  - A volume that failed in an earlier phase on this node is not carried into the next one; an unreachable node
    stops at once. A host with no work runs nothing.
  - A node module's failure fails the task on this host, with the node's own message (each failed phase's, once); a
    node that could not be reached makes the task C(unreachable). The reconcile role keeps such a host in the play
    (C(ignore_errors), C(ignore_unreachable)) so that the other nodes go on and what did succeed is recorded, and
    fails it again at the end for the play's recap. A node-side grow left pending (each failure entry C(pending)) is
    not a failure.
  - With a plan record (O(plan) the result of O(kubevol.volumes.volume_reconcile_plan#module:output=record), what the
    role passes), each phase's module result is kept on the controller, in Ansible's local temporary directory, for
    M(kubevol.volumes.reconcile_run) to record (RV(phase_results_kept)); the task's result is what Ansible prints for
    the host, its message and RV(phase_status). Otherwise it is RV(phase_results).
  - With O(phases=[facts]) it gathers the node's actual state instead, as M(kubevol.volumes.node_volume_info) does
    (without filesystem sizes), and returns that module's result; no plan is needed.
  - Each node module runs as Ansible runs a module (the AnsiballZ payload of the module and the node code it imports),
    so pipelining, become, C(no_log), C(no_target_syslog), check mode and diff apply as they do to any module task.
    Pipelining and an SSH ControlPersist are what make it fast.
  - The reconcile role's engine; the node modules stay the public modules for ad-hoc use.
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.node_volumes.task_settings
  - ansible.builtin.action_common_attributes.flow
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
seealso:
  - module: kubevol.volumes.volume_reconcile_plan
    description: Computes the plan this runs a share of.
  - module: kubevol.volumes.node_volume_setup
    description: The node module of the setup phases.
  - module: kubevol.volumes.volume_detach
    description: The node module of the teardown phase.
  - name: The kubevol.volumes.reconcile role
    description: Runs this on every node, teardown first.
    link: https://github.com/kubevol/kubevol.volumes/blob/main/roles/reconcile/README.md
options:
  plan:
    description:
      - A M(kubevol.volumes.volume_reconcile_plan) result, or this host's slice of it
        (P(kubevol.volumes.node_plan#filter)); only its C(plan), C(volume_items) and C(by_node) are read.
      - A result with O(kubevol.volumes.volume_reconcile_plan#module:output=record) (what the reconcile role passes)
        is read by its handle, on the controller, and only this node's part of the record (its file, or for a record
        in the Kubernetes API its ConfigMaps, read with O(cluster_store)).
      - With many hosts pass the slice or the record result, so that no host templates the whole plan.
      - Required for every phase but C(facts).
    type: dict
  phases:
    description:
      - The phases to run, in plan order whatever the order given. C(teardown) is unmount and detach (and the
        removal of stale directories), C(attach), C(mount) is the global mount and the pod mounts,
        C(expand_controller) grows the backing volume, C(expand_node) the filesystem.
      - C(facts), alone, gathers the node's actual state (M(kubevol.volumes.node_volume_info)) for the planner.
    type: list
    elements: str
    required: true
    choices: [facts, teardown, attach, mount, expand_controller, expand_node]
  failures:
    description:
      - "What failed before this task, C({nodes: {node: reason}, volumes: {unique volume name: reason}}): those steps are
        not run."
    type: dict
    default: {}
  controller_published:
    description:
      - "C({unique volume name: {node: publish_context}}): what the run's controller task's ControllerPublishVolume
        answered on a CSI driver's controller host (M(kubevol.volumes.reconcile_run)'s C(published) after it); each
        attach item of this node gets its own as O(kubevol.volumes.k8s_volume_attach#module:volumes[].controller_publish_context)."
    type: dict
    default: {}
  node_name:
    description: This host's Kubernetes node name.
    type: str
    required: true
  kubelet_dir:
    description: The kubelet root directory on the node.
    type: str
    default: /var/lib/kubelet
  provision:
    description: Passed to M(kubevol.volumes.k8s_volume_attach) (create missing backing images; demos and tests).
    type: bool
    default: false
  lock_timeout:
    description: Seconds each node module waits for another run holding the same volume.
    type: int
    default: 60
  driver_options:
    description:
      - Passed to the node modules (the operator's options of each volume plugin and CSI driver, see
        M(kubevol.volumes.k8s_volume_attach)). The reconcile role passes C(kubevol_driver_options).
    type: dict
    default: {}
    version_added: 0.2.0
  loop_pools:
    description:
      - Deprecated, to be removed in 2.0.0; use O(driver_options) C(loop.kubevol.io) C(pools) instead. When given, it
        sets C(loop.kubevol.io)'s C(pools); giving both with different values is an error.
    type: list
    elements: str
  command_timeout:
    description: Passed to the node modules (seconds each node command may run).
    type: int
    default: 300
  long_command_timeout:
    description: Passed to the node modules (seconds mkfs, fsck, filesystem growth and wipefs may run).
    type: int
    default: 3600
  force_release_holders:
    description:
      - Passed to the attach (the nodes down for good whose holds on a C(loop.kubevol.io) image this node may drop;
        see M(kubevol.volumes.k8s_volume_attach)). The reconcile role passes C(kubevol_force_release_holders).
    type: list
    elements: str
    default: []
  run_lock:
    description:
      - The M(kubevol.volumes.cluster_run_lock) result of this run. With O(cluster_store), the lock is renewed every
        third of its duration while the node modules run, so that a node task longer than the lock's duration does
        not let a second run take the lock over as expired. A failed renewal is a warning; the node work goes on.
    type: dict
  cluster_store:
    description:
      - The cluster store's options, as M(kubevol.volumes.cluster_volume_record) takes them (C(cluster_source),
        C(cluster_state), the Kubernetes auth options), for the renewals of O(run_lock) and to read a plan record
        kept in the Kubernetes API. The play's module_defaults for C(group/kubevol.volumes.cluster_store) apply
        under them.
    type: dict
"""

EXAMPLES = r"""
- name: Set up on every node what the plan wants there, one task
  kubevol.volumes.node_phases:
    plan: "{{ volume_plan | kubevol.volumes.node_plan(inventory_hostname) }}"
    phases: [attach, mount, expand_controller, expand_node]
    node_name: "{{ inventory_hostname }}"
  register: setup
"""

RETURN = r"""
phase_results:
  description: The result of each phase's node module call, keyed by phase; phases without work are absent.
  returned: without a plan record (with one, they are kept for the record step, RV(phase_results_kept))
  type: dict
phase_results_kept:
  description: Each phase's result was kept on the controller for M(kubevol.volumes.reconcile_run) (run/node_results.py).
  returned: with a plan record, when a phase had work
  type: bool
phase_status:
  description: "C({phase: ok, failed or unreachable}) of each phase with work."
  returned: always, but with O(phases=[facts])
  type: dict
module_runs:
  description:
    - The node modules this task executed on the node, in order. When a node has work in more than one of attach,
      mount and expansion they run as one M(kubevol.volumes.node_volume_setup) execution.
  returned: always
  type: list
  elements: str
node_name:
  description: The node name used.
  returned: always
  type: str
node_facts:
  description: With O(phases=[facts]), the node's actual state as M(kubevol.volumes.node_volume_info) returns it.
  returned: with O(phases=[facts]), on success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.node.node_args import node_phases_argspec


def main():
    module = AnsibleModule(argument_spec=node_phases_argspec(), supports_check_mode=True)
    module.fail_json(msg="kubevol.volumes.node_phases runs as an action plugin on the controller; it was run as a "
                         "module on the node instead (is the collection's action plugin on the controller's path?)")


if __name__ == "__main__":
    main()
