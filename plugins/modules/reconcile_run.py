#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: reconcile_run
short_description: Advance a reconcile run one step and record what it did
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - The reconcile role's controller step, run once after the plan and once after each node task of
    M(kubevol.volumes.node_phases). It returns the run's state and writes, in one write to the cluster store, what
    that step recorded. Its options and results follow the role and may change in any release; use the role.
  - After the plan (O(after=plan)) it starts the run. The state names the node tasks the plan needs, in order
    (teardown, then setup, then a node-side expansion only when another node grows the volume first). It writes when
    blocked detaches were first requested and the volumes in use that node status lacks.
  - After a node task it reads every node's result (O(results)). A volume that failed is not attempted by a later
    task; a failed detach on one node stops another node's attach of that volume. It writes the records of what
    the nodes did, as Kubernetes records it (VolumeAttachments, node status, PV and PVC capacity).
  - When the next node task is the setup, the attachments and expansions it is about to make are written in the
    same write, as intents (a VolumeAttachment with C(attached=false), C(ControllerResizeInProgress) or
    C(NodeResizeInProgress) on the claim), before any node acts. A run killed mid-way leaves the cluster knowing
    what may exist, as the attach/detach controller does.
  - The intents follow the teardown's records, and the Kubernetes API store writes them in that order, stage by
    stage (the old node's status cleared and its VolumeAttachment deleted, answered, before the new node's
    VolumeAttachment is created), so the API never shows an RWO volume attached to two nodes.
  - When no node task is left, it also returns the run's summary.
  - Runs on the controller, in Ansible's own process (an action plugin), whatever host the task names. Every write
    needs the run's lock (O(run_lock)) and renews it, as M(kubevol.volumes.cluster_volume_record) does.
  - In check mode nothing is written and the summary counts the plan's steps as planned.
options:
  plan:
    description:
      - The M(kubevol.volumes.volume_reconcile_plan) result of this run, with O(kubevol.volumes.volume_reconcile_plan#module:output=full),
        or with O(kubevol.volumes.volume_reconcile_plan#module:output=record) (what the reconcile role passes), and then
        the plan is read from its record, by the handle in the result, on the controller.
    type: dict
    required: true
  after:
    description:
      - The step just done. V(plan) starts the run. V(teardown), V(setup) and V(expand_node) are node tasks; each
        needs O(state) and O(results).
      - V(controller) is the controller task of CSI drivers whose controller plugin runs on a host of the inventory
        (M(kubevol.volumes.csi_controller)); its O(results) map each controller host to its result.
      - V(provision) and V(delete) are the provisioner's tasks (M(kubevol.volumes.volume_provision), CreateVolume and
        DeleteVolume); their O(results) map each host to its result; after V(provision) the result has RV(carried).
    type: str
    choices: [plan, teardown, setup, expand_node, controller, provision, delete]
    default: plan
  carried:
    description:
      - With O(after=plan) on the plan made again after the run's provisioning - the RV(carried) of the provision
        step - its errors and blocked entries stay in the run's state and report.
    type: dict
    version_added: 0.2.0
  state:
    description:
      - The result this module returned for the step before (its RV(tasks), RV(failures), RV(blocked) and
        RV(errors)).
    type: dict
  results:
    description:
      - "Each Kubernetes node's result of the node task, C({node name: result}), or C(null) for a host that did not
        run it, as the P(kubevol.volumes.node_results#filter) filter collects them."
    type: dict
  plan_shown:
    description:
      - Whether the plan's table was printed. When it was, the summary's lines leave out the blocked items it showed.
    type: bool
    default: true
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - kubevol.volumes.cluster_store
  - kubevol.volumes.cluster_store.record
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
  diff_mode:
    support: full
  platform:
    platforms: posix
seealso:
  - module: kubevol.volumes.node_phases
    description: Runs the node tasks whose outcome this records.
  - module: kubevol.volumes.cluster_volume_record
    description: Writes the records; this module calls it.
  - name: The kubevol.volumes.reconcile role
    description: Runs this after the plan and after each node task.
    link: https://github.com/kubevol/kubevol.volumes/blob/main/roles/reconcile/README.md
"""

EXAMPLES = r"""
- name: Start the run
  kubevol.volumes.reconcile_run:
    cluster_state: /srv/kubevol/cluster.yaml
    plan: "{{ volume_plan }}"
    run_lock: "{{ run_lock }}"
  register: run
  run_once: true
  delegate_to: localhost

- name: After the setup task, record what the nodes did
  kubevol.volumes.reconcile_run:
    cluster_state: /srv/kubevol/cluster.yaml
    plan: "{{ volume_plan }}"
    after: setup
    state: "{{ run }}"
    results: "{{ hostvars | kubevol.volumes.node_results(ansible_play_hosts_all, 'setup_result') }}"
    run_lock: "{{ run_lock }}"
  register: run
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
carried:
  description: After O(after=provision) - the provisioning's C(errors) and C(blocked), for O(carried) of the next start.
  returned: after provision
  type: dict
tasks:
  description:
    - The node tasks this run needs, in order, each C({name, phases}) for M(kubevol.volumes.node_phases).
    - Only when the plan has controller calls of a CSI driver whose controller plugin runs on a host of the
      inventory, a task named C(controller) with its C(hosts) (and no phases) before the setup, for
      M(kubevol.volumes.csi_controller).
  returned: always
  type: list
  elements: dict
  sample: [{"name": "teardown", "phases": ["teardown"]}, {"name": "setup", "phases": ["attach", "mount"]}]
failures:
  description: What failed so far, C({nodes, volumes}); a later node task does not attempt what depends on it.
  returned: always
  type: dict
  sample: {"nodes": {}, "volumes": {"node1": ["kubernetes.io/csi/loop.kubevol.io^pvc-a.img"]}}
blocked:
  description: The plan's steps a failure stopped so far, each with its node, volume, action and reason.
  returned: always
  type: list
  elements: dict
errors:
  description: The node errors so far, each C({node, phase, msg}); at first the nodes whose state was not gathered.
  returned: always
  type: list
  elements: dict
pending:
  description:
    - The node-side grows the nodes reported pending so far (a grow that failed or cannot run yet), each
      C({node, volume, pod, action, pvc, reason}); not errors. The claim records each (C(FileSystemResizePending)).
  returned: always
  type: list
  elements: dict
changes:
  description: The records this step wrote that changed something, as M(kubevol.volumes.cluster_volume_record) returns them.
  returned: always
  type: list
  elements: dict
count:
  description: Number of entries in RV(changes).
  returned: always
  type: int
published:
  description:
    - "After the controller task, C({unique volume name: {node: publish_context}}) of each ControllerPublishVolume
      made, for the next node task's O(kubevol.volumes.node_phases#module:controller_published)."
  returned: after O(after=controller)
  type: dict
summary:
  description:
    - What the run did per node, C({lines, nodes, blocked, errors, pending, outside}), when no node task is left.
    - C(pending) lists the node-side grows that wait, the plan's and those the nodes reported; a pending grow is
      no failure.
    - C(nodes) has the run's nodes (the plan's C(run_nodes)) and every node the controller acts for without a node
      task (a record-only release of a node out of service or gone); C(outside), C({nodes, steps, blocked, names}),
      counts the cluster's other nodes, which C(lines) reports in one line (the
      P(kubevol.volumes.run_summary#filter) filter).
  returned: when the run has no node task left, and in check mode
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.run.reconcile_run_task import REQUIRED_IF, argspec, run


def main():
    module = AnsibleModule(argument_spec=argspec(), required_if=REQUIRED_IF, supports_check_mode=True)
    try:
        module.exit_json(**run(module.params, check_mode=module.check_mode, diff=module._diff))
    except KubevolError as err:
        module.fail_json(msg=err.msg, **err.to_result())


if __name__ == "__main__":
    main()
