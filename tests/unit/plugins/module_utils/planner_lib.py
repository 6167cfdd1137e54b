# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the planner's rule tests share (test_planner.py, test_planner_attach.py): the planner run with the options
they vary, the plan's steps and blocked reasons, and two nodes with a bound claim each."""

import datetime
import os
import sys


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import bound, cluster, node  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import OUT_OF_SERVICE_TAINT  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa


NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
OOS = {"key": OUT_OF_SERVICE_TAINT, "value": "nodeshutdown", "effect": "NoExecute"}


def run(data, node_facts=None, scope=None, **options):
    opts = PlanOptions(options.get("force_detach", True), options.get("max_wait_for_unmount", 360),
                       tuple(options.get("known_drivers", ("loop.kubevol.io",))), NOW)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts, scope)


def steps(result, action=None):
    return [(s["action"], s["target"], s["node"], s["volume"], s["pod"]) for s in result["plan"]
            if action is None or s["action"] == action]


def reasons(result):
    return [b["reason"] for b in result["blocked"]]


def basic(*extra, node1=None, node2=None, claims=("a",)):
    """node1 and node2, PV pv-<c> bound to ns/<c> for each claim."""
    objs = [node1 or node("node1"), node2 or node("node2")]
    for c in claims:
        objs.extend(bound("pv-" + c, "ns/" + c))
    return cluster(*(objs + list(extra)))
