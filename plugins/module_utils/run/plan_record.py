# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run's plan as a record on disk, read back by handle: what the reconcile role's later steps read instead of
an Ansible variable holding the whole plan.

A record is one directory per run id, ``<dir>/<run id>/``: ``nodes/<node>.json`` (each of the run's hosts' share of
the plan: its steps and volume items, what that host's node task reads, and nothing more), ``plan.json`` (the rest
of the volume_reconcile_plan result, with the shares of the nodes outside the run's hosts: run/plan_record_parts.py;
every part of the plan is in one file only; a check-mode run's outline keeps the other nodes' in ``others.marshal``)
and ``manifest.json`` (the run id and each file's sha256). It is built
in a temporary directory beside it and renamed into place, so a reader sees a whole record or none. A run's last
step marks its record finished (``finish``); pruning keeps the ``keep`` newest records and every unfinished one
younger than UNFINISHED_SECONDS, because the runs of a sliced reconcile (docs/fleet.md: node stage slices at once,
beside the attach/detach stage) write their records into one directory at the same time, and none may lose its plan
to another's pruning. The handle, what Ansible's variables carry, is ``{path, run_id, digest}``, the digest being
the manifest's: a record replaced or changed under the handle is refused, never read as this run's plan.

Where the records live is the caller's choice (run/plan_task.py record_dir): beside the state file for the file
store; for the Kubernetes API store, ConfigMaps in the run lock's namespace (``k8s:<namespace>``: the record kind of
run/plan_record_k8s.py, behind the same functions); the controller's local temporary directory in check mode. The
functions below take a record's location or handle and, for a record in the API, ``connection``: the cluster store
options (never part of a handle or a result); each kind does the same thing its own way (``_kind``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import marshal
import os
import shutil
import tempfile
import time
import uuid

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import PlanRecordFailed
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record_parts as parts
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_record_parts import (  # noqa: F401 (this module's names too)
    RUN_ID, STALE_TEMP_SECONDS, UNFINISHED_SECONDS, VERSION, _digest, _dumps, _started)
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_view import node_slice

try:
    from urllib.parse import quote
except ImportError:  # pragma: no cover - Python 2 is not supported, the import keeps sanity's compile test quiet
    from urllib import quote  # pylint: disable=no-name-in-module

KEEP = 2  # this run's record and the one before it (for a look after the run)
FINISHED = "finished"  # an empty file in the record: the run's last step was done
HANDLE_KEYS = ("path", "run_id", "digest")
MANIFEST = "manifest.json"
PLAN = "plan.json"
OTHERS, OTHERS_FILE = "others", "others.marshal"  # an outline's other nodes (write's ``outline``)
# The outline's other nodes are read only by the check-mode run that wrote them, on this controller, in the same
# Python (write's ``outline``), so they are kept in Python's own marshal format rather than JSON: it reads back
# faster (docs/performance.md), and its references write each repeated string once. Version 4 is the one with them.
OTHERS_MARSHAL = 4
OTHERS_JSON = "others.json"  # the same part in JSON, when a value in it is of a type marshal does not take


def new_run_id(now=None):
    """A run id that sorts by time and is unique: ``20261125T232600Z-1a2b3c4d``."""
    return "%s-%s" % (time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)), uuid.uuid4().hex[:8])


def default_dir(state_file):
    """The records of a file store's runs: a directory beside the state file, ``<state file>.plans``."""
    return os.path.abspath(state_file) + ".plans"


def _write(path, data):
    with open(path, "wb") as handle:
        handle.write(data)


def _node_file(node):
    """A node's file name: Kubernetes node names are DNS subdomains, but nothing from a cluster file names a path
    unquoted (``..``, ``/``)."""
    return "nodes/n-%s.json" % quote(node, safe="")


def _kind(path):
    """The record kind of a location or handle path: a ``k8s:<namespace>`` one's (plan_record_k8s), else a
    directory's (this module's _FileRecords). The API's kind is imported here, when a run uses it: it imports the
    Kubernetes client, which a run against a cluster file never loads; it imports this module's basics from
    plan_record_parts.py, not this module, so the two import in one direction."""
    if isinstance(path, str) and path.startswith("k8s:"):
        # pylint: disable=import-outside-toplevel
        from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record_k8s
        return plan_record_k8s
    return _FileRecords


def write(plan_result, directory, run_id=None, keep=KEEP, nodes=None, connection=None, local_copy=None,
          outline=False, tasks=None):
    """Write ``plan_result`` as run ``run_id``'s record at ``directory`` (a directory, created mode 0700, or
    ``k8s:<namespace>``), prune the older records there: its handle.

    ``nodes``: the nodes whose share is kept apart (the run's hosts: the planner's node facts); None, every node of
    the plan. A node outside them has no node task in this run; read_node still answers it, from the rest.

    ``local_copy``: for a record in the API, a directory on the controller where the same record is written too
    (the handle's ``local``). The run's own steps read that copy: every step of a run runs on its controller, and a
    node task reading its share from the API would import the Kubernetes client in its own worker first, for every
    host and task (docs/performance.md). A reader without the copy (another controller, the copy gone) reads the
    API.

    ``outline``: the other nodes' shares in outline (plan_record_parts.py), for a check-mode run's record, which only
    that run's own steps read; never for a record in the API. Their outline is a part of its own (``others.marshal``),
    and ``tasks``, the node tasks the plan needs (executor.run_tasks' sequence), is kept in the rest: the run's start
    in check mode reads the rest alone (start_of)."""
    run_id = run_id or new_run_id()
    if not RUN_ID.match(run_id):
        raise PlanRecordFailed("plan record: run id %r is not of the form 20261125T232600Z-1a2b3c4d" % run_id)
    hosts = None if nodes is None else frozenset(node for node in nodes if isinstance(node, str))
    kind = _kind(directory)
    outline = outline and kind is _FileRecords and local_copy is None
    rest, shares = parts.split(plan_result, hosts, outline=outline)
    if outline and tasks is not None:
        rest["_record"]["tasks"] = tasks
    path, digest = kind.write(rest, shares, directory, run_id, connection)
    prune(directory, keep, run_id, connection=connection)
    handle = {"path": path, "run_id": run_id, "digest": digest}
    if local_copy is not None and kind is not _FileRecords:
        os.makedirs(local_copy, mode=0o700, exist_ok=True)
        path, digest = _write_files(rest, shares, os.path.abspath(local_copy), run_id)
        _prune_files(local_copy, keep, run_id, time.time())
        handle["local"] = {"path": path, "run_id": run_id, "digest": digest}
    return handle


class _FileRecords:
    """The record kind of a directory on the controller (the module docstring's layout)."""

    @staticmethod
    def write(rest, shares, directory, run_id, _connection):
        return _write_files(rest, shares, os.path.abspath(directory), run_id)

    @staticmethod
    def manifest(handle, _connection):
        found = _read(os.path.join(handle["path"], MANIFEST), handle["digest"], MANIFEST, handle)
        if found.get("version") != VERSION or found.get("run_id") != handle["run_id"]:
            raise PlanRecordFailed("plan record %s: written by another version or run (%s, version %s); run the "
                                   "reconcile again" % (handle["path"], found.get("run_id"), found.get("version")))
        return found

    @staticmethod
    def _part(handle, entry, decode=None):
        return _read(os.path.join(handle["path"], entry["file"]), entry["digest"], entry["file"], handle, decode)

    @staticmethod
    def _rest(handle, found):
        """The rest of the plan, with the other nodes' shares (an outline keeps them in a part of their own)."""
        rest = _FileRecords._part(handle, found["plan"])
        if found.get(OTHERS):
            entry = found[OTHERS]
            decode = _others if entry["file"] == OTHERS_FILE else None  # (OTHERS_JSON: the default, JSON)
            rest["_record"]["others"] = _FileRecords._part(handle, entry, decode)
        return rest

    @staticmethod
    def read_plan(handle, connection):
        found = _FileRecords.manifest(handle, connection)
        shares = [(node, entry and _FileRecords._part(handle, entry)) for node, entry in found["nodes"].items()]
        return parts.assemble(_FileRecords._rest(handle, found), shares)

    @staticmethod
    def read_node(handle, node, connection):
        found = _FileRecords.manifest(handle, connection)
        if node not in found["nodes"]:  # not one of the run's hosts: its share is in the rest
            return parts.other_share(_FileRecords._rest(handle, found), node)
        entry = found["nodes"][node]
        return parts.node_view(node, entry and _FileRecords._part(handle, entry))

    @staticmethod
    def finish(handle, _connection):
        try:
            with open(os.path.join(handle["path"], FINISHED), "w"):
                pass
        except OSError:
            pass  # a record that cannot be marked stays until UNFINISHED_SECONDS: nothing is lost

    @staticmethod
    def prune(directory, keep, current, now, _connection):
        _prune_files(directory, keep, current, now)


def _write_files(rest, shares, directory, run_id):
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        final = os.path.join(directory, run_id)
        temp = tempfile.mkdtemp(prefix=".%s." % run_id, dir=directory)
    except OSError as err:
        # the run's plan is written there for its later steps
        raise PlanRecordFailed("plan record: cannot create %s (%s): make it writable, or set %s to a directory on the "
                               "controller" % (directory, err, setting("plan_record_dir")))
    try:
        os.mkdir(os.path.join(temp, "nodes"))
        manifest = {"version": VERSION, "run_id": run_id, "nodes": {}}
        if rest["_record"].get(parts.OUTLINE):  # the other nodes' outline apart, so that the rest reads alone
            rest = dict(rest, _record=dict(rest["_record"]))
            others, name = rest["_record"].pop("others"), OTHERS_FILE
            try:
                data = marshal.dumps(others, OTHERS_MARSHAL)
            except ValueError:  # a value of a type of its own (a str subclass): the plain JSON part instead
                data, name = _dumps(others), OTHERS_JSON
            _write(os.path.join(temp, name), data)
            manifest[OTHERS] = {"file": name, "digest": _digest(data)}
        data = _dumps(rest)
        _write(os.path.join(temp, PLAN), data)
        manifest["plan"] = {"file": PLAN, "digest": _digest(data)}
        for node, share in shares:
            if share is None:  # a host with nothing to do: no file
                manifest["nodes"][node] = None
                continue
            data = _dumps(share)
            name = _node_file(node)
            _write(os.path.join(temp, name), data)
            manifest["nodes"][node] = {"file": name, "digest": _digest(data)}
        data = _dumps(manifest)
        _write(os.path.join(temp, MANIFEST), data)
        os.rename(temp, final)
    except OSError as err:
        shutil.rmtree(temp, ignore_errors=True)
        raise PlanRecordFailed("plan record: cannot write %s (%s), so nothing was changed in the cluster: free space "
                               "there, or set %s to another directory on the controller"
                               % (os.path.join(directory, run_id), err, setting("plan_record_dir")))
    return final, _digest(data)


def finish(handle, connection=None):
    """Mark the record of ``handle`` finished (the run's last step is done): pruning may take it from now on."""
    if is_handle(handle):
        _kind(handle["path"]).finish(handle, connection)
        if is_handle(handle.get("local")):
            _FileRecords.finish(handle["local"], None)


def prune(directory, keep=KEEP, current=None, now=None, connection=None):
    """Remove the records beyond the ``keep`` newest (never ``current``) that are finished or older than
    UNFINISHED_SECONDS (a run that is still going keeps its plan, whatever other runs write meanwhile), and what
    killed writers left (after STALE_TEMP_SECONDS). Only what this module names is touched: a run id directory with a
    manifest, a ``.<run id>.`` temp directory; in the API, ConfigMaps with kubevol's labels."""
    _kind(directory).prune(directory, keep, current, now, connection)


def _prune_files(directory, keep, current, now):
    try:
        names = os.listdir(directory)
    except OSError:
        return
    now = time.time() if now is None else now
    records = sorted((name for name in names if RUN_ID.match(name) and name != current
                      and os.path.isfile(os.path.join(directory, name, MANIFEST))), reverse=True)
    doomed = [name for name in (records[max(keep - 1, 0):] if current else records[keep:])
              if os.path.exists(os.path.join(directory, name, FINISHED)) or now - _started(name) > UNFINISHED_SECONDS]
    for name in names:
        path = os.path.join(directory, name)
        if name.startswith(".") and RUN_ID.match(name[1:].split(".", 1)[0]):
            try:
                if now - os.stat(path).st_mtime > STALE_TEMP_SECONDS:
                    doomed.append(name)
            except OSError:
                continue
    for name in doomed:
        shutil.rmtree(os.path.join(directory, name), ignore_errors=True)


def is_handle(value):
    return isinstance(value, dict) and all(isinstance(value.get(key), str) for key in HANDLE_KEYS)


def _others(data):
    """An outline's other nodes, as _write_files wrote them (its digest already checked)."""
    value = marshal.loads(data)
    if not isinstance(value, list):
        raise ValueError("not a list of the other nodes' shares")
    return value


def _read(path, digest, what, handle, decode=None):
    """The part at ``path``, checked against its ``digest``; ``decode``: how its bytes are read (JSON by default)."""
    try:
        with open(path, "rb") as stream:
            data = stream.read()
    except OSError as err:
        # the record is written by this run's plan task and kept until two later runs have planned
        raise PlanRecordFailed("plan record of run %s: cannot read %s (%s): run the reconcile again"
                               % (handle.get("run_id"), path, err))
    if _digest(data) != digest:
        raise PlanRecordFailed("plan record of run %s: %s is not the one this run wrote (its sha256 differs), so it is "
                               "not used: run the reconcile again" % (handle.get("run_id"), what))
    if decode is None:
        return json.loads(data.decode("utf-8"))
    try:
        return decode(data)
    except (ValueError, EOFError, TypeError) as err:
        raise PlanRecordFailed("plan record of run %s: %s cannot be read (%s): run the reconcile again"
                               % (handle.get("run_id"), what, err))


def _checked(handle):
    """(record kind, handle) to read ``handle``'s record with: its copy on this controller when there is one (write's
    ``local_copy``), else the record itself."""
    if not is_handle(handle):
        raise PlanRecordFailed("plan record: %r is not a plan record handle ({path, run_id, digest}, the record of a "
                               "volume_reconcile_plan result with output=record)" % (handle,))
    local = handle.get("local")
    if is_handle(local) and local["run_id"] == handle["run_id"] and os.path.isdir(local["path"]):
        return _FileRecords, local
    return _kind(handle["path"]), handle


def manifest(handle, connection=None):
    """The record's manifest, checked against the handle's digest."""
    kind, handle = _checked(handle)
    return kind.manifest(handle, connection)


def read_plan(handle, connection=None, outline=False):
    """The whole volume_reconcile_plan result of the record. A check-mode run's outline (write's ``outline``) is read
    only by a reader that says it takes one (``outline``: the run's own steps); any other is refused it."""
    kind, handle = _checked(handle)
    result = kind.read_plan(handle, connection)
    if result.get(parts.OUTLINE) and not outline:
        raise PlanRecordFailed("plan record of run %s was written by a check-mode run: it keeps only an outline of "
                               "the steps of the nodes outside that run's hosts, so it is not read as the whole plan; "
                               "print the plan result's table, or plan with output=full" % handle.get("run_id"))
    return result


def read_node(handle, node, connection=None):
    """One node's share of the record's plan (node_slice's shape), read from that node's own part only: a host with
    no step and no volume item has none, and gets an empty share; a node that is not one of the run's hosts gets its
    share from the rest of the plan (plan_record_parts.py)."""
    kind, handle = _checked(handle)
    return kind.read_node(handle, node, connection)


def _record_handle(plan_result):
    """The record handle of an output=record result (the plan is not in it), else None (a full result)."""
    if isinstance(plan_result, dict) and "plan" not in plan_result and is_handle(plan_result.get("record")):
        return plan_result["record"]
    return None


def start_of(plan_result):
    """{rest, tasks} of a check-mode run's outline record (write's ``outline`` and ``tasks``): the plan result
    without its steps, volume items and the other nodes' outline, and the node tasks the plan needs, read from the
    rest's part alone; None for any other result or record (the run's start reads the plan whole)."""
    handle = _record_handle(plan_result)
    if handle is None:
        return None
    kind, handle = _checked(handle)
    if kind is not _FileRecords:
        return None
    found = _FileRecords.manifest(handle, None)
    if not found.get(OTHERS):
        return None
    rest = _FileRecords._part(handle, found["plan"])
    meta = rest.pop("_record")
    if meta.get("tasks") is None:
        return None
    return {"rest": rest, "tasks": meta["tasks"]}


def plan_of(plan_result, connection=None, outline=False):
    """A volume_reconcile_plan result as the executor takes it: a record result (output=record) read back whole,
    a full result as it is. ``connection``: the cluster store options, for a record in the Kubernetes API.
    ``outline``: a check-mode run's outline is taken too (read_plan)."""
    handle = _record_handle(plan_result)
    return plan_result if handle is None else read_plan(handle, connection, outline)


def node_plan_of(plan_result, node, connection=None):
    """One node's share of a record result (read from its own part) or of a full result (cut from it)."""
    handle = _record_handle(plan_result)
    return node_slice(plan_result, node) if handle is None else read_node(handle, node, connection)
