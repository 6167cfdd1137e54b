# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: plan_table
short_description: Render a volume plan as a fixed-width table
version_added: 0.1.0
author: kubevol contributors (@kubevol)
description:
  - "Renders the result of M(kubevol.volumes.volume_reconcile_plan) like C(terraform plan) does, one line
    per step, then the blocked items and a summary line
    C(Plan: N to unmount, N to detach, N to attach, N to mount, N to expand; N blocked)."
options:
  _input:
    description: The registered result of M(kubevol.volumes.volume_reconcile_plan).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Show the plan
  ansible.builtin.debug:
    msg: "{{ (result | kubevol.volumes.plan_table).splitlines() }}"
"""

RETURN = r"""
_value:
  description: The table, lines separated by newlines.
  type: str
"""

from ansible.errors import AnsibleFilterError

SYMBOLS = {"unmount": "-", "cleanup": "-", "detach": "-", "attach": "+", "mount": "+", "expand": "~"}
COLUMNS = ("", "ACTION", "NODE", "VOLUME", "POD", "REASON")
ACTIONS = ("unmount", "detach", "attach", "mount", "expand")


def _cell(value):
    return "-" if value is None or value == "" else str(value)


def _table(rows):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [c.ljust(w) for c, w in zip(row, widths)] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
    return lines


def plan_table(result):
    """The plan result as text: steps, blocked items, summary line."""
    if not isinstance(result, dict) or "plan" not in result:
        raise AnsibleFilterError("plan_table expects the result of kubevol.volumes.volume_reconcile_plan")
    steps = result.get("plan") or []
    blocked = result.get("blocked") or []
    lines = []
    if steps:
        rows = [COLUMNS]
        for s in steps:
            action = "%s/%s" % (s.get("action"), s.get("target"))
            if s.get("forced"):
                action += " (forced)"
            if s.get("record_only"):
                action += " (record only)"
            rows.append((SYMBOLS.get(s.get("action"), "?"), action, _cell(s.get("node")), _cell(s.get("volume")),
                         _cell(s.get("pod")), _cell(s.get("reason"))))
        lines.extend(_table(rows))
    else:
        lines.append("No changes. Volumes match the desired state.")
    if blocked:
        lines.append("")
        lines.append("Blocked:")
        rows = [("", "NODE", "VOLUME", "POD", "REASON")]
        rows.extend(("!", _cell(b.get("node")), _cell(b.get("volume")), _cell(b.get("pod")), _cell(b.get("reason")))
                    for b in blocked)
        lines.extend(_table(rows))
    counts = dict((a, 0) for a in ACTIONS)
    for s in steps:
        if s.get("action") in counts:
            counts[s["action"]] += 1
    lines.append("")
    guard = result.get("teardown_guard") or {}
    if guard.get("teardown"):
        lines.append("Teardown guard: %d of %d mounted volumes would be unmounted or detached (limit: %g%% from two "
                     "on, %d in all)%s" % (guard["teardown"], guard.get("mounted", 0),
                                           guard.get("max_teardown_fraction", 0) * 100, guard.get("max_teardown_count", 0),
                                           "; allowed for this run" if guard.get("allow_mass_teardown") else ""))
    cleanup = sum(1 for s in steps if s.get("action") == "cleanup")
    lines.append("Plan: %s%s; %d blocked" % (", ".join("%d to %s" % (counts[a], a) for a in ACTIONS),
                                             ", %d stale directories to remove" % cleanup if cleanup else "",
                                             len(blocked)))
    return "\n".join(lines)


class FilterModule(object):
    def filters(self):
        return {"plan_table": plan_table}
