# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # volume_reconcile_plan's options of a volume's life from a claim (docs/provisioning.md)
    DOCUMENTATION = r'''
options:
  max_volume_deletions:
    description:
      - The deletion guard. A plan that would delete more released volumes (DeleteVolume of a PV whose claim is gone
        and whose reclaimPolicy is Delete) than this holds every one of them back, in RV(blocked), with the names,
        unless O(allow_mass_deletion). The reconcile role's C(kubevol_max_volume_deletions).
    type: int
    default: 3
    version_added: 0.2.0
  allow_mass_deletion:
    description:
      - Deletes however many released volumes the plan finds (the deletion guard off, for one run). The reconcile
        role's C(kubevol_allow_mass_deletion).
    type: bool
    default: false
    version_added: 0.2.0
  again:
    description:
      - An earlier result of this module (O(output=record)) whose options to plan with again, provisioning nothing -
        the reconcile role's plan after its provisioning, so that the run attaches and mounts the new volumes. The
        options given with it (O(node_facts), O(run_lock), the cluster store's) are used; its other options are the
        earlier plan's.
    type: dict
    version_added: 0.2.0
'''
