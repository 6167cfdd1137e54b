#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: pod_volumes_wait
short_description: Wait until every volume kubevol sets up for some pods is published for them on their nodes
version_added: 0.2.0
author: kubevol contributors (@kubevol)
description:
  - What the kubelet's C(WaitForAttachAndMount) tells a pod, for a deploy pipeline that runs kubevol and then starts
    an application - waits with a timeout until every volume kubevol sets up for the selected pods is published for
    them on their node, polling every O(interval) seconds, and returns per pod and volume its state.
  - An action plugin. Run it on the nodes' hosts (C(hosts) the node group) - each host answers for the pods
    scheduled to its own node, reading that node's actual state over its own connection
    (M(kubevol.volumes.node_volume_info), with O(driver_options)), and the cluster's objects from the cluster store
    on the controller each poll, so records a reconcile writes meanwhile are seen. The pods whose node no host of
    the play answers for are reported by the play's first host.
  - A volume is V(ready) only when the node's facts show it published at the pod's path - for a CSI PV of a driver
    kubevol drives (its own C(loop.kubevol.io) and the external CSI drivers O(driver_options) configures), the pod's
    bind mount (Filesystem) or device map (Block) of the device attached for the volume now; for a local PV, the
    pod's bind mount or device map; for a hostPath PV, the pod's passed type check (nothing is mounted for
    hostPath); for an inline ephemeral CSI volume of such a driver, its mount in the pod's directory - and nothing
    in the plan is blocked or still to run (attach, mount) for it. An expansion still to run does not hold a pod
    back. A pod is ready when every volume kubevol sets up for it is ready.
  - A volume kubevol does not set up - a secret, configMap, emptyDir, downwardAPI or projected volume, a PV of a
    CSI driver kubevol does not drive or of another plugin (nfs, ...), a volume no container of the pod mounts or
    maps - is listed as V(not_waited), with the reason, and is never counted as a ready mount.
  - On timeout the task fails naming, for each volume not ready, what holds it back in the planner's words
    (M(kubevol.volumes.volume_reconcile_plan)) - a Multi-Attach held by another pod, a claim not bound, a node that
    cannot be reached - or the steps a reconcile would still run, or that the node shows nothing published yet.
  - Check mode reports the states at once, without waiting and without failing.
options:
  pods:
    description: The pods, as C(namespace/name) (a bare name means the C(default) namespace).
    type: list
    elements: str
    default: []
  label_selector:
    description:
      - An equality-based label selector, as C(kubectl -l) takes it (C(app=db,tier!=cache)); the pods it matches are
        waited for too. One of O(pods) and O(label_selector) is required.
    type: str
  timeout:
    description: Seconds to wait; 0 looks once.
    type: int
    default: 300
  interval:
    description: Seconds between two looks (at least 1).
    type: int
    default: 5
  node_name:
    description: This host's Kubernetes node name. Default C(kubevol_node_name), else the inventory hostname.
    type: str
  kubelet_dir:
    description: The kubelet root directory on the node.
    type: str
    default: /var/lib/kubelet
  known_drivers:
    description:
      - The CSI drivers kubevol manages (as M(kubevol.volumes.volume_reconcile_plan) takes them). Default -
        kubevol's own drivers and every external CSI driver O(driver_options) configures.
    type: list
    elements: str
  driver_options:
    description:
      - The operator's options of each volume plugin and CSI driver, the same mapping the reconcile role takes
        (C(kubevol_driver_options)) and checked the same way - an unknown plugin or driver name, an unknown option
        or a value of the wrong shape fails the task, naming the key.
      - Given to the node's facts and to the plan, so that a pod's volumes are waited for exactly as the reconcile
        sees them - an external CSI driver configured here (C(socket), C(controller)) is one kubevol drives, and a
        local or hostPath PV outside its plugin's C(paths), or a loop PV outside C(loop.kubevol.io) C(pools), is
        reported as blocked.
    type: dict
    default: {}
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.node_volumes.task_settings
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
    details: Reports the states once, without waiting or failing.
  diff_mode:
    support: none
  platform:
    platforms: posix
seealso:
  - module: kubevol.volumes.volume_reconcile_plan
  - name: The kubevol.volumes.reconcile role
    description: Attaches and mounts what the pods need; this module waits for it.
    link: https://github.com/kubevol/kubevol.volumes/blob/main/roles/reconcile/README.md
"""

EXAMPLES = r"""
- name: Wait up to five minutes for the database's volumes
  kubevol.volumes.pod_volumes_wait:
    cluster_state: /srv/kubevol/cluster.yaml
    pods: [shop/db-0]
    timeout: 300

- name: Wait for every pod of an application, from the live cluster
  kubevol.volumes.pod_volumes_wait:
    cluster_source: kubernetes
    label_selector: app=shop
    timeout: 120
    interval: 2

- name: Wait with the reconcile's own driver options (local disks, an external CSI driver)
  kubevol.volumes.pod_volumes_wait:
    cluster_state: /srv/kubevol/cluster.yaml
    pods: [shop/db-0, shop/cache-0]
    driver_options: "{{ kubevol_driver_options }}"
"""

RETURN = r"""
ready:
  description: Whether every selected pod this host answers for has every volume kubevol sets up for it ready.
  returned: always
  type: bool
pods:
  description:
    - One entry per pod this host answers for - C(pod) (namespace/name), C(node), C(ready), C(volumes), and
      C(reason) for a pod that could not be looked at (not scheduled, node unreachable).
    - Each of C(volumes) has C(volume) (the pod's volume name), C(pv) (its PV, or null), C(state) and C(reason) -
      V(ready) (published at the pod's path, nothing blocked or still to run; C(reason) null), V(waiting) (C(reason)
      says what holds it back) or V(not_waited) (a volume kubevol does not set up; C(reason) says why).
  returned: always
  type: list
  elements: dict
polls:
  description: How many times the pods were looked at.
  returned: always
  type: int
waited:
  description: Seconds waited.
  returned: always
  type: int
node_name:
  description: The node name this host answered for.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.run.pod_wait import REQUIRED_ONE_OF, argspec


def main():
    module = AnsibleModule(argument_spec=argspec(), required_one_of=REQUIRED_ONE_OF, supports_check_mode=True)
    module.fail_json(msg="kubevol.volumes.pod_volumes_wait runs as an action plugin on the controller; it was run as "
                         "a module instead (is the collection's action plugin on the controller's path?)")


if __name__ == "__main__":
    main()
