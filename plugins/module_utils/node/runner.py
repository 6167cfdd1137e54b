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
import subprocess

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import CommandFailed

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


def command_timeout(argv, timeout=COMMAND_TIMEOUT, long_timeout=LONG_COMMAND_TIMEOUT):
    """The time limit of ``argv`` in seconds: long_timeout for the whole-device tools, else timeout."""
    name = os.path.basename(argv[0])
    if name.split(".", 1)[0] in LONG_COMMANDS:
        return long_timeout
    return timeout


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


def process_runner(timeout=COMMAND_TIMEOUT, long_timeout=LONG_COMMAND_TIMEOUT):
    """A raw runner over :mod:`subprocess`: list argv, C locale, no shell, stdin /dev/null unless ``data``.

    Not ``AnsibleModule.run_command``: it always passes a preexec_fn, which makes every command a full fork of the
    module's Python process (about 3 ms of CPU per command here, against 0.6 ms for the vfork subprocess uses
    without one), and a node module runs seven commands per volume. A command that cannot be started returns
    its error with exit 126 or 127, and a command past its time limit (command_timeout) is killed and returns
    exit 124 with the time waited, which callers report like any failed command, naming the command line."""
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
        try:
            proc = subprocess.run([exe] + list(argv[1:]), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                  close_fds=True, check=False, timeout=limit, **feed)
        except subprocess.TimeoutExpired as err:
            # subprocess.run killed the command and reaped it
            partial = _text(err.stderr or b"") if isinstance(err.stderr, bytes) else (err.stderr or "")
            return TIMED_OUT_RC, "", ("timed out after %ds (kubevol's limit for %s) and was killed; the device or "
                                      "filesystem may be hung: check the kernel log (dmesg) before running again%s"
                                      % (limit, os.path.basename(argv[0]),
                                         ("; its last output: " + partial.strip()[-500:]) if partial.strip() else ""))
        except OSError as err:
            return NOT_FOUND_RC if err.errno == errno.ENOENT else CANNOT_RUN_RC, "", "%s: %s" % (exe, err)
        return proc.returncode, _text(proc.stdout), _text(proc.stderr)
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
            raise CommandFailed(step=step, node=self.node, volume=self.volume, cmd=" ".join(argv), rc=rc,
                                stderr=(err or out or "").strip(), hint=hint)
        return rc, out, err

    def fail(self, step, argv, rc, err, hint=None):
        return CommandFailed(step=step, node=self.node, volume=self.volume, cmd=" ".join(argv), rc=rc,
                             stderr=(err or "").strip(), hint=hint)
