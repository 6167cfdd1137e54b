# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volume_reconcile_plan's arguments and its one call: load the cluster, plan, return the result.

Shared by the action plugin (plugins/action/volume_reconcile_plan.py), which plans inside the
controller's own process, and the module file, which documents it and runs it as a module.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster import (
    ClusterIndex, cluster_from_data, gc_paused, load_cluster_file)
from ansible_collections.kubevol.volumes.plugins.module_utils.desired_state import DEFAULT_KNOWN_DRIVERS
from ansible_collections.kubevol.volumes.plugins.module_utils.executor import facts_errors
from ansible_collections.kubevol.volumes.plugins.module_utils.plan_text import OUTPUTS, blocked_once, nodes_outside, shape
from ansible_collections.kubevol.volumes.plugins.module_utils.planner import (
    DEFAULT_MAX_TEARDOWN_COUNT, DEFAULT_MAX_TEARDOWN_FRACTION, PlanOptions, TeardownRefused, plan_cluster)
from ansible_collections.kubevol.volumes.plugins.module_utils.scope import select_pods

MUTUALLY_EXCLUSIVE = [("cluster_state", "cluster")]
REQUIRED_ONE_OF = [("cluster_state", "cluster")]
DEFAULT_TABLE_ROWS = 100


def argspec():
    return dict(
        cluster_state=dict(type="path"),
        cluster=dict(type="dict"),
        node_facts=dict(type="dict"),
        force_detach=dict(type="bool", default=True),
        max_wait_for_unmount=dict(type="int", default=360),
        known_drivers=dict(type="list", elements="str"),
        scope=dict(type="str"),
        max_teardown_fraction=dict(type="float", default=DEFAULT_MAX_TEARDOWN_FRACTION),
        max_teardown_count=dict(type="int", default=DEFAULT_MAX_TEARDOWN_COUNT),
        allow_mass_teardown=dict(type="bool", default=False),
        output=dict(type="str", default="full", choices=list(OUTPUTS)),
        table_rows=dict(type="int", default=DEFAULT_TABLE_ROWS),
    )


def run(params, now, keep_alive=None):
    """Load, plan, and return the module result (changed is always false: this only reads), shaped for
    ``output`` (plan_text.shape). With node facts, steps on nodes that have none (not in the play) are warned about.

    The cyclic GC stays paused throughout: everything built is acyclic, and with a big cluster in memory each
    collection walks all of it (indexing 150,000 pods took 2 s with it on). ``keep_alive``: a list that keeps the
    parsed cluster and the full plan, for a caller in a process that exits right after (the action plugin's
    worker), where freeing them one object at a time is wasted work (over a second at 5,000 nodes); such a process
    also leaves what it built out of the GC's reach when it re-enables it (cluster.gc_paused's freeze)."""
    with gc_paused(freeze=keep_alive is not None):
        return _run(params, now, keep_alive)


def _run(params, now, keep_alive):
    if params["cluster_state"]:
        cluster, data = load_cluster_file(params["cluster_state"])
    else:
        data = params["cluster"]
        cluster = cluster_from_data(data)
    selected = select_pods(data, params["scope"], field="scope")
    scope = None if selected is None else frozenset("%s/%s" % key for key in selected)
    known_drivers = DEFAULT_KNOWN_DRIVERS if params["known_drivers"] is None else tuple(params["known_drivers"])
    options = PlanOptions(params["force_detach"], params["max_wait_for_unmount"], known_drivers, now,
                          params["max_teardown_fraction"], params["max_teardown_count"], params["allow_mass_teardown"])
    index = ClusterIndex(cluster)
    result = plan_cluster(index, params["node_facts"], options, scope)
    if keep_alive is not None:
        keep_alive.append((data, index, result))
    result["changed"] = False
    result["blocked"] = blocked_once(result)  # each once, with the action it holds back
    if params["node_facts"] is not None:
        # nodes whose state could not be gathered: the plan blocks what needs them; the role fails the run with these
        result["node_errors"] = facts_errors(params["node_facts"], result["nodes_out_of_service"])
        warnings = nodes_outside(result, params["node_facts"])
        if warnings:
            result["warnings"] = warnings
    output = params.get("output") or "full"
    rows = params.get("table_rows")
    shaped = shape(result, output, None if rows is None or rows <= 0 else rows)
    if result["teardown_guard"]["tripped"]:
        raise TeardownRefused(dict(shaped, teardown_guard=result["teardown_guard"]))
    return shaped
