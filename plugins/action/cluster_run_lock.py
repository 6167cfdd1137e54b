# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster_run_lock, taken from the controller's own process (plugin_utils/in_process.py).

The lock's owner is the ansible process that runs the play (this worker's parent): while it lives the
lock is live (and renewed by every record write); once it is gone a run on the same host takes the
lock over at once, and a run elsewhere once the lock expires.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
from ansible_collections.kubevol.volumes.plugins.module_utils.run.run_lock_task import REQUIRED_IF, argspec, run
from ansible_collections.kubevol.volumes.plugins.plugin_utils.in_process import InProcessAction


class ActionModule(InProcessAction):
    NAME = "kubevol.volumes.cluster_run_lock"

    def argspec_kwargs(self):
        return dict(argument_spec=argspec(), required_if=REQUIRED_IF)

    def run_task(self, params, check_mode, diff):
        return run(params, check_mode=check_mode, owner=run_lock.owner(os.getppid()))
