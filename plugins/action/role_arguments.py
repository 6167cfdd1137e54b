# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""role_arguments: a role's argument spec checked against every host's variables, once, on the controller.

Ansible checks a role's ``meta/argument_specs.yml`` with a ``validate_argument_spec`` task it inserts per host,
one worker process each: a cost that grows with the hosts and that a no-op pays whole (docs/performance.md).
Imported with ``rolespec_validate: false``, the reconcile role checks every play host's variables here instead, in
this one process, with the same validator (ansible.plugins.action.validate_argument_spec), and fails naming each
host whose variables are wrong.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import yaml

from ansible.errors import AnsibleError
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.kubevol.volumes.plugins.plugin_utils import payloads


def load_spec(path, entry_point):
    """The options of ``entry_point`` in a role's argument_specs.yml."""
    with open(path) as handle:
        # libyaml's safe loader (its C parser) where PyYAML has it, as Ansible's own loader prefers it
        data = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}  # nosec B506: safe
    try:
        return data["argument_specs"][entry_point]["options"]
    except (KeyError, TypeError):
        raise AnsibleError("%s has no argument_specs.%s.options" % (path, entry_point)) from None


def host_errors(validator, spec, host_vars, templar):
    """The validation errors of one host's variables (only those the spec names, templated as the role sees them)."""
    provided = dict((name, host_vars[name]) for name in spec if name in host_vars)
    provided = templar.template(provided)
    try:
        result = validator.validate(provided, validate_role_argument_spec=True)
    except TypeError:  # an ansible-core without the keyword
        result = validator.validate(provided)
    return result.error_messages


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        args = self._task.args
        path = args.get("spec")
        if not path or not os.path.isfile(path):
            raise AnsibleError("role_arguments: spec %r is not a file (give the role's meta/argument_specs.yml)" % path)
        entry_point = args.get("entry_point") or "main"
        hosts = args.get("hosts")
        if hosts is None:
            hosts = task_vars.get("ansible_play_hosts_all") or [task_vars.get("inventory_hostname")]
        spec = load_spec(path, entry_point)
        validator = ArgumentSpecValidator(spec)
        hostvars = task_vars.get("hostvars") or {}
        failed = {}
        for host in hosts:
            # the implicit localhost (a play on localhost without an inventory, as playbooks/plan.yml) has no hostvars
            # entry: its own variables are this task's
            own = hostvars[host] if host in hostvars else (
                task_vars if host == task_vars.get("inventory_hostname") else None)
            errors = host_errors(validator, spec, own, self._templar.copy_with_new_env(
                available_variables=own)) if own is not None else ["not in the inventory"]
            if errors:
                failed[host] = errors
        result.update(changed=False, hosts=len(hosts), argument_errors=failed)
        if failed:
            result["failed"] = True
            # Ansible's own words (validate_argument_spec), then what to do; docs/errors.md KV-SETTING says why
            result["msg"] = ("Validation of the role's arguments failed for %s: set these variables as %s (entry point "
                             "%s) describes them [KV-SETTING]" % (
                                 "; ".join("host %s: %s" % (host, ", ".join(errs)) for host, errs in sorted(failed.items())),
                                 path, entry_point))
        else:
            result["msg"] = "the arguments of %d host(s) match the role's argument spec" % len(hosts)
            # the node modules the role is about to run: their payloads are built while its next steps run
            payloads.build_ahead(self, args.get("build_ahead"), task_vars)
        return result
