# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shape of a record (record.py): its type, the keys it needs and their types, checked before anything is
changed, so that a bad record list is refused whole with the field named (``records[i].<key>``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import volume_attachment_name
from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import parse_quantity
from ansible_collections.kubevol.volumes.plugins.module_utils.records import provision

_VOLUME_KEYS = ("node", "pv_name", "driver", "volume_handle")
REQUIRED_KEYS = {
    # the intent, written before the node attaches: a VolumeAttachment with attached: false
    "attach_intent": _VOLUME_KEYS,
    "attached": _VOLUME_KEYS + ("device_path",),
    "detached": _VOLUME_KEYS,
    "in_use": ("node", "unique_volume_names", "in_use"),
    "controller_expanded": ("pv_name", "capacity"),
    "node_expanded": ("pvc", "capacity"),
    "resize_intent": ("pvc", "stage", "capacity"),
    # a node-side grow that failed or could not run yet (records/claim.py); also pods, offline, attempt, at
    "node_expansion_pending": ("pvc", "capacity", "node_name", "reason", "message"),
    # These two also take the planner's detach_requests shape (contracts.md section 3):
    # {name: <VolumeAttachment name>, node, volume, requested_at} instead of driver + volume_handle.
    "detach_requested": ("node", "requested_at"),
    "detach_request_cleared": ("node",),
}
REQUIRED_KEYS.update(provision.REQUIRED_KEYS)  # a claim's life: records/provision.py
_VA_BY_NAME_TYPES = ("detach_requested", "detach_request_cleared")
RECORD_TYPES = tuple(sorted(REQUIRED_KEYS))


def _where(index):
    return "records[%d]" % index if index is not None else "record"


def validate_record(record, index=None):
    """Check a record's shape before anything is changed; return its type."""
    where = _where(index)
    if not isinstance(record, dict):
        raise InvalidInput(field=where, value=record, reason="a record must be a dict with a 'type' key")
    rtype = record.get("type")
    if rtype not in REQUIRED_KEYS:
        raise InvalidInput(field=where + ".type", value=rtype, reason="unknown record type; known: %s" % ", ".join(RECORD_TYPES))
    required = REQUIRED_KEYS[rtype]
    if rtype in _VA_BY_NAME_TYPES:
        required = required + _va_identity_keys(record, where)
    elif rtype == "detached" and detached_by_name(record):
        required = ("node", "name")  # a VolumeAttachment whose PV is gone (the audit): named, not derived
    for key in required:
        if key == "device_path" and key in record and record[key] is None:
            continue  # a driver that reports no device path: recorded as ""
        if key not in record or record[key] is None:
            raise InvalidInput(field="%s.%s" % (where, key), value=None,
                               reason="required for a %r record (needs %s)" % (rtype, ", ".join(required)))
        value = record[key]
        if key == "in_use":
            ok = isinstance(value, bool)
        elif key == "unique_volume_names":
            ok = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
        elif key == "capacity":
            ok = _valid_quantity(value, "%s.%s" % (where, key))
        elif key == "device_path":
            ok = isinstance(value, str)
        elif key == "pv":
            ok = isinstance(value, dict) and isinstance(value.get("metadata"), dict) and bool(value["metadata"].get("name"))
        else:
            ok = isinstance(value, str) and value != ""
        if not ok:
            raise InvalidInput(field="%s.%s" % (where, key), value=value, reason=_EXPECTED.get(key, "must be a non-empty string"))
    if rtype == "node_registration" and (not isinstance(record.get("topology") or {}, dict) or not isinstance(
            record.get("max_volumes") or 0, int) or isinstance(record.get("max_volumes"), bool)):
        raise InvalidInput(field=where, value=record, reason="topology must be a mapping and max_volumes an integer")
    if rtype in ("node_expanded", "resize_intent", "node_expansion_pending", "provisioning_started",
                 "provisioning_uncertain", "provisioned", "claim_released") \
            and record["pvc"].count("/") != 1:
        raise InvalidInput(field=where + ".pvc", value=record["pvc"], reason="must be 'namespace/name'")
    if rtype == "controller_expanded" and record.get("pvc") is not None and (
            not isinstance(record["pvc"], str) or record["pvc"].count("/") != 1):
        raise InvalidInput(field=where + ".pvc", value=record["pvc"], reason="must be 'namespace/name'")
    if rtype == "resize_intent" and record["stage"] not in ("controller", "node"):
        raise InvalidInput(field=where + ".stage", value=record["stage"], reason="must be controller or node")
    if rtype == "node_expansion_pending":
        _check_pending(record, where)
    if rtype in ("controller_expanded", "resize_intent", "node_expansion_pending") and record.get("at") is not None and (
            not isinstance(record["at"], str) or not record["at"]):
        # the resize condition's lastTransitionTime (default: now)
        raise InvalidInput(field=where + ".at", value=record["at"], reason="must be an RFC 3339 time string")
    return rtype


def _check_pending(record, where):
    pods = record.get("pods", [])
    if not isinstance(pods, list) or not all(isinstance(uid, str) and uid for uid in pods):
        raise InvalidInput(field=where + ".pods", value=pods, reason="must be a list of pod uids")
    if not isinstance(record.get("offline", False), bool):
        raise InvalidInput(field=where + ".offline", value=record["offline"], reason="must be true or false")
    attempt = record.get("attempt", 1)
    if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
        raise InvalidInput(field=where + ".attempt", value=attempt, reason="must be a whole number from 1")


_EXPECTED = {
    "in_use": "must be true or false",
    "unique_volume_names": "must be a list of unique volume names (kubernetes.io/csi/<driver>^<handle>)",
    "capacity": "must be a Kubernetes quantity such as '10Gi' or a number of bytes",
    "device_path": "must be a string (empty when the driver reports no device path)",
    "pv": "must be a PersistentVolume object with metadata.name",
}


def detached_by_name(record):
    """A ``detached`` record naming its VolumeAttachment (its PV gone) instead of the driver and handle: the
    VolumeAttachment is deleted and node status, which names volumes by driver and handle, is left alone."""
    return record.get("driver") is None and record.get("volume_handle") is None and record.get("name") is not None


def _va_identity_keys(record, where):
    """detach_request records name their VolumeAttachment by driver + volume_handle, or by name."""
    if record.get("driver") is None and record.get("volume_handle") is None and record.get("name") is not None:
        return ("name",)
    if record.get("name") is not None and record.get("driver") and record.get("volume_handle") and record.get("node"):
        expected = volume_attachment_name(record["volume_handle"], record["driver"], record["node"])
        if record["name"] != expected:
            raise InvalidInput(field=where + ".name", value=record["name"],
                               reason="does not match driver, volume_handle and node (expected %s)" % expected)
    return ("driver", "volume_handle")


def _valid_quantity(value, field):
    """A non-negative quantity string (parsed as resource.Quantity, QuantityError otherwise) or int bytes."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, str) and parse_quantity(value, field) >= 0
