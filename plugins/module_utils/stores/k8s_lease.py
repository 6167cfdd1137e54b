# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run lock (run_lock.py) as a coordination.k8s.io/v1 Lease, the way client-go's leader election keeps one."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

LEASE_API_VERSION = "coordination.k8s.io/v1"
RUN_ANNOTATIONS = {"host": "kubevol.io/run-host", "pid": "kubevol.io/run-pid", "pid_start": "kubevol.io/run-pid-start"}


def lease_record(lease):
    """The run-lock record (run_lock.py) a Lease holds, or None when nobody holds it."""
    spec = (lease or {}).get("spec") or {}
    if not spec.get("holderIdentity"):
        return None
    notes = ((lease.get("metadata") or {}).get("annotations") or {})
    record = {"holder": spec["holderIdentity"], "since": spec.get("acquireTime"), "renewed": spec.get("renewTime"),
              "duration": spec.get("leaseDurationSeconds"), "host": notes.get(RUN_ANNOTATIONS["host"])}
    for key in ("pid", "pid_start"):
        try:
            record[key] = int(notes[RUN_ANNOTATIONS[key]])
        except (KeyError, TypeError, ValueError):
            record[key] = None
    return record


def lease_body(name, namespace, record, current=None):
    """A Lease for ``record`` (None: released, as client-go's leader election releases: no holder)."""
    lease = {"apiVersion": LEASE_API_VERSION, "kind": "Lease",
             "metadata": {"name": name, "namespace": namespace, "annotations": {}}, "spec": {}}
    if current is not None:
        lease["metadata"]["resourceVersion"] = (current.get("metadata") or {}).get("resourceVersion")
        transitions = ((current.get("spec") or {}).get("leaseTransitions") or 0)
    else:
        transitions = 0
    if record is None:
        lease["spec"] = {"leaseDurationSeconds": 1, "leaseTransitions": transitions}
        return lease
    before = lease_record(current) if current is not None else None
    if before is not None and before.get("holder") != record["holder"]:
        transitions += 1
    lease["spec"] = {"holderIdentity": record["holder"], "leaseDurationSeconds": record["duration"],
                     "acquireTime": record["since"], "renewTime": record["renewed"], "leaseTransitions": transitions}
    lease["metadata"]["annotations"] = dict((RUN_ANNOTATIONS[k], str(record[k])) for k in RUN_ANNOTATIONS
                                            if record.get(k) is not None)
    return lease
