# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster_volume_record's arguments and its one call: apply records to the cluster store.

Shared by the action plugin (plugins/action/cluster_volume_record.py), which writes from the
controller's own process, and the module file, which documents it and runs it as a module.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import gc_paused
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import (
    CLUSTER_STORE_ARGSPEC,
    CLUSTER_STORE_REQUIRED_IF,
    get_store,
    store_options,
)

REQUIRED_IF = CLUSTER_STORE_REQUIRED_IF


def argspec():
    return dict(CLUSTER_STORE_ARGSPEC,
                records=dict(type="list", elements="dict", required=True),
                lock_timeout=dict(type="int", default=30),
                run_lock=dict(type="dict"))


def run(params, check_mode=False, diff=False):
    options = dict(store_options(params), lock_timeout=params["lock_timeout"])
    store = get_store(params["cluster_source"], **options)
    lock = params.get("run_lock") or {}
    try:
        if lock.get("holder") and not check_mode:
            # a run writes only while it holds the cluster's run lock; each write renews it (stores/run_lock.py)
            store.use_run_lock(lock)
            store.renew_run_lock(lock["holder"], run_lock.held_duration(lock))
        with gc_paused():  # the parsed List and the diff are acyclic; see cluster.gc_paused
            outcome = store.apply(params["records"], check_mode=check_mode)
    finally:
        store.close()
    result = dict(changed=outcome["changed"], changes=outcome["changes"], count=len(outcome["changes"]),
                  source=store.describe())
    if diff:
        result["diff"] = outcome["diff"]
    return result
