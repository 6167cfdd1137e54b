#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: role_arguments
short_description: Check a role's argument spec against every host's variables, once, on the controller
version_added: 0.3.0
author: kubevol contributors (@kubevol)
description:
  - Validates the variables of every host of the play against a role's C(meta/argument_specs.yml), with Ansible's
    own validator, in one task on the controller. It fails naming each host whose variables do not match.
  - The reconcile role runs it first. Import the role with C(rolespec_validate=false) (as the collection's
    playbooks do) and the per-host C(validate_argument_spec) task Ansible would insert, one worker process per host,
    is not needed. With C(roles:) both run, and both check the same spec.
  - An action plugin; it changes nothing and needs no connection.
options:
  spec:
    description: Path of the role's C(meta/argument_specs.yml) on the controller.
    type: path
    required: true
  entry_point:
    description: The entry point whose options are checked.
    type: str
    default: main
  hosts:
    description: The hosts whose variables are checked. Default the play's hosts (C(ansible_play_hosts_all)).
    type: list
    elements: str
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
  check_mode:
    support: full
  diff_mode:
    support: none
  platform:
    platforms: all
"""

EXAMPLES = r"""
- name: Check the reconcile role's arguments of every host, once
  kubevol.volumes.role_arguments:
    spec: "{{ role_path }}/meta/argument_specs.yml"
  run_once: true
"""

RETURN = r"""
hosts:
  description: How many hosts' variables were checked.
  returned: always
  type: int
  sample: 10
argument_errors:
  description: Each host whose variables do not match the spec, with the validator's messages.
  returned: always
  type: dict
  sample: {"node3": ["value of kubevol_cluster_source must be one of: file, kubernetes, got: nope"]}
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(spec=dict(type="path", required=True),
                                              entry_point=dict(type="str", default="main"),
                                              hosts=dict(type="list", elements="str")),
                           supports_check_mode=True)
    module.fail_json(msg="kubevol.volumes.role_arguments runs as an action plugin on the controller; it was run as a "
                         "module on the node instead (is the collection's action plugin on the controller's path?)")


if __name__ == "__main__":
    main()
