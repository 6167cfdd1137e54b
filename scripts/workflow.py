#!/usr/bin/env python
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run kubevol's sliced reconcile workflow locally, the way AWX / Ansible Automation Platform runs it (docs/fleet.md).

The workflow is three job templates in a row: the node stage (sliced: job_slice_count N), the attach/detach stage
(one job), the node stage again (sliced). AWX splits a sliced job's inventory into N slices, every N-th host
(awx/main/models/inventory.py Inventory.get_sliced_hosts: hosts[offset::slice_count]), and runs each slice as its
own ansible-playbook with --limit, at once. This script does the same with local ansible-playbook processes:

    scripts/workflow.py -i inventory --slices 3 --rounds 5 --until-converged -- -e kubevol_cluster_state=cluster.yaml

Each round runs the workflow once: the node stage's slices at once, then the attach/detach stage, then the node
stage's slices again (--overlap starts them together with the attach/detach stage instead of after it, as a
second workflow or a scheduled job would). With --until-converged it stops after the first round in which no
process changed anything (the PLAY RECAP's changed counts) and all succeeded. Arguments after "--" go to every
ansible-playbook. Every process's output goes to --log-dir; one line per process is printed. Exit status: 0 when
the last round's processes all succeeded (and, with --until-converged, the workflow converged), 1 otherwise.
The next stage runs whatever the one before returned (AWX workflow edges "always"): a failed slice must not stop
the other nodes' work; the stages are safe to run in any order.
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE_STAGE = os.path.join(REPO, "playbooks", "reconcile_node_stage.yml")
ATTACH_DETACH = os.path.join(REPO, "playbooks", "reconcile_attach_detach.yml")
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def slices(hosts, count):
    """AWX's job slicing: slice k (1..count) holds every count-th host from the k-th (Inventory.get_sliced_hosts);
    empty slices are not run (AWX runs min(count, hosts) slices)."""
    return [hosts[offset::count] for offset in range(min(count, len(hosts)))]


def list_hosts(ansible, inventory, pattern, env):
    """The inventory's hosts matching ``pattern``, in inventory order (ansible --list-hosts)."""
    proc = subprocess.run([ansible, pattern, "-i", inventory, "--list-hosts"], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if proc.returncode != 0:
        raise SystemExit("workflow: cannot list the hosts %r of inventory %s:\n%s" % (pattern, inventory, proc.stdout))
    lines = proc.stdout.splitlines()
    listed = bool(lines) and lines[0].strip().startswith("hosts")  # "  hosts (N):", then one host a line
    hosts = [line.strip() for line in lines[1:] if line.strip()] if listed else []
    if not hosts:
        raise SystemExit("workflow: inventory %s has no host matching %r: nothing to reconcile" % (inventory, pattern))
    return hosts


class Job:
    """One ansible-playbook process: a stage, or one slice of it."""

    def __init__(self, label, argv, log, env, cwd=None):
        self.label, self.argv, self.log = label, argv, log
        with open(log, "w") as handle:
            # own session: a stage can be stopped as a whole (its workers included) without touching the others
            self.proc = subprocess.Popen(argv, env=env, stdout=handle, stderr=subprocess.STDOUT, cwd=cwd,
                                         start_new_session=True)

    def wait(self):
        self.rc = self.proc.wait()
        with open(self.log) as handle:
            text = handle.read()
        recap = RECAP.findall(text)
        self.changed = sum(int(r[2]) for r in recap)
        self.failed = sum(int(r[3]) + int(r[4]) for r in recap)
        self.complete = bool(recap)
        return self

    @property
    def ok(self):
        return self.rc == 0 and self.complete

    def line(self):
        text = "%s: rc %s, changed %d, failed or unreachable %d%s (log %s)" % (
            self.label, self.rc, self.changed, self.failed, "" if self.complete else ", no PLAY RECAP", self.log)
        if not self.complete:  # it stopped before its recap (a bad argument, an interrupted run): say how
            with open(self.log) as handle:
                tail = handle.read().splitlines()[-12:]
            text += "".join("\n    " + line for line in tail)
        return text

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except OSError:
                pass
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


class Workflow:
    def __init__(self, args, env=None):
        self.args = args
        self.env = dict(os.environ if env is None else env)
        self.ansible_playbook = args.ansible_playbook
        ansible = os.path.join(os.path.dirname(self.ansible_playbook), "ansible")
        self.hosts = list_hosts(ansible if os.path.dirname(self.ansible_playbook) else "ansible", args.inventory,
                                args.hosts, self.env)
        self.slices = slices(self.hosts, args.slices)
        os.makedirs(args.log_dir, exist_ok=True)
        self.jobs = []  # running

    def _start(self, label, playbook, limit, tag):
        argv = [self.ansible_playbook, "-i", self.args.inventory, playbook, "-e", "kubevol_hosts=" + self.args.hosts]
        if limit is not None:
            argv += ["--limit", ",".join(limit)]
        argv += list(self.args.extra)
        log = os.path.join(self.args.log_dir, "%s.log" % tag)
        job = Job(label, argv, log, self.env, cwd=self.args.cwd)
        self.jobs.append(job)
        return job

    def node_stage(self, round_no, which):
        count = len(self.slices)
        return [self._start("round %d node stage %s, slice %d/%d (%s)" % (
            round_no, which, k + 1, count, ",".join(hosts)), NODE_STAGE, hosts,
            "r%02d-node-%s-slice%d" % (round_no, which, k + 1)) for k, hosts in enumerate(self.slices)]

    def attach_detach(self, round_no):
        return [self._start("round %d attach/detach stage" % round_no, ATTACH_DETACH, None,
                            "r%02d-attach-detach" % round_no)]

    def _wait(self, jobs):
        for job in jobs:
            job.wait()
            self.jobs.remove(job)
            print(job.line(), flush=True)
        return jobs

    def round(self, round_no):
        """The workflow once: node stage, attach/detach stage, node stage. Returns its jobs."""
        done = self._wait(self.node_stage(round_no, "1"))
        middle = self.attach_detach(round_no)
        if self.args.overlap:
            middle += self.node_stage(round_no, "2")
            done += self._wait(middle)
        else:
            done += self._wait(middle)
            done += self._wait(self.node_stage(round_no, "2"))
        return done

    def run(self):
        print("workflow: %d host(s) in %d slice(s): %s" % (
            len(self.hosts), len(self.slices), "; ".join(",".join(s) for s in self.slices)), flush=True)
        jobs = []
        for round_no in range(1, self.args.rounds + 1):
            started = time.monotonic()
            jobs = self.round(round_no)
            changed = sum(job.changed for job in jobs)
            ok = all(job.ok for job in jobs)
            print("workflow: round %d: %s, %d change(s) in %.1fs" % (
                round_no, "all stages succeeded" if ok else "a stage failed", changed, time.monotonic() - started),
                flush=True)
            if self.args.until_converged and ok and changed == 0:
                print("workflow: converged in round %d" % round_no, flush=True)
                return 0
        if self.args.until_converged:
            print("workflow: not converged after %d round(s)" % self.args.rounds, flush=True)
            return 1
        return 0 if all(job.ok for job in jobs) else 1

    def stop(self):
        for job in list(self.jobs):
            job.stop()


def parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0],
                                     epilog="Arguments after -- go to every ansible-playbook (e.g. -e "
                                            "kubevol_cluster_state=cluster.yaml).")
    parser.add_argument("-i", "--inventory", required=True, help="the inventory of the Kubernetes nodes")
    parser.add_argument("--slices", type=int, default=2, help="the node stage's job_slice_count (default 2)")
    parser.add_argument("--rounds", type=int, default=1, help="how many times to run the workflow (default 1)")
    parser.add_argument("--until-converged", action="store_true",
                        help="stop after the first round that changed nothing; exit 1 if none did")
    parser.add_argument("--overlap", action="store_true",
                        help="start each round's second node stage together with its attach/detach stage")
    parser.add_argument("--hosts", default="all", help="the host pattern of the nodes (kubevol_hosts; default all)")
    parser.add_argument("--log-dir", default="workflow-logs", help="one log per ansible-playbook process")
    parser.add_argument("--ansible-playbook", default="ansible-playbook", help="the ansible-playbook to run")
    parser.add_argument("--cwd", default=None, help="the directory the processes run in (default: this one)")
    parser.add_argument("extra", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.slices < 1 or args.rounds < 1:
        parser.error("--slices and --rounds must be at least 1")
    return args


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    args = parse(argv)
    args.extra = list(args.extra) + extra
    # a stopped workflow (SIGTERM, as AWX cancels a job) stops its stages too
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    flow = Workflow(args)
    try:
        return flow.run()
    finally:
        flow.stop()  # an interrupted workflow leaves no stage running


if __name__ == "__main__":
    sys.exit(main())
