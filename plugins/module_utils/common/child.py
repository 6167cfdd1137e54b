# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A helper process forked from the controller's worker (cluster/load_split.py's reader, plugin_utils/payloads.py's
payload builder): how it starts and how it is stopped, in one place.

The child runs only its own code and always ends in ``os._exit``: it never returns into the worker's code, and never
runs Ansible's exit handlers or the worker's signal handlers.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal
import warnings


def fork():
    """``os.fork`` for such a child: 0 in the child (SIGINT and SIGTERM back to their defaults, not the worker's
    handlers: Ansible's worker kills its process group), the child's pid in the parent, None when there is no fork."""
    if not hasattr(os, "fork"):
        return None
    try:
        with warnings.catch_warnings():
            # Python warns of a fork in a process with threads (Ansible's worker may hold its queue's feeder thread):
            # the child runs only its own code, takes no lock another thread may hold, and is killed if it hangs
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:
        return None
    if pid == 0:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
    return pid


def reap(pid):
    """The exit status of child ``pid`` once it has ended (None: no such child)."""
    while pid is not None:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
        except OSError:
            return None
    return None


def stop(pid):
    """Kill child ``pid`` and reap it (None: nothing to stop)."""
    if pid is None:
        return None
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass  # already gone: reaped below all the same
    return reap(pid)
