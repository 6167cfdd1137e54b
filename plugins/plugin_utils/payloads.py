# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible builds a module's payload (AnsiballZ: the module and every module_util it imports) the first time a run
executes it, into the run's payload cache in its local temporary directory, and every later execution of that module
in the run reads it from there. The first node task of a run that runs a module waits for that build: its workers
queue on the cache's lock while one of them walks and compiles every module_util the module imports.

``build_ahead`` has Ansible build the payloads of the node modules a run is about to execute sooner, in a child
process at the lowest CPU priority, while the controller does other work (the role's first steps, its planning).
The payload is Ansible's own, built by its own function into its own cache under its own lock, so what a node task
executes is what it would have built itself. Building ahead is best effort: a child that fails or is not done in time
changes nothing but the time; the node task then builds (or waits for) the payload as it always did.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible import constants as C
from ansible.executor import module_common

from ansible_collections.kubevol.volumes.plugins.module_utils.common import child


def build_ahead(action, modules, task_vars):
    """Build the payloads of ``modules`` (module names as node tasks execute them) in a child process of this action's
    worker (common/child.py); returns at once, with the child's pid (None: no child). The child lowers its priority
    and always ends in ``os._exit``, never returning into the worker's code."""
    # each module once, in the order given (the first is the first a node task executes)
    modules = list(dict.fromkeys(name for name in modules or () if isinstance(name, str)))
    pid = child.fork() if modules else None
    if pid != 0:
        return pid  # (None, no fork: each node task builds its payload as it always did)
    try:
        os.nice(19)  # only what the controller leaves of its CPUs
        for name in modules:
            _build(action, name, task_vars)
    finally:
        os._exit(0)


def _build(action, name, task_vars):
    """Ansible's payload of module ``name``, built into this run's payload cache (module_common.modify_module, as
    ActionBase._configure_module calls it); any failure leaves the build to the node task."""
    try:
        found = action._shared_loader_obj.module_loader.find_plugin_with_context(
            name, collection_list=action._task.collections)
        if not found.resolved:
            return
        module_common.modify_module(
            module_name=name, module_path=found.plugin_resolved_path, module_args={}, templar=action._templar,
            task_vars=dict(task_vars or {}),
            module_compression=C.config.get_config_value("DEFAULT_MODULE_COMPRESSION", variables=task_vars))
    except BaseException:  # pylint: disable=broad-except
        # the cache is written before the payload's interpreter is settled (a discovery the node task does): what
        # raises after it, or any other failure, leaves the node task to build the payload itself
        return


def cancel(pid):
    """Stop a build_ahead child whose payloads no task will execute (its lock is a ``flock``: it goes with the child,
    and a payload is renamed into the cache only once whole)."""
    child.stop(pid)
