# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a sliced workflow run writes to the Kubernetes API at the envelope: the plan records (and the run lock) of
every job of one run of the AWX workflow (docs/fleet.md), counted at a fake API server, and, with --etcd, mirrored
into a real etcd to see what it keeps.

The cluster is bench_planner.generate's (5,000 nodes, 150,000 pods, 60,000 volumes at --scale 1: 90% of the
volumes attached where their pod runs, 10% to attach, 2% to grow). Every node reports the facts that status says
(each attached volume's device, global mount and pod mount). One workflow run is --slices node-stage jobs (AWX's
slicing: every N-th node by name, each job planning with its slice's facts, kubevol_stage=node), the attach/detach
stage (every node's facts, under the run lock), and the node stage again. The second node stage plans from the same
facts as the first (no node runs here): its records are the first's again, which is what a node stage whose nodes
did their work writes at most. Each job does in this process what its plan task and its last step do through the
API: plan (plan_task.run), write the record (run/plan_record.py, ConfigMaps in kube-system, as the role with
kubevol_cluster_source=kubernetes writes it; its copy on the controller is a disk write and not counted), prune the
older records, mark the record finished; the attach/detach stage takes and releases the run lock (a Lease). The
volumes' own objects (VolumeAttachments, node status) are not written: they are what Kubernetes' controllers write
for the same changes, and a steady run writes none.

Counted at the API server (tests/fakeapi, which refuses a ConfigMap over 1 MiB as kube-apiserver does): requests by
verb, the bytes of every request body (what is written), the objects created, the largest object (its JSON, as
sent), and what is left after the run. The goals: at most 8 MiB written per workflow run, no object over 1 MiB.

With --etcd (Debian's etcd-server: `apt-get install etcd-server`), each write the fake answers is mirrored into a real
etcd 3.4 on 127.0.0.1 as kube-apiserver with --storage-media-type=application/json would keep it (the object's JSON
under /registry/configmaps/<namespace>/<name>; protobuf, the default, keeps binaryData unencoded, so this is an upper
bound), and etcd's database size is read before, after the run, and after a compaction and defragmentation (what
kube-apiserver's compaction, every 5 minutes by default, lets etcd give back).

    .venv/bin/python bench/bench_record.py                      # scale 1, 10 slices (about 5 minutes, 2 GB of RAM)
    .venv/bin/python bench/bench_record.py --slices 20 --etcd --output bench/results/record.json
    .venv/bin/python bench/bench_record.py --collection /tmp/main-export   # the same bench on another checkout

--cluster FILE reuses a cluster file (written there when missing).
"""

from __future__ import print_function

import argparse
import base64
import gc
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
NAMESPACE = "kube-system"
TOKEN = "bench-token"
GOAL_BYTES = 8 * 1024 * 1024
MAX_OBJECT = 1024 * 1024
DRIVER = "loop.kubevol.io"


def log(msg):
    print(msg, flush=True)


def use_collection(path):
    """Import kubevol.volumes from ``path`` (default: this checkout, through tests/conftest.py's link)."""
    sys.path.insert(0, os.path.join(ROOT, "tests"))  # fakeapi
    if path:
        top = tempfile.mkdtemp(prefix="kubevol-bench-collection-")
        os.makedirs(os.path.join(top, "ansible_collections", "kubevol"))
        os.symlink(os.path.abspath(path), os.path.join(top, "ansible_collections", "kubevol", "volumes"))
        sys.path.insert(0, top)
    else:
        importlib.import_module("conftest")


def envelope_facts(nodes, pairs, names):
    """The facts of the nodes ``names`` of bench_planner.generate(scale)'s cluster (``nodes`` nodes, ``pairs``
    volumes), as node_volume_info reports them: volume v (v % 10 != 0) attached to node v % nodes, staged, and
    mounted into pod v there."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name
    wanted = set(names)
    facts = dict((n, {"node_name": n, "reachable": True, "error": None, "devices": [], "global_mounts": [],
                      "pod_mounts": []}) for n in names)
    for v in range(pairs):
        node = "node-%d" % (v % nodes)
        if node not in wanted or not v % 10:
            continue
        pv, unique, device = "pv-%d" % v, unique_volume_name(DRIVER, "pv-%d.img" % v), "/dev/loop%d" % v
        one = facts[node]
        one["devices"].append({"unique_volume_name": unique, "driver": DRIVER, "volume_handle": pv + ".img",
                               "device": device, "size_bytes": (1 + v % 8) << 30, "read_only": False})
        one["global_mounts"].append({
            "plugin": "kubernetes.io/csi", "unique_volume_name": unique, "driver": DRIVER, "volume_handle": pv + ".img",
            "pv_name": pv, "path": "/var/lib/kubelet/plugins/kubernetes.io/csi/%s/%064x/globalmount" % (DRIVER, v),
            "mounted": True, "device": device, "fs_type": "ext4", "fs_size_bytes": None, "read_only": False,
            "foreign": False, "uncertain": None, "unsafe": False})
        one["pod_mounts"].append({
            "plugin": "kubernetes.io/csi", "pod_uid": "pod-uid-%d" % v, "pv_name": pv, "mode": "Filesystem",
            "path": "/var/lib/kubelet/pods/pod-uid-%d/volumes/kubernetes.io~csi/%s/mount" % (v, pv), "mounted": True,
            "read_only": False, "device": device, "unique_volume_name": unique, "driver": DRIVER, "foreign": False,
            "uncertain": None, "unsafe": False, "ephemeral": False})
    return facts


class Etcd:
    """A real etcd 3.4 (Debian's etcd-server) on 127.0.0.1, through its v3 JSON gateway."""

    def __init__(self, binary="etcd"):
        self.dir = tempfile.mkdtemp(prefix="kubevol-bench-etcd-")
        self.proc = None
        self.binary = binary
        self.url = None

    def start(self):
        import socket
        ports = []
        for _n in range(2):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                ports.append(probe.getsockname()[1])
        self.url = "http://127.0.0.1:%d" % ports[0]
        self.proc = subprocess.Popen(
            [self.binary, "--data-dir", os.path.join(self.dir, "data"), "--listen-client-urls", self.url,
             "--advertise-client-urls", self.url, "--listen-peer-urls", "http://127.0.0.1:%d" % ports[1],
             "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % ports[1],
             "--initial-cluster", "default=http://127.0.0.1:%d" % ports[1], "--max-request-bytes", "1572864"],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "etcd.log"), "w"))
        for _attempt in range(100):
            try:
                self.status()
                return self
            except OSError:
                time.sleep(0.1)
        raise SystemExit("etcd did not start: see %s" % os.path.join(self.dir, "etcd.log"))

    def call(self, path, body):
        request = urllib.request.Request(self.url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return json.loads(answer.read().decode())

    @staticmethod
    def _b64(text):
        return base64.b64encode(text.encode()).decode()

    def put(self, key, value):
        self.call("/v3/kv/put", {"key": self._b64(key), "value": base64.b64encode(value).decode()})

    def delete(self, key):
        self.call("/v3/kv/deleterange", {"key": self._b64(key)})

    def status(self):
        found = self.call("/v3/maintenance/status", {})
        return {"db_size": int(found.get("dbSize", 0)), "revision": int(found["header"]["revision"])}

    def compact_and_defragment(self):
        self.call("/v3/kv/compaction", {"revision": str(self.status()["revision"]), "physical": True})
        self.call("/v3/maintenance/defragment", {})

    def stop(self):
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(30)
        shutil.rmtree(self.dir, ignore_errors=True)


def counting_api(etcd=None):
    """The fake API server, counting each request's body and mirroring each answered write into ``etcd``."""
    from fakeapi import FakeApiServer

    class CountingApi(FakeApiServer):
        def __init__(self):
            super().__init__(tokens=(TOKEN,))
            self.sent = []  # (method, path, status, body bytes)

        def _kept(self):
            return dict((key, obj) for key, obj in self.objects.items() if key[0] in ("configmaps", "leases"))

        def handle(self, method, raw_path, headers, body, peer_cert):
            before = self._kept() if etcd is not None and method != "GET" else None
            status, data = super().handle(method, raw_path, headers, body, peer_cert)
            self.sent.append((method, raw_path.split("?")[0], status, int(headers.get("Content-Length") or 0)))
            if before is not None and status < 300:
                with self.lock:
                    after = self._kept()
                for key in set(before) - set(after):
                    etcd.delete("/registry/%s/%s/%s" % key)
                for key, obj in after.items():
                    if before.get(key) is not obj:
                        etcd.put("/registry/%s/%s/%s" % key, json.dumps(obj).encode())
            return status, data

    return CountingApi()


def counts(api, since):
    """What the requests since index ``since`` wrote."""
    out = {"requests": 0, "by_verb": {}, "bytes": 0, "created": 0, "largest": 0}
    for method, _path, status, size in api.sent[since:]:
        out["requests"] += 1
        verb = method if method != "DELETE" or not _path.endswith("configmaps") else "DELETE (collection)"
        out["by_verb"][verb] = out["by_verb"].get(verb, 0) + 1
        if method in ("POST", "PUT", "PATCH"):
            out["bytes"] += size
            out["largest"] = max(out["largest"], size)
            out["created"] += method == "POST" and status == 201
    return out


def jobs(nodes, slices):
    """The workflow's jobs: (label, stage, hosts)."""
    names = sorted("node-%d" % i for i in range(nodes))  # AWX orders the hosts by name
    cut = [names[k::slices] for k in range(min(slices, len(names)))]
    out = [("node stage 1, slice %d/%d" % (k + 1, len(cut)), "node", hosts) for k, hosts in enumerate(cut)]
    out.append(("attach/detach stage", "attach_detach", names))
    out += [("node stage 2, slice %d/%d" % (k + 1, len(cut)), "node", hosts) for k, hosts in enumerate(cut)]
    return out


def write_cluster(path, scale):
    """bench_planner.generate's cluster as a JSON file, in a process of its own: bench_planner imports this checkout's
    collection, which must not be the one measured when --collection names another."""
    code = ("import json, sys; sys.path.insert(0, %r); from bench_planner import generate; "
            "json.dump(generate(%d), open(%r, 'w'))" % (HERE, scale, path))
    subprocess.run([sys.executable, "-c", code], check=True)


def measure(args, path):
    from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_task
    from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import utc_now
    from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record, run_lock_task

    if not os.path.exists(path):
        log("writing the cluster file %s ..." % path)
        write_cluster(path, args.scale)
    with open(path) as handle:
        cluster = json.load(handle)
    nodes, pairs = 5000 * args.scale, 60000 * args.scale
    etcd = Etcd(args.etcd_binary).start() if args.etcd else None
    api = counting_api(etcd).start()
    connection = {"cluster_source": "kubernetes", "host": api.url, "api_key": TOKEN}
    defaults = dict((key, spec.get("default")) for key, spec in plan_task.argspec().items())
    lock = dict((key, spec.get("default")) for key, spec in run_lock_task.argspec().items())
    lock.update(connection, lease_namespace=NAMESPACE, timeout=0)
    rows, started = [], None
    try:
        before = etcd.status() if etcd else None
        started = time.monotonic()
        for label, stage, hosts in jobs(nodes, args.slices):
            mark = len(api.sent)
            taken = run_lock_task.run(dict(lock, state="acquired")) if stage == "attach_detach" else None
            params = dict(defaults, cluster=cluster, node_facts=envelope_facts(nodes, pairs, hosts), stage=stage,
                          inventory_hosts=hosts, allow_mass_teardown=True, table_rows=100)
            result = plan_task.run(params, utc_now())
            handle = plan_record.write(result, "k8s:" + NAMESPACE, nodes=hosts, connection=connection)
            plan_record.finish(handle, connection)
            if taken:
                run_lock_task.run(dict(lock, state="released", holder=taken["holder"]))
            row = dict(counts(api, mark), job=label, steps=len(result["plan"]), blocked=len(result["blocked"]))
            rows.append(row)
            log("%-28s %6d steps %6d blocked: %4d requests, %8.1f KiB written, %3d objects, largest %6.1f KiB"
                % (label, row["steps"], row["blocked"], row["requests"], row["bytes"] / 1024.0, row["created"],
                   row["largest"] / 1024.0))
            del result
            gc.collect()
        total = counts(api, 0)
        left = [obj for key, obj in api.objects.items() if key[0] == "configmaps"]
        summary = {"scale": args.scale, "nodes": nodes, "slices": args.slices, "jobs": rows, "total": total,
                   "seconds": round(time.monotonic() - started, 1),
                   "left": {"objects": len(left), "bytes": sum(len(json.dumps(obj)) for obj in left)},
                   "goal_bytes_met": total["bytes"] <= GOAL_BYTES, "goal_object_met": total["largest"] <= MAX_OBJECT}
        if etcd:
            after = etcd.status()
            etcd.compact_and_defragment()
            summary["etcd"] = {"before": before, "after_run": after, "after_compaction": etcd.status()}
        return summary
    finally:
        api.stop()
        if etcd:
            etcd.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=1)
    parser.add_argument("--slices", type=int, default=10, help="the node stage's job_slice_count (default 10)")
    parser.add_argument("--cluster", help="the cluster file (written when missing; default: a temporary one)")
    parser.add_argument("--etcd", action="store_true", help="mirror the writes into a real etcd (Debian's etcd)")
    parser.add_argument("--etcd-binary", default="etcd")
    parser.add_argument("--collection", help="the kubevol.volumes checkout to measure (default: this one)")
    parser.add_argument("--output", help="also write the figures as JSON to this file")
    args = parser.parse_args()
    use_collection(args.collection)
    work = tempfile.mkdtemp(prefix="kubevol-bench-record-")
    try:
        summary = measure(args, args.cluster or os.path.join(work, "cluster-x%d.json" % args.scale))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = summary["total"]
    log("workflow run: %d requests (%s), %.2f MiB written (goal <= 8 MiB: %s), %d objects created, largest %.1f KiB "
        "(goal <= 1 MiB: %s); left after the run: %d objects, %.2f MiB"
        % (total["requests"], ", ".join("%s %d" % kv for kv in sorted(total["by_verb"].items())),
           total["bytes"] / 1048576.0, "met" if summary["goal_bytes_met"] else "NOT met", total["created"],
           total["largest"] / 1024.0, "met" if summary["goal_object_met"] else "NOT met", summary["left"]["objects"],
           summary["left"]["bytes"] / 1048576.0))
    if "etcd" in summary:
        found = summary["etcd"]
        log("etcd: database %.2f MiB before, %.2f MiB after the run (%d revisions), %.2f MiB after compaction and "
            "defragmentation" % (found["before"]["db_size"] / 1048576.0, found["after_run"]["db_size"] / 1048576.0,
                                 found["after_run"]["revision"] - found["before"]["revision"],
                                 found["after_compaction"]["db_size"] / 1048576.0))
    if args.output:
        with open(args.output, "w") as handle:
            json.dump(summary, handle, indent=1)


if __name__ == "__main__":
    main()
