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
    type: str
    default: file
    choices: [file]
  cluster_state:
    description:
      - Path of the cluster state file, YAML or JSON (decided by its content).
      - Several YAML documents are merged into one List.
      - Required when O(cluster_source=file).
    type: path
requirements:
  - PyYAML (for a YAML cluster state file)
"""
