# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The arguments of an action plugin's task, checked against its spec once, as a module's would be."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator


def validated(args, argument_spec, name):
    """``args`` checked against ``argument_spec``: the parameters with their defaults; a bad argument fails the task
    naming action ``name`` (``kubevol.volumes.<short name>``) and every problem found."""
    result = ArgumentSpecValidator(argument_spec).validate(args)
    if result.error_messages:
        raise AnsibleActionFail("%s: %s" % (name, "; ".join(result.error_messages)))
    return result.validated_parameters
