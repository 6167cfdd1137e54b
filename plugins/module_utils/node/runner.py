# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How node operations run commands: an injected ``runner(argv, data=None) -> (rc, out, err)``.

Production wraps ``module.run_command`` (:func:`module_runner`); tests inject their own raw runners
(``tests/integration/node/conftest.py`` has a subprocess one). Commands are always
argument lists in the C locale, never shell strings. :class:`Runner` adds the node and volume an
error must name, and :meth:`Runner.check` turns a non-zero exit into :class:`CommandFailed`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.errors import CommandFailed

LANG_C = {"LANG": "C", "LC_ALL": "C", "LC_MESSAGES": "C"}
SBIN_DIRS = ("/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin")
NOT_FOUND_RC = 127


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


def module_runner(module):
    """A raw runner over ``AnsibleModule.run_command`` (list argv, C locale, no shell)."""
    def run(argv, data=None):
        exe = find_executable(argv[0])
        if exe is None:
            return NOT_FOUND_RC, "", "%s: command not found" % argv[0]
        rc, out, err = module.run_command([exe] + list(argv[1:]), data=data, environ_update=LANG_C,
                                          binary_data=data is not None)
        return rc, out, err
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
