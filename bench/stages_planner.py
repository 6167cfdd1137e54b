# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's path at the envelope, stage by stage, in CPU seconds against json.load of the same file in the same
process: the ad-hoc call's stages (plan_task.run with output=summary), each as plan_task and plan_cluster make it.

CPU time, not wall time, so that other work on a shared machine counts less; each figure is the best of --repeat
rounds, and each round's ratio (stages / json.load) is printed too. A big file's second part is read by a child
process (cluster/load_split.py): its CPU counts in load_model as this process's does, and load_model_wall is the
stage's wall time, which the child shortens. The cluster file is bench_planner.generate's,
written first when it does not exist (``--scale``).

    .venv/bin/python bench/stages_planner.py /tmp/cluster-x1.json [--scale 1] [--repeat 3]
"""

from __future__ import print_function

import argparse
import gc
import importlib
import json
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
importlib.import_module("conftest")  # creates the ansible_collections link

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (  # noqa: E402
    ClusterIndex, gc_paused)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.load import load_cluster_file  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_task  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.actual_state import build_actual_state  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import (  # noqa: E402
    build_desired_state, summarize_desired)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.plan_text import shape  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan, utc_now  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.storage_plan import storage_plan  # noqa: E402


def cpu_clock():
    """This process's CPU seconds and those of its children that have ended (the load's child)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def one_round(path):
    """{stage: CPU seconds} of one round, and json.load's; load_model_wall in seconds."""
    times = {}
    clock = cpu_clock
    gc.collect()
    start = clock()
    with open(path) as handle:  # as bench_planner.py's goal measures it: the collector on
        json.load(handle)
    times["json_load"] = clock() - start
    gc.collect()
    driver_options = plan_task.plan_driver_options({"driver_options": {}, "loop_pools": None})  # the defaults
    options = PlanOptions(known_drivers=plan_task.known_drivers_of(None, driver_options["driver_options"]),
                          now=utc_now(), **driver_options)
    keep = []
    with gc_paused():
        start, wall = clock(), time.perf_counter()
        cluster, _data = load_cluster_file(path, keep_list=False)
        times["load_model"] = clock() - start
        times["load_model_wall"] = time.perf_counter() - wall
        start = clock()
        index = ClusterIndex(cluster)
        times["index"] = clock() - start
        start = clock()
        storage = storage_plan(index, None, options, None)
        times["storage"] = clock() - start
        start = clock()
        desired = build_desired_state(index, options.known_drivers, None, options.loop_pools, options.driver_options,
                                      storage.provisioning.claims)
        times["desired"] = clock() - start
        start = clock()
        actual = build_actual_state(index, None, options.known_drivers)
        times["actual"] = clock() - start
        start = clock()
        result = plan(desired, actual, index, options, storage)
        result["desired"] = summarize_desired(desired)
        times["plan"] = clock() - start
        start = clock()
        shape(dict(result, changed=False), "summary", 100)
        times["summary"] = clock() - start
        keep.append((cluster, index, desired, actual, result))
    times["total"] = sum(value for key, value in times.items() if key not in ("json_load", "load_model_wall"))
    times["total_wall_load"] = times["total"] - times["load_model"] + times["load_model_wall"]
    del keep[:]
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cluster_file")
    parser.add_argument("--scale", type=int, default=1, help="the cluster written when the file does not exist")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not os.path.exists(args.cluster_file):
        sys.path.insert(0, HERE)
        from bench_planner import generate  # pylint: disable=import-outside-toplevel
        with open(args.cluster_file, "w") as handle:
            json.dump(generate(args.scale), handle)
    rounds = []
    for _round in range(args.repeat):
        rounds.append(one_round(args.cluster_file))
        print(json.dumps({"round_over_json_load": round(rounds[-1]["total"] / rounds[-1]["json_load"], 2),
                          "cpu_s": dict((k, round(v, 3)) for k, v in rounds[-1].items())}))
        sys.stdout.flush()
    best = dict((key, min(r[key] for r in rounds)) for key in rounds[0])
    print(json.dumps({"best_cpu_s": dict((k, round(v, 3)) for k, v in best.items()),
                      "best_total_over_best_json_load": round(best["total"] / best["json_load"], 2),
                      "load_1min": round(os.getloadavg()[0], 1)}))


if __name__ == "__main__":
    main()
