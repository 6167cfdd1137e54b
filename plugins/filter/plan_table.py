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
    per step, then the blocked items (each once, with the action it holds back) and a summary line
    C(Plan: N to unmount, N to detach, N to attach, N to mount, N to expand; N blocked)."
  - The same table is what M(kubevol.volumes.volume_reconcile_plan) returns as C(table) with C(output=table).
positional: max_rows, more_hint
options:
  _input:
    description:
      - The registered result of M(kubevol.volumes.volume_reconcile_plan). With
        O(kubevol.volumes.volume_reconcile_plan#module:output=record) the plan is read from its record, by handle.
    type: dict
    required: true
  max_rows:
    description:
      - At most this many step rows and blocked rows, then a line saying how many more there are. All by default;
        V(0) is all of them too.
    type: int
  more_hint:
    description:
      - What that line says about seeing the rows left out, in parentheses after C(not shown).
    type: str
    default: raise max_rows
  cluster_store:
    description:
      - The cluster store options (O(kubevol.volumes.volume_reconcile_plan#module:cluster_source) and the API's
        connection options), to read a record kept in the Kubernetes API (a handle whose path starts with C(k8s:)).
        Not needed for a record on disk or a full result.
    type: dict
    version_added: 0.3.0
"""

EXAMPLES = r"""
- name: Show the plan
  ansible.builtin.debug:
    msg: "{{ (result | kubevol.volumes.plan_table).splitlines() }}"

- name: Show at most 50 steps and 50 blocked items
  ansible.builtin.debug:
    msg: "{{ (result | kubevol.volumes.plan_table(50)).splitlines() }}"
"""

RETURN = r"""
_value:
  description: The table, lines separated by newlines.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.plan import plan_text
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_record import plan_of
from ansible_collections.kubevol.volumes.plugins.module_utils.run.run_report import run_summary as _run_summary


def _full(result, name, cluster_store=None):
    """A record result (output=record) read back by its handle; a full result as it is."""
    try:
        return plan_of(result, cluster_store)
    except KubevolError as err:
        raise AnsibleFilterError("%s: %s" % (name, err.msg))


def plan_table(result, max_rows=None, more_hint="raise max_rows", cluster_store=None):
    """The plan result as text: steps, blocked items (each once, with its action), summary line. ``cluster_store``:
    the store options, to read a record kept in the Kubernetes API."""
    result = _full(result, "plan_table", cluster_store)
    if not isinstance(result, dict) or "plan" not in result:
        raise AnsibleFilterError("plan_table expects the result of kubevol.volumes.volume_reconcile_plan")
    if max_rows is not None and (isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 0):
        raise AnsibleFilterError("plan_table: max_rows must be a whole number of rows (0 for all), not %r" % (max_rows,))
    return "\n".join(plan_text.table_lines(result, max_rows or None, more_hint))


def run_summary(result, errors=None, blocked_after_plan=None, check_mode=False, plan_shown=True):
    """What a reconcile run did per node of the run (applied, failed, blocked), with lines to print; the cluster's
    nodes outside the run (the plan's ``run_nodes``) in one line of counts."""
    result = _full(result, "run_summary")
    if not isinstance(result, dict) or "plan" not in result:
        raise AnsibleFilterError("run_summary expects the result of kubevol.volumes.volume_reconcile_plan")
    return _run_summary(result, errors or (), blocked_after_plan or (), bool(check_mode), bool(plan_shown))


class FilterModule(object):
    def filters(self):
        return {"plan_table": plan_table, "run_summary": run_summary}
