# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-volume lock: fcntl.flock on <run_dir>/locks/<sha256(unique volume name)>.lock."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fcntl
import hashlib
import os
import time

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import LockTimeout

DEFAULT_RUN_DIR = "/run/kubevol"


def lock_path(run_dir, unique_name):
    return os.path.join(run_dir, "locks", hashlib.sha256(unique_name.encode("utf-8")).hexdigest() + ".lock")


class VolumeLock:
    """Exclusive lock for one volume; waits at most ``timeout`` seconds, then raises LockTimeout."""

    def __init__(self, run_dir, unique_name, timeout, node="", volume="", interval=0.1):
        self.path = lock_path(run_dir, unique_name)
        self.timeout = timeout
        self.node = node
        self.volume = volume or unique_name
        self.interval = interval
        self.fd = None

    def __enter__(self):
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + max(0, self.timeout)
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except (IOError, OSError) as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout(volume=self.volume, node=self.node, lock=self.path, timeout=self.timeout)
                time.sleep(self.interval)
        self.fd = fd
        return self

    def __exit__(self, *exc):
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
        return False
