#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cluster_volume_info
short_description: Read the cluster's nodes, pods and volume objects from a cluster store
version_added: 0.1.0
author: kubevol contributors (@kubevol)
description:
  - Loads the cluster (Nodes, Pods, PersistentVolumes, PersistentVolumeClaims, VolumeAttachments and
    CSIDrivers) as one Kubernetes List from the cluster store, for the planner.
  - Runs on the controller and never changes anything.
  - With O(cluster_source=kubernetes) the objects are listed from the API in pages of O(page_size)
    (Pods with C(fieldSelector=spec.nodeName!=), that is scheduled pods only), and each item gets its
    C(kind) and C(apiVersion), so the List has the file store's shape.
options:
  query:
    description:
      - A JMESPath expression evaluated over the List (the whole C({apiVersion, kind, items}) dict).
      - Its result is returned as RV(query_result), and the List itself is not (RV(cluster) is left out).
    type: str
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - kubevol.volumes.cluster_store
  - kubevol.volumes.k8s_auth
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
    details: It only reads; there is nothing to show a difference of.
  platform:
    platforms: posix
requirements:
  - jmespath (only when O(query) is given)
  - kubernetes >= 24.2.0 (only with O(cluster_source=kubernetes))
seealso:
  - module: kubevol.volumes.volume_reconcile_plan
    description: Plans the volume steps from this module's RV(cluster) and the nodes' facts.
  - module: kubevol.volumes.node_volume_info
    description: The other half of the planner's input, each node's actual state.
  - module: kubevol.volumes.cluster_volume_record
    description: Writes what the nodes did back to the same cluster store.
  - module: kubernetes.core.k8s_info
    description: The general Kubernetes object reader whose authentication options this module shares.
"""

EXAMPLES = r"""
- name: Read the cluster state
  kubevol.volumes.cluster_volume_info:
    cluster_state: /srv/kubevol/cluster.yaml
  delegate_to: localhost
  run_once: true
  register: cluster

- name: Read the cluster from the Kubernetes API (token from the environment, K8S_AUTH_API_KEY)
  kubevol.volumes.cluster_volume_info:
    cluster_source: kubernetes
    host: https://10.0.0.1:6443
    ca_cert: /etc/kubevol/ca.crt
  delegate_to: localhost
  run_once: true
  register: cluster

- name: Names of the PVs only
  kubevol.volumes.cluster_volume_info:
    cluster_state: /srv/kubevol/cluster.yaml
    query: "items[?kind=='PersistentVolume'].metadata.name"
  delegate_to: localhost
  run_once: true
  register: pvs
"""

RETURN = r"""
cluster:
  description: The cluster as a Kubernetes List (C(apiVersion), C(kind), C(items)).
  returned: when O(query) is not given
  type: dict
  sample: {"apiVersion": "v1", "kind": "List", "items": [{"kind": "Node", "metadata": {"name": "node1"}}]}
query_result:
  description: The result of O(query) over the List.
  returned: when O(query) is given
  type: raw
  sample: ["pv-a", "pv-b"]
source:
  description: The store the cluster was read from.
  returned: success
  type: str
  sample: file /srv/kubevol/cluster.yaml
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.scope import search
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import (
    CLUSTER_STORE_ARGSPEC,
    CLUSTER_STORE_REQUIRED_IF,
    get_store,
    store_options,
)


def argspec():
    return dict(CLUSTER_STORE_ARGSPEC, query=dict(type="str"))


def run(params):
    store = get_store(params["cluster_source"], **store_options(params))
    try:
        cluster = store.load()
    finally:
        store.close()
    result = dict(changed=False, source=store.describe())
    if params.get("query"):
        result["query_result"] = search(params["query"], cluster, "query")  # only the answer, not the whole List
    else:
        result["cluster"] = cluster
    return result


def main():
    module = AnsibleModule(argument_spec=argspec(), required_if=CLUSTER_STORE_REQUIRED_IF, supports_check_mode=True)
    try:
        module.exit_json(**run(module.params))
    except KubevolError as err:
        module.fail_json(msg=err.msg, **err.to_result())


if __name__ == "__main__":
    main()
