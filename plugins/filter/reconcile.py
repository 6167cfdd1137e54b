# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the reconcile role uses to run a plan phase by phase (see module_utils/executor.py).

Internal to roles/reconcile, not a public interface (each one's DOCUMENTATION says so): they may change in
any release. The public filter is plan_table (plan_table.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.kubevol.volumes.plugins.module_utils import executor


def _node_of(hostvars, host):
    return hostvars[host].get("kubevol_node_name") or host


def node_results(hostvars, hosts, var_name):
    """{Kubernetes node name: the result registered as var_name on that host}."""
    results = {}
    for host in hosts:
        result = hostvars[host].get(var_name)
        results[_node_of(hostvars, host)] = dict(result) if isinstance(result, dict) else None
    return results


def node_facts_map(hostvars, hosts, var_name):
    """The planner's node_facts: facts of each reachable node, reachable=false with the error otherwise."""
    facts = {}
    for host in hosts:
        node = _node_of(hostvars, host)
        result = hostvars[host].get(var_name)
        if isinstance(result, dict) and result.get("node_facts") and not result.get("failed"):
            facts[node] = dict(result["node_facts"], node_name=node, reachable=True)
        else:
            error = (result or {}).get("msg") if isinstance(result, dict) else None
            facts[node] = {"node_name": node, "reachable": False,
                           "error": error or "no node facts were gathered from host %s" % host}
    return facts


def node_plan(plan_result, node):
    """One node's slice of a volume_reconcile_plan result (plan, items), cut through its by_node index."""
    try:
        return executor.node_slice(plan_result, node)
    except (AttributeError, IndexError, TypeError) as e:
        raise AnsibleFilterError("kubevol node_plan: the input is not a volume_reconcile_plan result: %s" % e)


def run_state(plan_result):
    if not isinstance(plan_result, dict):
        raise AnsibleFilterError("kubevol run_state: the input is not a volume_reconcile_plan result; pass the result "
                                 "the plan task registered (the reconcile role's kubevol_plan_result)")
    return executor.initial_run_state(plan_result)


def run_state_after(plan_result, phases, results, state):
    try:
        return executor.run_state_after(plan_result, phases, results, state)
    except (KeyError, TypeError) as e:
        raise AnsibleFilterError("kubevol run_state_after: unknown phase, malformed plan step or run state: %s; pass "
                                 "the plan result, the phases node_phases ran, node_results' output and the state "
                                 "run_state or an earlier run_state_after returned" % e)


def attach_intents(plan_result, failures=None):
    return executor.attach_intents(plan_result, failures)


def detach_request_records(plan_result):
    return executor.detach_request_records(plan_result)


class FilterModule(object):
    def filters(self):
        return {
            "node_results": node_results,
            "node_facts_map": node_facts_map,
            "run_state": run_state,
            "run_state_after": run_state_after,
            "node_plan": node_plan,
            "detach_request_records": detach_request_records,
            "attach_intents": attach_intents,
        }
