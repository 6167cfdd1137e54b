# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Writing beside the cluster state file, and what a failed write says.

Every file the file store writes (the state file, its run-lock record) is written to a temp file in the same
directory, flushed, fsynced and renamed over the old one (POSIX rename(2) is atomic), so a failure at any step
leaves the old file whole. A failure removes the temp file and raises WriteFailed; the store turns it into a
StoreError that names the file, the step, what stayed intact and what to do (remedy). A full filesystem (ENOSPC:
a write or the fsync fails after open succeeded), a read-only one (EROFS) and a directory the user may not write
(EACCES, EPERM) each get their own remedy; any other OSError says what the system said.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting

try:
    import pwd
except ImportError:  # pragma: no cover - not on POSIX
    pwd = None


class WriteFailed(Exception):
    """A step of a write failed; ``step`` says which (with the file), ``error`` is the OSError, ``leftover`` a temp
    file that could not be removed (None when none was left)."""

    def __init__(self, step, error, leftover=None, leftover_error=None):
        self.step, self.error, self.leftover, self.leftover_error = step, error, leftover, leftover_error
        super(WriteFailed, self).__init__("%s failed: %s" % (step, error_text(error)))


def error_text(err):
    """``No space left on device (ENOSPC)``: what the system said, with the errno's name to search for."""
    name = errno.errorcode.get(err.errno) if isinstance(err, OSError) and err.errno else None
    text = (err.strerror if isinstance(err, OSError) and err.strerror else None) or str(err) or type(err).__name__
    return "%s (%s)" % (text, name) if name else text


def _user():
    uid = os.geteuid()
    try:
        return "%s (uid %d)" % (pwd.getpwuid(uid).pw_name, uid)
    except (AttributeError, KeyError):
        return "uid %d" % uid


def remedy(err, directory):
    """What to do about ``err``, which happened writing in ``directory``."""
    code = getattr(err, "errno", None)
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return ("the filesystem holding %s is full (or the user's quota there is used up): free space on it, or keep "
                "the state file (%s) on a filesystem with room, and run again" % (directory, setting("cluster_state")))
    if code == errno.EROFS:
        return ("%s is on a read-only filesystem: remount it read-write, or keep the state file (%s) on a "
                "writable filesystem, and run again" % (directory, setting("cluster_state")))
    if code in (errno.EACCES, errno.EPERM):
        return ("%s may not write in %s: kubevol writes a new file beside the state file and renames it over the old "
                "one (and keeps <state>.lock and <state>.run-lock there), so it needs write and search permission on "
                "the directory, not only on the file; grant them, or run as a user who has them, and run again"
                % (_user(), directory))
    return "fix what the system reports and run again"


def leftover_text(failure):
    if failure.leftover:
        return ("the temp file %s could not be removed (%s): remove it by hand"
                % (failure.leftover, error_text(failure.leftover_error)))
    return "no temp file was left"


def write_replace(target, tmp, data, mode=None, owner=None, opened=None):
    """Write ``data`` (bytes) to ``tmp`` (a path; ``opened``: its descriptor when already created, e.g. by mkstemp),
    flush, fsync, give it ``mode`` and ``owner`` (uid, gid), rename it over ``target``. Any OSError: ``tmp`` is
    removed and WriteFailed raised, ``target`` untouched. Any other exception (an interrupt) removes ``tmp`` too."""
    step = "creating the temp file %s" % tmp
    try:
        fd = opened if opened is not None else os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o644)
        step = "writing the temp file %s" % tmp
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            step = "syncing the temp file %s to disk" % tmp
            os.fsync(handle.fileno())
        if mode is not None:
            step = "giving the temp file %s the state file's mode" % tmp
            os.chmod(tmp, mode)
        if owner is not None:
            step = "giving the temp file %s the state file's owner" % tmp
            os.chown(tmp, owner[0], owner[1])
        step = "renaming the temp file %s over %s" % (tmp, target)
        os.replace(tmp, target)
    except BaseException as err:
        failure = WriteFailed(step, err)
        try:
            os.unlink(tmp)
        except OSError as unlink_error:
            if os.path.lexists(tmp):  # a read-only filesystem refuses even to unlink what is not there
                failure.leftover, failure.leftover_error = tmp, unlink_error
        if isinstance(err, OSError):
            raise failure
        raise
