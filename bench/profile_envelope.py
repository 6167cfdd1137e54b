# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reconcile role's controller side at the envelope, in one process: the plan task (volume_reconcile_plan
output=record, as the role calls it in check mode), the start step (reconcile_run in check mode) and the record
step after each node task it lists (the last one reads the plan back and gives the run's summary), each timed, with
the size of what each hands back to Ansible and, for the record step, the count of its values (Ansible's register
templates the result value by value in the task's worker); with --profile, a cProfile of them.

The node facts are three empty reachable nodes (node-0, node-1, node-2), as bench_envelope.py maps its three test
nodes, and each node task's results say that every volume of theirs was done; the cluster file is
bench_planner.generate's, written first when it does not exist (``--scale``).

    .venv/bin/python bench/profile_envelope.py /tmp/cluster-x1.json [--scale 1] [--profile] [--top 40]
"""

from __future__ import print_function

import argparse
import cProfile
import importlib
import json
import os
import pstats
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
importlib.import_module("conftest")  # creates the ansible_collections link

from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_task  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import utc_now  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run import reconcile_run_task  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record, plan_view  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import unique_name_of  # noqa: E402

NODES = ("node-0", "node-1", "node-2")


def defaults(spec):
    return dict((key, value.get("default")) for key, value in spec.items())


def facts(node):
    return {"node_name": node, "reachable": True, "error": None, "devices": [], "global_mounts": [], "pod_mounts": []}


def done(planned, params, task):
    """{node: its node_phases result} of a node task in which the three nodes did every volume of theirs."""
    results = {}
    for node in NODES:
        share = plan_record.node_plan_of(planned, node, params)
        ran = {}
        for phase in task.get("phases") or ():
            items = plan_view.phase_items(share, phase, node)
            if items:
                ran[phase] = {"changed": True, "volumes": [
                    {"unique_volume_name": unique_name_of(item), "pv_name": item.get("pv_name")} for item in items]}
        results[node] = {"changed": bool(ran), "phase_results": ran}
    return results


def values(data):
    """The values in ``data``, containers included: what Ansible's register templates one by one."""
    if isinstance(data, dict):
        return 1 + sum(values(value) for value in data.values())
    if isinstance(data, list):
        return 1 + sum(values(value) for value in data)
    return 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cluster_file")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--scale", type=int, default=1, help="the cluster written when the file does not exist")
    args = parser.parse_args()
    if not os.path.exists(args.cluster_file):
        sys.path.insert(0, HERE)
        from bench_planner import generate  # pylint: disable=import-outside-toplevel
        with open(args.cluster_file, "w") as handle:
            json.dump(generate(args.scale), handle)
    work = tempfile.mkdtemp(prefix="kubevol-profile-")  # the plan records: removed at the end, also on failure
    try:
        measure(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(args, work):
    params = dict(defaults(plan_task.argspec()), cluster_source="file", cluster_state=args.cluster_file,
                  node_facts=dict((node, facts(node)) for node in NODES), output="record", table_rows=50,
                  inventory_hosts=list(NODES))  # the record in work/kubevol-plans, as check mode writes it
    profiler = cProfile.Profile() if args.profile else None
    times = {}
    start = time.perf_counter()
    if profiler:
        profiler.enable()
    planned = plan_task.run(params, utc_now(), keep_alive=[], check_mode=True, local_tmp=work)
    times["plan_task_s"] = time.perf_counter() - start
    start = time.perf_counter()
    text = json.dumps(planned)
    times["plan_result_json_s"] = time.perf_counter() - start
    times["plan_result_kb"] = len(text) / 1e3
    times["plan_warnings"] = len(planned.get("warnings") or ())
    run_params = dict(defaults(reconcile_run_task.argspec()), cluster_source="file", cluster_state=args.cluster_file,
                      plan=json.loads(text), plan_shown=True)
    start = time.perf_counter()
    started = reconcile_run_task.run(run_params, check_mode=True, keep_alive=[])  # as the action plugin calls it
    times["start_step_s"] = time.perf_counter() - start
    text = json.dumps(started)
    times["start_result_kb"] = len(text) / 1e3
    state = json.loads(text)
    for task in started.get("tasks") or ():
        if profiler:
            profiler.disable()  # (the nodes' results, and the copy of the state Ansible hands on, are not the step's)
        results = done(run_params["plan"], run_params, task)
        if profiler:
            profiler.enable()
        start = time.perf_counter()
        state = reconcile_run_task.run(dict(run_params, after=task["name"], state=state, results=results),
                                       check_mode=True, keep_alive=[])
        times["record_%s_s" % task["name"]] = time.perf_counter() - start
        if profiler:
            profiler.disable()
        text = json.dumps(state)
        times["record_%s_result_kb" % task["name"]] = len(text) / 1e3
        times["record_%s_result_values" % task["name"]] = values(state)
        state = json.loads(text)
        if profiler:
            profiler.enable()
    if profiler:
        profiler.disable()
    # the run's summary (its report's lines): the start step's when the plan has no node task, else the last step's
    times["summary_lines"] = len((state.get("summary") or {}).get("lines") or ())
    print(json.dumps(dict((k, round(v, 3)) for k, v in times.items())))
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
