# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # The planner's teardown guard (plan/guards.py): volume_reconcile_plan's options.
    DOCUMENTATION = r'''
options:
  max_teardown_fraction:
    description:
      - The teardown guard. A plan that would unmount or detach more than this fraction of the volumes mounted
        now (two volumes or more) is refused, with the teardown it would do in the message and in RV(teardown_guard).
      - A volume counts once per node, whatever steps it has. Mounted now means node facts show a global or pod
        mount, or, for a node without facts, C(node.status.volumesInUse) lists it.
      - Like terraform's C(prevent_destroy), because a snapshot that lost its pods looks like a cluster that wants
        every volume gone.
    type: float
    default: 0.5
  max_teardown_count:
    description:
      - The teardown guard's absolute limit, whatever the fraction. See O(max_teardown_fraction).
    type: int
    default: 20
  allow_mass_teardown:
    description:
      - Turn the teardown guard off for this run, when the snapshot is right and the teardown is wanted
        (draining nodes, deleting an application).
    type: bool
    default: false
'''
