# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volume_audit's arguments and its two calls: a node's share (per host) and the cluster's share (once).

The action plugin (plugins/action/volume_audit.py) runs in the controller's process. ``scope: node``: read the
cluster store, run node_volume_audit over the host's connection with the pods the cluster binds to the node, and
judge its answer (audit.node_findings). ``scope: cluster``: the hosts' answers (``node_reports``), the cluster store,
the planner over every node's facts (its teardown steps and in_use_repairs), the VolumeAttachments, the node status
and the run lock; with ``clean`` the records that contradict no node are written through the store's own record
mechanism (record.py: the file store's flock, the API's resourceVersion) under the run lock, and a dead run's lock is
removed. Nothing else is ever written; check mode writes nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kubevol.volumes.plugins.module_utils.audit import audit
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import (  # noqa: F401
    known_drivers_of)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster, utc_now
from ansible_collections.kubevol.volumes.plugins.module_utils.run.run_lock_task import LOCK_OPTIONS
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import (
    CLUSTER_STORE_ARGSPEC, CLUSTER_STORE_REQUIRED_IF, get_store, store_options)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import DELETE

REQUIRED_IF = CLUSTER_STORE_REQUIRED_IF
CLEAN_LOCK_DURATION = 60  # the audit holds the run lock only for its one write
# volume_audit's top-level options of the node's settings from before its node_settings (node_args.task_settings);
# its own lock_timeout is the cluster store's run lock's, not the node's
AUDIT_LEGACY = ("kubelet_dir", "driver_options", "loop_pools")


def argspec():
    """volume_audit's options (documented in plugins/modules/volume_audit.py)."""
    spec = dict(CLUSTER_STORE_ARGSPEC,
                scope=dict(type="str", default="node", choices=["node", "cluster"]),
                clean=dict(type="bool", default=False),
                node_name=dict(type="str"),
                node_settings=node_args.settings_argspec(),
                known_drivers=dict(type="list", elements="str"),
                node_reports=dict(type="list", elements="raw", default=[]),
                lock_timeout=dict(type="int", default=30),
                words=dict(type="str", default="module", choices=["module", "role"]))
    spec.update((k, v) for k, v in copy.deepcopy(LOCK_OPTIONS).items() if k in ("lease_namespace", "lease_name"))
    spec.update(node_args.legacy_argspec(AUDIT_LEGACY))
    return spec


def _known(params, settings):
    return known_drivers_of(params["known_drivers"], settings["driver_options"])


def _store(params):
    store = get_store(params["cluster_source"], **dict(store_options(params), lock_timeout=params["lock_timeout"]))
    store.use_run_lock(params)
    return store


def _index(store):
    return ClusterIndex(cluster_from_data(store.load()))


def node_scope(params, node, execute):
    """One host's share. ``execute(module_args)`` runs node_volume_audit over the host's connection and returns its
    result (``unreachable``/``failed`` as Ansible reports them)."""
    store = _store(params)
    try:
        index = _index(store)
    finally:
        store.close()
    # the node's settings group, checked once here, handed whole to node_volume_audit
    settings = node_args.task_settings(params, AUDIT_LEGACY)
    out = execute(dict(settings, node_name=node, pod_uids=audit.node_pod_uids(index, node), clean=params["clean"]))
    if out.get("unreachable") or out.get("failed") or "node_facts" not in out:
        msg = "node %s: the audit could not run there: %s" % (node, out.get("msg") or "no node facts returned")
        return {"failed": True, "unreachable": bool(out.get("unreachable")), "msg": msg, "node_name": node,
                "changed": False}
    findings = audit.node_findings(index, node, out, _known(params, settings))
    return {"changed": bool(out.get("changed")), "node_name": node, "kubelet_dir": settings["kubelet_dir"],
            "findings": findings, "summary": audit.summary(findings), "report": audit.report_lines(findings),
            "node_facts": out["node_facts"], "removed": out.get("removed") or [], "kept": out.get("kept") or [],
            "pool_problems": out.get("pool_problems") or []}


def _read_lock(store):
    seen = []
    store._run_lock_swap(seen.append)  # pylint: disable=protected-access  # reads only: append returns None
    return seen[0] if seen else None


def _remove_dead_lock(store, now):
    """Delete the lock only if, read again under the store's own lock, it is still stale."""
    removed = []

    def change(current):
        if current is not None and run_lock.stale_reason(current, now()) is not None:
            removed.append(current)
            return DELETE
        return None
    store._run_lock_swap(change)  # pylint: disable=protected-access
    return bool(removed)


def _write_records(store, records, owner):
    """Apply ``records`` under the run lock (taken without waiting, released at once). None when a live run holds
    it (then nothing is written), else the store's result."""
    holder = run_lock.new_holder()
    try:
        store.acquire_run_lock(holder, CLEAN_LOCK_DURATION, 0, who=owner)
    except run_lock.RunLocked:
        return None
    try:
        return store.apply(records, check_mode=False)
    finally:
        store.release_run_lock(holder)


def cluster_scope(params, check_mode=False, owner=None, now=utc_now):
    """The cluster's share, from the hosts' node-scope results in ``node_reports``."""
    settings = node_args.task_settings(params, AUDIT_LEGACY)
    known = _known(params, settings)
    facts, unreachable, answered, kubelet_dirs, removed, findings = {}, {}, set(), {}, {}, []
    notes = []
    for report in params["node_reports"] or ():
        if not isinstance(report, dict) or not report.get("node_name"):
            continue
        node = report["node_name"]
        answered.add(node)
        if report.get("node_facts") and not report.get("failed"):
            facts[node] = report["node_facts"]
            kubelet_dirs[node] = report.get("kubelet_dir") or settings["kubelet_dir"]
            removed[node] = report.get("removed") or []
            findings.extend(report.get("findings") or [])
            notes.extend("node %s: %s" % (node, p["reason"]) for p in report.get("pool_problems") or ())
            notes.extend("node %s: kept %s: %s" % (node, k["path"], k["reason"]) for k in report.get("kept") or ())
        else:
            unreachable[node] = report.get("msg") or "its audit failed"
    store = _store(params)
    try:
        index = _index(store)
        planner_facts = dict(facts)
        planner_facts.update((n, {"reachable": False, "error": e}) for n, e in unreachable.items())
        result = plan_cluster(index, planner_facts, PlanOptions(known_drivers=known, now=now(),
                                                                allow_mass_teardown=True))
        lock = _read_lock(store)
        lock_reason = run_lock.stale_reason(lock, now()) if lock is not None else None
        live_lock = lock is not None and lock_reason is None
        findings.extend(audit.plan_findings(result, kubelet_dirs, removed))
        status, status_records = audit.status_findings(index, result, facts, known)
        vas, va_records = audit.attachment_findings(index, facts, answered, known, live_lock)
        lock_found = audit.lock_finding(store.run_lock_location(), lock, lock_reason)
        findings.extend(status + vas + lock_found)
        changed = False
        if params["clean"] and not check_mode:
            if lock_found and _remove_dead_lock(store, now):
                lock_found[0]["cleaned"] = changed = True
                live_lock = False
            records = status_records + va_records
            if records:
                outcome = None if live_lock else _write_records(store, records, owner)
                if outcome is None:
                    notes.append("a live run holds the cluster's run lock: no record was cleaned; audit again once "
                                 "it has ended")
                    for f in status + vas:
                        if f["cleanable"]:
                            f.update(cleanable=False, action="a live run holds the run lock: audit again with %s "
                                                             "once it has ended" % setting("clean", True))
                else:
                    changed = changed or bool(outcome["changed"])
                    for f in status + vas:
                        f["cleaned"] = f["cleanable"]
    finally:
        store.close()
    return {"changed": changed, "findings": findings, "summary": audit.summary(findings),
            "report": audit.report_lines(findings), "unreachable_nodes": unreachable, "notes": notes,
            "run_lock": {"location": store.run_lock_location(), "holder": (lock or {}).get("holder"),
                         "stale": lock_reason}}
