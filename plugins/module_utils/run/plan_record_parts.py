# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A plan result cut into the parts of its record, each part of it in exactly one, and put together again.

- each share: one node's steps (``plan``), their positions in the whole plan (``at``) and the node's volume items
  (``items``), the part that node's task reads and nothing more;
- the rest: everything else of the result (the blocked items, the records to write, the summary...), with the
  shares of the nodes that are not kept apart (``others``: nodes outside the run's hosts; a step with no node) and
  the plan's length.

The result's ``desired`` and ``actual`` states are kept without their ``per_node`` lists (every node's volumes, the
largest part of a record at fleet scale): no later step reads them (the blocked items already carry the action they
hold back, plan_text.blocked_once); their counts stay.
A check-mode run's record may be an **outline** (``split(outline=True)``): the shares of the nodes outside the run's
hosts keep only what the run's own steps read of them (run/executor.py: the node tasks the plan needs, the steps
each outside node did not run, their counts), each step as the values of OUTLINE_KEYS in one flat list per node
(CELLS), and none of their volume items. A
node the controller acts for (a ``record_only`` or ``controller_host`` step) is kept whole. Nothing else reads a
check-mode record (it is written in Ansible's local temporary directory and gone with the run), and the whole plan
is read from it only by a reader that says it takes an outline (run/plan_record.py plan_of).
The file kind (run/plan_record.py) keeps the rest and each share in a file of its own; the Kubernetes API kind
(run/plan_record_k8s.py) the rest and the shares, grouped in buckets, gzip-compressed in ConfigMaps.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import calendar
import hashlib
import json
import re
import time

# the record's own constants and encodings, read by both kinds (run/plan_record.py a directory's,
# run/plan_record_k8s.py the API's)
VERSION = 2  # 2: every part of the plan in one place (plan_record_parts.py); 1 is refused
STALE_TEMP_SECONDS = 3600  # a temporary directory of a writer killed before its rename
UNFINISHED_SECONDS = 12 * 3600  # a run still going (or killed: its record goes after this), kept from pruning
RUN_ID = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{8}$")

PER_NODE = ("plan", "volume_items", "by_node")
STATES = ("desired", "actual")  # kept without their per_node lists
EMPTY = {"plan": [], "volume_items": {}}
# an outline's step of a node outside the run's hosts: what the executor and the run's report read of it
OUTLINE_KEYS = ("action", "target", "volume", "pod", "unique_volume_name")
# an outline share's steps: one flat list of OUTLINE_KEYS' values, step after step (no list per step: fewer objects
# to build, write and read back)
CELLS = "cells"
OUTLINE = "outline"  # the key of an assembled outline's result: true


def _dumps(value):
    # a plan is acyclic (JSON from the planner): the encoder's cycle check would only cost time (docs/performance.md)
    return json.dumps(value, separators=(",", ":"), check_circular=False).encode("utf-8")


def _digest(data):
    return hashlib.sha256(data).hexdigest()


def _started(run_id):
    """When run ``run_id`` planned (its id's timestamp), in seconds since the epoch."""
    return calendar.timegm(time.strptime(run_id.split("-", 1)[0], "%Y%m%dT%H%M%SZ"))


def _positions(plan, by_node=None):
    """{node: [positions of its steps in the plan]}: the planner's ``by_node`` when the result has it (node_slice
    trusts it too), else one pass over the plan (a result built by hand is cut the same way)."""
    if by_node is not None:
        return by_node
    found = {}
    for position, step in enumerate(plan):
        node = step.get("node") if isinstance(step, dict) else None
        at = found.get(node)
        if at is None:
            at = found[node] = []
        at.append(position)
    return found


def _outlined(steps):
    """The outline share's cells of a node outside the run's hosts, or None when it is kept whole: a node with a
    ``record_only`` or ``controller_host`` step, which the controller acts for in this run (its items are read)."""
    cells = []
    extend = cells.extend
    for step in steps:  # (nearly every step of the plan at the envelope: OUTLINE_KEYS written out, in their order)
        get = step.get
        if get("record_only") or get("controller_host"):
            return None
        extend((get("action"), get("target"), get("volume"), get("pod"), get("unique_volume_name")))
    return cells


def split(plan_result, hosts=None, outline=False):
    """(rest, shares) of ``plan_result``. ``shares``: [(node, share)] of the nodes kept apart: ``hosts`` (None: every
    node of the plan; a host with no step and no volume item gets None); the other nodes' shares go in the rest,
    as an outline's cells when ``outline`` (the module docstring)."""
    plan = plan_result.get("plan") or []
    items = plan_result.get("volume_items") or {}
    positions = _positions(plan, plan_result.get("by_node"))
    nodes = list(positions)
    nodes.extend(node for node in items if node not in positions)
    apart = set(node for node in nodes if isinstance(node, str)) if hosts is None else set(hosts)
    shares, others = [], []
    for node in nodes:
        at = positions.get(node) or []
        share = {"at": at, "plan": [plan[i] for i in at]}
        if node in items:
            share["items"] = items[node]
        if node in apart and isinstance(node, str):
            shares.append((node, share))
            continue
        cells = _outlined(share["plan"]) if outline and isinstance(node, str) else None
        others.append([node, share if cells is None else {"at": at, CELLS: cells}])
    listed = set(node for node, _share in shares)
    shares.extend((node, None) for node in sorted(apart - listed) if isinstance(node, str))
    rest = dict((key, value) for key, value in plan_result.items() if key not in PER_NODE)
    for key in STATES:
        if isinstance(rest.get(key), dict) and "per_node" in rest[key]:
            rest[key] = dict((name, value) for name, value in rest[key].items() if name != "per_node")
    rest["_record"] = {"steps": len(plan), "others": others, "keys": [key for key in PER_NODE if key in plan_result]}
    if outline:
        rest["_record"][OUTLINE] = True
    return rest, shares


def _steps(node, share):
    """A share's steps: its own, or those of its outline's cells (each with its node)."""
    cells = share.get(CELLS)
    if cells is None:
        return share.get("plan") or []
    action, target, volume, pod, unique = OUTLINE_KEYS
    row = iter(cells)  # OUTLINE_KEYS' values of each step in turn, read five at a time
    return [{action: a, target: t, "node": node, volume: v, pod: p, unique: u}
            for a, t, v, p, u in zip(row, row, row, row, row)]


def node_view(node, share):
    """A node's share as node_slice gives it ({plan, volume_items}): what a node task takes."""
    if not share:
        return {"plan": [], "volume_items": {}}
    items = share.get("items")
    return {"plan": _steps(node, share), "volume_items": {node: items} if items else {}}


def other_share(rest, node):
    """The share of ``node`` among the rest's (a node outside the run's hosts), as node_view gives it."""
    for name, share in rest.get("_record", {}).get("others") or ():
        if name == node:
            return node_view(node, share)
    return {"plan": [], "volume_items": {}}


def assemble(rest, shares):
    """The plan result (its states without their per_node lists) from its rest and its shares ([(node, share)])."""
    result = dict(rest)
    meta = result.pop("_record")
    plan = [None] * meta["steps"]
    items, by_node = {}, {}
    for node, share in list(shares) + [tuple(pair) for pair in meta["others"]]:
        if not share:
            continue
        for position, step in zip(share["at"], _steps(node, share)):
            plan[position] = step
        if share["at"]:
            by_node[node] = share["at"]
        if "items" in share:
            items[node] = share["items"]
    whole = {"plan": plan, "volume_items": items, "by_node": by_node}
    for key in meta["keys"]:
        result[key] = whole[key]
    if meta.get(OUTLINE):
        result[OUTLINE] = True
    return result
