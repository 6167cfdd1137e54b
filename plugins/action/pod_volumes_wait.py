# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""pod_volumes_wait: poll the cluster store and this host's node until the selected pods' volumes are ready.

Runs per host of the play (each host answers for the pods scheduled to its own node, over its own connection:
node_volume_info through Ansible's module execution), reading the cluster in the controller's process each poll,
so records a reconcile writes meanwhile are seen. The node's facts and the plan are made with the same
driver_options as the reconcile role's (checked once, as the plan checks them), so an external CSI driver's volumes
are waited for exactly as the reconcile sees them. The decisions are module_utils/run/pod_wait.py's.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.kubevol.volumes.plugins.module_utils.run import pod_wait
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.actual_state import build_actual_state
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import (
    build_desired_state, known_drivers_of)
from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options as driver_opts
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan, utc_now
from ansible_collections.kubevol.volumes.plugins.module_utils.node.node_args import task_settings
from ansible_collections.kubevol.volumes.plugins.module_utils.run.pod_wait import REQUIRED_ONE_OF, WAIT_LEGACY, argspec
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import get_store, store_options
from ansible_collections.kubevol.volumes.plugins.plugin_utils.in_process import InProcessAction


def _load(params):
    store = get_store(params["cluster_source"], **store_options(params))
    try:
        return store.load()
    finally:
        store.close()


class ActionModule(InProcessAction):
    NAME = "kubevol.volumes.pod_volumes_wait"

    def argspec_kwargs(self):
        return dict(argument_spec=argspec(), required_one_of=REQUIRED_ONE_OF)

    def run_task(self, params, check_mode, diff):
        if params["timeout"] < 0 or params["interval"] < 1:
            raise InvalidInput(field="timeout/interval", value=(params["timeout"], params["interval"]),
                               reason="timeout must be >= 0 and interval >= 1 (seconds)")
        task_vars = self.task_vars
        node = params["node_name"] or task_vars.get("kubevol_node_name") or task_vars.get("inventory_hostname")
        # the pods of nodes that no host of the play answers for (not scheduled, or another inventory's) are
        # reported by the play's first host, so that each pod is reported once
        play_hosts = task_vars.get("ansible_play_hosts_all") or [task_vars.get("inventory_hostname")]
        hostvars = task_vars.get("hostvars") or {}
        play_nodes = set((hostvars.get(h) or {}).get("kubevol_node_name") or h for h in play_hosts)
        first = task_vars.get("inventory_hostname") == play_hosts[0]
        # the node's settings group, checked once (its driver_options as the plan and the node modules check them)
        settings = task_settings(params, WAIT_LEGACY)
        known = known_drivers_of(params["known_drivers"], settings["driver_options"])
        deadline = time.monotonic() + params["timeout"]
        start = time.monotonic()
        polls = 0
        try:
            while True:
                polls += 1
                states = self._poll(params, node, known, settings, play_nodes, first)
                waited = int(time.monotonic() - start)
                ready = all(entry["ready"] for entry in states)
                if ready or check_mode or time.monotonic() + params["interval"] > deadline:
                    break
                time.sleep(params["interval"])
        except KubevolError as err:
            raise err.add(prefix="node %s: " % node)
        result = dict(changed=False, ready=ready, pods=states, polls=polls, waited=waited, node_name=node)
        if not ready and not check_mode:
            result.update(failed=True, msg=pod_wait.not_ready_message(states, waited))
            if any(e.get("reason", "").startswith("node %s is unreachable" % node) for e in states):
                result["unreachable"] = True
        return result

    def _poll(self, params, node, known, settings, play_nodes, first):
        """One look: the cluster from the store, this node's facts (node_volume_info given the settings group
        whole), the plan; the selected pods' states."""
        options = settings["driver_options"]
        data = _load(params)
        items = [obj for obj in (data.get("items") or ()) if isinstance(obj, dict)]
        keys = pod_wait.select_pods(items, params["pods"], params["label_selector"])
        index = ClusterIndex(cluster_from_data(data))
        node_of = dict(("%s/%s" % (p.namespace, p.name), p.node_name or None) for p in index.cluster.pods)
        mine = [k for k in keys if node_of[k] == node]
        others = [k for k in keys if first and node_of[k] not in play_nodes]
        if not mine and not others:
            return []
        facts, unreachable = {}, {}
        if mine:
            out = self.node_module("kubevol.volumes.node_volume_info",
                                   dict(settings, node_name=node, fs_sizes=False))
            if out.get("unreachable") or out.get("failed") or "node_facts" not in out:
                unreachable[node] = out.get("msg") or "its facts could not be gathered"
            else:
                facts[node] = out["node_facts"]
        pools = tuple(driver_opts.loop_pools(options))
        actual = build_actual_state(index, facts, known)
        desired = build_desired_state(index, known, None, pools, options)
        result = plan(desired, actual, index, PlanOptions(known_drivers=known, now=utc_now(), allow_mass_teardown=True,
                                                          loop_pools=pools, driver_options=options))
        return pod_wait.pod_states(index, result, mine + others, actual.node_facts, known, unreachable)
