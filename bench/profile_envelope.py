# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reconcile role's controller side at the envelope, in one process: the plan task (volume_reconcile_plan
output=record, as the role calls it in check mode) and the start step (reconcile_run in check mode: the run's
summary), each timed, with the size of what each hands back to Ansible; with --profile, a cProfile of both.

The node facts are three empty reachable nodes (node-0, node-1, node-2), as bench_envelope.py maps its three test
nodes; the cluster file is bench_planner.generate's, written first when it does not exist (``--scale``).

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

NODES = ("node-0", "node-1", "node-2")


def defaults(spec):
    return dict((key, value.get("default")) for key, value in spec.items())


def facts(node):
    return {"node_name": node, "reachable": True, "error": None, "devices": [], "global_mounts": [], "pod_mounts": []}


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
                  record_dir=os.path.join(work, "plans"), inventory_hosts=list(NODES))
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
    if profiler:
        profiler.disable()
    text = json.dumps(started)
    times["start_result_kb"] = len(text) / 1e3
    # the start step's summary (its table's lines), where the step gives one
    times["summary_lines"] = len((started.get("summary") or {}).get("lines") or ())
    print(json.dumps(dict((k, round(v, 3)) for k, v in times.items())))
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
