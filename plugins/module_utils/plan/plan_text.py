# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What people read of a plan: the plan table, the per-node summary, the warning about steps outside the play.

Pure functions over a volume_reconcile_plan result. Used by volume_reconcile_plan's ``output`` option
(run/plan_task.py), by the plan_table filter and by the end-of-run report (run/run_report.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import Counter
from operator import itemgetter

from ansible_collections.kubevol.volumes.plugins.module_utils.plan.provision_text import storage_line, storage_lines

SYMBOLS = {"unmount": "-", "cleanup": "-", "detach": "-", "attach": "+", "mount": "+", "expand": "~"}
ACTIONS = ("unmount", "detach", "attach", "mount", "expand")
COLUMNS = ("", "ACTION", "NODE", "VOLUME", "POD", "REASON")  # the plan's steps and blocked items alike
OUTPUTS = ("full", "table", "summary")


def _cell(value):
    return "-" if value is None or value == "" else str(value)


def _table(rows):
    """Fixed-width columns; the last column is not padded."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([c.ljust(w) for c, w in zip(row, widths)] + [row[-1]]).rstrip() for row in rows]


MORE_HINT = "output=full returns them all, or raise table_rows"  # volume_reconcile_plan's own options


def _more(hidden, what, hint=MORE_HINT):
    return "... and %d more %s not shown (%s)" % (hidden, what, hint)


def blocked_action(entry, desired_per_node, attached_per_node):
    """The step a blocked entry holds back: the planner's own ``action`` when it gives one, else derived from
    the states the result reports (wanted on the node or not, attached there or not)."""
    if entry.get("action"):
        return entry["action"]
    node, volume = entry.get("node"), entry.get("volume")
    if volume is None:
        return "mount" if entry.get("pod") else "any"  # a pod that cannot start; a node nothing can run on
    wanted = volume in desired_per_node.get(node, ())
    attached = volume in attached_per_node.get(node, ())
    if wanted:
        return "mount" if attached else "attach"
    if attached:
        return "unmount" if entry.get("pod") else "detach"
    return "mount" if entry.get("pod") else "unmount"


def blocked_once(result, extra=()):
    """Every blocked entry of the plan result (then ``extra``) once, in order, each with its ``action``.

    Two rules can hold back the same (node, volume, pod) for the same reason (an unreachable node's attach and
    its mount): one line is enough."""
    desired = (result.get("desired") or {}).get("per_node") or {}
    attached = (result.get("actual") or {}).get("per_node") or {}
    seen = set()
    out = []
    for entry in list(result.get("blocked") or ()) + list(extra or ()):
        entry = dict(entry, action=blocked_action(entry, desired, attached))
        key = (entry.get("node"), entry.get("volume"), entry.get("pod"), entry["action"], entry.get("reason"))
        if key in seen:
            continue
        seen.add(key)
        out.append(entry)
    return out


def _step_action(step):
    action = "%s/%s" % (step.get("action"), step.get("target"))
    if step.get("forced"):
        action += " (forced)"
    if step.get("record_only"):
        action += " (record only)"
    return action


def blocked_lines(blocked, max_rows=None, hint=MORE_HINT, symbol="!", what="blocked"):
    rows = [COLUMNS]
    shown = blocked if max_rows is None else blocked[:max_rows]
    rows.extend((symbol, _cell(b.get("action")), _cell(b.get("node")), _cell(b.get("volume")), _cell(b.get("pod")),
                 _cell(b.get("reason"))) for b in shown)
    lines = _table(rows)
    if len(shown) < len(blocked):
        lines.append(_more(len(blocked) - len(shown), what, hint))
    return lines


def pending_lines(pending, max_rows=None, hint=MORE_HINT):
    """The node-side grows that wait (the plan's ``pending``, the run's): neither a step that runs nor a failure."""
    return blocked_lines(pending, max_rows, hint, symbol="~", what="pending")


def plan_line(result, counts=None):
    """``Plan: N to unmount, N to detach, N to attach, N to mount, N to expand; N blocked``.

    counts: {action: steps} (ACTIONS and cleanup) when the caller has counted them already (summary_lines)."""
    if counts is None:
        found = Counter(s.get("action") for s in result.get("plan") or ())  # one get per step: 128,400 at 5,000 nodes
        counts = dict((a, found.get(a, 0)) for a in ACTIONS + ("cleanup",))
    cleanup = counts["cleanup"]
    pending = len(result.get("pending") or ())
    return "Plan: %s%s; %d blocked%s" % (", ".join("%d to %s" % (counts[a], a) for a in ACTIONS),
                                         ", %d stale directories to remove" % cleanup if cleanup else "",
                                         len(blocked_once(result)), "; %d pending" % pending if pending else "")


def guard_line(result):
    guard = result.get("teardown_guard") or {}
    if not guard.get("teardown"):
        return None
    return ("Teardown guard: %d of %d mounted volumes would be unmounted or detached (limit: %g%% from two on, "
            "%d in all)%s" % (guard["teardown"], guard.get("mounted", 0), guard.get("max_teardown_fraction", 0) * 100,
                              guard.get("max_teardown_count", 0),
                              "; allowed for this run" if guard.get("allow_mass_teardown") else ""))


def table_lines(result, max_rows=None, hint=MORE_HINT):
    """The plan as a table, like ``terraform plan``: one line per step, the blocked items once each with the
    action they hold back, the teardown guard, and the ``Plan:`` line. ``max_rows`` caps the step and the
    blocked rows (None: all of them); ``hint`` says how to see the rows left out."""
    steps = result.get("plan") or []
    blocked = blocked_once(result)
    lines = []
    if steps:
        shown = steps if max_rows is None else steps[:max_rows]
        rows = [COLUMNS]
        rows.extend((SYMBOLS.get(s.get("action"), "?"), _step_action(s), _cell(s.get("node")), _cell(s.get("volume")),
                     _cell(s.get("pod")), _cell(s.get("reason"))) for s in shown)
        lines.extend(_table(rows))
        if len(shown) < len(steps):
            lines.append(_more(len(steps) - len(shown), "steps", hint))
    elif not result.get("provisioning") and not result.get("deletions") and not blocked:
        # a grow that waits is not the desired state: no step runs, which is all that can be said
        lines.append("No step to run." if result.get("pending") else "No changes: volumes match the desired state.")
    lines.extend(storage_lines(result, max_rows))  # CreateVolume, DeleteVolume: under their own headings
    if blocked:
        # "No changes" would stand above items that hold the desired state back: nothing runs, and they wait
        lines.extend(["", "Blocked:"] if steps or result.get("provisioning") or result.get("deletions")
                     else ["Nothing to do; %d blocked:" % len(blocked)])
        lines.extend(blocked_lines(blocked, max_rows, hint))
    if result.get("pending"):
        lines.extend(["", "Pending (not tried in this run):"])
        lines.extend(pending_lines(result["pending"], max_rows, hint))
    lines.append("")
    guard = guard_line(result)
    if guard:
        lines.append(guard)
    lines.extend(line for line in (storage_line(result),) if line)
    lines.append(plan_line(result))
    return lines


_NODE_AND_ACTION = itemgetter("node", "action")


def node_counts(result):
    """{node: {unmount, detach, attach, mount, expand, cleanup, blocked}} of the plan's steps and blocked items."""
    nodes = {}
    plan = result.get("plan") or ()
    try:  # the planner's steps all have both keys: read in C, not with two calls per step
        counted = Counter(map(_NODE_AND_ACTION, plan))
    except (KeyError, TypeError):  # a plan made by hand may leave them out
        counted = Counter((step.get("node"), step.get("action")) for step in plan)
    counted.update((entry.get("node"), "blocked") for entry in blocked_once(result))
    for (node, action), count in counted.items():
        row = nodes.get(node)
        if row is None:
            row = nodes[node] = dict((a, 0) for a in ACTIONS + ("cleanup", "blocked"))
        if action in row:
            row[action] += count
    return nodes


def summary_lines(result, max_rows=None):
    """One line per node (steps per action, blocked), then the ``Plan:`` line: small whatever the plan's size."""
    nodes = node_counts(result)
    columns = ("NODE",) + tuple(a.upper() for a in ACTIONS) + ("BLOCKED", "")
    names = sorted(nodes, key=lambda n: (n is None, n or ""))
    shown = names if max_rows is None else names[:max_rows]
    rows = [columns] + [(_cell(n),) + tuple(str(nodes[n][a]) for a in ACTIONS + ("blocked",)) + ("",) for n in shown]
    blocked = sum(nodes[n]["blocked"] for n in names)
    steps = sum(sum(nodes[n][a] for a in ACTIONS + ("cleanup",)) for n in names)
    lines = _table(rows) if names else ["No changes: volumes match the desired state."]
    if names and not steps:
        lines.insert(0, "Nothing to do; %d blocked:" % blocked)
    if len(shown) < len(names):
        lines.append(_more(len(names) - len(shown), "nodes"))
    guard = guard_line(result)
    totals = dict((a, sum(row[a] for row in nodes.values())) for a in ACTIONS + ("cleanup",))  # one pass over the plan
    storage = storage_line(result)
    return lines + [""] + ([guard] if guard else []) + ([storage] if storage else []) + [plan_line(result, totals)]


def shape(result, output="full", max_rows=None, hint=None):
    """The volume_reconcile_plan result for ``output``: ``full`` as planned (what the reconcile role needs);
    ``table`` and ``summary`` only what a person reads (``table`` lines and the ``summary`` counts), so that an
    ad-hoc run of a big plan prints pages, not megabytes."""
    if output == "full":
        return result
    lines = table_lines(result, max_rows, hint or MORE_HINT) if output == "table" else summary_lines(result, max_rows)
    shaped = {"changed": False, "table": lines, "summary": result.get("summary")}
    if result.get("warnings"):
        shaped["warnings"] = result["warnings"]
    return shaped


def controller_side(step):
    """True for a step the controller carries out without its node's task: a record-only release (the node is out of
    service or gone: rules_teardown.py detach; a local volume's capacity: rules_expand.py) and a controller host's
    ControllerExpandVolume (plan/remote_controller.py: the controller task's, whichever node uses the volume). Such
    a step runs for a node outside the play too; every other step is its node's task's."""
    return bool(step.get("record_only")) or (
        bool(step.get("controller_host")) and (step.get("action"), step.get("target")) == ("expand", "controller"))


OUTSIDE_NAMES = 5  # the nodes named in the one warning (and report line) about the nodes outside the play


def nodes_outside(result, nodes):
    """The one warning (a list of at most one) about plan steps on nodes not in ``nodes`` (the nodes with node
    facts: this run's play), which no node task of this run will run: how many steps of which kinds, on how many
    nodes, the first OUTSIDE_NAMES of them, and what to do. The controller's own steps (controller_side) need no
    node. One pass over the plan, nothing built per step but its kind."""
    known = frozenset(nodes)
    outside, kinds, count = set(), set(), 0
    for step in result.get("plan") or ():
        node = step.get("node")
        if node in known or ((step.get("record_only") or step.get("controller_host")) and controller_side(step)):
            continue
        outside.add(node)
        kinds.add((step.get("action"), step.get("target")))
        count += 1
    if not outside:
        return []
    outside = sorted(outside, key=lambda n: n or "")
    what = ", ".join(sorted("%s/%s" % kind for kind in kinds))
    if len(outside) == 1:
        return ["the plan has %d step(s) on node %s (%s), which is not in this run's hosts (no node facts for it): "
                "they are not run; add the node to the inventory (kubevol_node_name maps a host to its Kubernetes "
                "node name), or drop --limit" % (count, outside[0], what)]
    first = outside[:OUTSIDE_NAMES]
    return ["the plan has %d step(s) (%s) on %d nodes that are not in this run's hosts (no node facts for them: %s%s): "
            "they are not run; add the nodes to the inventory (kubevol_node_name maps a host to its Kubernetes node "
            "name), or drop --limit" % (count, what, len(outside), ", ".join(_cell(n) for n in first),
                                        ", and %d more" % (len(outside) - len(first)) if len(outside) > len(first)
                                        else "")]
