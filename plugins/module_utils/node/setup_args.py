# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_volume_setup's second level of arguments: each phase's options, checked against its spec.

The module file calls it under AnsibleModule, after the first level is parsed. It ships in the module's
payload with Ansible's validator, which the payload holds anyway.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevol.volumes.plugins.module_utils.node.node_args import setup_phase_specs


def check_setup_phases(params):
    """None when every phase given in ``params`` is valid (each then holds its checked options, defaults
    filled in), else the error: ``<phase>: <what is wrong>``."""
    for phase, phase_spec in setup_phase_specs().items():
        if params.get(phase) is None:
            continue
        validated = ArgumentSpecValidator(phase_spec).validate(params[phase])
        if validated.error_messages:
            return "%s: %s" % (phase, "; ".join(validated.error_messages))
        params[phase] = validated.validated_parameters
    return None
