# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The provisioner's tasks of a run: where they go in the run's task sequence, what each host is given, and their
results turned into records and failures.

- ``provision``: when the plan has claims to provision (plan/rules_provision.py), it is the run's first and only
  task of that plan: CreateVolume on each host (module volume_provision), then the PVs and the bindings recorded,
  then the plan made again (the role's provision_task.yml), whose node tasks attach and mount the new volumes in the
  same run. The plan made again provisions nothing: a claim whose CreateVolume failed waits for the next run.
- ``delete``: after the teardown and the controller task, before the setup: DeleteVolume of each volume the plan
  releases (plan/rules_delete.py), minus those whose teardown failed in this run (a volume still on a node is never
  deleted), then the PV removed.

A CreateVolume answered with a non-final status leaves its claim unbound and says so: the next run calls
CreateVolume again with the same name (the driver answers with the volume it made, if it did).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.provision.snapshot import snapshot_created
from ansible_collections.kubevol.volumes.plugins.module_utils.provision.volume import pv_object
from ansible_collections.kubevol.volumes.plugins.module_utils.run.outcome import _copy_failures

PROVISION, DELETE = "provision", "delete"
KEYS = {PROVISION: "provisioning", DELETE: "deletions"}


def _operations(plan_result, task):
    return list((plan_result or {}).get(KEYS[task]) or ()) if isinstance(plan_result, dict) else []


def with_storage_tasks(plan_result, sequence):
    """The run's task sequence with the provisioner's: only ``provision`` when the plan provisions (the rest is
    planned again after it), else ``delete`` after the teardown and the controller task, when it deletes."""
    creating = _operations(plan_result, PROVISION)
    if creating:
        return [{"name": PROVISION, "phases": [], "hosts": sorted(set(op["host"] for op in creating))}]
    deleting = _operations(plan_result, DELETE)
    if not deleting:
        return sequence
    task = {"name": DELETE, "phases": [], "hosts": sorted(set(op["host"] for op in deleting))}
    at = next((i for i, each in enumerate(sequence) if each["name"] not in ("teardown", "controller")), len(sequence))
    return sequence[:at] + [task] + sequence[at:]


def host_operations(plan_result, task, host, failures=None):
    """The operations host ``host`` carries out in task ``task``, in the plan's order. A deletion whose volume failed
    earlier in the run (its teardown on some node) is not given: the volume may still be there."""
    failed = (failures or {}).get("volumes") or {}
    return [op for op in _operations(plan_result, task) if op.get("host") == host
            and not (task == DELETE and op.get("unique_volume_name") in failed)]


def _host_failure(host, result):
    if result is None or result.get("skipped"):
        return "host %s did not run its provisioning task: is it in this play's inventory and reachable?" % host
    what = "is unreachable" if result.get("unreachable") else "failed"
    return "host %s %s: %s" % (host, what, result.get("msg") or "no message")


def _key(entry):
    """An operation's (or its result entry's) key: a CreateVolume by its claim, a DeleteVolume by its PV, a snapshot's
    call by its content."""
    op = entry.get("op")
    if op in ("create_snapshot", "delete_snapshot"):
        return (op, entry.get("content_name"))
    return (op, entry.get("claim") if op == "create_volume" else entry.get("pv_name"))


def _entries(result, key):
    return dict((_key(e), e) for e in (result or {}).get(key) or () if isinstance(e, dict))


def storage_state_after(plan_result, task, results, state):
    """The run's state after task ``task`` (provision or delete): results {host: its volume_provision result}. Adds
    ``records`` (the PVs made and their claims bound, or the PVs deleted) and, after provision, ``carried``: the
    errors and blocked entries the run keeps when it starts again on the plan made after it."""
    failures = _copy_failures(state["failures"])
    records, errors, blocked = [], [], []
    operations = _operations(plan_result, task)
    for host in sorted(set(op["host"] for op in operations)):
        ops = host_operations(plan_result, task, host, state["failures"])
        skipped = [op for op in operations if op["host"] == host and op not in ops]
        for op in skipped:
            blocked.append({"node": host, "volume": op.get("pv_name"), "pod": None, "action": "delete",
                            "reason": "DeleteVolume of PV %s not attempted: %s" % (
                                op.get("pv_name"), state["failures"]["volumes"].get(op.get("unique_volume_name")))})
        if not ops:
            continue
        result = (results or {}).get(host)
        whole = None if result is not None and isinstance(result.get("operations"), list) else \
            _host_failure(host, result)
        done, failed = _entries(result, "operations"), _entries(result, "failures")
        messages, names = [], []
        for op in ops:
            key = _key(op)
            entry = done.get(key)
            if whole is None and entry is not None and (entry.get("volume") or entry.get("taken")
                                                        or op["op"] in ("delete_volume", "delete_snapshot")):
                records.append(_record(op, entry))
                continue
            fail = failed.get(key) or {}
            msg = whole or fail.get("msg") or (result or {}).get("msg") or "host %s did not report it" % host
            lost = whole is not None and bool((result or {}).get("unreachable"))  # the call may have been made
            if op["op"] == "create_volume" and (fail.get("uncertain") or lost):
                msg += "" if "calls CreateVolume" in msg else (
                    "; the driver may have made the volume: the next run calls CreateVolume %s again, and the "
                    "driver answers with the volume it made (no second one)" % op["name"])
                records.append({"type": "provisioning_uncertain", "pvc": op["claim"], "volume_name": op["name"]})
            messages.append(msg)
            names.append(_key(op)[1])
            if op.get("unique_volume_name"):
                failures["volumes"].setdefault(op["unique_volume_name"], msg)
        if messages:
            errors.append({"node": host, "phase": task, "msg": "; ".join(messages), "volumes": names})
    after = {"tasks": state["tasks"], "failures": failures, "blocked": list(state["blocked"]) + blocked,
             "errors": list(state["errors"]) + errors, "records": records}
    if task == PROVISION:
        after["carried"] = {"errors": errors, "blocked": blocked}
    return after


def _record(op, entry):
    if op["op"] == "delete_volume":
        return {"type": "pv_deleted", "pv_name": op["pv_name"]}
    if op["op"] == "create_snapshot":
        return snapshot_created(op, entry["taken"])
    if op["op"] == "delete_snapshot":
        return {"type": "snapshot_content_deleted", "content_name": op["content_name"], "snapshot": op.get("snapshot"),
                "snapshot_uid": op.get("snapshot_uid")}  # its VolumeSnapshot released, when being deleted
    pv = pv_object(op["pv"], entry["volume"], int(op["request"]["capacity_bytes"] or 0),
                   entry.get("topology_supported", True))
    return {"type": "provisioned", "pvc": op["claim"], "claim_uid": op["claim_uid"], "pv": pv}
