# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One reconcile at a time per cluster, as kube-controller-manager runs one active attach/detach controller.

A run takes the cluster's run lock before it reads the cluster and keeps it until its last record is
written: the file store keeps the lock as a record beside the state file (``<state>.run-lock``, read
and written under the store's flock); the Kubernetes API store as a ``coordination.k8s.io/v1`` Lease
(``leader election`` style: holderIdentity, leaseDurationSeconds, acquireTime, renewTime). Every store
write of the run renews it and first checks that the run still holds it.

A lock is stale, and taken over, when its lease expired (renewed + duration is past) or when its holder
ran on this host and that process is gone (pid and process start time), so a killed run never blocks
the next one on the same controller for longer than it takes to notice. This module decides; the
stores (file.py, kubernetes.py) read and write. It is the stores' own, as a Lease's fields and their meaning are
the API's, so that stores/ never imports run/: the run takes, renews and releases the lock through a store
(run/run_lock_task.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os
import socket
import uuid

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError

DEFAULT_DURATION = 600      # seconds a lock lives without a renewal
DEFAULT_TIMEOUT = 60        # seconds a second run waits for the lock before it fails
DEFAULT_LEASE_NAMESPACE = "kube-system"     # where the kubernetes store keeps the lock's Lease
DEFAULT_LEASE_NAME = "kubevol-reconcile"
POLL_INTERVAL = 1.0


def held_duration(lock):
    """The duration a held lock (cluster_run_lock's result) is renewed for: its own, else the default."""
    return int(lock.get("duration") or DEFAULT_DURATION)


class RunLocked(KubevolError):
    """Another run holds the lock (runs never interleave); read by the reconcile role's user only (cluster_run_lock
    is the role's own), so the remedy names its variable."""
    code = "KV-RUN-LOCKED"
    message = ("another kubevol run holds the lock on cluster store {store} since {since} (holder {held_by}, pid {pid}, "
               "host {host}; renewed {renewed}, expires {expires} unless renewed), waited {waited}s: run again once "
               "that run has ended, or raise kubevol_run_lock_timeout")


class RunLockLost(KubevolError):
    """Nothing more is written once the lock is lost: another run may be working on the cluster."""
    code = "KV-RUN-LOCKED"
    message = ("this run ({holder}) no longer holds the lock on cluster store {store} ({reason}): run again once the "
               "other run has ended")


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)


def format_time(moment):
    """RFC 3339 with microseconds, as a Lease's MicroTime fields are written."""
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(text):
    try:
        moment = datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def new_holder():
    """A run's identity: host, pid and a random part (two runs never share one)."""
    return "%s-%d-%s" % (socket.gethostname(), os.getpid(), uuid.uuid4().hex[:8])


def process_start(pid):
    """The start time of process ``pid`` (clock ticks after boot, /proc/<pid>/stat field 22), or None if gone."""
    try:
        with open("/proc/%d/stat" % int(pid)) as handle:
            stat = handle.read()
    except (IOError, OSError, ValueError, TypeError):
        return None
    try:
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError):
        return None


def owner(pid=None):
    """Who holds a lock taken now: this host and the long-lived process of the run (the ansible process)."""
    pid = os.getppid() if pid is None else pid
    return {"host": socket.gethostname(), "pid": pid, "pid_start": process_start(pid)}


def new_record(holder, duration, now, who, since=None):
    return {"holder": holder, "host": who["host"], "pid": who["pid"], "pid_start": who["pid_start"],
            "since": format_time(since or now), "renewed": format_time(now), "duration": int(duration)}


def stale_reason(record, now):
    """Why a lock held by ``record`` may be taken over, or None while it is live."""
    renewed = parse_time(record.get("renewed"))
    duration = record.get("duration")
    if renewed is None or not isinstance(duration, int):
        return "its record is unreadable"
    if renewed + datetime.timedelta(seconds=duration) < now:
        return "it expired at %s" % format_time(renewed + datetime.timedelta(seconds=duration))
    if record.get("host") == socket.gethostname() and record.get("pid") is not None:
        start = process_start(record["pid"])
        if start is None or (record.get("pid_start") is not None and start != record.get("pid_start")):
            return "its process (pid %s on this host) is gone" % record["pid"]
    return None


def describe(record):
    """A lock record as a message tells it: who holds it, or that no run does."""
    if record is None:
        return "no run holds it"
    if not record.get("holder"):
        return "its record is unreadable"
    return "held by %s since %s" % (record.get("holder"), record.get("since"))


def expires(record):
    renewed = parse_time(record.get("renewed"))
    if renewed is None or not isinstance(record.get("duration"), int):
        return "?"
    return format_time(renewed + datetime.timedelta(seconds=record["duration"]))


def decide(current, holder, duration, now, who):
    """(record to write, or None when another run holds a live lock; what was taken over, or None)."""
    if not current:
        return new_record(holder, duration, now, who), None
    if current.get("holder") == holder:
        return new_record(holder, duration, now, who, since=parse_time(current.get("since"))), None
    reason = stale_reason(current, now)
    if reason is None:
        return None, None
    return new_record(holder, duration, now, who), {"holder": current.get("holder"), "reason": reason}


def locked_error(store, current, waited):
    # held_by, never holder: a failed acquire must not look like this run's own lock to whoever releases it
    return RunLocked(store=store, since=current.get("since"), held_by=current.get("holder"), pid=current.get("pid"),
                     host=current.get("host"), renewed=current.get("renewed"), expires=expires(current),
                     waited=int(waited))


def check_held(store, current, holder):
    """Raise RunLockLost unless ``current`` is ``holder``'s lock (a renewal or a write needs it)."""
    if not current:
        raise RunLockLost(store=store, holder=holder, reason="the lock is gone (released by hand, or expired and "
                                                             "released)")
    if current.get("holder") != holder:
        raise RunLockLost(store=store, holder=holder, reason="run %s took it over at %s" % (
            current.get("holder"), current.get("since")))
