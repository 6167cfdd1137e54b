#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: reconcile_verdict
short_description: Fail each host whose node failed in a reconcile run (internal to the reconcile role)
version_added: 0.3.0
author: kubevol contributors (@kubevol)
description:
  - Internal to the C(kubevol.volumes.reconcile) role, not a public interface. Its options and results follow the
    role and may change in any release without a deprecation period.
  - The role's last step. On a host whose node failed in the run it fails, naming the tasks (their output has the
    node's message); on a host that could not be reached it returns C(unreachable). So the play's recap counts exactly
    those hosts, and C(--limit @<playbook>.retry) retries exactly them.
  - What failed outside the play's hosts (M(kubevol.volumes.reconcile_report)'s C(failed_elsewhere)) is set as the
    fact C(kubevol_run_failed_elsewhere) (messages) when O(fail_run_on_localhost) is set and localhost is in the run,
    for the play on localhost that fails the run; otherwise the play's first host fails for it, saying that it is
    not its own failure.
  - An action plugin on the controller; it needs no connection.
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
    platforms: posix
options:
  report:
    description: The run's report, M(kubevol.volumes.reconcile_report)'s result.
    type: dict
    required: true
  node_name:
    description: This host's Kubernetes node name (for the message).
    type: str
  fail_run_on_localhost:
    description: A play on localhost follows that fails the run for what failed outside the play's hosts.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Fail the hosts whose node failed
  kubevol.volumes.reconcile_verdict:
    report: "{{ kubevol_report }}"
  run_once: "{{ not kubevol_report.run_failed }}"
"""

RETURN = r"""
ansible_facts:
  description: C(kubevol_run_failed_elsewhere), the messages of what failed outside the play's hosts, for the play on localhost.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(report=dict(type="dict", required=True), node_name=dict(type="str"),
                                              fail_run_on_localhost=dict(type="bool", default=False)),
                           supports_check_mode=True)
    module.fail_json(msg="kubevol.volumes.reconcile_verdict runs as an action plugin on the controller; it was run as "
                         "a module on a host instead (is the collection's action plugin on the controller's path?)")


if __name__ == "__main__":
    main()
