# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster store interface: where kubevol reads the cluster's facts and records what it did.

A store hands out the cluster as one raw Kubernetes List (what
``kubectl get nodes,pods,pv,pvc,volumeattachments,csidrivers -A -o yaml`` prints) and applies
records (record.py) to it atomically. FileStore (file.py) keeps the List in a file; a store
backed by the live API will provide the same three methods.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError, LockTimeout

DELETE = object()  # what a run-lock change returns to remove the lock
DEFAULT_PAGE_SIZE = 500  # the kubernetes store's list page size (the page_size option)


def empty_list():
    return {"apiVersion": "v1", "kind": "List", "items": []}


class StoreError(KubevolError):
    message = "cluster store {store}: {reason}"


class StoreWriteFailed(StoreError):
    """The cluster file store could not write the state file, its lock or its run lock (a full or read-only
    filesystem, a directory it may not write in): the state file is left as it was, never half written."""
    code = "KV-STATE-WRITE"


class ClusterFileRefused(StoreError):
    """The cluster file is not one whole snapshot kubevol can read (missing, empty, cut short, not parsable, kubectl's
    error text): nothing was read from it and nothing planned. ``reason`` says what it is and how to write it."""
    code = "KV-CLUSTER-FILE"


class StoreLockTimeout(LockTimeout):
    """The store's own lock (held for one read or write; released when its process exits) stayed taken."""
    code = "KV-RUN-LOCKED"
    message = ("cluster store {store} is locked by another kubevol run (lock file {lock}), waited {timeout}s: run "
               "again when that run ends")


class MissingLibrary(KubevolError):
    """A Python library the store needs is not installed; msg is Ansible's missing_required_lib text."""

    def __init__(self, library, reason, import_error=None):
        try:
            from ansible.module_utils.basic import missing_required_lib
            text = missing_required_lib(library, reason=reason)
        except ImportError:  # pragma: no cover - ansible is always there in practice
            text = "Failed to import the required Python library (%s): it is needed %s" % (library, reason)
        kwargs = {"library": library}
        if import_error:
            kwargs["exception"] = import_error
        super(MissingLibrary, self).__init__(text, **kwargs)


class ClusterStore:
    """What every store provides. Stores raise KubevolError subclasses that say what to check."""

    source = None

    def close(self):
        """Release what the store holds open (the kubernetes store's connections); nothing by default."""

    def load(self):
        """Return the cluster as a raw List dict: {"apiVersion": "v1", "kind": "List", "items": [...]}.

        Items are Node, Pod, PersistentVolume, PersistentVolumeClaim, VolumeAttachment and CSIDriver
        objects; other kinds are kept and ignored.
        """
        raise NotImplementedError

    def apply(self, records, check_mode=False):
        """Apply records (record.py) all or nothing; return {changed, changes, diff}.

        ``changes`` lists one summary per record that changed something; ``diff`` is
        {before, after} of the changed objects keyed "Kind/[namespace/]name". In check mode the
        same result is computed and nothing is written.
        """
        raise NotImplementedError

    def describe(self):
        """A short human description, e.g. "file /srv/cluster.yaml"."""
        raise NotImplementedError

    # -- the run lock (run_lock.py: its record and rules) ------------------------------------------------
    def _run_lock_swap(self, change):
        """Atomically: read the run-lock record (None when there is none), ``change(record)`` -> a record to write,
        DELETE, or None (leave it); write that. Subclasses implement it (a flock, or resourceVersion)."""
        raise NotImplementedError

    def run_lock_location(self):
        """Where the lock lives, for messages (a file, a Lease)."""
        raise NotImplementedError

    def use_run_lock(self, lock):
        """Take the lock's location from a cluster_run_lock result or options (``lease_namespace``, ``lease_name``);
        the file store's lock always lives beside its file."""

    def acquire_run_lock(self, holder, duration=run_lock.DEFAULT_DURATION, timeout=run_lock.DEFAULT_TIMEOUT,
                         who=None, now=run_lock.utc_now, sleep=time.sleep, clock=time.monotonic):
        """Take the run lock for ``holder``, waiting up to ``timeout`` seconds for a live one to go; returns
        {holder, since, took_over}; raises RunLocked after the wait."""
        who = who or run_lock.owner()
        start = clock()
        while True:
            outcome = {}

            def change(current):
                record, took = run_lock.decide(current, holder, duration, now(), who)
                outcome.update(current=current, record=record, took=took)
                return record

            self._run_lock_swap(change)
            if outcome["record"] is not None:
                return {"holder": holder, "since": outcome["record"]["since"], "took_over": outcome["took"],
                        "location": self.run_lock_location(), "duration": int(duration)}
            waited = clock() - start
            if waited >= timeout:
                raise run_lock.locked_error(self.describe(), outcome["current"], waited)
            sleep(min(run_lock.POLL_INTERVAL, max(0.0, timeout - waited)))

    def renew_run_lock(self, holder, duration=run_lock.DEFAULT_DURATION, now=run_lock.utc_now, fresh_for=0):
        """Renew ``holder``'s lock; RunLockLost when the run no longer holds it (then nothing may be written).
        A lock renewed less than ``fresh_for`` seconds ago is left as it is: every host of a run renews it while its
        node task runs, and one write per interval is enough (not one per host, each a conflict for the next)."""
        def change(current):
            run_lock.check_held(self.describe(), current, holder)
            moment = now()
            renewed = run_lock.parse_time(current.get("renewed"))
            # a renewal that seems to come from the future (a clock stepped back) is renewed again, not trusted
            if fresh_for and renewed is not None and 0 <= (moment - renewed).total_seconds() < fresh_for:
                return None
            who = {"host": current.get("host"), "pid": current.get("pid"), "pid_start": current.get("pid_start")}
            return run_lock.new_record(holder, duration, moment, who, since=run_lock.parse_time(current.get("since")))
        self._run_lock_swap(change)

    def release_run_lock(self, holder):
        """Release ``holder``'s lock; True when it was released, False when the run did not hold it."""
        released = []

        def change(current):
            if current and current.get("holder") == holder:
                released.append(True)
                return DELETE
            return None
        self._run_lock_swap(change)
        return bool(released)

    def __repr__(self):
        return "<%s %s>" % (type(self).__name__, self.describe())
