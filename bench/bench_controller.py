#!/usr/bin/env python
"""The reconcile role's controller-side work at 10, 100 and 1,000 hosts (simulated), to show it grows linearly.

For each host count H: a cluster of H nodes with 10 volumes and 10 pods each, cold (every node reachable,
nothing attached), written as a JSON file. Timed, in one process, as the role runs them:

- plan: volume_reconcile_plan's call (module_utils/plan_task.run: load the file, plan);
- start: reconcile_run after the plan (module_utils/reconcile_run_task.run: the run's state, and the setup's
  attach intents written to the file);
- slices: every host's node_plan slice and the setup work node_phases cuts from it (executor.node_slice,
  executor.phase_work for attach, mount), as each host's worker does;
- outcome: reconcile_run after the setup over every host's (simulated, successful) node results, once: the run's
  state (executor.task_outcome inside), its records written to the file, and the run's summary;
- converged: the next run's plan over that file, with node facts that report every volume attached and
  mounted (the no-op every later run pays: nothing to do, but every mount checked, in_use_repairs included).

The node work itself is not simulated: it runs on the nodes, in parallel. Reported: seconds per stage and
microseconds per host; linear growth means the per-host figure stays flat as H grows.

    .venv/bin/python bench/bench_controller.py            # 10, 100, 1000 hosts
"""

from __future__ import print_function

import argparse
import gc
import importlib
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), ".build", "collections"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
importlib.import_module("conftest")  # creates the ansible_collections link

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_task
from ansible_collections.kubevol.volumes.plugins.module_utils.run import reconcile_run_task  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import utc_now  # noqa: E402

DRIVER = "loop.kubevol.io"
MANAGED = {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}
SETUP = ["attach", "mount"]


def cluster(hosts, per_host):
    items = [{"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
              "spec": {"attachRequired": True}}]
    for h in range(hosts):
        node = "node-%d" % h
        items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node, "annotations": MANAGED},
                      "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        for v in range(per_host):
            pv, claim, uid, ns = "pv-%d-%d" % (h, v), "data-%d-%d" % (h, v), "uid-%d-%d" % (h, v), "ns-%d" % (h % 20)
            items.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
                          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                   "claimRef": {"namespace": ns, "name": claim, "uid": uid},
                                   "csi": {"driver": DRIVER, "volumeHandle": pv + ".img", "fsType": "ext4"}}})
            items.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                          "metadata": {"namespace": ns, "name": claim, "uid": uid},
                          "spec": {"volumeName": pv, "resources": {"requests": {"storage": "1Gi"}}},
                          "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}})
            items.append({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"namespace": ns, "name": "app-%d-%d" % (h, v), "uid": "pod-%d-%d" % (h, v)},
                          "spec": {"nodeName": node, "volumes": [{"name": "d", "persistentVolumeClaim":
                                                                  {"claimName": claim}}],
                                   "containers": [{"name": "c", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}]},
                          "status": {"phase": "Running"}})
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}  # kubectl's order


def node_facts(hosts, per_host=0):
    """Every host reachable; with per_host, each of its volumes attached, staged and mounted into its pod."""
    facts = {}
    for h in range(hosts):
        devices, global_mounts, pod_mounts = [], [], []
        for v in range(per_host):
            pv = "pv-%d-%d" % (h, v)
            unique = unique_volume_name(DRIVER, pv + ".img")
            devices.append({"unique_volume_name": unique, "driver": DRIVER, "volume_handle": pv + ".img",
                            "device": "/dev/loop%d" % v, "size_bytes": 1 << 30, "read_only": False})
            global_mounts.append({"unique_volume_name": unique, "driver": DRIVER, "volume_handle": pv + ".img",
                                  "pv_name": pv, "path": "/g/" + pv, "mounted": True, "device": "/dev/loop%d" % v,
                                  "fs_type": "ext4", "fs_size_bytes": None, "read_only": False})
            pod_mounts.append({"pod_uid": "pod-%d-%d" % (h, v), "pv_name": pv, "mode": "Filesystem",
                               "path": "/p/%d/%s" % (v, pv), "mounted": True, "read_only": False,
                               "device": "/dev/loop%d" % v, "unique_volume_name": unique})
        facts["node-%d" % h] = {"node_name": "node-%d" % h, "reachable": True, "devices": devices,
                                "global_mounts": global_mounts, "pod_mounts": pod_mounts}
    return facts


def validated(spec, **args):
    """The arguments with their defaults, as the action plugins validate them."""
    result = ArgumentSpecValidator(spec).validate(args)
    assert not result.error_messages, result.error_messages
    return result.validated_parameters


def measure(hosts, per_host, workdir):
    path = os.path.join(workdir, "cluster-%d.json" % hosts)
    with open(path, "w") as handle:
        json.dump(cluster(hosts, per_host), handle, separators=(",", ":"))
    gc.collect()
    times = {}
    start = time.perf_counter()
    result = plan_task.run(validated(plan_task.argspec(), cluster_state=path, node_facts=node_facts(hosts)),
                           utc_now())
    times["plan"] = time.perf_counter() - start

    start = time.perf_counter()
    state = reconcile_run_task.run(validated(reconcile_run_task.argspec(), cluster_state=path, plan=result))
    times["start"] = time.perf_counter() - start

    start = time.perf_counter()
    host_results = {}
    for h in range(hosts):
        node = "node-%d" % h
        view = executor.PlanView(executor.node_slice(result, node))
        phase_results = {}
        for phase in SETUP:
            items = executor.phase_work(view, phase, node)[0]
            phase_results[phase] = {"changed": True, "volumes": [
                dict(unique_volume_name=unique_volume_name(i["driver"], i["volume_handle"]),
                     device_path="/dev/loop%d" % n) for n, i in enumerate(items)]}
        host_results[node] = {"changed": True, "phase_results": phase_results}
    times["slices"] = time.perf_counter() - start

    start = time.perf_counter()
    outcome = reconcile_run_task.run(validated(reconcile_run_task.argspec(), cluster_state=path, plan=result,
                                               after="setup", state=state, results=host_results))
    times["outcome"] = time.perf_counter() - start

    converged_facts = node_facts(hosts, per_host)
    start = time.perf_counter()
    again = plan_task.run(validated(plan_task.argspec(), cluster_state=path, node_facts=converged_facts), utc_now())
    times["converged"] = time.perf_counter() - start
    os.unlink(path)
    assert not again["plan"] and not again["blocked"] and not again["in_use_repairs"], (
        again["plan"][:3], again["blocked"][:3], again["in_use_repairs"][:3])
    assert state["count"] == hosts * per_host and "summary" not in state, state["changes"][:3]
    assert not outcome["errors"] and outcome["count"] > 0 and "summary" in outcome, outcome["errors"][:3]
    row = {"hosts": hosts, "volumes": hosts * per_host, "steps": len(result["plan"]),
           "records": state["count"] + outcome["count"]}
    for stage, secs in times.items():
        row[stage + "_s"] = round(secs, 3)
        row[stage + "_us_per_host"] = round(secs / hosts * 1e6)
    row["total_s"] = round(sum(times.values()), 3)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, action="append", help="host counts (default: 10, 100, 1000)")
    parser.add_argument("--per-host", type=int, default=10, help="volumes (and pods) per host")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for hosts in args.hosts or [10, 100, 1000]:
            rows.append(measure(hosts, args.per_host, workdir))
            print(json.dumps(rows[-1]))
            sys.stdout.flush()
    print("| hosts | volumes | plan | start (intents written) | slices (all hosts) | outcome (records written) "
          "| converged plan | total | total per host |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %d | %d | %.3f s | %.3f s | %.3f s | %.3f s | %.3f s | %.3f s | %d us |" % (
            r["hosts"], r["volumes"], r["plan_s"], r["start_s"], r["slices_s"], r["outcome_s"], r["converged_s"],
            r["total_s"], r["total_s"] / r["hosts"] * 1e6))
    if len(rows) > 1:
        print("total x%d hosts / x%d hosts: %.1f (linear: %.0f)" % (
            rows[-1]["hosts"], rows[0]["hosts"], rows[-1]["total_s"] / rows[0]["total_s"],
            rows[-1]["hosts"] / rows[0]["hosts"]))


if __name__ == "__main__":
    main()
