# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A controller-side module run inside Ansible's own worker process.

volume_reconcile_plan and cluster_volume_record only read and write the cluster store, which the
controller holds: run as modules they paid, per call, for a Python start, a module payload and a
JSON round trip of their whole input and result, which grows with the cluster (docs/performance.md). An action
plugin built on this class validates the module's own argument spec and calls the same module_utils
function the module file calls, whatever host the task names; a relative path is read from the
directory the command was started in. An action that also needs its host's node (pod_volumes_wait, volume_audit)
reads the task's variables (``task_vars``) and runs a node module over the host's own connection (``node_module``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import json

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, KubevolError

# result keys that hold data, never a message: not walked when the result is said in its reader's words
DATA_KEYS = ("plan", "volume_items", "by_node", "desired", "actual", "record", "items")


def native(value, option):
    """Data given to option ``option`` (objects, records) as the plain types JSON gives, as a module gets them: through
    Ansible's templating it comes as Ansible's own tagged types (a ``str`` subclass, ...), which the model's field
    checks refuse (they test the exact type, for speed) and a YAML dump cannot write; a date YAML left unquoted comes
    as a ``datetime``, and becomes its ISO 8601 text, as Ansible passes it to a module. A value of any other type is
    refused with its place in the data (``records[0].device_path``)."""
    def iso(found):
        if isinstance(found, (datetime.date, datetime.time)):
            return found.isoformat()
        raise InvalidInput(field=option + _place_of(value, found), value=found,
                           reason="is not a value of plain data (strings, numbers, booleans, lists and mappings)")
    return json.loads(json.dumps(value, default=iso))


def _place_of(data, found):
    """Where ``found`` is inside ``data``, as ``[3].metadata.name``: walked only once a value was refused, so the data
    that is taken (all of it, nearly always) costs no walk."""
    stack = [(data, "")]
    while stack:
        here, place = stack.pop()
        if here is found:
            return place
        if isinstance(here, dict):
            stack.extend((item, "%s.%s" % (place, key)) for key, item in reversed(list(here.items())))
        elif isinstance(here, (list, tuple)):
            stack.extend((item, "%s[%d]" % (place, index)) for index, item in reversed(list(enumerate(here))))
    return ""


class InProcessAction(ActionBase):
    """Subclasses set NAME and ARGSPEC_KWARGS (argument_spec, mutually_exclusive, required_if, ...)
    and implement run_task(params, check_mode, diff) -> result."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False
    NAME = None
    # whose words its messages use (common/words.py) when the task gives no ``words``: the role's own actions say
    # the role's variables
    WORDS = words.MODULE
    task_vars = None  # the task's variables, for run_task

    def argspec_kwargs(self):
        raise NotImplementedError

    def run_task(self, params, check_mode, diff):
        raise NotImplementedError

    def run(self, tmp=None, task_vars=None):
        result = super(InProcessAction, self).run(tmp, task_vars)
        self.task_vars = task_vars or {}
        kwargs = self.argspec_kwargs()
        argument_spec = kwargs.pop("argument_spec")
        args = self._task.args
        # The validator deep-copies every parameter. A free-form dict (a plan, the run's state, every node's
        # results) is only read, and copying it costs in the size of the cluster: it is validated as an empty
        # stand-in (its type is what is checked) and handed over as it came.
        free_form = dict((name, args[name]) for name, spec in argument_spec.items()
                         if spec.get("type") == "dict" and "options" not in spec and isinstance(args.get(name), dict))
        validated = ArgumentSpecValidator(argument_spec, **kwargs).validate(
            dict(args, **dict((name, {}) for name in free_form)) if free_form else args)
        if validated.error_messages:
            result.update(failed=True, msg="%s: %s" % (self.NAME, "; ".join(validated.error_messages)))
            return result
        params = validated.validated_parameters
        params.update(free_form)
        # a deprecated option given (removed_in_version): reported as Ansible reports a module's
        deprecations = [dict((k, d[k]) for k in ("msg", "version", "date", "collection_name") if d.get(k))
                        for d in getattr(validated, "_deprecations", None) or ()]
        if deprecations:
            result["deprecations"] = deprecations
        try:
            result.update(self.run_task(params, bool(self._play_context.check_mode), bool(self._play_context.diff)))
        except KubevolError as err:
            result.update(err.to_result())
            result.update(failed=True, msg=err.msg)
        return words.say_all(result, params.get("words") or self.WORDS, skip=DATA_KEYS)

    def node_module(self, name, args):
        """Node module ``name``'s result for ``args`` on this task's host, run as Ansible runs a module; a host that
        cannot be reached gives ``{unreachable: true, failed: true, msg}`` instead of raising."""
        try:
            return self._execute_module(module_name=name, module_args=args, task_vars=self.task_vars)
        except AnsibleConnectionFailure as err:
            return {"unreachable": True, "failed": True, "msg": "%s: %s" % (name, err)}
