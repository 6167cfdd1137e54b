# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster_run_lock's arguments and its one call: take or release the cluster's run lock (stores/run_lock.py).

Shared by the action plugin (plugins/action/cluster_run_lock.py), which runs in the controller's
process and names the ansible process as the lock's owner, and the module file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import threading

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import (
    CLUSTER_STORE_ARGSPEC,
    CLUSTER_STORE_REQUIRED_IF,
    get_store,
    store_options,
)

REQUIRED_IF = CLUSTER_STORE_REQUIRED_IF + [("state", "released", ["holder"])]
RENEW_EVERY = 3.0  # renewals per lock duration while a node task runs (kept_renewed)
NOT_RENEWED_HINT = ("the node work goes on; check the cluster store options node_phases gets in cluster_store (the "
                    "reconcile role's kubevol_store_args)")

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


@contextlib.contextmanager
def kept_renewed(cluster_store, lock, warnings):
    """Renew the run lock every third of its duration while the body runs: a node task that outlasts the lock
    (a long format or resize, a wait on a busy volume) must not let a second run take it over as expired.

    cluster_store: the store's module options (cluster_source, cluster_state, the k8s auth options), as the
    store modules take them; lock: a cluster_run_lock result. Nothing is renewed without both. A failed renewal
    never stops the node work: it is added to ``warnings``, and a lost lock ends the renewals (the run's next
    record write then fails, naming the run that took it)."""
    if not cluster_store or not (lock or {}).get("holder"):
        yield
        return
    # the store modules' own validation: aliases, path expansion, defaults left out (store_options)
    validated = ArgumentSpecValidator(CLUSTER_STORE_ARGSPEC, required_if=CLUSTER_STORE_REQUIRED_IF).validate(
        cluster_store)
    if validated.error_messages:
        warnings.append("the run lock is not renewed during the node task: %s; %s" % (
            "; ".join(validated.error_messages), NOT_RENEWED_HINT))
        yield
        return
    params = validated.validated_parameters
    duration = run_lock.held_duration(lock)
    stop = threading.Event()
    stores = []  # built at the first renewal: a node task shorter than that (most) never builds one

    def renew():
        while not stop.wait(duration / RENEW_EVERY):
            if not stores:
                try:
                    stores.append(get_store(params["cluster_source"], **store_options(params)))
                except Exception as err:  # pylint: disable=broad-except  # reported; the node work goes on
                    warnings.append("the run lock is not renewed during the node task: %s; %s" % (
                        getattr(err, "msg", None) or err, NOT_RENEWED_HINT))
                    return
                stores[0].use_run_lock(lock)
            try:
                # another host's renewal this interval is enough: a lock renewed half an interval ago is left as is
                stores[0].renew_run_lock(lock["holder"], duration, fresh_for=duration / RENEW_EVERY / 2)
            except run_lock.RunLockLost as err:
                warnings.append("the run lock could not be renewed during the node task: %s; this run's next record "
                                "write will be refused: let the other run end, then run again (it converges)" % err.msg)
                return
            except Exception as err:  # pylint: disable=broad-except  # reported; the node work goes on
                reason = getattr(err, "msg", None) or err
                warnings.append("the run lock could not be renewed during the node task (tried again in %ds): %s; "
                                "check that the cluster store is reachable" % (duration / RENEW_EVERY, reason))

    thread = threading.Thread(target=renew, name="kubevol-run-lock-renewal", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(30)
        for store in stores:
            store.close()


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
        store.close()
