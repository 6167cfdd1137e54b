# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A big kubectl JSON List read by two processes: a forked child reads and builds the items after a point, this
process those before it, and the child hands its model objects back (cluster/flat.py). The plan task reads the
cluster alone on the controller, so a second CPU is otherwise idle while it reads (docs/performance.md).

The child starts at a guess: the first ``{"apiVersion"`` that follows a ``},`` past the middle of the text. Only this
process's own reading proves it an item's start: if its item loop lands on it, what the child read from there is
what the loop would have read (JSON parses one way), and if the loop passes it, the child is killed and its work
dropped. A child that fails, for any reason (a malformed object, a signal, no answer in time), is dropped the same
way, and this process reads those items itself, so the errors and the model are those of the one-process read.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import marshal
import os
import re
import select
import time

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.flat import CODECS
from ansible_collections.kubevol.volumes.plugins.module_utils.common import child
from ansible_collections.kubevol.volumes.plugins.module_utils.common.host_limits import usable_cpus, usable_memory
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import KIND_BUILDERS, Cluster
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file_text import list_items_from

# below this many characters a second process saves less than its start costs
SPLIT_MIN_CHARS = 16 * 1024 * 1024
# where the child's part starts, as a share of the text: it has the flat forms to write, this process to read them
SPLIT_AT = 0.55
# the memory asked to be free, per character of the text, more than twice what the second process took at the envelope
# (docs/performance.md): a controller short of memory reads in one process rather than risk the OOM killer
MEMORY_PER_CHAR = 4
# how long this process waits for the child at least, once its own part is read
MIN_PATIENCE = 30.0
_JSON_OBJECT = re.compile(r"\s*\{").match  # a JSON List's start (YAML is parsed whole: no child)
_ITEM_AFTER_COMMA = re.compile(r'\}\s*,\s*(\{)\s*"apiVersion"\s*:')
_READ_BYTES = 1 << 20


class SplitRead(object):
    """The items from ``at`` on, read by a child process (stores/file_text.py stream_list_items's ``split``)."""

    def __init__(self, at, pid, fd):
        self.at = at
        self.buckets = None  # the child's model objects, by Cluster slot, once taken over
        self._pid = pid
        self._fd = fd
        self._started = time.monotonic()

    @classmethod
    def start(cls, text):
        """A SplitRead whose child runs, or None: a small text, one usable CPU, too little memory, no guess, or no fork."""
        if len(text) < SPLIT_MIN_CHARS or not _JSON_OBJECT(text) or not hasattr(os, "fork") or usable_cpus() < 2:
            return None
        memory = usable_memory()
        if memory is not None and memory < MEMORY_PER_CHAR * len(text):
            return None  # the child's objects and their flat copies, beside this process's: not where memory is short
        found = _ITEM_AFTER_COMMA.search(text, int(len(text) * SPLIT_AT))
        if found is None:
            return None
        at = found.start(1)
        try:
            read_fd, write_fd = os.pipe()
        except OSError:
            return None
        pid = child.fork()
        if pid is None:
            os.close(read_fd)
            os.close(write_fd)
            return None
        if pid == 0:  # the child: never returns
            os.close(read_fd)
            _child(text, at, write_fd)
        os.close(write_fd)
        return cls(at, pid, read_fd)

    def take_over(self):
        """The position of the items' closing bracket, with ``buckets`` set; None when the child failed."""
        data = self._read()
        if data is None:
            return None
        try:
            end, out = marshal.loads(data)
            buckets = [_unflat(slot, entries) for slot, entries in enumerate(out)]
        except Exception:  # pylint: disable=broad-except
            return None  # an answer that does not read back is a failed child: its part is read here
        self.buckets = buckets
        return end

    def cancel(self):
        """Stop the child and drop its work (None: the reading goes on in this process)."""
        pid, self._pid = self._pid, None
        child.stop(pid)
        return None

    def close(self):
        self.cancel()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def merged(self, cluster):
        """``cluster`` (this process's part) with the child's objects after its own, kind by kind."""
        if self.buckets is None:
            return cluster
        return Cluster(*[mine + tuple(theirs) if theirs else mine for mine, theirs in zip(cluster, self.buckets)])

    def _read(self):
        # the child does what this process did for its own part, so it has had that long; waiting three times as
        # long again (at least MIN_PATIENCE) bounds a child that hangs, and then this process reads on
        patience = max(MIN_PATIENCE, 3 * (time.monotonic() - self._started))
        deadline = time.monotonic() + patience
        chunks = []
        while True:
            left = deadline - time.monotonic()
            try:
                ready = left > 0 and select.select([self._fd], [], [], left)[0]
                chunk = os.read(self._fd, _READ_BYTES) if ready else None
            except (OSError, ValueError):
                chunk = None
            if chunk is None:
                return self.cancel()
            if not chunk:
                break
            chunks.append(chunk)
        pid, self._pid = self._pid, None
        status = child.reap(pid)
        if status != 0 or not chunks:
            return None
        return b"".join(chunks)


def _unflat(slot, entries):
    codec = CODECS.get(slot)
    unflat = codec[1] if codec is not None else None
    return [unflat(entry) if entry.__class__ is tuple else KIND_BUILDERS[entry["kind"]][0](entry)
            for entry in entries]


def _child(text, at, write_fd):
    """Read and build the items from ``at``, write (closing bracket, objects by slot) to ``write_fd`` and exit: 0 when
    all is written, 1 on any failure (the parent then reads these items itself and meets the same failure)."""
    code = 1
    try:
        out = [[] for _slot in Cluster._fields]
        ends = []
        for obj in list_items_from(text, at, ends):
            entry = KIND_BUILDERS.get(obj.get("kind"))
            if entry is None:
                continue
            builder, slot = entry
            model = builder(obj)  # a malformed object raises here: the parent meets it again and names it
            codec = CODECS.get(slot)
            flat = codec[0](model) if codec is not None else None
            out[slot].append(obj if flat is None else flat)
        # version 2: no back-references, written in half the time of the default's; equal strings cross as copies,
        # as the JSON scanner makes them anyway
        data = memoryview(marshal.dumps((ends[0], out), 2))
        while data:
            data = data[os.write(write_fd, data):]
        code = 0
    except BaseException:  # pylint: disable=broad-except
        pass  # nothing may escape into the parent's code: the exit code says it failed
    finally:
        os._exit(code)
