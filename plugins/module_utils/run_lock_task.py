# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster_run_lock's arguments and its one call: take or release the cluster's run lock (run_lock.py).

Shared by the action plugin (plugins/action/cluster_run_lock.py), which runs in the controller's
process and names the ansible process as the lock's owner, and the module file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils import run_lock
from ansible_collections.kubevol.volumes.plugins.module_utils.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import (
    CLUSTER_STORE_ARGSPEC,
    CLUSTER_STORE_REQUIRED_IF,
    get_store,
    store_options,
)

REQUIRED_IF = CLUSTER_STORE_REQUIRED_IF + [("state", "released", ["holder"])]

LOCK_OPTIONS = dict(
    holder=dict(type="str"),
    duration=dict(type="int", default=run_lock.DEFAULT_DURATION),
    lease_namespace=dict(type="str", default=run_lock.DEFAULT_LEASE_NAMESPACE),
    lease_name=dict(type="str", default=run_lock.DEFAULT_LEASE_NAME),
)


def argspec():
    spec = dict(CLUSTER_STORE_ARGSPEC, state=dict(type="str", default="acquired", choices=["acquired", "released"]),
                timeout=dict(type="int", default=run_lock.DEFAULT_TIMEOUT), lock_timeout=dict(type="int", default=30))
    spec.update(LOCK_OPTIONS)
    return spec


def run(params, check_mode=False, owner=None):
    """Take (state=acquired) or release the run lock; returns the module result."""
    if params["duration"] < 10:
        raise InvalidInput(field="duration", value=params["duration"], reason="must be at least 10 seconds")
    if params["timeout"] < 0:
        raise InvalidInput(field="timeout", value=params["timeout"], reason="must not be negative")
    store = get_store(params["cluster_source"], **dict(store_options(params), lock_timeout=params["lock_timeout"]))
    store.use_run_lock(params)
    try:
        result = {"location": store.run_lock_location(), "duration": params["duration"],
                  "lease_namespace": params["lease_namespace"], "lease_name": params["lease_name"]}
        if params["state"] == "released":
            released = False if check_mode else store.release_run_lock(params["holder"])
            # the lock is the run's bookkeeping, not a change of the cluster: never "changed" (idempotence checks)
            result.update(changed=False, holder=params["holder"], released=released)
            return result
        holder = params["holder"] or run_lock.new_holder()
        if check_mode:
            result.update(changed=False, holder=holder, skipped_in_check_mode=True)
            return result
        who = owner or {"host": run_lock.owner(0)["host"], "pid": None, "pid_start": None}
        taken = store.acquire_run_lock(holder, params["duration"], params["timeout"], who=who)
        result.update(changed=False, acquired=True, holder=holder, since=taken["since"], took_over=taken["took_over"])
        return result
    finally:
        close = getattr(store, "close", None)
        if close:
            close()
