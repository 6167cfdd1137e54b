# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: volume_reconcile_plan
short_description: Plan the volume attach, mount, detach and expansion steps for a cluster
version_added: 0.1.0
author: kubevol contributors (@kubevol)
description:
  - Computes the Kubernetes volume lifecycle plan, as the attach/detach controller and the kubelet volume
    manager would decide it, from the cluster objects and the facts gathered from the nodes.
  - Never changes anything; the plan is carried out by the node modules.
  - Runs on the controller, in Ansible's own process (an action plugin), whatever host the task names. The cluster
    snapshot is read there, and a relative O(cluster_state) is resolved from the directory the command runs in. A
    kubectl JSON List of 16 MiB or more is read by two processes where two CPUs are usable, with the same plan.
  - Steps are ordered unmount pod, unmount device, detach, attach, mount device, mount pod, expand controller,
    expand node. Each step names its node and volume; the volume item the node module needs is in RV(volume_items)
    once per node and volume, and RV(by_node) indexes each node's steps.
  - Anything that cannot be acted on (unbound claim, missing PV, Multi-Attach, still mounted, node unreachable, a
    node the snapshot has no Node object for) is in RV(blocked), once each, with its reason and the action it holds back.
  - With O(node_facts), the steps on nodes that have no entry there (hosts that are not in the play) are warned about
    in one warning (how many steps and nodes, the first five nodes), since no node task of this run runs them; the
    controller's own steps (a record-only release, a controller host's expansion) need no node.
  - A scheduled pod that is not terminated keeps every volume it has mounted and attached, whatever is wrong
    with its claim or PV; only its deletion or termination releases them.
  - Every name, quantity and pool a node module would refuse is blocked here first, naming the object, the field,
    the value and the rule (a PV name, volume handle, pod UID or node name that is not one safe path component, NUL
    in C(volumeAttributes), a negative size or request, a bad mount option, a pool outside O(driver_options) C(loop.kubevol.io) C(pools)); nothing of
    that volume is planned, and a pod that moved keeps it on its old node.
  - Fails, changing nothing, when the plan would tear down more of the mounted volumes than the teardown guard
    allows (O(max_teardown_fraction), O(max_teardown_count), O(allow_mass_teardown)).
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
  - kubevol.volumes.cluster_store
  - kubevol.volumes.k8s_auth
  - kubevol.volumes.driver_options.plan
  - kubevol.volumes.driver_options.loop_pools
  - kubevol.volumes.words
  - kubevol.volumes.provisioning
  - kubevol.volumes.teardown_guard
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
  cluster_state:
    description:
      - Path of a file holding the cluster as a Kubernetes C(List) in YAML or JSON, as
        C(kubectl get nodes,pods,pv,pvc,volumeattachments,csidrivers -A -o yaml) prints it.
      - Without O(scope), kubectl's JSON List (C(-o json)) is read one object at a time, so the parsed file is
        never whole in memory; any other file is parsed whole.
      - With O(cluster_source=file), this or O(cluster) is required.
    type: path
  cluster:
    description:
      - The cluster C(List) as data, for example what M(kubevol.volumes.cluster_volume_info) returned.
      - When given, it is what is planned, and O(cluster_source), O(cluster_state) and the authentication
        options are not used (they may come from C(module_defaults) for C(group/kubevol.volumes.cluster_store)).
    type: dict
  node_facts:
    description:
      - Facts per node, keyed by node name, each the RV(kubevol.volumes.node_volume_info#module:node_facts) that
        M(kubevol.volumes.node_volume_info) returned for that node.
      - A node without facts has an unknown mount level; mounts are planned for it but no unmounts.
    type: dict
  force_detach:
    description:
      - Allow detaching a still-mounted volume from a NotReady node once O(max_wait_for_unmount) has passed.
    type: bool
    default: true
  max_wait_for_unmount:
    description:
      - Seconds since the detach was first requested after which a forced detach is allowed.
    type: int
    default: 360
  known_drivers:
    description:
      - CSI driver names kubevol has a backend for.
      - Unset (the default) means every driver kubevol has a backend for (its driver registry).
      - Volumes of other drivers (and in-tree attachable volumes) are foreign, as a kubelet leaves other
        plugins' volumes alone; they are never planned, unmounted, detached or blocked, only counted
        (C(foreign_volumes) in RV(desired), C(foreign_mounts) in RV(actual)).
    type: list
    elements: str
  output:
    description:
      - What the result holds. V(full) is the whole plan, for the node modules (what the reconcile role uses).
      - V(table) returns RV(table), the plan as lines to read (one per step, the blocked items once each with the
        action they hold back, the teardown guard's count, the C(Plan:) line), plus RV(summary). For an ad-hoc run
        (C(ansible localhost -m kubevol.volumes.volume_reconcile_plan -a 'cluster_state=cluster.yaml output=table')).
      - V(summary) returns one line per node in RV(table) (steps per action, blocked), plus RV(summary).
      - V(record) writes the whole plan as a record (on disk, or as ConfigMaps in the Kubernetes API, see
        O(record_dir)) and returns its handle in RV(record),
        the counts in RV(counts), the plan as lines in RV(table) (bounded by O(table_rows)) and RV(summary), what the
        reconcile role passes between its steps instead of the plan itself. C(kubevol.volumes.reconcile_run), the
        role's node tasks and the P(kubevol.volumes.plan_table#filter) filter read the plan back by that handle.
    type: str
    choices: [full, table, summary, record]
    default: full
  stage:
    description:
      - Which side of Kubernetes' split this plan keeps (docs/fleet.md, docs/planner.md "Stages").
      - V(all) plans the whole reconcile, as one controller runs it.
      - V(node) keeps the kubelet's steps (unmount, mount, node-side expansion) on the nodes with O(node_facts)
        only, for a slice of the nodes; a mount whose attach this plan would make is blocked, "waiting for the
        attach/detach stage". Nothing is attached or detached and no VolumeAttachment is written.
      - V(attach_detach) keeps the attach/detach controller's steps (detach, attach, controller-side expansion); a
        detach whose node still has the volume mounted (an unmount planned there, or C(node.status.volumesInUse)
        lists it) is blocked, "waiting for node ... to unmount it", unless forced or record-only, and an exclusive
        volume it holds is not attached elsewhere.
    type: str
    choices: [all, node, attach_detach]
    default: all
  table_rows:
    description:
      - With O(output=table) or O(output=summary), at most this many step rows and blocked rows (or node rows),
        then a line saying how many more there are, so that a big plan prints pages, not megabytes.
      - V(0) shows them all.
    type: int
    default: 100
  table_hint:
    description:
      - What the line after the last row of RV(table) says about seeing the rows left out (in parentheses).
    type: str
    default: output=full returns them all, or raise table_rows
    version_added: 0.3.0
  record_dir:
    description:
      - With O(output=record), the directory the plan records are written in, one directory per run id, written
        under a temporary name and renamed into place. All but the two newest are removed, except the records of runs
        still going (not finished by C(kubevol.volumes.reconcile_run), younger than 12 hours), because the slices of a
        sliced run write there at once.
      - By default, beside the state file (C(<cluster_state>.plans)) for the file store; for the Kubernetes API store
        (O(cluster_source=kubernetes)), ConfigMaps labelled C(app.kubernetes.io/managed-by=kubevol) and
        C(kubevol.io/plan-run=<run id>) in the namespace of the run lock's Lease (O(run_lock)'s C(lease_namespace),
        default C(kube-system)), gzip-compressed chunks of at most 900 KiB each, the manifest written last, pruned by
        the same rule. In check mode, C(kubevol-plans) in the controller's local temporary directory (Ansible's,
        removed when Ansible exits; the system's when run as a module), so check mode writes nothing beside the
        cluster's state or into the cluster.
    type: path
    version_added: 0.3.0
  run_lock:
    description:
      - The result of C(kubevol.volumes.cluster_run_lock) for this run. With O(output=record) and
        O(cluster_source=kubernetes), the plan record's ConfigMaps are written in its C(lease_namespace) (the
        namespace the store keeps its run lock in); without it, C(kube-system).
    type: dict
    version_added: 0.3.0
  scope:
    description:
      - A JMESPath expression over the List's items that selects the pods to consider.
      - Pods not selected are ignored, and nothing they use is unmounted or detached.
      - Requires the jmespath Python library.
    type: str
requirements:
  - PyYAML (to read YAML files)
  - jmespath (only for O(scope))
seealso:
  - module: kubevol.volumes.cluster_volume_info
    description: Reads the cluster from a file or the Kubernetes API, for O(cluster).
  - module: kubevol.volumes.node_volume_info
    description: Gathers a node's actual state, for O(node_facts).
  - module: kubevol.volumes.node_phases
    description: Runs a node's share of this plan.
  - name: The kubevol.volumes.reconcile role
    description: Gathers, plans, prints and carries out the plan on every node.
    link: https://github.com/kubevol/kubevol.volumes/blob/main/roles/reconcile/README.md
"""

EXAMPLES = r"""
- name: Plan from a file written by kubectl
  kubevol.volumes.volume_reconcile_plan:
    cluster_state: /tmp/cluster.yaml
  register: volume_plan

- name: Plan with node facts, only for the pods of one namespace
  kubevol.volumes.volume_reconcile_plan:
    cluster: "{{ cluster_list }}"
    node_facts: "{{ gathered_node_facts }}"
    scope: "[?kind=='Pod' && metadata.namespace=='shop']"
  register: volume_plan

- name: Plan from the Kubernetes API (the kubeconfig's current context), summary only
  kubevol.volumes.volume_reconcile_plan:
    cluster_source: kubernetes
    kubeconfig: ~/.kube/config
    output: summary
  register: volume_plan_summary

- name: Show it as a table
  ansible.builtin.debug:
    msg: "{{ (volume_plan | kubevol.volumes.plan_table).splitlines() }}"

- name: Only the table (ad hoc, the same - ansible localhost -m kubevol.volumes.volume_reconcile_plan -a 'cluster_state=cluster.yaml output=table')
  kubevol.volumes.volume_reconcile_plan:
    cluster_state: cluster.yaml
    output: table
  register: volume_plan_table
"""

RETURN = r"""
provisioning:
  description:
    - The claims to provision, one C(create_volume) operation each (docs/provisioning.md) - C(host) (where the
      driver's Controller service runs), C(driver), C(claim), C(name) (C(pvc-<claim uid>)), C(request) (what
      CreateVolume gets), C(pv) (the PersistentVolume written from its answer) and C(reason); then one
      C(create_snapshot) operation per VolumeSnapshot to take (C(snapshot), C(content_name), C(source_volume_id)).
  returned: always
  type: list
  elements: dict
deletions:
  description:
    - The released volumes to delete, one C(delete_volume) operation each - C(host), C(driver), C(pv_name),
      C(volume_id), C(claim) (the claim that is gone), C(after_teardown) (this plan detaches it first) and C(reason);
      and one C(delete_snapshot) operation per VolumeSnapshotContent to delete (C(content_name), C(snapshot_id)).
      C(deletion_guard) says whether the deletion guard held them back.
  returned: always
  type: list
  elements: dict
plan:
  description:
    - The steps in execution order. Each has C(action) (C(unmount), C(detach), C(attach), C(mount) or C(expand)),
      C(target) (C(pod) or C(device); C(controller) or C(node) for C(expand)), C(node), C(volume) (the PV name),
      C(pod) and C(pod_uid) (null unless a pod-level step), C(reason) and C(unique_volume_name)
      (C(kubernetes.io/csi/<driver>^<handle>)).
    - Pod steps add C(pod_read_only), and C(pod_fs_group) and C(pod_fs_group_change_policy) when the pod's fsGroup
      applies; expand steps add C(size_from), C(size_to) (bytes) and C(pvc); detach steps add C(forced) (the
      mounted guard was overridden by the out-of-service taint or the timeout).
  returned: when O(output=full)
  type: list
  elements: dict
  sample:
    - action: attach
      target: device
      node: node1
      volume: pv-db-data
      pod: null
      pod_uid: null
      reason: pod(s) shop/db-0 on node node1 use it
      unique_volume_name: kubernetes.io/csi/loop.kubevol.io^pv-db-data.img
volume_items:
  description:
    - "The volume item of each node and volume in the plan, once: C({node: {unique volume name: item}})
      with the keys of the node modules' O(kubevol.volumes.node_volume_mount#module:volumes) items except C(pods).
      The node modules take these items, with the pods of the node's steps."
  returned: when O(output=full)
  type: dict
  sample:
    node1:
      kubernetes.io/csi/loop.kubevol.io^pv-db-data.img:
        {pv_name: pv-db-data, driver: loop.kubevol.io, volume_handle: pv-db-data.img,
         volume_attributes: {pool: /var/lib/kubevol/pool}, capacity_bytes: 536870912, mode: Filesystem,
         fs_type: xfs, mount_options: [], read_only: false}
by_node:
  description: "C({node: [positions of the node's steps in RV(plan)]}): each node's slice without a scan of the plan."
  returned: when O(output=full)
  type: dict
  sample: {node1: [0, 1, 2]}
table:
  description: The plan (O(output=table) or O(output=record)) or the per-node counts (O(output=summary)) as lines to
    read.
  returned: when O(output) is V(table), V(summary) or V(record)
  type: list
  elements: str
  sample:
    - "   ACTION         NODE   VOLUME      POD  REASON"
    - "+  attach/device  node1  pv-db-data  -    pod(s) shop/db-0 on node node1 use it"
    - ""
    - "Plan: 0 to unmount, 0 to detach, 1 to attach, 0 to mount, 0 to expand; 0 blocked"
record:
  description:
    - "The handle of the plan's record: C({path, run_id, digest}), the record's directory, the run's id and the
      sha256 of its manifest; a record changed under it is refused. One in the API also has C(local), its copy's."
  returned: when O(output=record)
  type: dict
  sample: {path: /srv/kubevol/cluster.yaml.plans/20261125T232600Z-1a2b3c4d, run_id: 20261125T232600Z-1a2b3c4d,
           digest: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08}
  version_added: 0.3.0
counts:
  description: "C({steps, blocked, nodes}): the plan's steps, its blocked items and the nodes with steps."
  returned: when O(output=record)
  type: dict
  sample: {steps: 3, blocked: 0, nodes: 1}
  version_added: 0.3.0
blocked:
  description:
    - What cannot be acted on, each once, with node, volume, pod, reason and C(action), the step it holds back
      (C(attach), C(mount), C(unmount), C(detach); C(any) for a node nothing can run on).
  returned: when O(output=full)
  type: list
  elements: dict
pending:
  description:
    - The node-side grows this plan does not try, each once, shaped as a blocked item, with action C(expand) and
      the claim as C(pvc).
    - Such a grow failed before (its claim carries C(kubevol.io/node-expansion-pending)), and nothing that made it
      fail has changed since. It is tried again when its pods restart or move, when it is mounted anew, at another
      size, or, for a cause the plan cannot see, after its backoff.
  returned: when O(output=full)
  type: list
  elements: dict
detach_requests:
  description: VolumeAttachments whose kubevol.io/detach-requested-at annotation the caller should record.
  returned: when O(output=full)
  type: list
  elements: dict
in_use_repairs:
  description:
    - "C({node, unique_volume_names, in_use}) to record in a node's C(status.volumesInUse), from the reachable node's
      own facts: C(in_use=true) for mounted volumes the list lacks (a record lost with a killed run, or an API that
      went away after the mount), C(in_use=false) for listed volumes of a kubevol driver that are not mounted there.
      Volumes this plan mounts or tears down, and other drivers' entries, are left alone."
  returned: when O(output=full)
  type: list
  elements: dict
nodes_out_of_service:
  description: Nodes with the C(node.kubernetes.io/out-of-service) taint; their attachments are released at once.
  returned: when O(output) is V(full) or V(record)
  type: list
  elements: str
csi_controllers:
  description:
    - "C({driver: {host, socket}}) of the external CSI drivers whose Controller service runs on a host of the
      inventory (O(driver_options) C(controller), C(controller_socket))."
  returned: when O(output=full) and such a driver is configured
  type: dict
run_nodes:
  description:
    - The nodes of O(node_facts), sorted (the run's nodes). The run's report (C(kubevol.volumes.reconcile_run)'s
      RV(kubevol.volumes.reconcile_run#module:summary)) lists these, counting the cluster's other nodes in one line.
  returned: when O(output=full) and O(node_facts) is given (with O(output=record), in the record)
  type: list
  elements: str
node_errors:
  description:
    - "C({node, phase: facts, msg}) for each node of O(node_facts) whose state could not be gathered (C(reachable=false)),
      unless it is out of service. The plan blocks what needs such a node; the reconcile role fails the run with these."
  returned: when O(output) is V(full) or V(record) and O(node_facts) is given
  type: list
  elements: dict
  sample: [{node: node3, phase: facts, msg: "Failed to connect to the host via ssh"}]
teardown_guard:
  description:
    - What the teardown guard counted. C(tripped) is true when the plan was refused (the module then fails).
  returned: when O(output=full), and when the teardown guard refused the plan
  type: dict
  sample: {mounted: 6, teardown: 4, max_teardown_fraction: 0.5, max_teardown_count: 20, allow_mass_teardown: false,
           tripped: true, volumes: [{node: node1, volume: pv-db-data, steps: [unmount/pod, unmount/device, detach/device]}]}
detach_requests_to_clear:
  description: VolumeAttachments whose stale detach-requested-at annotation should be removed.
  returned: when O(output=full)
  type: list
  elements: dict
desired:
  description: Counts of the desired state and the PV names wanted per node.
  returned: when O(output=full)
  type: dict
actual:
  description: Counts of the actual state and the PV names attached per node.
  returned: when O(output=full)
  type: dict
summary:
  description: Number of steps per action, plus blocked and skipped volumes.
  returned: always
  type: dict
  sample: {unmount: 0, detach: 0, attach: 4, mount: 8, expand: 0, blocked: 0, skipped: 2}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_task import (
    REQUIRED_IF, argspec, run)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import utc_now


# The module's process exits right after exit_json: what it parsed and planned is left to the exit, not freed one
# object at a time (a list that outlives run(), as in the action plugin).
_KEEP_ALIVE = []


def main():
    module = AnsibleModule(argument_spec=argspec(), required_if=REQUIRED_IF, supports_check_mode=True)
    reader = module.params["words"]
    try:
        result = run(module.params, utc_now(), keep_alive=_KEEP_ALIVE, check_mode=module.check_mode)
    except KubevolError as err:
        module.fail_json(msg=words.say(err.msg, reader), **words.say_all(err.to_result(), reader))
    module.exit_json(**words.say_all(result, reader, skip=("plan", "volume_items", "by_node", "desired", "actual")))


if __name__ == "__main__":
    main()
