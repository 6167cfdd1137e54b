# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Remedies in the reader's words.

A message that tells the reader to change a setting names it once, as a token (``setting("provision", True)``
gives ``@{provision=true}``), and the edge that shows the message says it the way its reader sets it: as the
module's option (``provision=true``) to someone who calls a module directly, as the reconcile role's variable
(``kubevol_provision=true``) to an operator running a playbook. Library code never knows who reads it; only the
module's main(), an action plugin or the role's report renders, with ``say`` or ``say_all``.

Each kind of failure also has a short code (``KV-...``, on the error class as ``code``): the message says what,
where and what to do in one sentence, and docs/errors.md says why, under that code.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

MODULE = "module"
ROLE = "role"
WORDS = (MODULE, ROLE)

# module option (or planner option) -> the reconcile role's variable that sets it
ROLE_VARIABLES = {
    "allow_mass_deletion": "kubevol_allow_mass_deletion",
    "allow_mass_teardown": "kubevol_allow_mass_teardown",
    "clean": "kubevol_audit_clean",
    "cluster_source": "kubevol_cluster_source",
    "cluster_state": "kubevol_cluster_state",
    "command_timeout": "kubevol_command_timeout",
    "driver_options": "kubevol_driver_options",
    "force_detach": "kubevol_force_detach",
    "force_release_holders": "kubevol_force_release_holders",
    "known_drivers": "kubevol_known_drivers",
    "kubelet_dir": "kubevol_kubelet_dir",
    "lock_timeout": "kubevol_lock_timeout",
    "long_command_timeout": "kubevol_long_command_timeout",
    "loop_pools": "kubevol_loop_pools",
    "max_teardown_count": "kubevol_max_teardown_count",
    "max_volume_deletions": "kubevol_max_volume_deletions",
    "max_teardown_fraction": "kubevol_max_teardown_fraction",
    "max_wait_for_unmount": "kubevol_max_wait_for_unmount",
    "node_name": "kubevol_node_name",
    "node_timeout": "kubevol_node_timeout",
    "plan_record_dir": "kubevol_plan_record_dir",
    "provision": "kubevol_provision",
    "scope": "kubevol_scope",
    "stage": "kubevol_stage",
}

_TOKEN = re.compile(r"@\{([a-z_]+)(?:\[([^\]{}]*)\])?(?:=([^{}]*))?\}")


def setting(name, value=None, key=None):
    """The token for setting ``name``: alone, with the ``value`` to set (a scalar or a list), or one ``key`` of a
    mapping setting (``setting("driver_options", key="loop.kubevol.io")``). ``name`` must be in ROLE_VARIABLES."""
    if name not in ROLE_VARIABLES:
        raise ValueError("unknown setting %r: add it to common/words.py ROLE_VARIABLES" % name)
    if isinstance(value, dict):
        raise ValueError("setting %r: a token carries a scalar or a list, not a mapping" % name)
    token = name
    if key is not None:
        token += "[%s]" % str(key).replace("]", "").replace("{", "").replace("}", "")
    if value is not None:
        token += "=" + (value if isinstance(value, str) else json.dumps(value, sort_keys=True))
    return "@{%s}" % token


def _render(match, words):
    name, key, value = match.group(1), match.group(2), match.group(3)
    said = ROLE_VARIABLES.get(name, name) if words == ROLE else name
    if key is not None:
        said += "[%s]" % json.dumps(key)
    return said if value is None else "%s=%s" % (said, value)


def say(text, words=MODULE):
    """``text`` with each setting token said in ``words`` (MODULE or ROLE)."""
    if not isinstance(text, str) or "@{" not in text:
        return text
    return _TOKEN.sub(lambda m: _render(m, words), text)


def say_all(value, words=MODULE, skip=()):
    """``value`` (a result: dicts, lists, strings) with every string said in ``words``; the dict keys in ``skip``
    are kept as they are (bulky data that holds no message, such as a whole plan)."""
    if isinstance(value, str):
        return say(value, words)
    if isinstance(value, dict):
        return dict((k, v if k in skip else say_all(v, words, skip)) for k, v in value.items())
    if isinstance(value, list):
        return [say_all(v, words, skip) for v in value]
    if isinstance(value, tuple):
        return tuple(say_all(v, words, skip) for v in value)
    return value
