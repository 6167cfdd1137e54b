#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: reconcile_report
short_description: Print lines as text and return a reconcile run's report (internal to the reconcile role)
version_added: 0.3.0
author: kubevol contributors (@kubevol)
description:
  - Internal to the C(kubevol.volumes.reconcile) role, not a public interface. Its options and results follow the
    role and may change in any release without a deprecation period. The role returns the report as
    C(kubevol_report) (roles/reconcile/README.md).
  - Prints O(lines), and with O(summary) the run's report, as text lines on Ansible's display (a debug task would
    print a list of strings as a JSON list). A stdout callback that writes JSON gets no text; the lines are in the
    result.
  - With O(summary) (M(kubevol.volumes.reconcile_run)'s last C(summary)) it returns the run's report, each failure
    given to its owner. A play host whose node failed is in RV(failed_hosts); one that could not be reached is in
    RV(unreachable_hosts). What failed where no host of the play can carry it is in RV(failed_elsewhere) (a node
    outside the run's hosts with steps the run did not run, a controller host outside the play, a record the run
    could not write).
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
  lines:
    description: Lines to print as they are (the plan's table).
    type: list
    elements: str
    default: []
  summary:
    description: The run's summary, M(kubevol.volumes.reconcile_run)'s C(summary) after its last step.
    type: dict
  stopped:
    description: The name of the controller task that stopped the run (it failed; no node task ran after it).
    type: str
  quiet:
    description: Print nothing; return the report only.
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: Report the run
  kubevol.volumes.reconcile_report:
    summary: "{{ kubevol_run.summary }}"
  register: kubevol_report
  run_once: true
"""

RETURN = r"""
lines:
  description: The lines printed (O(lines), then the report's).
  returned: always
  type: list
  elements: str
nodes:
  description: "Per node of the run: C({applied, planned, failed, blocked, volumes}) (check mode: C(planned) would run,
    C(failed) would fail)."
  returned: with O(summary)
  type: dict
blocked:
  description: "Every blocked item of the run once, C({node, volume, pod, action, reason})."
  returned: with O(summary)
  type: list
  elements: dict
pending:
  description: The items the run left pending, to be retried by a later run (a node-side grow that waits).
  returned: with O(summary) or O(stopped)
  type: list
  elements: dict
failed_hosts:
  description: "C({host: [the phases it failed in]}) of the play's hosts whose node failed."
  returned: with O(summary) or O(stopped)
  type: dict
unreachable_hosts:
  description: "C({host: [the phases it could not be reached in]}) of the play's hosts that could not be reached."
  returned: with O(summary) or O(stopped)
  type: dict
failed_elsewhere:
  description: "The failures no host of the play owns, C({node, phase, msg}) (C(node) null for the run's own)."
  returned: with O(summary) or O(stopped)
  type: list
  elements: dict
run_failed:
  description: Whether anything failed in the run.
  returned: with O(summary) or O(stopped)
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(argument_spec=dict(lines=dict(type="list", elements="str", default=[]),
                                              summary=dict(type="dict"), stopped=dict(type="str"),
                                              quiet=dict(type="bool", default=False)), supports_check_mode=True)
    module.fail_json(msg="kubevol.volumes.reconcile_report runs as an action plugin on the controller; it was run as a "
                         "module on a host instead (is the collection's action plugin on the controller's path?)")


if __name__ == "__main__":
    main()
