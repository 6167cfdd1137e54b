# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How node operations run commands: an injected ``runner(argv, data=None) -> (rc, out, err)``.

Production runs them through :mod:`subprocess` (:func:`process_runner`), which the node integration tests
exercise through the real modules; unit tests inject fake raw runners. Commands are always
argument lists in the C locale, never shell strings. :class:`Runner` adds the node and volume an
error must name, and :meth:`Runner.check` turns a non-zero exit into :class:`CommandFailed`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import os
import signal
import subprocess
import time

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import CommandFailed, CommandTimedOut
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting

LANG_C = {"LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C"}
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin")
NOT_FOUND_RC = 127
CANNOT_RUN_RC = 126
TIMED_OUT_RC = 124  # as timeout(1) exits
# Every node command is bounded (a hung disk or a stuck NFS mount must not hang the node task for ever). The
# tools that walk a whole device (mkfs, fsck, filesystem growth, wipefs) get an hour: mkfs.ext4 of a multi-TiB
# device takes minutes; everything else (mount, losetup, blkid, findmnt) answers in seconds when healthy.
COMMAND_TIMEOUT = 300
LONG_COMMAND_TIMEOUT = 3600
LONG_COMMANDS = ("mkfs", "fsck", "e2fsck", "resize2fs", "xfs_growfs", "xfs_repair", "btrfs", "wipefs")
# A command past its limit is stopped with every process it started: each command runs in a process group of its own
# (a session), which gets SIGTERM, then SIGKILL after KILL_GRACE seconds. Killing the command alone would leave its
# children running: fsck's fsck.<type> on the device after the volume was reported failed.
KILL_GRACE = 2.0
REAP_WAIT = 5.0  # after SIGKILL: a process in uninterruptible I/O (a hung device) dies only when the I/O returns


def _is_long(argv):
    return os.path.basename(argv[0]).split(".", 1)[0] in LONG_COMMANDS


def command_timeout(argv, timeout=COMMAND_TIMEOUT, long_timeout=LONG_COMMAND_TIMEOUT):
    """The time limit of ``argv`` in seconds: long_timeout for the whole-device tools, else timeout."""
    return long_timeout if _is_long(argv) else timeout


def find_executable(name):
    """Absolute path of ``name`` on PATH or the sbin directories, or None."""
    if os.path.isabs(name):
        return name if os.access(name, os.X_OK) else None
    dirs = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d] + list(SBIN_DIRS)
    for directory in dirs:
        path = os.path.join(directory, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _text(output):
    return output.decode("utf-8", "surrogateescape")  # as run_command decodes: odd bytes in a label never raise


def _group_alive(pgid):
    """Whether a process of group ``pgid`` still runs. A zombie does not count (it holds nothing: an orphan's is
    reaped by init, which on some machines never happens), so /proc is read; without /proc, kill(0) says."""
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        pids = None
    if pids is None:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass
        return True
    for pid in pids:
        try:
            with open("/proc/%s/stat" % pid, "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()  # after "(comm)", which may hold spaces
        except (OSError, IndexError):
            continue  # gone meanwhile
        if len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
            return True
    return False


def _signal_group(pgid, signum):
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(proc, grace=KILL_GRACE, reap_wait=REAP_WAIT):
    """Stop ``proc``'s whole process group (``proc`` leads it: started with start_new_session): SIGTERM, SIGKILL to
    whatever is left after ``grace`` seconds, then reap ``proc``. Returns its output so far (stdout, stderr bytes),
    and whether the group is gone (False: something in it survived SIGKILL for ``reap_wait`` seconds)."""
    pgid = proc.pid
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        proc.poll()  # reap the leader, so that a dead leader does not count as a member
        if not _group_alive(pgid):
            break
        time.sleep(0.05)
    else:
        _signal_group(pgid, signal.SIGKILL)
    try:
        out, err = proc.communicate(timeout=reap_wait)
    except subprocess.TimeoutExpired:
        out, err = b"", b""  # a member still holds the pipes: give up on its output, never wait for it
    deadline = time.monotonic() + reap_wait
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)  # a member in uninterruptible I/O dies when the I/O returns
    return out or b"", err or b"", not _group_alive(pgid)


TIMED_OUT = "timed out"


def _timed_out(argv, limit, stderr, gone):
    """The error text of a command killed at its limit: the time waited, the limit's setting, what was killed."""
    name = os.path.basename(argv[0])
    limit_setting = setting("long_command_timeout" if _is_long(argv) else "command_timeout")
    partial = _text(stderr or b"").strip()
    return ("%s after %ds and %s%s; check the kernel log (dmesg) for a hung device, or raise %s for %s"
            % (TIMED_OUT, limit, "was killed with every process it started" if gone else
               "was killed, but a process it started did not die (stuck in the kernel: check ps)",
               (" (its last output: %s)" % partial[-500:]) if partial else "", limit_setting, name))


def process_runner(timeout=COMMAND_TIMEOUT, long_timeout=LONG_COMMAND_TIMEOUT):
    """A raw runner over :mod:`subprocess`: list argv, C locale, no shell, stdin /dev/null unless ``data``.

    Not ``AnsibleModule.run_command``: it always passes a preexec_fn, which makes every command a full fork of the
    module's Python process, where subprocess uses vfork without one (docs/performance.md has the cost), and a
    node module runs up to seven commands per volume. A command that
    cannot be started returns its error with exit 126 or 127, and a command past its time limit (command_timeout)
    is killed with its whole process group (kill_group) and returns exit 124 with the time waited, which callers
    report like any failed command, naming the command line."""
    env = dict(os.environ, **LANG_C)

    def run(argv, data=None):
        exe = find_executable(argv[0])
        if exe is None:
            return NOT_FOUND_RC, "", "%s: command not found" % argv[0]
        if data is None:
            feed = {"stdin": subprocess.DEVNULL}
        else:
            feed = {"input": data.encode("utf-8") if isinstance(data, str) else data}
        limit = command_timeout(argv, timeout, long_timeout)
        stdin = feed.pop("stdin", subprocess.PIPE)
        try:
            proc = subprocess.Popen([exe] + list(argv[1:]), stdin=stdin, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env, close_fds=True, start_new_session=True)
        except OSError as err:
            return NOT_FOUND_RC if err.errno == errno.ENOENT else CANNOT_RUN_RC, "", "%s: %s" % (exe, err)
        try:
            out, err = proc.communicate(feed.get("input"), timeout=limit)
        except subprocess.TimeoutExpired:
            _out, err, gone = kill_group(proc)
            return TIMED_OUT_RC, "", _timed_out(argv, limit, err, gone)
        except BaseException:
            kill_group(proc, grace=0)  # the module itself is stopping: leave no command of its own behind
            raise
        return proc.returncode, _text(out), _text(err)
    return run


class Runner:
    """A raw runner plus the context (node, volume) every error must carry."""

    def __init__(self, raw, node="", volume=""):
        self.raw = raw
        self.node = node
        self.volume = volume

    def __call__(self, argv, data=None):
        return self.raw(list(argv), data)

    def for_volume(self, volume):
        return Runner(self.raw, node=self.node, volume=volume)

    def check(self, argv, step, hint=None, ok=(0,), data=None):
        """Run ``argv``; return (rc, out, err) when rc is in ``ok``, else raise CommandFailed."""
        rc, out, err = self(argv, data)
        if rc not in ok:
            raise self.fail(step, argv, rc, err or out, hint)
        return rc, out, err

    def fail(self, step, argv, rc, err, hint=None):
        """The CommandFailed of ``argv``; CommandTimedOut for a command killed at its limit (its text says what to
        do, so the caller's hint for a failed command is not added)."""
        stderr = (err or "").strip()
        if rc == TIMED_OUT_RC and stderr.startswith(TIMED_OUT + " after "):
            return CommandTimedOut(step=step, node=self.node, volume=self.volume, cmd=" ".join(argv), rc=rc,
                                   stderr=stderr)
        return CommandFailed(step=step, node=self.node, volume=self.volume, cmd=" ".join(argv), rc=rc,
                             stderr=stderr, hint=hint)
