# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark the planner against loading: 5,000 nodes, 150,000 pods, 60,000 PV/PVC pairs (x --scale).

Usage (from the repository root):
    .venv/bin/python bench/bench_planner.py            # scale 1 and 2 in one run
    .venv/bin/python bench/bench_planner.py --scale 2  # one scale only
    .venv/bin/python bench/bench_planner.py --scale 1 --ansible --summary-only   # the ad-hoc goal

--ansible also times `ansible localhost -m kubevol.volumes.volume_reconcile_plan` (output=full, and output=summary)
against `ansible localhost -m ping` and json.load of the same file, each the best of two. The goal
(docs/performance.md): (ad hoc with output=summary - ping) / json.load <= 1.5 (``goal_met``), on a quiet machine.

Load = JSON file -> model objects (json.load + cluster_from_data + ClusterIndex), GC paused as in
load_cluster_file. Peak memory is the process's max RSS (both scales in one process).
footprint_*: the planner's call as the ad-hoc worker makes it (plan_task.run, output=summary) in a new process,
with that process's wall and kernel time, page faults and peak RSS.
Plan = desired state + actual state + plan. Not a timed test: it prints figures.
"""

import argparse
import gc
import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), ".build", "collections"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
importlib.import_module("conftest")  # creates the ansible_collections link

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (  # noqa: E402
    ClusterIndex, cluster_from_data, gc_paused)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa

MANAGED = {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}


def generate(scale):
    """A steady cluster with some churn: most volumes attached, some to attach, detach and expand."""
    nodes, pods, pairs = 5000 * scale, 150000 * scale, 60000 * scale
    items = []
    attached = dict((i, []) for i in range(nodes))
    for v in range(pairs):
        pv, claim, uid = "pv-%d" % v, "claim-%d" % v, "pvc-uid-%d" % v
        ns = "ns-%d" % (v % 200)
        size = "%dGi" % (1 + v % 8)
        request = size if v % 50 else "%dGi" % (2 + v % 8)
        items.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
                      "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                               "volumeMode": "Filesystem",
                               "claimRef": {"namespace": ns, "name": claim, "uid": uid},
                               "csi": {"driver": "loop.kubevol.io", "volumeHandle": pv + ".img", "fsType": "ext4",
                                       "volumeAttributes": {"pool": "/var/lib/kubevol/pool"}}},
                      "status": {"phase": "Bound"}})
        items.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                      "metadata": {"namespace": ns, "name": claim, "uid": uid},
                      "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": pv,
                               "resources": {"requests": {"storage": request}}},
                      "status": {"phase": "Bound", "capacity": {"storage": size}}})
        if v % 10:  # 90% already attached where their pod runs
            attached[v % nodes].append(unique_volume_name("loop.kubevol.io", pv + ".img"))
    for p in range(pods):
        ns = "ns-%d" % (p % 200)
        node = "node-%d" % (p % nodes)
        spec = {"nodeName": node, "containers": [{"name": "app", "image": "app:1",
                                                  "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}]}],
                "volumes": [{"name": "tmp", "emptyDir": {}}]}
        if p < pairs:  # pod p uses claim p: it lands on node p % nodes, like the attachment above
            spec["volumes"].append({"name": "data", "persistentVolumeClaim": {"claimName": "claim-%d" % p}})
            spec["containers"][0]["volumeMounts"].append({"name": "data", "mountPath": "/data"})
        items.append({"apiVersion": "v1", "kind": "Pod",
                      "metadata": {"namespace": "ns-%d" % (p % 200) if p < pairs else ns, "name": "pod-%d" % p,
                                   "uid": "pod-uid-%d" % p},
                      "spec": spec, "status": {"phase": "Running",
                                               "containerStatuses": [{"name": "app", "state": {"running": {}}}]}})
    for i in range(nodes):
        items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-%d" % i, "annotations": MANAGED},
                      "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                             "volumesAttached": [{"name": n, "devicePath": ""} for n in attached[i]],
                                             "volumesInUse": attached[i]}})
    items.append({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "loop.kubevol.io"},
                  "spec": {"attachRequired": True}})
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}  # kubectl's order


def adhoc(argv):
    """Seconds of one ansible ad-hoc run on localhost (its output, the whole plan printed, is discarded)."""
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(os.path.dirname(HERE), ".build", "collections"))
    start = time.perf_counter()
    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost"] + argv, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if res.returncode != 0:
        raise SystemExit("ansible %s failed: %s" % (" ".join(argv), res.stderr[-2000:]))
    return time.perf_counter() - start


def fresh_json_load(path):
    """Seconds of json.load of ``path`` in a new Python process, less that process's start (best of two each): the
    doubling baseline, with a heap that starts empty as the ad-hoc module's worker's does. On a VM a page fault
    costs what the host charges, which varies from run to run (docs/performance.md), so the baseline is measured
    in the same run as what it is compared with."""
    def best(argv):
        times = []
        for _attempt in range(2):
            start = time.perf_counter()
            subprocess.run(argv, check=True)
            times.append(time.perf_counter() - start)
        return min(times)
    code = "import json, os, sys\n%s\nos._exit(0)"
    return (best([sys.executable, "-c", code % "json.load(open(sys.argv[1]))", path])
            - best([sys.executable, "-c", code % "", path]))


FOOTPRINT = """
import json, os, resource, sys, time
sys.path.insert(0, sys.argv[2])
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_task
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import utc_now
params = dict((key, spec.get("default")) for key, spec in plan_task.argspec().items())
params.update(cluster_state=sys.argv[1], output="summary")
start = time.perf_counter()
plan_task.run(params, utc_now(), keep_alive=[])
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall_s": round(time.perf_counter() - start, 2), "kernel_s": round(usage.ru_stime, 2),
                  "page_faults": usage.ru_minflt, "peak_rss_mb": usage.ru_maxrss // 1024}))
sys.stdout.flush()
os._exit(0)
"""


def footprint(path):
    """The planner's call as the ad-hoc worker makes it (plan_task.run, output=summary, a new process, its result kept
    alive), with that process's kernel time, page faults and peak resident size: on this VM the doubling follows the
    page faults (docs/performance.md)."""
    res = subprocess.run([sys.executable, "-c", FOOTPRINT, path, os.path.join(os.path.dirname(HERE), ".build", "collections")],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True)
    return dict(("footprint_" + key, value) for key, value in json.loads(res.stdout.strip().splitlines()[-1]).items())


GOAL = 1.5  # (ad hoc, output=summary, - ping) / json.load


def through_ansible(path, summary_only=False):
    """The goal's measure: the planner module through `ansible localhost -m`, minus an `ansible localhost -m
    ping`, against json.load of the same file (each the best of two)."""
    json_load = []
    for _attempt in range(2):
        gc.collect()
        start = time.perf_counter()
        with open(path) as handle:
            json.load(handle)
        json_load.append(time.perf_counter() - start)
    ping = min(adhoc(["-m", "ansible.builtin.ping"]) for _attempt in range(2))
    module = None if summary_only else min(
        adhoc(["-m", "kubevol.volumes.volume_reconcile_plan", "-a", "cluster_state=" + path]) for _attempt in range(2))
    # output=summary: the same load and plan, a result a person reads (counts and the first rows) instead of 50 MB
    summary = min(adhoc(["-m", "kubevol.volumes.volume_reconcile_plan", "-a", "cluster_state=%s output=summary" % path])
                  for _attempt in range(2))
    ratio = round((summary - ping) / min(json_load), 2)
    row = {"json_load_s": round(min(json_load), 2), "json_load_fresh_process_s": round(fresh_json_load(path), 2),
           "ping_s": round(ping, 2), "adhoc_summary_s": round(summary, 2),
           "adhoc_summary_minus_ping_over_json_load": ratio, "goal": GOAL, "goal_met": ratio <= GOAL}
    if module is not None:
        row.update(adhoc_plan_s=round(module, 2), adhoc_minus_ping_over_json_load=round((module - ping) / min(json_load), 2))
    return row


def measure(scale, workdir, ansible=False, summary_only=False):
    path = os.path.join(workdir, "cluster-x%d.json" % scale)
    with open(path, "w") as handle:
        json.dump(generate(scale), handle)
    size_mb = os.path.getsize(path) / 1e6
    extra = through_ansible(path, summary_only) if ansible else {}
    extra.update(footprint(path))
    gc.collect()
    start = time.perf_counter()
    with open(path) as handle, gc_paused():  # as load_cluster_file does
        data = json.load(handle)
    index = ClusterIndex(cluster_from_data(data))
    load = time.perf_counter() - start
    del data
    start = time.perf_counter()
    result = plan_cluster(index, None, PlanOptions())
    planned = time.perf_counter() - start
    os.unlink(path)
    row = {"scale": scale, "file_mb": round(size_mb, 1), "load_s": round(load, 2), "plan_s": round(planned, 2),
           "plan_over_load": round(planned / load, 2), "steps": len(result["plan"]),
           "result_mb": round(len(json.dumps(result, separators=(",", ":"))) / 1e6, 1),
           "blocked": len(result["blocked"]), "summary": result["summary"]}
    row.update(extra)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, action="append", help="cluster multiplier (default: 1 and 2)")
    parser.add_argument("--ansible", action="store_true",
                        help="also time `ansible localhost -m kubevol.volumes.volume_reconcile_plan` against "
                             "`ansible localhost -m ping` and json.load of the same file")
    parser.add_argument("--summary-only", action="store_true",
                        help="with --ansible, time the ad-hoc run with output=summary only (the goal's measure)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for scale in args.scale or [1, 2]:
            rows.append(measure(scale, workdir, args.ansible, args.summary_only))
            print(json.dumps(rows[-1]))
            sys.stdout.flush()
    if len(rows) > 1:
        print("plan time x%d / x%d: %.2f" % (rows[-1]["scale"], rows[0]["scale"], rows[-1]["plan_s"] / rows[0]["plan_s"]))
        print("planner in a new process x%d / x%d: wall %.2f, page faults %.2f, peak RSS %.2f" % (
            rows[-1]["scale"], rows[0]["scale"], rows[-1]["footprint_wall_s"] / rows[0]["footprint_wall_s"],
            rows[-1]["footprint_page_faults"] / float(rows[0]["footprint_page_faults"]),
            rows[-1]["footprint_peak_rss_mb"] / float(rows[0]["footprint_peak_rss_mb"])))
        if args.ansible and not args.summary_only:
            print("ad-hoc plan minus ping x%d / x%d: %.2f" % (
                rows[-1]["scale"], rows[0]["scale"], (rows[-1]["adhoc_plan_s"] - rows[-1]["ping_s"])
                / (rows[0]["adhoc_plan_s"] - rows[0]["ping_s"])))
            print("ad-hoc plan (output=summary) minus ping x%d / x%d: %.2f" % (
                rows[-1]["scale"], rows[0]["scale"], (rows[-1]["adhoc_summary_s"] - rows[-1]["ping_s"])
                / (rows[0]["adhoc_summary_s"] - rows[0]["ping_s"])))
            print("baseline: json.load in a fresh process x%d / x%d: %.2f" % (
                rows[-1]["scale"], rows[0]["scale"],
                rows[-1]["json_load_fresh_process_s"] / rows[0]["json_load_fresh_process_s"]))
    print("peak RSS: %.0f MB" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0))


if __name__ == "__main__":
    main()
