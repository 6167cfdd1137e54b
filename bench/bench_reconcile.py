# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark kubevol's reconcile over SSH on 10 local test nodes (real sshd, real loop devices).

Usage (from the repository root, as root):
    .venv/bin/python bench/bench_reconcile.py              # 10 nodes, 100 volumes
    .venv/bin/python bench/bench_reconcile.py --repeat 5   # more no-op/ping pairs
    .venv/bin/python bench/bench_reconcile.py --samples 5  # more cold / shell / floor / look-and-act samples
    .venv/bin/python bench/bench_reconcile.py --fs xfs --size 320Mi   # xfs needs larger volumes

Measures, in one run on the same nodes (the goals each ratio is read against: docs/performance.md):
  1. no-op: a converged reconcile (playbooks/reconcile.yml, nothing to do) against
     `ansible all -m ansible.builtin.ping`. --repeat pairs, interleaved; the medians are compared.
     Between them, the node facts module alone, ad hoc (`ansible all -m
     kubevol.volumes.node_volume_info`): the least any no-op costs, since it must gather the nodes' state.
  2. cold: a reconcile that provisions, attaches, formats (ext4, or --fs) and mounts 100 loop volumes
     of 32Mi (--size; one pod each, 10 per node) against a generated naive playbook doing the same node work
     with one loop item per volume per step (losetup --find --show; blkid probe; mkfs.ext4 if blank;
     mkdir; mount) on the same nodes after a reset (everything unmounted and detached, images
     recreated);
  3. the same node work as one loop item per volume, each one shell command (losetup, mkfs.ext4,
     mkdir, mount), the strongest hand-written baseline; and the cold reconcile against ping.
  4. the floor: one shell command per node doing all its volumes (no look, no record); and the look-and-act
     baseline, two shell commands per node, one that looks (mounted? attached? a filesystem?) and one that does
     what the look found missing: the least a reconciler that looks before it acts can do through Ansible.
  The playbooks are in bench/reconcile_baselines.py.
  The cold reconcile, the shell baseline, the floor and the look-and-act baseline run --samples times each,
  interleaved, every one after a reset (the cold reconcile also from the cluster file as generated): a single cold
  run varies by several tenths of a second, so their medians are compared, and each round's own ratio is shown.
  The naive playbook runs once (about 45 s, and an order of magnitude from its goal; --skip-naive leaves it out).

The node work runs as Ansible runs modules (the only node runtime: node_phases calls ActionBase._execute_module),
with pipelining and ControlPersist as the test nodes' inventory sets them. --strategy mitogen_linear runs every
command of the bench (ping and the baselines too) under Mitogen's strategy, from the controller Python's
ansible_mitogen (requirements/controller.txt).
Module executions per host come from bench/callback_plugins/kubevol_module_count.py (non-skipped
module results, one per loop item; set_fact/debug/meta/include/assert/fail and the role's
validate_argument_spec (controller-only action plugins) excluded; results of
tasks delegated to localhost count under "controller").

The same callback times each task (wall, and the controller CPU of the process and the workers it reaped): the
report shows where a no-op and a cold run go, task by task (medians), the controller CPU per kind of run, the
start-up outside the tasks and the load average over the timed runs. Past outputs: bench/results/.

Before every timed run an untimed ping opens the ssh ControlPersist connections, so every timed
run starts with warm connections. Not a timed test: it prints figures (and --markdown, a table
for docs/performance.md). Everything runs under --state-dir (default /tmp/kubevol-bench) and is
stopped and deleted at the end (testnodes.py down --purge), also on failure.
"""

import argparse
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time

from reconcile_baselines import (COUNT_MOUNTS, LOOK_ACT_PLAYBOOK, MKFS, NAIVE_PLAYBOOK, RESET_NODE, SCRIPT_PLAYBOOK,
                                 SHELL_PLAYBOOK, baseline_playbook, generate_cluster)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TESTNODES = os.path.join(ROOT, "scripts", "testnodes.py")
COLLECTIONS = os.path.join(ROOT, ".build", "collections")
BIN = os.path.dirname(sys.executable)


def log(msg):
    print(msg, flush=True)


def collection_link():
    """.build/collections/ansible_collections/kubevol/volumes -> the checkout (as tests/conftest.py)."""
    ns = os.path.join(COLLECTIONS, "ansible_collections", "kubevol")
    link = os.path.join(ns, "volumes")
    os.makedirs(ns, exist_ok=True)
    if os.path.realpath(link) != os.path.realpath(ROOT):
        if os.path.islink(link):
            os.unlink(link)
        os.symlink(ROOT, link)


# ---------------------------------------------------------------- running things


def mitogen_strategy_dir():
    """Mitogen's strategy plugins in this Python (the mitogen package, requirements/controller.txt)."""
    try:
        import ansible_mitogen
    except ImportError:
        raise SystemExit("--strategy mitogen_*: the mitogen package is not installed in %s (scripts/bootstrap.sh "
                         "installs requirements/controller.txt)" % sys.executable)
    return os.path.join(os.path.dirname(ansible_mitogen.__file__), "plugins", "strategy")


class Bench:
    def __init__(self, args):
        self.args = args
        self.state = os.path.abspath(args.state_dir)
        self.inventory = os.path.join(self.state, "inventory", "hosts.yml")
        self.cluster = os.path.join(self.state, "cluster.json")
        self.logs = os.path.join(self.state, "logs")
        self.n = 0

    def env(self, counts=None):
        env = dict(os.environ)
        env.update({
            "PATH": BIN + os.pathsep + env.get("PATH", ""),
            "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS,
            "ANSIBLE_HOME": os.path.join(self.state, "ansible-home"),
            "ANSIBLE_LOCAL_TEMP": os.path.join(self.state, "ansible-tmp"),
            "ANSIBLE_PIPELINING": "True",
            "ANSIBLE_FORKS": str(self.args.forks),
            "ANSIBLE_HOST_KEY_CHECKING": "True",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_INVENTORY_HOST_PATTERN_MISMATCH": "error",
            "ANSIBLE_CALLBACK_PLUGINS": os.path.join(HERE, "callback_plugins"),
            "ANSIBLE_CALLBACKS_ENABLED": "kubevol_module_count",
            "ANSIBLE_LOAD_CALLBACK_PLUGINS": "1",
            "KUBEVOL_MODULE_COUNT_FILE": counts or "",
        })
        if self.args.strategy != "linear":
            env.update(ANSIBLE_STRATEGY_PLUGINS=mitogen_strategy_dir(), ANSIBLE_STRATEGY=self.args.strategy)
        env.pop("ANSIBLE_CONFIG", None)
        return env

    def run(self, label, argv, counts=False, check=True):
        """Run argv with its output in a log file; return (seconds, counts or None, stdout)."""
        self.n += 1
        stem = os.path.join(self.logs, "%02d-%s" % (self.n, label))
        cfile = stem + ".counts.json" if counts else None
        with open(stem + ".log", "w") as out:
            out.write("$ %s\n" % " ".join(shlex.quote(a) for a in argv))
            out.flush()
            t0 = time.monotonic()
            res = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env(cfile),
                                 universal_newlines=True, cwd=ROOT, check=False)
            secs = time.monotonic() - t0
            out.write(res.stdout)
        if check and res.returncode != 0:
            sys.stderr.write(res.stdout[-6000:])
            raise SystemExit("%s failed (rc=%d); log: %s.log" % (label, res.returncode, stem))
        data = None
        if cfile:
            with open(cfile) as fh:
                data = json.load(fh)
        return secs, data, res.stdout

    def ansible(self, label, module, args=None, counts=False):
        argv = [os.path.join(BIN, "ansible"), "all", "-i", self.inventory, "-m", module]
        if args:
            argv += ["-a", args]
        return self.run(label, argv, counts=counts)

    def playbook(self, label, playbook, extra, counts=True):
        argv = [os.path.join(BIN, "ansible-playbook"), "-i", self.inventory, playbook]
        for e in extra:
            argv += ["-e", e]
        return self.run(label, argv, counts=counts)

    def reconcile(self, label):
        return self.playbook(label, os.path.join(ROOT, "playbooks", "reconcile.yml"),
                             ["kubevol_cluster_state=" + self.cluster, "kubevol_provision=true"])

    def warm(self):
        self.ansible("warm-ping", "ansible.builtin.ping")

    def mounts_per_node(self):
        out = self.ansible("count-mounts", "ansible.builtin.shell", COUNT_MOUNTS)[2]
        counts, host = {}, None
        for line in out.splitlines():
            if " | " in line:
                host = line.split(" | ")[0].strip()
            elif host and line.strip().isdigit():
                counts[host] = int(line.strip())
                host = None
        return counts

    def testnodes(self, *argv):
        subprocess.run([sys.executable, TESTNODES] + list(argv) + ["--state-dir", self.state], check=True,
                       stdout=subprocess.PIPE, universal_newlines=True)

    def loop_devices(self):
        """Loop devices whose backing file is an image in the pool (by st_dev/st_ino, never by path)."""
        pool = os.path.join(self.state, "pool")
        ids = {}
        for name in os.listdir(pool):
            st = os.stat(os.path.join(pool, name))
            if not os.path.isfile(os.path.join(pool, name)):
                continue
            ids[(os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)] = name
        out = subprocess.run(["losetup", "-J", "--list", "-O", "NAME,BACK-INO,BACK-MAJ:MIN"], check=True,
                             stdout=subprocess.PIPE, universal_newlines=True).stdout
        found = []
        for dev in (json.loads(out).get("loopdevices", []) if out.strip() else []):
            majmin = dev.get("back-maj:min") or ""
            if ":" not in majmin or dev.get("back-ino") in (None, ""):
                continue
            major, minor = (int(x) for x in majmin.split(":"))
            if (major, minor, int(dev["back-ino"])) in ids:
                found.append(dev["name"])
        return found

    def reset(self, placement, create_images):
        """Unmount and detach everything, then delete (and recreate, blank) the images."""
        self.ansible("reset-nodes", "ansible.builtin.shell", RESET_NODE)
        for dev in self.loop_devices():
            subprocess.run(["losetup", "-d", dev], check=True)
        left = self.loop_devices()
        if left:
            raise SystemExit("loop devices still attached after the reset: %s" % left)
        pool = os.path.join(self.state, "pool")
        for name in os.listdir(pool):
            path = os.path.join(pool, name)
            if os.path.isdir(path):
                shutil.rmtree(path)  # the loop driver's holder records: every attachment is gone
            else:
                os.unlink(path)
        if create_images:
            for p in placement:
                with open(os.path.join(pool, os.path.basename(p["image"])), "wb") as fh:
                    fh.truncate(self.args.size_bytes)


def per_node(counts, nodes):
    hosts = counts["per_host"]
    values = [hosts.get("node%d" % n, 0) for n in range(1, nodes + 1)]
    return values, hosts.get("controller", 0)


def describe(values):
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else "%d-%d" % (lo, hi)


def task_medians(runs):
    """[(task name, median wall s, median controller CPU s)] over the runs' per-task times (the callback's
    ``tasks``), in the order the runs ran them; a task a run did not run counts 0 there."""
    order, per_run = [], []
    for _secs, counts in runs:
        seen = {}
        for name, wall, cpu in (counts or {}).get("tasks", ()):
            if name not in order:
                order.append(name)
            before = seen.get(name, (0, 0))
            seen[name] = (before[0] + wall, before[1] + cpu)
        per_run.append(seen)
    return [(name, statistics.median(run.get(name, (0, 0))[0] for run in per_run),
             statistics.median(run.get(name, (0, 0))[1] for run in per_run)) for name in order]


def task_table(title, runs, total):
    """Markdown rows: where a run's wall time goes, task by task (medians), and the rest (start-up, the end)."""
    rows = task_medians(runs)
    lines = ["| %s: task | wall (median) | controller CPU (median) |" % title, "|---|---|---|"]
    for name, wall, cpu in rows:
        lines.append("| %s | %.2f s | %.2f s |" % (name[:90], wall, cpu))
    lines.append("| (Ansible's start-up before the first task, and its end) | %.2f s | |"
                 % (total - sum(r[1] for r in rows)))
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    p.add_argument("--nodes", type=int, default=10)
    p.add_argument("--volumes", type=int, default=100)
    p.add_argument("--size", default="32Mi", help="volume size (Kubernetes quantity, binary suffix)")
    p.add_argument("--fs", default="ext4", choices=sorted(MKFS),
                   help="the volumes' filesystem (xfs needs larger volumes: --fs xfs --size 320Mi)")
    p.add_argument("--forks", type=int, default=10)
    p.add_argument("--repeat", type=int, default=3, help="no-op reconcile / ping pairs")
    p.add_argument("--samples", type=int, default=3, help="rounds of cold reconcile, shell baseline and floor")
    p.add_argument("--state-dir", default="/tmp/kubevol-bench")
    p.add_argument("--keep", action="store_true", help="leave the nodes running (and the state dir)")
    p.add_argument("--strategy", default="linear", choices=["linear", "mitogen_linear"],
                   help="the play strategy of every run (mitogen_linear: Mitogen's, an optional speed setting)")
    p.add_argument("--skip-naive", action="store_true", help="leave out the naive playbook (about a minute)")
    args = p.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (test nodes, loop devices)")
    units = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30}
    args.size_bytes = int(args.size[:-2]) * units[args.size[-2:]]
    collection_link()
    bench = Bench(args)
    cmdline = "%s %s" % (os.path.relpath(sys.executable) if not sys.executable.startswith("/tmp") else sys.executable,
                         " ".join(shlex.quote(a) for a in [os.path.relpath(__file__, ROOT)] + sys.argv[1:]))
    load_before = os.getloadavg()
    results = {}
    loads = []  # the 1-minute load average after each timed run: how busy the machine was while it ran
    subprocess.run([sys.executable, TESTNODES, "down", "--purge", "--state-dir", bench.state],
                   stdout=subprocess.DEVNULL, check=False)
    t_start = time.monotonic()
    try:
        log("starting %d nodes in %s ..." % (args.nodes, bench.state))
        bench.testnodes("up", str(args.nodes))
        os.makedirs(bench.logs, exist_ok=True)
        cluster, placement = generate_cluster(args.nodes, args.volumes, args.size, args.fs)

        def write_cluster():
            with open(bench.cluster, "w") as fh:
                json.dump(cluster, fh, indent=1)
        write_cluster()
        naive, shell_playbook, script_playbook, look_act_playbook = (
            os.path.join(bench.state, name) for name in ("naive.yml", "shell.yml", "script.yml", "look-act.yml"))
        for path, text in ((naive, NAIVE_PLAYBOOK), (shell_playbook, SHELL_PLAYBOOK),
                           (script_playbook, SCRIPT_PLAYBOOK), (look_act_playbook, LOOK_ACT_PLAYBOOK)):
            with open(path, "w") as fh:
                fh.write(baseline_playbook(text, args.fs))
        naive_vars = os.path.join(bench.state, "naive-vars.json")
        by_node = {}
        for item in placement:
            by_node.setdefault(item["node"], []).append({"image": item["image"], "mount": item["mount"]})
        with open(naive_vars, "w") as fh:
            json.dump({"naive_placement": by_node}, fh)

        def measure(key, what, run):
            """One timed run on warm connections, checked to have mounted every volume; kept under ``key``."""
            bench.warm()
            log("%s ..." % what)
            secs, counts = run()[:2]
            mounts = bench.mounts_per_node()
            if sum(mounts.values()) != args.volumes:
                raise SystemExit("%s: %d mounts, want %d: %s" % (key, sum(mounts.values()), args.volumes, mounts))
            results.setdefault(key, []).append((secs, counts))
            loads.append(os.getloadavg()[0])
            log("  %.1f s" % secs)

        def cold_reconcile(sample):
            """2a. cold reconcile: provision, attach, format, mount."""
            measure("cold", "cold reconcile (%d volumes)" % args.volumes,
                    lambda: bench.reconcile("cold-reconcile-%d" % sample))

        def baseline(label, playbook, what):
            log("reset (unmount, detach, recreate %d blank images) ..." % args.volumes)
            bench.reset(placement, create_images=True)
            measure(label, "%s playbook (%d volumes, %s)" % (label, args.volumes, what),
                    lambda: bench.playbook(label, playbook, ["@" + naive_vars]))

        cold_reconcile(0)

        # 1. converged reconcile vs ping, interleaved
        noop, ping, facts = [], [], []
        for i in range(args.repeat):
            s, c = bench.ansible("ping-%d" % i, "ansible.builtin.ping", counts=True)[:2]
            ping.append((s, c))
            # the node facts module alone, ad hoc: what any no-op costs at least (it must gather them) with Ansible's
            # module execution, with no role, plan or record around it
            s, c = bench.ansible("facts-%d" % i, "kubevol.volumes.node_volume_info",
                                 "node_name={{ inventory_hostname }} fs_sizes=false", counts=True)[:2]
            facts.append((s, c))
            s, c, out = bench.reconcile("noop-reconcile-%d" % i)
            if "changed=0" not in out or any(("changed=%d" % k) in out for k in range(1, 10)):
                raise SystemExit("the converged reconcile changed something; log in %s" % bench.logs)
            noop.append((s, c))
            loads.append(os.getloadavg()[0])
            log("  ping %.2f s, facts module alone %.2f s, no-op reconcile %.2f s"
                % (ping[-1][0], facts[-1][0], noop[-1][0]))
        results["noop"], results["ping"], results["facts"] = noop, ping, facts

        # 2b, 2c. the hand-written baselines, each after a reset (unmount, detach, recreate blank images), and the
        # cold reconcile's further samples between them (after a reset that leaves no image: it provisions them)
        if not args.skip_naive:
            baseline("naive", naive, "one loop item per volume per step")
        for sample in range(args.samples):
            if sample:
                log("reset (unmount, detach, delete the images, the cluster file as generated) ...")
                bench.reset(placement, create_images=False)
                write_cluster()
                cold_reconcile(sample)
            baseline("shell", shell_playbook, "one shell command per volume")
            baseline("script", script_playbook, "one shell command per node: the floor")
            baseline("lookact", look_act_playbook, "two shell commands per node: look, then act")
    finally:
        if args.keep:
            log("kept: %s %s down --purge --state-dir %s" % (sys.executable, TESTNODES, bench.state))
        else:
            subprocess.run([sys.executable, TESTNODES, "down", "--purge", "--state-dir", bench.state],
                           stdout=subprocess.DEVNULL, check=False)
    total = time.monotonic() - t_start
    load_after = os.getloadavg()

    # ------------------------------------------------------------ report
    n = args.nodes
    noop_med = statistics.median(r[0] for r in results["noop"])
    ping_med = statistics.median(r[0] for r in results["ping"])

    def median_run(key):
        """(median seconds, the first run's module counts: every round runs the same modules)."""
        return statistics.median(r[0] for r in results[key]), results[key][0][1]

    cold_s, cold_c = median_run("cold")
    naive_s, naive_c = median_run("naive") if "naive" in results else (None, None)
    shell_s, shell_c = median_run("shell")
    script_s, script_c = median_run("script")
    lookact_s, lookact_c = median_run("lookact")
    rows = [("ansible all -m ping", ping_med, results["ping"][0][1]),
            ("reconcile, converged (no-op)", noop_med, results["noop"][0][1]),
            ("reconcile, cold (%d volumes, median of %d)" % (args.volumes, args.samples), cold_s, cold_c),
            ("one shell command per volume (%d volumes, median of %d)" % (args.volumes, args.samples), shell_s,
             shell_c),
            ("floor: one shell command per node (%d volumes, median of %d)" % (args.volumes, args.samples), script_s,
             script_c),
            ("look and act: two shell commands per node (%d volumes, median of %d)" % (args.volumes, args.samples),
             lookact_s, lookact_c)]
    if naive_s is not None:
        rows.insert(3, ("naive playbook, five tasks per volume (%d volumes)" % args.volumes, naive_s, naive_c))
    lines = ["| run | wall time | module executions per node | on the controller |", "|---|---|---|---|"]
    for name, secs, counts in rows:
        values, ctl = per_node(counts, n)
        lines.append("| %s | %.2f s | %s | %d |" % (name, secs, describe(values), ctl))
    ratio_noop = noop_med / ping_med
    # each pair ran back to back under the same load: its own ratio is the steadier figure when the load moves
    pair_ratios = [noop / ping for (noop, _c), (ping, _d) in zip(results["noop"], results["ping"])]
    print()
    print("machine: %s, nproc %d, load average %.2f/%.2f/%.2f before, %.2f/%.2f/%.2f after; Python %s, %s"
          % (platform.node(), os.cpu_count(), *load_before, *load_after, platform.python_version(),
             subprocess.run([os.path.join(BIN, "ansible"), "--version"], stdout=subprocess.PIPE,
                            universal_newlines=True, check=False).stdout.splitlines()[0]))
    print("1-minute load average after the timed runs: %.1f-%.1f (median %.1f); on %d cores"
          % (min(loads), max(loads), statistics.median(loads), os.cpu_count()))
    print("nodes %d, forks %d, volumes %d x %s %s, strategy %s; no-op/ping: median of %d interleaved pairs"
          % (n, args.forks, args.volumes, args.size, args.fs, args.strategy, args.repeat))
    print("no-op runs: %s s; ping runs: %s s; facts module alone: %s s" % tuple(
        ", ".join("%.2f" % r[0] for r in results[key]) for key in ("noop", "ping", "facts")))
    print("cold, shell, floor and look-and-act: median of %d rounds; cold runs: %s s; shell runs: %s s; floor runs: "
          "%s s; look-and-act runs: %s s" % (args.samples, *(", ".join("%.2f" % r[0] for r in results[key])
                                                             for key in ("cold", "shell", "script", "lookact"))))
    print()
    print("\n".join(lines))
    print()
    print("no-op reconcile / ping = %.2f  (goal <= 1.3: %s); per pair %s, median %.2f"
          % (ratio_noop, "met" if ratio_noop <= 1.3 else "NOT met", ", ".join("%.2f" % r for r in pair_ratios),
             statistics.median(pair_ratios)))
    facts_ratios = [f / p for (f, _c), (p, _d) in zip(results["facts"], results["ping"])]
    facts_med = statistics.median(r[0] for r in results["facts"])
    print("the facts module alone, ad hoc / ping = %.2f; per pair %s (what a no-op costs at least: it gathers them, "
          "one node_volume_info per node)" % (facts_med / ping_med, ", ".join("%.2f" % r for r in facts_ratios)))
    if naive_s is not None:
        ratio_cold = naive_s / cold_s
        print("naive / cold reconcile = %.2f  (goal >= 3.0: %s)" % (ratio_cold, "met" if ratio_cold >= 3 else "NOT met"))
    ratio_shell = shell_s / cold_s
    print("one shell command per volume / cold reconcile = %.2f  (goal >= 3.0: %s); per round %s"
          % (ratio_shell, "met" if ratio_shell >= 3 else "NOT met",
             ", ".join("%.2f" % (shell[0] / cold[0]) for shell, cold in zip(results["shell"], results["cold"]))))
    print("cold reconcile / ping = %.2f  (goal <= 3.0: %s)"
          % (cold_s / ping_med, "met" if cold_s / ping_med <= 3 else "NOT met"))
    print("one shell command per volume / the floor (one per node) = %.2f  (the most any engine could reach against "
          "that baseline here)" % (shell_s / script_s))
    floor_rounds = zip(results["cold"], results["script"])
    print("cold reconcile / the floor = %.2f; per round %s" % (
        cold_s / script_s, ", ".join("%.2f" % (cold[0] / floor[0]) for cold, floor in floor_rounds)))
    look_rounds = [cold[0] / look[0] for cold, look in zip(results["cold"], results["lookact"])]
    ratio_look = cold_s / lookact_s
    print("cold reconcile / look and act (two shell commands per node) = %.2f  (goal <= 1.25: %s); per round %s" % (
        ratio_look, "met" if ratio_look <= 1.25 else "NOT met", ", ".join("%.2f" % r for r in look_rounds)))
    print("module runs by action (node1): cold %s; naive %s" % (
        {k.split(":", 1)[1]: v for k, v in cold_c["per_host_action"].items() if k.startswith("node1:")},
        {k.split(":", 1)[1]: v for k, v in (naive_c or {}).get("per_host_action", {}).items()
         if k.startswith("node1:")}))
    print("controller-side module runs in the cold reconcile: %s" % (
        {k.split(":", 1)[1]: v for k, v in cold_c["per_host_action"].items() if k.startswith("controller:")}))
    cpu = dict((key, statistics.median((c or {}).get("controller_cpu", 0) for _s, c in results[key]))
               for key in ("ping", "noop", "cold", "shell", "script", "lookact") if key in results)
    print("controller CPU per run (medians; the nodes' CPU is not in it): %s" % ", ".join(
        "%s %.2f s" % (key, value) for key, value in cpu.items()))
    # the process's start (Python, Ansible, the inventory, the playbook and its role) and end: its wall time
    # outside the callback's span (from loading the callbacks to the recap)
    outside = dict((key, statistics.median(secs - (c or {}).get("seconds", secs) for secs, c in results[key]))
                   for key in ("ping", "noop", "cold", "shell", "script", "lookact") if key in results)
    print("start-up and end outside the tasks (medians): %s" % ", ".join(
        "%s %.2f s" % (key, value) for key, value in outside.items()))
    print()
    print("\n".join(task_table("no-op", results["noop"], noop_med)))
    print()
    print("\n".join(task_table("cold", results["cold"], cold_s)))
    print()
    print("total bench time %.0f s; command: %s" % (total, cmdline))
    return 0


if __name__ == "__main__":
    sys.exit(main())
