# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  cluster_source:
    description:
      - Where the cluster's facts come from and where records are written.
      - V(file) is a state file holding a Kubernetes List, as
        C(kubectl get nodes,pods,pv,pvc,volumeattachments,csidrivers -A -o yaml) prints it.
      - V(kubernetes) is the Kubernetes API, reached with the authentication
        options (O(kubeconfig), O(context), O(host), O(api_key) and so on, with the C(K8S_AUTH_*)
        environment variables as fallbacks, as in kubernetes.core). Updates carry the resourceVersion
        they read; a conflict with a concurrent writer is re-read and retried.
    type: str
    default: file
    choices: [file, kubernetes]
  cluster_state:
    description:
      - Path of the cluster state file, YAML or JSON (decided by its content).
      - A YAML file must show that it is whole, as kubectl's output does (one List, with C(kind) and C(metadata)
        after C(items)); a file cut short, a List in another key order or several YAML documents is refused
        before anything is planned. JSON is preferred for big clusters.
      - Required when O(cluster_source=file).
    type: path
  page_size:
    description:
      - With O(cluster_source=kubernetes), how many objects one list request asks for (C(limit));
        the rest is fetched with C(continue) tokens, so a big cluster never comes in one response.
    type: int
    default: 500
requirements:
  - PyYAML (for a YAML cluster state file)
  - kubernetes (the Python client, for O(cluster_source=kubernetes))
"""

    # The options of the modules that write records (cluster_volume_record, reconcile_run): record_task.argspec().
    RECORD = r"""
options:
  lock_timeout:
    description:
      - Seconds to wait for another kubevol run that holds the cluster state file's lock.
      - Ignored with O(cluster_source=kubernetes), where concurrent writers are detected by resourceVersion.
    type: int
    default: 30
  run_lock:
    description:
      - The result of C(kubevol.volumes.cluster_run_lock) for this run (C(holder), C(duration), C(lease_namespace),
        C(lease_name)). The records are written only while that run still holds the cluster's run lock, and the
        write renews it; otherwise the module fails, writing nothing.
    type: dict
    version_added: 0.2.0
"""
