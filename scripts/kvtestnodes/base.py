"""Shared basics: the error type, output, the command runner and atomic writes.

Every other module of the package builds on these; this one imports nothing
from the package, so the import order stays a tree.
"""

import os
import shlex
import subprocess
import sys


class TestNodesError(Exception):
    """A failure with a message that says what to do."""


def log(msg):
    print(msg, flush=True)


def warn(msg):
    print("testnodes: warning: " + msg, file=sys.stderr, flush=True)


def run(cmd, check=True, timeout=60, **kw):
    """Run an argument list (never a shell string); a failure names the command."""
    try:
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
                             universal_newlines=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise TestNodesError("timed out after %ss: %s" % (timeout, " ".join(cmd)))
    if check and res.returncode != 0:
        raise TestNodesError("command failed (rc=%d): %s\n%s" % (
            res.returncode, " ".join(shlex.quote(c) for c in cmd), res.stderr.strip()))
    return res


def write_file(path, text, mode=0o644):
    """Write through a temporary file and rename: readers never see half a file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
