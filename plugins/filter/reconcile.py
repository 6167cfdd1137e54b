# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters the reconcile role uses to run a plan node task by node task (see module_utils/run/executor.py).

Internal to roles/reconcile, not a public interface (each one's DOCUMENTATION says so): they may change in
any release. The public filter is plan_table (plan_table.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible_collections.kubevol.volumes.plugins.module_utils.run.outcome import timed_out
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_record import node_plan_of


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
            error = (timed_out(result, node) or result.get("msg")) if isinstance(result, dict) else None
            facts[node] = {"node_name": node, "reachable": False,
                           "error": error or "no node facts were gathered from host %s" % host}
    return facts


def node_plan(plan_result, node, cluster_store=None):
    """One node's slice of a volume_reconcile_plan result (plan, items), cut through its by_node index; of a record
    result (output=record), read from the node's own part of the record (``cluster_store``: the store options, for a
    record kept in the Kubernetes API)."""
    try:
        return node_plan_of(plan_result, node, cluster_store)
    except KubevolError as e:
        raise AnsibleFilterError("kubevol node_plan: node %s: %s" % (node, e.msg))
    except (AttributeError, IndexError, TypeError) as e:
        raise AnsibleFilterError("kubevol node_plan: the input is not a volume_reconcile_plan result: %s" % e)


class FilterModule(object):
    def filters(self):
        return {
            "node_results": node_results,
            "node_facts_map": node_facts_map,
            "node_plan": node_plan,
        }
