# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan's provisioning, snapshots and deletion, as people read them: one heading each, one line per CreateVolume,
CreateSnapshot, DeleteVolume and DeleteSnapshot with the host it runs on, the volume (or the snapshot's content),
the claim (or the snapshot) and the driver, and a ``Storage:`` line of counts (plan_text.py prints them under the
steps, in check mode too: what a real run would call)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

COLUMNS = ("", "CALL", "HOST", "VOLUME", "CLAIM", "DRIVER", "REASON")


def _table(rows):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join([c.ljust(w) for c, w in zip(row, widths)] + [row[-1]]).rstrip() for row in rows]


def _rows(operations, symbol, call, volume_key, max_rows):
    shown = operations if max_rows is None else operations[:max_rows]
    rows = [COLUMNS] + [(symbol, call, op.get("host") or "-", op.get(volume_key) or "-",
                         op.get("claim") or op.get("snapshot") or "-",
                         op.get("driver") or "-", op.get("reason") or "") for op in shown]
    lines = _table(rows)
    if len(shown) < len(operations):
        lines.append("... and %d more not shown" % (len(operations) - len(shown)))
    return lines


def _of(result, key, op):
    return [each for each in result.get(key) or () if each.get("op") == op]


def storage_lines(result, max_rows=None):
    """The lines of the plan's storage side ([] when it has none)."""
    sections = (
        ("provisioning", "create_volume", "+", "CreateVolume", "name",
         "Provisioning (CreateVolume, then the claim bound; its pods' volumes follow in this run):"),
        ("provisioning", "create_snapshot", "+", "CreateSnapshot", "content_name",
         "Snapshots (CreateSnapshot, then the VolumeSnapshotContent written and the VolumeSnapshot bound):"),
        ("deletions", "delete_volume", "-", "DeleteVolume", "pv_name",
         "Deletion (DeleteVolume, then the PV removed; the volume's data is gone):"),
        ("deletions", "delete_snapshot", "-", "DeleteSnapshot", "content_name",
         "Snapshot deletion (DeleteSnapshot, then the VolumeSnapshotContent removed; the snapshot's data is gone):"))
    lines = []
    for key, op, symbol, call, volume_key, heading in sections:
        operations = _of(result, key, op)
        if operations:
            lines.extend(["", heading])
            lines.extend(_rows(operations, symbol, call, volume_key, max_rows))
    return lines


def storage_line(result):
    """``Storage: N to provision, N to delete`` (None when neither), and the snapshots' counts when there are."""
    creating, deleting = len(_of(result, "provisioning", "create_volume")), len(_of(result, "deletions",
                                                                                    "delete_volume"))
    snapping, unsnapping = len(_of(result, "provisioning", "create_snapshot")), len(_of(result, "deletions",
                                                                                        "delete_snapshot"))
    guard = result.get("deletion_guard") or {}
    if not creating and not deleting and not snapping and not unsnapping and not guard.get("tripped"):
        return None
    text = "Storage: %d volume(s) to provision, %d to delete" % (creating, deleting)
    if snapping or unsnapping:
        text += "; %d snapshot(s) to take, %d to delete" % (snapping, unsnapping)
    if guard.get("tripped"):
        held, limit = guard.get("deletions", 0), guard.get("max_volume_deletions", 0)
        text += "; deletion guard: %d held back (limit %d)" % (held, limit)
    return text
