# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The end of a reconcile run: what it did (or, in check mode, would do), per node of the run.

The report lists the run's nodes (the play's hosts: the plan's ``run_nodes``, the nodes with node facts) and every
node the controller acts for without a node task (plan_text.controller_side: a record-only release of a node out
of service or gone, a controller host's expansion), each with its volumes. The cluster's other nodes have no node
task in this run: they get one line with their counts, not a row each. Like ``kubectl get`` against a namespace,
the report is of what the command touches: a run of three hosts in a cluster of thousands of nodes reads a few
dozen lines, not a row for every node of the cluster, and it is computed from the plan's ``by_node`` index, in the
size of what it reports.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.phases import KIND_PHASE
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.plan_text import (
    OUTSIDE_NAMES, blocked_lines, blocked_once, controller_side, pending_lines, _cell)


def _phase_of(step):
    return KIND_PHASE.get((step.get("action"), step.get("target")))


def _failures(errors):
    """{(node, phase): the volumes its errors name, or None when one names none (the whole phase failed)}, built
    once: a scan of every error per step would be steps x errors on a run where many nodes failed."""
    failures = {}
    for error in errors:
        key = (error.get("node"), error.get("phase"))
        volumes = error.get("volumes")
        if not volumes:
            failures[key] = None
        elif key not in failures:
            failures[key] = set(volumes)
        elif failures[key] is not None:
            failures[key].update(volumes)
    return failures


def _failed(step, failures):
    key = (step.get("node"), _phase_of(step))
    if key not in failures:
        return False
    volumes = failures[key]
    return volumes is None or step.get("volume") in volumes


def reported_nodes(result, run_nodes=None):
    """(the steps the report lists, in plan order; the nodes it lists; {outside node: its steps' positions}).

    ``run_nodes``: the run's nodes (default: the plan's ``run_nodes``); None, every node is reported. A node outside
    them is reported too when the controller acts for it without a node task (controller_side); any other outside
    node is only counted. With the plan's ``by_node`` index only the reported nodes' steps are looked at, but for the
    one pass that finds the controller's own steps."""
    plan = result.get("plan") or []
    run_nodes = result.get("run_nodes") if run_nodes is None else run_nodes
    if run_nodes is None:
        return plan, None, {}
    shown = set(run_nodes)
    shown.update(step.get("node") for step in plan
                 if (step.get("record_only") or step.get("controller_host")) and controller_side(step))
    by_node = result.get("by_node")
    if by_node is None:  # a plan without the index (a hand-made result): one pass over it
        by_node = {}
        for position, step in enumerate(plan):
            by_node.setdefault(step.get("node"), []).append(position)
    positions = sorted(position for node in shown for position in by_node.get(node, ()))
    outside = dict((node, found) for node, found in by_node.items() if node not in shown and found)
    return [plan[position] for position in positions], shown, outside


def _outside_line(names, steps, blocked):
    """The report's one line about the nodes outside the run; what to do only when some of their steps are not run
    (a node with only blocked items, one the cluster does not have, say, is explained by its blocked lines)."""
    first = sorted(names, key=lambda n: n or "")[:OUTSIDE_NAMES]
    more = len(names) - len(first)
    return ("%d other node(s) of the cluster, not in this run's hosts: %d step(s) not run, %d blocked (%s%s)%s"
            % (len(names), steps, blocked, ", ".join(_cell(n) for n in first), ", and %d more" % more if more else "",
               "; add them to the inventory (kubevol_node_name maps a host to its Kubernetes node name) or drop --limit"
               if steps else ""))


def run_summary(result, errors=(), blocked_after_plan=(), check_mode=False, plan_shown=True, run_nodes=None,
                pending=()):
    """What a reconcile run did, per node of the run: {lines, nodes, blocked, errors, outside, pending, failed_nodes,
    failed_elsewhere, check_mode}.

    Each reported step is applied, failed (a node error of its phase names its volume, or no volume at all) or
    not attempted (in ``blocked_after_plan``: an earlier failure stopped it); in check mode the node modules checked
    it without acting, so a step is counted as would run or would fail. ``blocked`` is every blocked item of the run
    once, with its action; the lines repeat only those the plan table did not show (``plan_shown``). ``nodes`` has a
    row for each reported node (reported_nodes); ``outside`` counts the others: {nodes, steps (not run), blocked,
    names (the first OUTSIDE_NAMES)}, and the lines say it in one line; ``errors`` are the run's (summary_errors: the
    outside nodes whose steps it did not run in one entry). ``pending`` (the run's: the grows the nodes
    reported pending) and the plan's own ``pending`` are neither applied nor failed: each node's row counts them, and
    they are listed once, under "Pending".

    Each failure is printed once, where it happened: a node's in its node task (node_phases fails that host with
    the node's own message). The report names those nodes (``failed_nodes``: {node: [its failed tasks' phases]})
    and prints only the failures no node task of the run showed (``failed_elsewhere``: the errors of nodes outside
    the run's hosts, whose steps it did not run, and of a controller host outside them)."""
    errors = list(errors or ())
    after = blocked_once({}, blocked_after_plan)
    not_attempted = set((b.get("node"), b.get("volume"), b.get("pod"), b.get("action")) for b in after)
    blocked = blocked_once(result, after)
    failures = _failures(errors)
    steps, shown, outside_steps = reported_nodes(result, run_nodes)
    nodes = {}
    went_pending = set((p.get("node"), p.get("volume")) for p in pending or ())
    pending = list(result.get("pending") or ()) + list(pending or ())

    def row(node):
        return nodes.setdefault(node, {"applied": 0, "planned": 0, "failed": 0, "blocked": 0, "pending": 0,
                                       "volumes": {}})

    for step in steps:
        node = row(step.get("node"))
        key = (step.get("node"), step.get("volume"), step.get("pod"), step.get("action"))
        if key in not_attempted:
            continue  # counted with the blocked items
        if _failed(step, failures):
            outcome = "failed"
        elif step.get("target") == "node" and step.get("action") == "expand" and (
                step.get("node"), step.get("volume")) in went_pending:
            continue  # counted with the pending grows
        else:
            outcome = "planned" if check_mode else "applied"
        node[outcome] += 1
        label = "%s/%s" % (step.get("action"), step.get("target")) + (" %s" % step["pod"] if step.get("pod") else "")
        node["volumes"].setdefault(_cell(step.get("volume")), []).append(
            label if outcome in ("applied", "planned") else "%s %s" % (
                label, "WOULD FAIL" if check_mode else outcome.upper()))
    for entry in pending:
        if shown is None or entry.get("node") in shown:
            node = row(entry.get("node"))
            node["pending"] += 1
            node["volumes"].setdefault(_cell(entry.get("volume")), []).append("%s PENDING" % entry.get("action"))
    outside = {"nodes": 0, "steps": 0, "blocked": 0, "names": []}
    outside_names = set(outside_steps)
    for entry in blocked:
        if shown is not None and entry.get("node") not in shown:
            outside_names.add(entry.get("node"))
            outside["blocked"] += 1
            continue
        node = row(entry.get("node"))
        node["blocked"] += 1
        node["volumes"].setdefault(_cell(entry.get("volume")), []).append("%s BLOCKED" % entry.get("action"))
    if outside_names:
        # an outside step an earlier failure stopped is one of the blocked already
        stopped = sum(1 for b in after if b.get("node") in outside_steps)
        outside.update(nodes=len(outside_names), steps=sum(len(p) for p in outside_steps.values()) - stopped,
                       names=sorted(outside_names, key=lambda n: n or "")[:OUTSIDE_NAMES])
    lines = ["Check mode, nothing was changed. Per node: steps that would run, would fail, blocked:" if check_mode
             else "Per node: steps applied, failed, blocked:"]
    for name in sorted(nodes, key=lambda n: n or ""):
        counts = nodes[name]
        lines.append("%s: %s" % (_cell(name), ", ".join(
            ["%d would run" % counts["planned"], "%d would fail" % counts["failed"]] if check_mode else
            ["%d applied" % counts["applied"], "%d failed" % counts["failed"]]) + ", %d blocked" % counts["blocked"]
            + (", %d pending" % counts["pending"] if counts["pending"] else "")))
        for volume in sorted(counts["volumes"]):
            lines.append("  %s: %s" % (volume, ", ".join(counts["volumes"][volume])))
    if outside_names:
        lines.append(_outside_line(outside_names, outside["steps"], outside["blocked"]))
    unseen = after if plan_shown else blocked
    if plan_shown and shown is not None:
        # what the run did not attempt on an outside node follows from its steps not run: counted in its one line
        unseen = [entry for entry in unseen if entry.get("node") in shown]
    if unseen:
        lines.extend(["", "Blocked during the run:" if plan_shown else "Blocked:"])
        lines.extend(blocked_lines(unseen))
    if pending:
        lines.extend(["", "Pending (a node-side grow that waits; not a failure):"])
        lines.extend(pending_lines(pending))
    reported = summary_errors(errors, shown)
    failed_nodes, elsewhere = _by_owner(reported, shown)
    body = list(lines)
    lines.extend(failure_lines(failed_nodes, elsewhere, shown, check_mode))
    return {"lines": lines, "nodes": nodes, "blocked": blocked, "errors": reported, "outside": outside,
            "pending": pending,
            "failed_nodes": failed_nodes, "failed_elsewhere": elsewhere, "check_mode": bool(check_mode),
            "unreachable_nodes": sorted(set(e.get("node") for e in errors if e.get("unreachable") and e.get("node")),
                                        key=lambda n: n or ""),
            # the lines before the failures, and the run's nodes: the report (reconcile_report) says the failures
            # again once it knows whose they are
            "body_lines": body, "shown": None if shown is None else sorted(shown, key=lambda n: n or "")}


def split_failures(errors, shown):
    """({node of the run: [the phases it failed in, in order]}, [the errors of no node of the run]). A node of the
    run showed its failure in its own task (node_phases); the others' failures only the report can show. The errors
    of the nodes outside the run whose steps it did not run are one entry when there are several (summary_errors)."""
    return _by_owner(summary_errors(errors, shown), shown)


def _by_owner(reported, shown):
    """split_failures of errors already given as summary_errors gives them."""
    failed_nodes, elsewhere = {}, []
    for error in reported:
        node = error.get("node")
        if node is not None and (shown is None or node in shown):
            phases = failed_nodes.setdefault(node, [])
            if error.get("phase") not in phases:
                phases.append(error.get("phase"))
        else:
            elsewhere.append(error)
    return failed_nodes, elsewhere


def summary_errors(errors, shown):
    """The summary's ``errors``: every error of the run's nodes and of the controller, in the run's order, then the
    nodes outside the run's hosts whose steps it did not run, as one entry when there are several (outside_entry).
    Nothing ran on those nodes: their steps are the plan's, counted in the summary's ``outside``; an entry each, with
    its volumes, was most of the result when the run is a few hosts of a large cluster, and every later task that reads
    the result copies it (docs/performance.md, "Why the code is shaped so")."""
    kept, outside = [], []
    for error in errors:
        (outside if _not_run_outside(error, shown) else kept).append(error)
    names = sorted(set(e["node"] for e in outside), key=lambda n: n or "")
    return kept + [outside_entry(names)] if len(names) > 1 else list(errors)


def _not_run_outside(error, shown):
    return (error.get("node") is not None and shown is not None and error.get("node") not in shown
            and error.get("phase") not in ("controller", "facts", "record"))


def outside_entry(names):
    """The one failure of the nodes outside the run that have steps it did not run: {node: null, phase: outside,
    nodes (every name), msg}. In a large cluster an entry each would be most of the report and of the summary."""
    first = names[:OUTSIDE_NAMES]
    return {"node": None, "phase": "outside", "volumes": [], "nodes": list(names),
            "msg": "%d node(s) not in this run's hosts have steps it did not run (%s%s): add them to the inventory "
                   "(kubevol_node_name maps a host to its Kubernetes node name), or run again without --limit"
                   % (len(names), ", ".join(_cell(n) for n in first),
                      ", and %d more" % (len(names) - len(first)) if len(names) > len(first) else "")}


def failure_lines(failed_nodes, elsewhere, shown, check_mode=False):
    """The report's failures: the run's nodes that failed, named once (each one's message is in its own task's
    output), then what failed where no task of the run showed it, each once (the nodes outside the run's hosts with
    steps it did not run in one line: split_failures)."""
    lines = []
    if failed_nodes:
        lines.extend(["", "%s on %d node(s), each one's message is in its own task's output above: %s" % (
            "Would fail" if check_mode else "Failed", len(failed_nodes), ", ".join(
                "%s (%s)" % (_cell(node), ", ".join(_cell(p) for p in failed_nodes[node]))
                for node in sorted(failed_nodes, key=lambda n: n or "")))])
    if elsewhere:
        lines.extend(["", "Failed outside the run's hosts:"])
        lines.extend("  %s: %s" % (_cell(e.get("node")), e.get("msg")) if e.get("node") else "  %s" % e.get("msg")
                     if e.get("phase") == "outside" else "  the run: %s" % e.get("msg") for e in elsewhere)
    return lines
