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


def secret_values(params):
    """Every secret value in the phases' volume items (an external CSI driver's ``volumes[].secrets``): the
    module masks them in everything it returns, as Ansible masks a ``no_log`` option's values."""
    found = set()
    for phase in setup_phase_specs():
        for item in ((params.get(phase) or {}).get("volumes") or ()) if isinstance(params.get(phase), dict) else ():
            secrets = item.get("secrets") if isinstance(item, dict) else None
            for data in (secrets or {}).values() if isinstance(secrets, dict) else ():
                for value in (data or {}).values() if isinstance(data, dict) else ():
                    if isinstance(value, str) and value:
                        found.add(value)
    return found


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
