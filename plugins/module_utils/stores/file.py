# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""FileStore: the cluster as a YAML or JSON file holding a Kubernetes List.

Reads what ``kubectl get nodes,pods,pv,pvc,volumeattachments,csidrivers -A -o yaml`` (or ``-o json``)
prints. A YAML file is trusted only when its text shows it is whole (one List, ``kind`` and ``metadata``
after ``items`` as kubectl writes them; file_text.py): a cut one, or a multi-document stream, is refused. ``apply`` is
all or nothing: under an exclusive flock on ``<path>.lock`` it re-reads the file, applies the
records and replaces the file atomically (temp file in the same directory, fsync, os.replace,
fsync of the directory), so a run killed at any point leaves the old file or the new one.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import errno
import fcntl
import glob
import json
import os
import stat
import tempfile
import time

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import RecordApplier, validate_record
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import (
    DELETE,
    ClusterFileRefused,
    ClusterStore,
    MissingLibrary,
    StoreError,
    StoreLockTimeout,
    StoreWriteFailed,
    empty_list,
)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file_text import (
    KUBECTL_ERROR_PREFIXES,
    KUBECTL_KINDS,
    YAML_IMPORT_ERROR,
    cut_short_reason,
    describe_value,
    kubectl_error_reason,
    kubectl_order,
    not_a_list_reason,
    stream_list_items,
    yaml,
    yaml_cut_short_problem,
    yaml_text_cut_short_problem,
)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import file_text
# re-exported: cluster/load.py load_cluster_file catches it from here
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file_text import NotStreamable  # noqa: F401 pylint: disable=unused-import
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file_write import (
    WriteFailed,
    error_text,
    leftover_text,
    remedy,
    write_replace,
)

DEFAULT_LOCK_TIMEOUT = 30
TEMP_MARK = ".kubevol-"
TEMP_SUFFIX = ".tmp"


class FileStore(ClusterStore):
    source = "file"

    def __init__(self, path, lock_timeout=DEFAULT_LOCK_TIMEOUT):
        if not path:
            raise InvalidInput(field="cluster_state", value=path, reason="a file path is required for cluster_source=file")
        self.path = os.path.abspath(os.path.expanduser(path))
        self.lock_path = self.path + ".lock"
        self.lock_timeout = DEFAULT_LOCK_TIMEOUT if lock_timeout is None else float(lock_timeout)

    @classmethod
    def from_options(cls, cluster_state=None, lock_timeout=None, **others):
        extra = sorted(k for k, v in others.items() if v is not None)
        if extra:
            raise InvalidInput(field=extra[0], value=others[extra[0]], reason="does not apply to cluster_source=file")
        return cls(cluster_state, lock_timeout=lock_timeout)

    def describe(self):
        return "file %s" % self.path

    # -- the run lock: a record beside the state file, read and written under the store's flock ------
    @property
    def run_lock_path(self):
        return self.path + ".run-lock"

    def run_lock_location(self):
        return self.run_lock_path

    def _run_lock_swap(self, change):
        with self.locked():
            try:
                with open(self.run_lock_path) as handle:
                    current = json.load(handle)
                if not isinstance(current, dict):
                    current = {}
            except (IOError, OSError):
                current = None
            except ValueError:
                current = {}  # unreadable: stale (run_lock.stale_reason)
            wanted = change(current)
            directory = os.path.dirname(self.run_lock_path)
            if wanted is DELETE:
                try:
                    os.unlink(self.run_lock_path)
                except OSError as err:
                    raise StoreWriteFailed(store=self.describe(), reason=(
                        "could not release the run lock %s: removing it failed: %s; the lock stays as it was (%s) "
                        "until this run's process is gone or the lock expires, the state file %s was not touched, "
                        "and %s" % (self.run_lock_path, error_text(err), run_lock.describe(current), self.path,
                                    remedy(err, directory))))
            elif wanted is not None:
                data = json.dumps(wanted, sort_keys=True).encode("utf-8")
                try:
                    write_replace(self.run_lock_path, self.run_lock_path + ".tmp", data)
                except WriteFailed as failure:
                    raise StoreWriteFailed(store=self.describe(), reason=(
                        "could not write the run lock %s: %s; the lock is unchanged (%s), the state file %s was not "
                        "touched and %s; %s" % (self.run_lock_path, failure, run_lock.describe(current), self.path,
                                                leftover_text(failure), remedy(failure.error, directory))))

    # -- reading --------------------------------------------------------------------------------
    def load(self):
        return self._read()[0]

    def _read(self):
        """(List dict, format) where format is "json" or "yaml"."""
        return self.parse(self.read_text())

    def read_text(self):
        """The file's text (UTF-8, a byte-order mark dropped); StoreError naming the file when it cannot be read."""
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read()
        except (IOError, OSError) as err:
            hint = ""
            if err.errno == errno.ENOENT:
                hint = ": create it with `kubectl get %s -A -o yaml > %s`" % (KUBECTL_KINDS, self.path)
            raise ClusterFileRefused(store=self.describe(), reason="cannot read the cluster state file: %s%s" % (
                err.strerror or err, hint))
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise ClusterFileRefused(store=self.describe(), reason="the file is not UTF-8 text (%s): write it again with "
                                     "kubectl" % err)
        return text

    def stream_items(self, text, split=None):
        """The objects of kubectl's JSON List (``-o json``), one at a time, each parsed only when it is reached.

        For a reader that keeps only what it builds from each object (cluster/load.py load_cluster_file): the parsed
        List, several times the file's size, is never whole in memory, so the worker faults in about half the
        pages, and on a VM each fault costs what the host charges (docs/performance.md). Anything but one
        JSON object whose ``items`` is a list of objects with a kind and whose kind is a List raises
        NotStreamable, possibly after some items were yielded: the caller drops what it built and parses the
        whole text with ``parse``, which names what is wrong, so the two paths accept the same files. ``split``: the
        second part of the items read by another process (stream_list_items, cluster/load_split.py)."""
        return stream_list_items(text, split)

    def parse(self, text):
        """Parse YAML or JSON text (decided by content) into (List dict, format)."""
        stripped = text.lstrip()
        if stripped[:64].lower().startswith(KUBECTL_ERROR_PREFIXES):  # not a lowered copy of the whole text
            raise ClusterFileRefused(store=self.describe(), reason=kubectl_error_reason(stripped))
        if stripped[:1] in ("{", "["):
            try:
                return self._to_list([json.loads(text)]), "json"
            except ValueError as err:
                json_error = err
                if yaml is None:
                    raise ClusterFileRefused(store=self.describe(), reason=self._unparsable_reason("JSON", err))
        else:
            json_error = None
        if yaml is None:
            raise MissingLibrary("PyYAML", "to read the YAML cluster state file %s" % self.path, YAML_IMPORT_ERROR)
        problem = yaml_text_cut_short_problem(text)  # before a parse that may take a minute
        if problem:
            raise ClusterFileRefused(store=self.describe(), reason=cut_short_reason(problem, self.path))
        try:
            documents = list(yaml.load_all(text, Loader=file_text.Loader))
        except yaml.YAMLError as err:
            if json_error is not None:
                raise ClusterFileRefused(store=self.describe(), reason=self._unparsable_reason("JSON", json_error))
            raise ClusterFileRefused(store=self.describe(), reason=self._unparsable_reason("YAML", err))
        # a file cut short first (it may also be cut inside an object), then what is no cluster at all
        problem = yaml_cut_short_problem(documents) if any(d is not None for d in documents) else None
        if problem:
            raise ClusterFileRefused(store=self.describe(), reason=cut_short_reason(problem, self.path))
        return self._to_list(documents), "yaml"

    def _unparsable_reason(self, syntax, err):
        # a file cut short (an interrupted kubectl, a full disk) reads like this
        return ("invalid %s (%s): write it again with `kubectl get %s -A -o yaml > %s` and check that kubectl "
                "succeeded" % (syntax, str(err).replace("\n", " "), KUBECTL_KINDS, self.path))

    def _to_list(self, documents):
        """One List from the parsed documents; anything that is not a picture of a cluster is an error.

        A snapshot decides what gets torn down, so an empty file (what ``kubectl get ... > file``
        leaves when kubectl failed), kubectl's error text or a malformed List never reads as a
        cluster with nothing in it.
        """
        documents = [d for d in documents if d is not None]
        if not documents:
            raise ClusterFileRefused(store=self.describe(), reason=(
                "the file is empty (what `kubectl get ... > file` leaves when kubectl failed): write it again with "
                "`kubectl get %s -A -o yaml > %s` and check that kubectl succeeded" % (KUBECTL_KINDS, self.path)))
        if len(documents) == 1 and isinstance(documents[0], dict) and "items" in documents[0]:
            result = documents[0]
            items = result["items"]
            if items is None:
                items = result["items"] = []
            if not isinstance(items, list):
                raise ClusterFileRefused(store=self.describe(), reason="its List's items is %s, not a list of objects"
                                         % describe_value(items))
        else:
            result = empty_list()
            items = result["items"]
            for number, doc in enumerate(documents):
                if isinstance(doc, dict) and isinstance(doc.get("items"), list):
                    items.extend(doc["items"])
                elif isinstance(doc, dict) and doc.get("kind"):
                    items.append(doc)
                elif isinstance(doc, list):
                    items.extend(doc)
                else:
                    raise ClusterFileRefused(store=self.describe(), reason=not_a_list_reason(number, doc))
        for number, obj in enumerate(items):
            if not isinstance(obj, dict) or not obj.get("kind"):
                raise ClusterFileRefused(store=self.describe(), reason="items[%d] is not a Kubernetes object (%s)" % (
                    number, "no kind" if isinstance(obj, dict) else describe_value(obj)))
        return result

    def dumps(self, cluster_list, fmt):
        if fmt == "json":
            # compact: with indent, json falls back to its pure-Python encoder, and the file doubles
            return json.dumps(cluster_list, separators=(",", ":"), ensure_ascii=False) + "\n"
        if yaml is None:
            raise MissingLibrary("PyYAML", "to write the YAML cluster state file %s" % self.path, YAML_IMPORT_ERROR)
        # the List's keys in kubectl's order, so the file kubevol wrote still shows that it is whole
        return yaml.dump(kubectl_order(cluster_list), Dumper=file_text.Dumper, default_flow_style=False, sort_keys=False,
                         allow_unicode=True, width=1000000)

    # -- writing --------------------------------------------------------------------------------
    def apply(self, records, check_mode=False):
        if not isinstance(records, list):
            raise InvalidInput(field="records", value=records, reason="must be a list of record dicts")
        for position, record in enumerate(records):
            validate_record(record, position)
        if check_mode:
            return self._apply_records(self.load(), records)
        outcome = {}

        def change(cluster_list):
            outcome.update(self._apply_records(cluster_list, records))
            return outcome["changed"]

        self.update(change)
        return outcome

    def _apply_records(self, cluster_list, records):
        applier = RecordApplier(cluster_list)
        changes = applier.apply_all(records)
        diff = applier.diff()
        diff["before_header"] = diff["after_header"] = self.path
        return {"changed": bool(changes), "changes": changes, "diff": diff}

    def update(self, change):
        """Under the lock: re-read, ``change(cluster_list)`` (true when it changed something), write atomically.

        The one way anything writes the state file, so a writer never loses another's change.
        """
        with self.locked():
            self._remove_stale_temp_files()
            cluster_list, fmt = self._read()
            changed = change(cluster_list)
            if changed:
                self._write_atomic(self.dumps(cluster_list, fmt).encode("utf-8"))
            return changed

    @contextlib.contextmanager
    def locked(self, timeout=None):
        """Hold the exclusive lock on <path>.lock; StoreLockTimeout after ``timeout`` seconds."""
        timeout = self.lock_timeout if timeout is None else timeout
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError as err:
            raise StoreWriteFailed(store=self.describe(), reason=(
                "cannot open the lock file %s, which every run and every write of the state file %s takes: %s; %s" % (
                    self.lock_path, self.path, error_text(err), remedy(err, os.path.dirname(self.lock_path)))))
        try:
            deadline = time.monotonic() + timeout
            delay = 0.01
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as err:
                    if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                        raise StoreError(store=self.describe(), reason="cannot lock %s: %s" % (self.lock_path, err.strerror))
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise StoreLockTimeout(store=self.describe(), lock=self.lock_path, timeout=timeout)
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, 0.2)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock

    def _temp_prefix(self, target):
        return "." + os.path.basename(target) + TEMP_MARK

    def _remove_stale_temp_files(self):
        """Temp files of a run killed before os.replace; safe to remove while we hold the lock."""
        target = os.path.realpath(self.path)
        pattern = os.path.join(os.path.dirname(target), glob.escape(self._temp_prefix(target)) + "*" + TEMP_SUFFIX)
        for stale in glob.glob(pattern):
            try:
                os.unlink(stale)
            except OSError:
                pass

    def _write_atomic(self, data):
        target = os.path.realpath(self.path)  # replace a symlink's target, not the symlink
        directory = os.path.dirname(target)
        intact = "the state file %s is unchanged: none of this update is in it" % target
        step = "reading the mode of %s" % target
        try:
            st = os.stat(target)
            step = "creating a temp file in %s" % directory
            fd, tmp = tempfile.mkstemp(prefix=self._temp_prefix(target), suffix=TEMP_SUFFIX, dir=directory)
        except OSError as err:
            raise StoreWriteFailed(store=self.describe(), reason="could not write the new state: %s failed: %s; %s and "
                                   "no temp file was left; %s" % (step, error_text(err), intact, remedy(err, directory)))
        owner = (st.st_uid, st.st_gid) if hasattr(os, "geteuid") and os.geteuid() == 0 else None
        try:
            write_replace(target, tmp, data, mode=stat.S_IMODE(st.st_mode), owner=owner, opened=fd)
        except WriteFailed as failure:
            raise StoreWriteFailed(store=self.describe(), reason="could not write the new state: %s; %s and %s; %s" % (
                failure, intact, leftover_text(failure), remedy(failure.error, directory)))
        _fsync_directory(directory)


def _fsync_directory(directory):
    """Make the rename durable; some filesystems refuse fsync on a directory, which is fine."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
