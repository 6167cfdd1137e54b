# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the planner's trust tests share (test_planner_trust.py, test_planner_trust_pods.py and
test_planner_trust_nodes.py): the planner run with the teardown guard's options, the plan's steps and blocked
reasons, a node with its volumes in use."""

import datetime
import os
import sys


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import facts  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import OUT_OF_SERVICE_TAINT  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import (  # noqa: E402
    PlanOptions, plan_cluster)


NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
OOS = {"key": OUT_OF_SERVICE_TAINT, "value": "nodeshutdown", "effect": "NoExecute"}
EBS = "ebs.csi.aws.com"


def run(data, node_facts=None, **options):
    opts = PlanOptions(options.get("force_detach", True), options.get("max_wait_for_unmount", 360),
                       ("loop.kubevol.io",), NOW, options.get("max_teardown_fraction", 0.5),
                       options.get("max_teardown_count", 20), options.get("allow_mass_teardown", False))
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts)


def steps(result, action=None):
    return [(s["action"], s["target"], s["node"], s["volume"], s["pod"]) for s in result["plan"]
            if action is None or s["action"] == action]


def teardown(result):
    return [s for s in steps(result) if s[0] in ("unmount", "detach")]


def reasons(result):
    return [b["reason"] for b in result["blocked"]]


def converged_node1(*pvs):
    """node1's facts with each PV attached, staged and mounted into pod uid-ns-<pv>."""
    return facts("node1", devices=pvs, global_mounts=pvs, pod_mounts=[("uid-ns-" + p, p) for p in pvs])
