"""A job's outcome, read from what ansible-runner leaves in its artifact directory (``<private data dir>/artifacts/
<ident>/``): ``status`` and ``rc``, and ``job_events/<counter>-<uuid>.json``, one file per Ansible callback event.
A job streamed from an execution node has the same files: ``ansible-runner process`` writes each event as it
arrives and unpacks the worker's artifacts at the end.

What a job did is read from its events as AWX reads them, never from its console text:

- per host, the ``playbook_on_stats`` event's counts (AWX's job host summaries): a host failed when its
  ``failures`` or ``dark`` (unreachable) count is not zero, so each host answers for itself;
- for each failed or unreachable host, the message of its last ``runner_on_failed`` (not ignored) or
  ``runner_on_unreachable`` event, with the task's name;
- the plan the job made: the result of its ``kubevol.volumes.volume_reconcile_plan`` task (its counts of steps and
  blocked items, its record's handle), and what the run left blocked: the ``summary.blocked`` of its last
  ``kubevol.volumes.reconcile_run`` result (the run's report).

Pure: no ansible-runner import, so that the rules are tested on their own (tests/unit/test_workflow_events.py).
"""

import json
import os

PLAN_ACTION = "kubevol.volumes.volume_reconcile_plan"
RUN_ACTION = "kubevol.volumes.reconcile_run"
COUNTS = ("ok", "changed", "failures", "dark", "ignored", "rescued", "skipped")
SUCCESSFUL = "successful"
TAIL = 6  # lines of a job's last words kept when it stopped before its end


class Plan:
    """What a job's plan task returned: ``steps`` and ``blocked`` (counts), ``record`` (the handle), and ``blocked_items``:
    each blocked item once ({node, volume, pod, action, reason}) from the run's report when the job got that far, else
    None (only the counts are known)."""

    def __init__(self, result):
        counts = result.get("counts") or {}
        self.steps = int(counts.get("steps") or 0)
        self.blocked = int(counts.get("blocked") or 0)
        self.record = result.get("record")
        self.node_errors = result.get("node_errors") or []
        self.blocked_items = None

    def as_dict(self):
        return {"steps": self.steps, "blocked": self.blocked, "record": self.record,
                "blocked_items": self.blocked_items}


class JobOutcome:
    """One job's outcome. ``status``: ansible-runner's (successful, failed, error, canceled, timeout); ``hosts``:
    {host: {count: n}} from the stats; ``failed`` / ``unreachable``: {host: message}; ``plan``: a Plan or None;
    ``explanation``: why a job without stats stopped (the stream's or ansible-runner's words, then its last output)."""

    def __init__(self, label, status, rc=None, explanation=None):
        self.label = label
        self.status = status
        self.rc = rc
        self.explanation = explanation
        self.hosts = {}
        self.failed = {}
        self.unreachable = {}
        self.plan = None
        self.complete = False  # the stats event was seen: Ansible ran the playbook to its end
        self.where = None  # the execution node, for a job that ran on one
        self.scope = None  # what the job reconciles (a slice of the node stage, the attach/detach stage): a later
        # job of the same scope supersedes its plan (converge.py)

    @property
    def changed(self):
        return sum(counts.get("changed", 0) for counts in self.hosts.values())

    @property
    def ok(self):
        """The job ran to its end and every host of it succeeded."""
        return self.status == SUCCESSFUL and self.complete and not self.failed and not self.unreachable

    def as_dict(self):
        return {"label": self.label, "status": self.status, "rc": self.rc, "explanation": self.explanation,
                "complete": self.complete, "ok": self.ok, "changed": self.changed, "hosts": self.hosts,
                "failed": self.failed, "unreachable": self.unreachable, "where": self.where, "scope": self.scope,
                "plan": None if self.plan is None else self.plan.as_dict()}


def _task(data):
    return data.get("task") or data.get("task_action") or "a task"


def _message(res):
    if not isinstance(res, dict):
        return "no result"
    msg = res.get("msg") or res.get("stderr") or res.get("reason") or res.get("exception")
    if isinstance(msg, list):
        msg = "; ".join(str(part) for part in msg)
    return " ".join(str(msg or "no message").split())[:2000]


def read_events(events, outcome):
    """Fill ``outcome`` from ``events`` (dicts as ansible-runner writes them, in counter order)."""
    last_words = []
    for event in events:
        kind = event.get("event")
        data = event.get("event_data") or {}
        host = data.get("host")
        if kind == "playbook_on_stats":
            outcome.complete = True
            for count in COUNTS:
                for name, number in (data.get(count) or {}).items():
                    outcome.hosts.setdefault(name, dict((c, 0) for c in COUNTS))[count] = int(number)
        elif kind == "runner_on_failed" and host and not data.get("ignore_errors"):
            outcome.failed[host] = "%s: %s" % (_task(data), _message(data.get("res")))
        elif kind == "runner_on_unreachable" and host:
            outcome.unreachable[host] = "%s: %s" % (_task(data), _message(data.get("res")))
        elif kind == "runner_on_ok" and isinstance(data.get("res"), dict):
            action = data.get("resolved_action") or data.get("task_action")
            res = data["res"]
            if action == PLAN_ACTION and "counts" in res:
                outcome.plan = Plan(res)
            elif action == RUN_ACTION and outcome.plan is not None and isinstance(res.get("summary"), dict):
                blocked = res["summary"].get("blocked")
                if isinstance(blocked, list):
                    outcome.plan.blocked_items = blocked
        elif kind in ("verbose", "error", "warning") and event.get("stdout"):
            last_words = (last_words + [line for line in event["stdout"].splitlines() if line.strip()])[-TAIL:]
    # the stats are the truth per host: a host whose counts do not say failed or unreachable was not (a failure
    # Ansible ignored, ignore_errors, is counted as ignored there), and one that failed without an event of its own
    # (a task's rescue, a handler) is still named
    for name, counts in outcome.hosts.items():
        if counts["failures"] and name not in outcome.failed:
            outcome.failed[name] = "failed (see the job's events)"
        if counts["dark"] and name not in outcome.unreachable:
            outcome.unreachable[name] = "unreachable (see the job's events)"
    if outcome.hosts:
        outcome.failed = dict((h, m) for h, m in outcome.failed.items() if outcome.hosts.get(h, {}).get("failures"))
        outcome.unreachable = dict((h, m) for h, m in outcome.unreachable.items()
                                   if outcome.hosts.get(h, {}).get("dark"))
    if not outcome.complete and last_words and not outcome.explanation:
        outcome.explanation = "its last output: " + " / ".join(last_words)
    return outcome


def _read_text(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return None


def load_events(artifact_dir):
    """The job's events in counter order, from ``<artifact_dir>/job_events`` (a half-written file skipped)."""
    folder = os.path.join(artifact_dir, "job_events")
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    events = []
    for name in names:
        counter, _sep, rest = name.partition("-")
        if not counter.isdigit() or not rest.endswith(".json"):
            continue  # ansible-runner's partial files and temporary names
        try:
            with open(os.path.join(folder, name)) as handle:
                events.append((int(counter), json.load(handle)))
        except (OSError, ValueError):
            continue
    return [event for _counter, event in sorted(events, key=lambda pair: pair[0])]


def read_job(label, artifact_dir, status=None, explanation=None):
    """The outcome of the job whose artifacts are in ``artifact_dir``. ``status`` and ``explanation``: what the caller
    knows when the artifacts lack a ``status`` file (a job whose worker or stream was lost sends no artifacts)."""
    found = _read_text(os.path.join(artifact_dir, "status"))
    rc = _read_text(os.path.join(artifact_dir, "rc"))
    outcome = JobOutcome(label, found or status or "error", int(rc) if rc and rc.lstrip("-").isdigit() else None,
                         explanation if not found or found != SUCCESSFUL else None)
    return read_events(load_events(artifact_dir), outcome)
