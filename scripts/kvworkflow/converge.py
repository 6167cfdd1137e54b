"""When a workflow has converged: a round in which nothing is left, whoever made the changes.

A round converges when every job of it ran to its end with every host successful, and every plan it made had no
step to do and nothing blocked or waiting. What a round changed says nothing: another workflow running at the same
time may have made the changes, and a round that changed nothing may still hold steps its stages could not take
(a volume waiting for a node that failed, a second pod of a ReadWriteOnce claim). A round that has not converged
says why: each job that failed, each plan's steps, and each blocked item once, with what it waits for.

Pure: it reads events.JobOutcome objects only (tests/unit/test_workflow_converge.py).
"""

MAX_SHOWN = 20  # blocked items listed in a round's lines; the rest are counted


class RoundOutcome:
    """``converged``; ``reasons``: one line per job that leaves something; ``waiting``: what still waits at the
    round's end, each blocked item once ({job, node, volume, pod, action, reason}): those of the latest plan of each
    scope (a slice of the node stage, the attach/detach stage), since a later plan of the same nodes supersedes an
    earlier one (the first node stage's waits for an attach the attach/detach stage then made are gone)."""

    def __init__(self, converged, reasons, waiting, unknown):
        self.converged = converged
        self.reasons = reasons
        self.waiting = waiting
        self.unknown = unknown  # blocked items a job counted but did not list (it stopped before its report)

    def lines(self, max_shown=MAX_SHOWN):
        if self.converged:
            return ["nothing is left: every job succeeded and every plan was empty"]
        out = list(self.reasons)
        shown = self.waiting[:max_shown]
        for item in shown:
            out.append("waits: %s" % describe(item))
        if len(self.waiting) > len(shown):
            out.append("waits: ... and %d more blocked item(s), listed in the workflow's result file"
                       % (len(self.waiting) - len(shown)))
        return out

    def as_dict(self):
        return {"converged": self.converged, "reasons": self.reasons, "waiting": self.waiting,
                "unknown_blocked": self.unknown}


def describe(item):
    """``<job>: <action> of <volume> on node <node> for pod <pod>: <reason>``."""
    where = "%s of %s" % (item.get("action") or "a step", item.get("volume") or "a volume")
    if item.get("node"):
        where += " on node %s" % item["node"]
    if item.get("pod"):
        where += " for pod %s" % item["pod"]
    return "%s: %s: %s" % (item.get("job"), where, item.get("reason") or "no reason given")


def _job_reason(job):
    """Why ``job`` leaves the round unconverged, or None."""
    if not job.ok:
        hosts = sorted(set(job.failed) | set(job.unreachable))
        if hosts:
            return "%s: %s, host(s) %s failed or were unreachable: %s" % (
                job.label, job.status, ", ".join(hosts[:5]) + (" and %d more" % (len(hosts) - 5) if len(hosts) > 5
                                                               else ""),
                (job.failed.get(hosts[0]) or job.unreachable.get(hosts[0])))
        return "%s: %s%s" % (job.label, job.status, ": %s" % job.explanation if job.explanation else
                             ("" if job.complete else ", before the playbook's end"))
    if job.plan is None:
        return "%s: made no plan (the playbook ended before its plan task)" % job.label
    return None


def round_outcome(jobs):
    """The RoundOutcome of one workflow round's jobs (events.JobOutcome, in the order they ran)."""
    reasons, latest, unknown = [], {}, 0
    for job in jobs:
        reason = _job_reason(job)
        if reason:
            reasons.append(reason)
        plan = job.plan
        if plan is None:
            continue
        latest[job.scope or job.label] = job
        if plan.steps:
            reasons.append("%s: its plan had %d step(s) to do" % (job.label, plan.steps))
        if plan.blocked and plan.blocked_items is None:
            unknown += plan.blocked
            reasons.append("%s: its plan had %d blocked item(s) (the job ended before its report listed them)"
                           % (job.label, plan.blocked))
        elif plan.blocked:
            reasons.append("%s: its plan had %d blocked item(s)" % (job.label, plan.blocked))
    waiting = {}
    for job in latest.values():
        for item in job.plan.blocked_items or ():
            key = (item.get("node"), item.get("volume"), item.get("pod"), item.get("action"), item.get("reason"))
            if key not in waiting:
                waiting[key] = dict(dict((k, item.get(k)) for k in ("node", "volume", "pod", "action", "reason")),
                                    job=job.label)
    converged = not reasons and bool(jobs)
    if not jobs:
        reasons.append("no job ran")
    return RoundOutcome(converged, reasons, list(waiting.values()), unknown)
