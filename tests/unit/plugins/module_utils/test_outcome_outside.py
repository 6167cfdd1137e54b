"""task_outcome with nodes outside the run's hosts: the one-pass path gives what the per-step path gave.

``old_task_outcome`` below is task_outcome as it was before the nodes outside the run were reported from one pass
over the plan view's (phase, node) index (copied, with the plan view's index as it was then): each outside node's
steps filtered three times per phase against a copy of the run's failures, and every later step of the plan walked
for the blocked ones. Both must give the same records, failures (in the same order), blocked steps, errors and
pending grows, whatever the failures before the task and whatever the run's own nodes report.
"""
import random

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import lean_plan
from ansible_collections.kubevol.volumes.plugins.module_utils.run import executor, outcome, plan_view

DRIVER = "loop.kubevol.io"
SETUP = ["attach", "mount", "expand_controller", "expand_node"]


# ---- the path as it was --------------------------------------------------------------------------------------

class OldView(object):
    """The (phase, node) index and its step filter as plan_view.PlanView had them."""

    def __init__(self, plan_result):
        self.plan = plan_result.get("plan") or []
        self.by_phase_node, self.nodes_by_phase = {}, dict((name, []) for name in phases.NAMES)
        for step in self.plan:
            phase = phases.phase_of(phases.step_kind(step))
            if phase is None or (step.get("controller_host") and phase == "expand_controller"):
                continue
            key = (phase, step.get("node"))
            if key not in self.by_phase_node:
                self.by_phase_node[key] = []
                self.nodes_by_phase[phase].append(step.get("node"))
            self.by_phase_node[key].append(step)

    def steps(self, phase, node=None, failures=None, record_only=False):
        failures = failures or {}
        nodes = [node] if node is not None else self.nodes_by_phase[phase]
        return [step for name in nodes for step in self.by_phase_node.get((phase, name), ())
                if bool(step.get("record_only")) == record_only and name not in failures.get("nodes", {})
                and step.get("unique_volume_name") not in failures.get("volumes", {})]


def old_not_run(view, phase, node, failures):
    volumes = []
    for step in view.steps(phase, node, failures):
        key = step["unique_volume_name"]
        if key is not None:
            failures["volumes"].setdefault(key, "%s on node %s failed" % (phase, node))
            if step.get("volume") not in volumes:
                volumes.append(step.get("volume"))
    msg = ("node %s has work in phase %s but did not run it: add it to this play's inventory, or run again without "
           "--limit" % (node, phase))
    return [], [{"node": node, "phase": phase, "msg": msg, "volumes": volumes}]


def old_task_outcome(plan_result, task_phases, results, failures=None):
    view, real = OldView(plan_result), plan_view.PlanView(plan_result)
    start = outcome._copy_failures(failures)
    merged = outcome._copy_failures(failures)
    records, errors, pending = [], [], []
    for phase in task_phases:
        records.extend(record for step in view.steps(phase, None, start, record_only=True)
                       if not step.get("controller_host")
                       for record in outcome._records_for(phase, step["node"], dict(real.item(step), detach=True),
                                                          {}, [step]))
    blocked = []
    run_nodes = plan_result.get("run_nodes")
    inside = (lambda node: True) if run_nodes is None else frozenset(run_nodes).__contains__
    nodes = sorted(set(node for phase in task_phases for node in view.nodes_by_phase[phase]
                       if view.steps(phase, node, start)))
    for node in nodes:
        host = (results or {}).get(node)
        node_failures = outcome._copy_failures(start)
        for phase in task_phases:
            if inside(node):
                blocked.extend(outcome._not_attempted(view.by_phase_node.get((phase, node), ()), lambda s: True,
                                                      node_failures, start))
            if node in node_failures["nodes"] or not view.steps(phase, node, node_failures):
                continue
            if host is None and not inside(node):
                node_records, node_errors = old_not_run(view, phase, node, node_failures)
            else:
                node_records, node_errors = outcome._node_phase(real, phase, node,
                                                                outcome._phase_result(host, phase, node),
                                                                node_failures, pending)
            records.extend(node_records)
            errors.extend(node_errors)
        merged["nodes"].update(node_failures["nodes"])
        for key, reason in node_failures["volumes"].items():
            merged["volumes"].setdefault(key, reason)
    last = max(phases.BY_NAME[phase].order for phase in task_phases)
    blocked.extend(outcome._not_attempted(view.plan, lambda s: phases.order_of(phases.step_kind(s)) > last and (
        inside(s.get("node")) or s.get("record_only") or s.get("controller_host")), merged, start))
    return {"records": records, "failures": merged, "blocked": blocked, "errors": errors, "pending": pending}


def same(plan_result, task_phases, results, failures=None):
    """The new path's outcome, after checking it against the old one's, key by key and in order."""
    new = executor.task_outcome(plan_result, task_phases, results, failures)
    old = old_task_outcome(plan_result, task_phases, results, failures)
    for key in ("records", "blocked", "errors", "pending"):
        assert new[key] == old[key], key
    for key in ("nodes", "volumes"):
        assert list(new["failures"][key].items()) == list(old["failures"][key].items()), key
    return new


# ---- plans with nodes outside the run ------------------------------------------------------------------------

def key(pv):
    return unique_volume_name(DRIVER, pv + ".img")


def step(action, target, node, pv, pod_uid=None, **extra):
    item = {"pv_name": pv, "driver": DRIVER, "volume_handle": pv + ".img", "volume_attributes": {},
            "capacity_bytes": 1 << 30, "mode": "Filesystem", "fs_type": "ext4", "mount_options": [],
            "read_only": False, "pods": []}
    base = {"action": action, "target": target, "node": node, "volume": pv,
            "pod": ("ns/" + pod_uid) if pod_uid else None, "pod_uid": pod_uid, "reason": "test", "unique_volume_name": key(pv), "item": item}
    base.update(extra)
    return base


def stale(node, path):
    return {"action": "cleanup", "target": "directory", "node": node, "volume": None, "pod": None, "pod_uid": None,
            "reason": "test", "unique_volume_name": None, "path": path}


def grow(node, pv, target, **extra):
    return step("expand", target, node, pv, size_from=1 << 30, size_to=2 << 30, capacity="2Gi", pvc="ns/" + pv, **extra)


def outside_plan():
    """n1 and n2 run; n3, n4 and n5 are outside. n3's detach of pv-d is not run, so n2's attach of pv-d (and its
    controller host's expansion) is blocked; n4 has the whole setup of pv-e, pv-f and pv-s; n5 mounts pv-s too (a
    volume on two outside nodes) and has a detach the controller records without it."""
    plan = lean_plan([
        step("unmount", "pod", "n1", "pv-a", pod_uid="old"),
        step("unmount", "device", "n1", "pv-a"),
        step("detach", "device", "n1", "pv-a"),
        step("unmount", "device", "n3", "pv-d"),
        stale("n4", "/var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/gone"),
        step("detach", "device", "n3", "pv-d"),
        step("detach", "device", "n5", "pv-g", record_only=True),
        step("attach", "device", "n2", "pv-a"),
        step("attach", "device", "n2", "pv-d"),
        step("attach", "device", "n4", "pv-e"),
        step("attach", "device", "n4", "pv-f"),
        step("mount", "device", "n2", "pv-a"),
        step("mount", "pod", "n2", "pv-a", pod_uid="p1"),
        step("mount", "device", "n2", "pv-d"),
        step("mount", "pod", "n2", "pv-d", pod_uid="p2"),
        step("mount", "device", "n4", "pv-e"),
        step("mount", "pod", "n4", "pv-e", pod_uid="p3"),
        step("mount", "pod", "n4", "pv-f", pod_uid="p4"),
        step("mount", "pod", "n4", "pv-s", pod_uid="p5"),
        step("mount", "pod", "n5", "pv-s", pod_uid="p6"),
        grow("n2", "pv-d", "controller", controller_host="ctl"),
        grow("n2", "pv-a", "controller"),
        grow("n4", "pv-e", "controller"),
        grow("n2", "pv-a", "node"),
        grow("n4", "pv-e", "node"),
    ])
    return dict(plan, run_nodes=["n1", "n2"])


def ran(*names, **overrides):
    results = dict((name, {"changed": True}) for name in names)
    results.update(overrides)
    return {"changed": True, "phase_results": results}


def test_a_detach_on_an_outside_node_blocks_the_attach_of_a_run_node_as_before():
    plan = outside_plan()
    teardown = same(plan, ["teardown"], {"n1": ran("teardown")})
    assert [(e["node"], e["phase"], e["volumes"]) for e in teardown["errors"]] == [("n3", "teardown", ["pv-d"]),
                                                                                   ("n4", "teardown", [])]
    assert [r["type"] for r in teardown["records"]] == ["detached", "detached"]  # n5's record_only, then n1's
    assert list(teardown["failures"]["volumes"]) == [key("pv-d")]
    # n2's steps of pv-d, and the controller host's expansion of it
    assert [(b["node"], b["volume"], b["action"], b["pod"]) for b in teardown["blocked"]] == [
        ("n2", "pv-d", "attach", None), ("n2", "pv-d", "mount", None), ("n2", "pv-d", "mount", "ns/p2"),
        ("n2", "pv-d", "expand", None)]
    setup = same(plan, SETUP, {"n2": ran(*SETUP)}, teardown["failures"])
    assert [(e["node"], e["phase"], e["volumes"]) for e in setup["errors"]] == [
        ("n4", "attach", ["pv-e", "pv-f"]), ("n4", "mount", ["pv-s"]), ("n5", "mount", ["pv-s"])]
    assert setup["failures"]["volumes"][key("pv-s")] == "mount on node n4 failed"  # the first node's reason
    assert not [r for r in setup["records"] if r.get("pv_name") == "pv-d"]


@pytest.mark.parametrize("n2", [
    ran(*SETUP),
    ran(*SETUP, attach={"failed": True, "msg": "losetup: no free loop device",
                        "volumes": [{"unique_volume_name": key("pv-d")}]}),
    {"unreachable": True, "msg": "ssh: connection refused"},
    ran("attach", "mount"),
    None,
    ran(*SETUP, expand_node={"changed": False, "volumes": [
        {"unique_volume_name": key("pv-a"), "stage": "node", "pending": {"msg": "offline only", "offline": True}}]}),
], ids=["ok", "attach-failed", "unreachable", "phases-missing", "not-run", "grow-pending"])
@pytest.mark.parametrize("n1", [ran("teardown"), ran("teardown", teardown={"failed": True, "msg": "umount: busy"})],
                         ids=["teardown-ok", "teardown-failed"])
def test_every_outcome_of_the_run_nodes_beside_outside_nodes_is_the_same(n1, n2):
    plan = outside_plan()
    teardown = same(plan, ["teardown"], {"n1": n1})
    same(plan, SETUP, {"n2": n2} if n2 is not None else {}, teardown["failures"])
    same(plan, SETUP, {"n2": n2} if n2 is not None else {})


def test_failures_before_the_task_on_outside_nodes_and_volumes_are_the_same():
    plan = outside_plan()
    before = {"nodes": {"n5": "node unreachable: n5, in phase facts"}, "volumes": {key("pv-f"): "earlier"}}
    out = same(plan, SETUP, {"n2": ran(*SETUP)}, before)
    assert [(e["node"], e["phase"], e["volumes"]) for e in out["errors"]] == [("n4", "attach", ["pv-e"]),
                                                                              ("n4", "mount", ["pv-s"])]
    same(plan, ["teardown"], {"n1": ran("teardown")}, before)


def test_without_run_nodes_every_node_is_the_runs():
    plan = dict(outside_plan())
    del plan["run_nodes"]
    same(plan, ["teardown"], {"n1": ran("teardown")})
    same(plan, SETUP, {"n2": ran(*SETUP), "n4": ran(*SETUP)})


def random_plan(seed):
    """A plan of 40 nodes, each volume detached from one node (sometimes one the controller records alone) and set
    up on another, some shared by two nodes, with stale directories and expansions; a third of the nodes run."""
    rng = random.Random(seed)
    nodes = ["n%02d" % i for i in range(40)]
    teardown, attach, mount, expand_c, expand_n = [], [], [], [], []
    for v in range(120):
        pv = "pv-%03d" % v
        old, new = rng.sample(nodes, 2)
        if rng.random() < 0.4:
            teardown.append(step("unmount", "device", old, pv))
            teardown.append(step("detach", "device", old, pv, record_only=rng.random() < 0.2))
        if rng.random() < 0.1:
            teardown.append(stale(old, "/stale/%s" % pv))
        attach.append(step("attach", "device", new, pv))
        mount.append(step("mount", "device", new, pv))
        mount.append(step("mount", "pod", new, pv, pod_uid="p-%s" % pv))
        if rng.random() < 0.2:
            mount.append(step("mount", "pod", rng.choice(nodes), pv, pod_uid="q-%s" % pv))
        if rng.random() < 0.3:
            expand_c.append(grow(new, pv, "controller", **({"controller_host": "ctl"} if rng.random() < 0.3 else {})))
            expand_n.append(grow(new, pv, "node"))
    order = dict((n, i) for i, n in enumerate(nodes))
    steps = []
    for group in (teardown, attach, mount, expand_c, expand_n):
        steps.extend(sorted(group, key=lambda s: order[s["node"]]))  # the planner emits a phase's steps node by node
    plan = lean_plan(steps)
    return dict(plan, run_nodes=sorted(rng.sample(nodes, 13)))


@pytest.mark.parametrize("seed", range(8))
def test_random_plans_with_outside_nodes_give_the_same_outcome(seed):
    plan = random_plan(seed)
    rng = random.Random(seed)
    teardown_results = dict((node, ran("teardown") if rng.random() < 0.7 else
                             ran("teardown", teardown={"failed": True, "msg": "busy"}))
                            for node in plan["run_nodes"] if rng.random() < 0.9)
    teardown = same(plan, ["teardown"], teardown_results)
    setup_results = dict((node, ran(*SETUP) if rng.random() < 0.7 else {"unreachable": True, "msg": "gone"})
                         for node in plan["run_nodes"] if rng.random() < 0.9)
    setup = same(plan, SETUP, setup_results, teardown["failures"])
    assert setup["errors"]  # the outside nodes' work is reported, never done
    same(plan, ["expand_node"], setup_results, setup["failures"])


def test_the_run_state_after_each_task_is_the_same_through_run_step():
    """executor.run_step (what reconcile_run returns and writes) over the old and the new outcome, in check mode and
    not: the state, the records and the intents."""
    plan = outside_plan()

    def steps_with(task_outcome):
        saved = outcome.task_outcome
        executor.task_outcome = task_outcome
        try:
            out = []
            for check_mode in (False, True):
                state, records, upcoming = executor.run_step(plan, None, check_mode=check_mode)
                out.append((state, records))
                for each in list(upcoming):
                    results = {"n1": ran("teardown"), "n2": ran(*SETUP)}
                    state, records, _rest = executor.run_step(plan, state, each["name"], results, check_mode)
                    out.append((state, records))
            return out
        finally:
            executor.task_outcome = saved

    assert steps_with(old_task_outcome) == steps_with(outcome.task_outcome)
