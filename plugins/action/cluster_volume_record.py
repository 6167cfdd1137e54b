# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster_volume_record, written from the controller's own process (plugin_utils/in_process.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.run.record_task import REQUIRED_IF, argspec, run
from ansible_collections.kubevol.volumes.plugins.plugin_utils.in_process import InProcessAction, native


class ActionModule(InProcessAction):
    NAME = "kubevol.volumes.cluster_volume_record"

    def argspec_kwargs(self):
        return dict(argument_spec=argspec(), required_if=REQUIRED_IF)

    def run_task(self, params, check_mode, diff):
        if params.get("records") is not None:  # records given through a template: plain data, as a module gets them
            params = dict(params, records=native(params["records"], "records"))
        return run(params, check_mode=check_mode, diff=diff)
