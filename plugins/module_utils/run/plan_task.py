# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volume_reconcile_plan's arguments and its one call: load the cluster, plan, return the result (with
output=record: write the plan as the run's record, run/plan_record.py, and return its handle instead).

Shared by the action plugin (plugins/action/volume_reconcile_plan.py), which plans inside the
controller's own process, and the module file, which documents it and runs it as a module.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import tempfile

from ansible_collections.kubevol.volumes.plugins.module_utils.plan import remote_controller, replan
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_delete import DEFAULT_MAX_VOLUME_DELETIONS
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (
    ClusterIndex, cluster_from_data, gc_paused)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.load import load_cluster_file
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import (  # noqa: F401
    known_drivers_of)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.actual_state import facts_errors
from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options as driver_opts, words
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.plan_text import (
    MORE_HINT, OUTPUTS, blocked_once, nodes_outside, shape, table_lines)
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor, plan_record
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.run_lock import DEFAULT_LEASE_NAMESPACE
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import (
    DEFAULT_MAX_TEARDOWN_COUNT, DEFAULT_MAX_TEARDOWN_FRACTION, PlanOptions, TeardownRefused, plan_cluster)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.scope import select_pods
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.stages import STAGES
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import CLUSTER_STORE_ARGSPEC, get_store, store_options

# The cluster: data (cluster), else the store's (a file, cluster_state, or the Kubernetes API). Given data wins over
# the store options rather than conflicting with them: they may come from a play's module_defaults for the
# cluster_store group, and a play that read the cluster itself (cluster_volume_info) plans what it read.
REQUIRED_IF = [("cluster_source", "file", ("cluster_state", "cluster"), True)]
DEFAULT_TABLE_ROWS = 100


def argspec():
    return dict(
        CLUSTER_STORE_ARGSPEC,
        cluster=dict(type="dict"),
        node_facts=dict(type="dict"),
        force_detach=dict(type="bool", default=True),
        max_wait_for_unmount=dict(type="int", default=360),
        known_drivers=dict(type="list", elements="str"),
        scope=dict(type="str"),
        max_teardown_fraction=dict(type="float", default=DEFAULT_MAX_TEARDOWN_FRACTION),
        max_teardown_count=dict(type="int", default=DEFAULT_MAX_TEARDOWN_COUNT),
        allow_mass_teardown=dict(type="bool", default=False),
        output=dict(type="str", default="full", choices=list(OUTPUTS) + ["record"]),
        stage=dict(type="str", default="all", choices=list(STAGES)),  # plan/stages.py: a sliced run's side
        table_rows=dict(type="int", default=DEFAULT_TABLE_ROWS),
        table_hint=dict(type="str", default=MORE_HINT),
        record_dir=dict(type="path"),
        # the run's cluster_run_lock result: for the Kubernetes API store, the record's ConfigMaps go in its Lease's
        # namespace (the one the store keeps its own objects in)
        run_lock=dict(type="dict"),
        # the nodes' driver_options (node_args.LOCK_SPEC): a loop PV naming a pool not in loop.kubevol.io's pools is
        # blocked before any node; loop_pools is its deprecated spelling of those pools
        driver_options=dict(type="dict", default={}),
        # the inventory's hostnames (the role: groups['all']): a driver's controller host must be one of them
        inventory_hosts=dict(type="list", elements="str"),
        loop_pools=dict(type="list", elements="str", removed_in_version="2.0.0",
                        removed_from_collection="kubevol.volumes"),
        words=dict(type="str", default=words.MODULE, choices=list(words.WORDS)),  # common/words.py
        # the deletion guard (plan/rules_delete.py): at most this many DeleteVolume in one run, unless allowed
        max_volume_deletions=dict(type="int", default=DEFAULT_MAX_VOLUME_DELETIONS),
        allow_mass_deletion=dict(type="bool", default=False),
        # an earlier plan result (output=record) to plan again with its options, provisioning nothing: the reconcile
        # role's plan after its provisioning (plan/replan.py)
        again=dict(type="dict"),
    )


def plan_driver_options(params):
    """The plan's driver options, checked (common/driver_options.py), with the deprecated loop_pools folded in:
    {driver_options, loop_pools} as PlanOptions takes them (loop_pools: loop.kubevol.io's pools)."""
    options = driver_opts.validate(driver_opts.with_loop_pools_alias(params.get("driver_options"),
                                                                     params.get("loop_pools")))
    return {"loop_pools": tuple(driver_opts.loop_pools(options)), "driver_options": options}


def record_dir(params, check_mode, local_tmp):
    """Where output=record writes the plan (run/plan_record.py): ``record_dir`` when given; else, outside check mode,
    where the run's later steps and the other slices of a sliced run read it: beside the state file for a file store
    (plan_record.default_dir), as ConfigMaps in the run lock's namespace (``k8s:<namespace>``) for the Kubernetes
    API store; else ``local_tmp``'s kubevol-plans, on the controller: check mode writes nothing beside the cluster's
    state or into the cluster (a read-only state directory or a user who may only read must not fail a check)."""
    if params.get("record_dir"):
        return params["record_dir"]
    if not check_mode and params["cluster"] is None and params["cluster_source"] == "file" and params["cluster_state"]:
        return plan_record.default_dir(params["cluster_state"])
    if not check_mode and params["cluster"] is None and params["cluster_source"] == "kubernetes":
        return "k8s:" + ((params.get("run_lock") or {}).get("lease_namespace") or DEFAULT_LEASE_NAMESPACE)
    return os.path.join(local_tmp, "kubevol-plans")


def record_result(result, handle, rows, hint, params=None):
    """The result of output=record: the record's handle, the counts, what the role prints, never the plan; and the
    options it was made with (plan/replan.py)."""
    shaped = {"changed": False, "record": handle, "summary": result.get("summary"),
              "counts": {"steps": len(result.get("plan") or ()), "blocked": len(result.get("blocked") or ()),
                         "pending": len(result.get("pending") or ()), "nodes": len(result.get("by_node") or ()),
                         "provisioning": len(result.get("provisioning") or ()),
                         "deletions": len(result.get("deletions") or ())},
              "table": table_lines(result, rows, hint or MORE_HINT), "options": replan.remembered(params or {})}
    for key in ("node_errors", "warnings", "nodes_out_of_service"):
        if key in result:
            shaped[key] = result[key]
    return shaped


def run(params, now, keep_alive=None, check_mode=False, local_tmp=None):
    """Load, plan, and return the module result (changed is always false: this only reads), shaped for
    ``output`` (plan_text.shape). With node facts, steps on nodes that have none (not in the play) are warned about.

    The cyclic GC stays paused throughout: everything built is acyclic, and with a big cluster in memory each
    collection walks all of it again (docs/performance.md). ``keep_alive``: a list that keeps the parsed cluster
    and the full plan, for a caller in a process that exits right after (the action plugin's worker), where
    freeing them one object at a time is work nobody needs; such a process
    also leaves what it built out of the GC's reach when it re-enables it (cluster.gc_paused's freeze)."""
    with gc_paused(freeze=keep_alive is not None):
        return _run(params, now, keep_alive, check_mode, local_tmp or tempfile.gettempdir())


def _load(params):
    """(Cluster, the raw List or None) from the data given, the state file or the Kubernetes API."""
    if params["cluster"] is not None:
        return cluster_from_data(params["cluster"]), params["cluster"]
    store = get_store(params["cluster_source"], **store_options(params))  # refuses options of the other source
    if params["cluster_source"] == "file":
        # the raw List only for a scope (a JMESPath query over it); without one the file is read object by object
        return load_cluster_file(store.path, keep_list=bool((params["scope"] or "").strip()))
    try:
        data = store.load()
    finally:
        store.close()
    return cluster_from_data(data), data


def _run(params, now, keep_alive, check_mode, local_tmp):
    params = replan.with_earlier(params)  # the plan after provisioning: the first plan's options
    cluster, data = _load(params)
    selected = select_pods(data, params["scope"])
    scope = None if selected is None else frozenset("%s/%s" % key for key in selected)
    driver_options = plan_driver_options(params)
    known_drivers = known_drivers_of(params["known_drivers"], driver_options["driver_options"])
    options = PlanOptions(params["force_detach"], params["max_wait_for_unmount"], known_drivers, now,
                          params["max_teardown_fraction"], params["max_teardown_count"], params["allow_mass_teardown"],
                          stage=params.get("stage") or "all",
                          max_volume_deletions=params.get("max_volume_deletions", DEFAULT_MAX_VOLUME_DELETIONS),
                          allow_mass_deletion=bool(params.get("allow_mass_deletion")),
                          provisioning=params["provisioning"],
                          **driver_options)
    index = ClusterIndex(cluster)
    result = plan_cluster(index, params["node_facts"], options, scope)
    # the controller calls of drivers whose Controller service runs on a host of the inventory
    remote_controller.mark(result, driver_options["driver_options"], params.get("inventory_hosts"),
                           params["node_facts"], index.va_by_pair)
    if keep_alive is not None:
        keep_alive.append((data, index, result))
    result["changed"] = False
    result["blocked"] = blocked_once(result)  # each once, with the action it holds back
    if params["node_facts"] is not None:
        # nodes whose state could not be gathered: the plan blocks what needs them; the role fails the run with these
        result["node_errors"] = facts_errors(params["node_facts"], result["nodes_out_of_service"])
        # the run's nodes: its report lists these (and what the controller does for others), counts the rest
        result["run_nodes"] = sorted(node for node in params["node_facts"] if isinstance(node, str))
        warnings = nodes_outside(result, params["node_facts"])
        if warnings:
            result["warnings"] = list(result.get("warnings") or ()) + warnings
    output = params.get("output") or "full"
    rows = params.get("table_rows")
    rows = None if rows is None or rows <= 0 else rows
    if result["teardown_guard"]["tripped"]:
        # output=record refuses with the table (bounded), the blocked items and the guard's list, not the plan
        shaped = dict(shape(result, "table", rows), blocked=result["blocked"]) if output == "record" else \
            shape(result, output, rows)
        raise TeardownRefused(dict(shaped, teardown_guard=result["teardown_guard"]))
    if output == "record":
        # a file per node for the run's hosts only (those with node facts): no other node has a node task
        hosts = None if params["node_facts"] is None else list(params["node_facts"])
        where = record_dir(params, check_mode, local_tmp)
        # a record in the API gets a copy on this controller, which the run's own steps read (plan_record.write)
        local = os.path.join(local_tmp, "kubevol-plans") if where.startswith("k8s:") else None
        # a check-mode run's record in Ansible's local temporary directory is read by that run's steps alone: the
        # nodes outside its hosts in outline (plan_record_parts.py), with the node tasks the plan needs, for which
        # the run's start would otherwise read every step back
        outline = check_mode and not params.get("record_dir")
        handle = plan_record.write(result, where, nodes=hosts, connection=params, local_copy=local, outline=outline,
                                   tasks=executor.run_tasks(result.get("plan"))["sequence"] if outline else None)
        return record_result(result, handle, rows, params.get("table_hint"), params)
    return shape(result, output, rows, params.get("table_hint"))
