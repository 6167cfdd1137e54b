"""scripts/kvworkflow/converge.py: a workflow converges when a round's plans leave nothing, whoever made the
changes (a round that changed nothing while its plans held blocked steps has not converged)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts"))

from kvworkflow import converge, events  # noqa: E402

WAIT = "waiting for the attach/detach stage: volume pv-a is not attached to node node2 yet"


def job(label, scope=None, steps=0, blocked=(), status="successful", hosts=None, failed=None, plan=True,
        listed=True, changed=0):
    out = events.JobOutcome(label, status)
    out.scope = scope
    out.complete = status != "error"
    out.hosts = hosts or {"node1": {"ok": 3, "changed": changed, "failures": 0, "dark": 0}}
    out.failed = failed or {}
    if plan:
        out.plan = events.Plan({"counts": {"steps": steps, "blocked": len(blocked)}})
        out.plan.blocked_items = list(blocked) if listed else None
    return out


def item(node="node2", volume="pv-a", pod=None, action="mount", reason=WAIT):
    return {"node": node, "volume": volume, "pod": pod, "action": action, "reason": reason}


def round_of(blocked_first=(), blocked_ad=(), blocked_second=(), steps=0):
    return [job("node stage 1, slice 1", "slice 1", blocked=blocked_first),
            job("attach/detach stage", "ad", steps=steps, blocked=blocked_ad),
            job("node stage 2, slice 1", "slice 1", blocked=blocked_second)]


def test_a_round_with_every_plan_empty_has_converged():
    outcome = converge.round_outcome(round_of())
    assert outcome.converged and outcome.waiting == []
    assert outcome.lines() == ["nothing is left: every job succeeded and every plan was empty"]


def test_a_round_that_changed_nothing_but_left_blocked_steps_has_not_converged():
    # the hidden storm: another workflow made every change, and this one's plans held blocked steps
    multi = item(node="node3", volume="rwo-1", pod="storm/p-2", action="attach",
                 reason="Multi-Attach error for volume rwo-1: volume is already used by pod(s) storm/p-1 on node1")
    outcome = converge.round_outcome(round_of(blocked_ad=[multi], blocked_second=[item()]))
    assert not outcome.converged
    assert sorted(w["volume"] for w in outcome.waiting) == ["pv-a", "rwo-1"]
    text = "\n".join(outcome.lines())
    assert "Multi-Attach error for volume rwo-1" in text and "attach of rwo-1 on node node3 for pod storm/p-2" in text


def test_steps_left_to_do_are_not_convergence():
    outcome = converge.round_outcome(round_of(steps=2))
    assert not outcome.converged and outcome.reasons == ["attach/detach stage: its plan had 2 step(s) to do"]


def test_a_failed_host_or_a_job_without_a_plan_is_not_convergence():
    failed = job("slice 2", "slice 2", status="failed", failed={"node5": "Set up: mkfs failed"},
                 hosts={"node5": {"ok": 1, "failures": 1, "dark": 0, "changed": 0}})
    outcome = converge.round_outcome(round_of() + [failed])
    assert not outcome.converged and "node5" in outcome.reasons[0] and "mkfs failed" in outcome.reasons[0]
    lost = job("slice 3", "slice 3", status="error", plan=False)
    lost.explanation = "the stream from execution node node1 ended [KV-WORKER-LOST]"
    outcome = converge.round_outcome(round_of() + [lost])
    assert not outcome.converged and "KV-WORKER-LOST" in outcome.reasons[0]
    assert not converge.round_outcome(round_of() + [job("slice 4", "slice 4", plan=False)]).converged


def test_what_waits_is_each_scopes_latest_plan():
    # the first node stage waited for an attach the attach/detach stage made: the second node stage's plan of the
    # same slice supersedes it, so it is not listed as waiting (the round still has not converged: a plan held it)
    outcome = converge.round_outcome(round_of(blocked_first=[item()]))
    assert not outcome.converged and outcome.waiting == []
    # a slice whose second node stage made no plan (its job was lost) keeps the first one's waits
    jobs = round_of(blocked_first=[item()])
    jobs[2] = job("node stage 2, slice 1", "slice 1", status="error", plan=False)
    waiting = converge.round_outcome(jobs).waiting
    assert [(w["volume"], w["job"]) for w in waiting] == [("pv-a", "node stage 1, slice 1")]


def test_blocked_items_counted_but_not_listed_are_said_so():
    outcome = converge.round_outcome([job("slice 1", "slice 1", blocked=[item(), item(volume="pv-b")], listed=False)])
    assert not outcome.converged and outcome.unknown == 2
    assert "2 blocked item(s) (the job ended before its report listed them)" in outcome.reasons[0]


def test_many_waiting_items_are_listed_up_to_a_bound():
    many = [item(volume="pv-%d" % i) for i in range(converge.MAX_SHOWN + 5)]
    lines = converge.round_outcome([job("slice 1", "slice 1", blocked=many)]).lines()
    assert sum(line.startswith("waits: round") or line.startswith("waits: slice") for line in lines) == \
        converge.MAX_SHOWN
    assert lines[-1] == "waits: ... and 5 more blocked item(s), listed in the workflow's result file"
