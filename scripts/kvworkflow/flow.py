"""The workflow: AWX's workflow job template of docs/fleet.md, one round at a time.

Three workflow nodes joined by "always" edges: the node stage (sliced: one job per slice, at once), the
attach/detach stage (one job over the whole inventory), the node stage again. Each next node starts whatever the
one before returned: a failed slice must not stop the other nodes' work, and every stage is safe after any other.
``overlap`` starts the second node stage together with the attach/detach stage (as a second workflow, or a
schedule that fires early, would). A round ends when all its jobs have; the workflow runs ``rounds`` rounds, or,
``until_converged``, until a round in which nothing is left (converge.py).
"""

import json
import os
import time

from kvworkflow.converge import round_outcome
from kvworkflow.jobs import ATTACH_DETACH, NODE_STAGE, Job

NOT_CONVERGED = "KV-NOT-CONVERGED"
SHOWN_HOSTS = 3


def _hosts_text(hosts):
    if len(hosts) <= SHOWN_HOSTS:
        return ",".join(hosts)
    return "%s and %d more" % (",".join(hosts[:SHOWN_HOSTS]), len(hosts) - SHOWN_HOSTS)


def job_line(outcome, seconds):
    """One line for a job that ended: its status, what it changed, its failed hosts, its plan."""
    where = " on execution node %s" % outcome.where if outcome.where else ""
    text = "%s%s: %s, %d changed" % (outcome.label, where, outcome.status, outcome.changed)
    bad = sorted(set(outcome.failed) | set(outcome.unreachable))
    if bad:
        text += "; failed or unreachable: %s" % "; ".join(
            "%s (%s)" % (host, outcome.failed.get(host) or outcome.unreachable.get(host)) for host in bad[:5])
        if len(bad) > 5:
            text += "; and %d more host(s)" % (len(bad) - 5)
    if outcome.plan is not None:
        text += "; plan: %d step(s), %d blocked" % (outcome.plan.steps, outcome.plan.blocked)
    elif not outcome.complete:
        text += "; it ended before its plan" if outcome.plan is None else ""
    if outcome.explanation and not outcome.ok:
        text += "; %s" % outcome.explanation
    return "%s (%.1fs)" % (text, seconds)


class Workflow:
    """``inventory``: inventory.Inventory; ``slices``: the node stage's job_slice_count; ``nodes``: {slice number
    (1-based): jobs.ExecutionNode} for the slices that run on an execution node (the others run here, as do the
    attach/detach stage's jobs); ``env``: every job's envvars; ``say``: where the lines go."""

    def __init__(self, inventory, slices, work_dir, extravars, env, cmdline=None, timeout=None, nodes=None, say=print):
        self.inventory = inventory
        self.slices = inventory.slices(slices)
        self.work_dir = os.path.abspath(work_dir)
        self.extravars, self.env, self.cmdline, self.timeout = extravars, env, cmdline, timeout
        self.nodes = nodes or {}
        self.say = say
        self.running = []
        self.rounds = []
        os.makedirs(self.work_dir, exist_ok=True)

    def _job(self, tag, label, playbook, hosts, node=None, scope=None):
        return Job(tag, label, playbook, self.work_dir, self.inventory, hosts, self.extravars, self.env, self.cmdline,
                   self.timeout, node, scope)

    def node_stage(self, round_no, which):
        count = len(self.slices)
        jobs = []
        for number, hosts in enumerate(self.slices, start=1):
            label = "round %d node stage %s, slice %d/%d (%s)" % (round_no, which, number, count, _hosts_text(hosts))
            jobs.append(self._job("r%02d-node-%s-slice%d" % (round_no, which, number), label, NODE_STAGE, hosts,
                                  self.nodes.get(number), "node stage, slice %d" % number))
        return jobs

    def attach_detach(self, round_no):
        return [self._job("r%02d-attach-detach" % round_no, "round %d attach/detach stage" % round_no, ATTACH_DETACH,
                          None, scope="attach/detach stage")]

    def _run(self, jobs):
        """Start ``jobs`` at once, wait for all; their outcomes in the order they were given."""
        started = time.monotonic()
        for job in jobs:
            job.start()
            self.running.append(job)
        outcomes = []
        for job in jobs:
            outcome = job.wait()
            self.running.remove(job)
            self.say(job_line(outcome, time.monotonic() - started))
            outcomes.append(outcome)
        return outcomes

    def round(self, round_no, overlap=False):
        """The workflow once. Returns (its job outcomes in run order, its converge.RoundOutcome)."""
        outcomes = self._run(self.node_stage(round_no, "1"))
        if overlap:
            outcomes += self._run(self.attach_detach(round_no) + self.node_stage(round_no, "2"))
        else:
            outcomes += self._run(self.attach_detach(round_no))
            outcomes += self._run(self.node_stage(round_no, "2"))
        return outcomes, round_outcome(outcomes)

    def run(self, rounds, until_converged=False, overlap=False):
        """Run the rounds; the exit status: 0 when the workflow converged (``until_converged``) or the last round's
        jobs all succeeded, 1 otherwise."""
        remote = ["slice %d on execution node %s" % (number, node.name) for number, node in sorted(self.nodes.items())
                  if number <= len(self.slices)]
        self.say("workflow: %d host(s) in %d slice(s): %s%s" % (
            len(self.inventory.hosts), len(self.slices), "; ".join(_hosts_text(s) for s in self.slices),
            " (%s)" % ", ".join(remote) if remote else ""))
        outcome, outcomes = None, []
        for round_no in range(1, rounds + 1):
            started = time.monotonic()
            outcomes, outcome = self.round(round_no, overlap)
            self.rounds.append({"round": round_no, "jobs": [o.as_dict() for o in outcomes],
                                "outcome": outcome.as_dict()})
            self.say("workflow: round %d: %s, %d change(s) in %.1fs" % (
                round_no, "all jobs succeeded" if all(o.ok for o in outcomes) else "a job failed",
                sum(o.changed for o in outcomes), time.monotonic() - started))
            for line in outcome.lines():
                self.say("  " + line)
            if until_converged and outcome.converged:
                self.say("workflow: converged in round %d" % round_no)
                return 0
        if until_converged:
            self.say("workflow: not converged after %d round(s): %s; run the workflow again once what waits is "
                     "resolved (the lines above say what each item waits for) [%s]"
                     % (rounds, (outcome.reasons or ["items wait"])[0], NOT_CONVERGED))
            return 1
        return 0 if outcomes and all(o.ok for o in outcomes) else 1

    def cancel(self):
        for job in list(self.running):
            job.cancel()
        for job in list(self.running):
            job.wait()

    def result(self):
        return {"hosts": len(self.inventory.hosts), "slices": self.slices,
                "execution_nodes": dict((str(k), v.name) for k, v in self.nodes.items()), "rounds": self.rounds,
                "converged": bool(self.rounds) and self.rounds[-1]["outcome"]["converged"]}

    def write_result(self, path):
        with open(path, "w") as handle:
            json.dump(self.result(), handle, indent=1)
