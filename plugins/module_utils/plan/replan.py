# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan made again after a run's provisioning (volume_reconcile_plan ``again``): the same options as the run's
first plan, read from its result, so the role's provision task names none of them twice; it provisions nothing
(a claim whose CreateVolume failed waits for the next run), and plans the new volumes' attach and mount."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# the options a plan is made with, beside the cluster store's, the node facts and the run lock (given again)
OPTIONS = ("force_detach", "max_wait_for_unmount", "known_drivers", "scope", "max_teardown_fraction",
           "max_teardown_count", "allow_mass_teardown", "output", "stage", "table_rows", "table_hint", "record_dir",
           "driver_options", "inventory_hosts", "loop_pools", "words", "max_volume_deletions", "allow_mass_deletion")


def remembered(params):
    """What a plan result keeps of its options (``options``), to be made again with them."""
    return dict((key, params.get(key)) for key in OPTIONS)


def with_earlier(params):
    """``params`` with the options of the plan ``again`` names (when it names one), provisioning nothing."""
    earlier = params.get("again")
    if not earlier:
        return dict(params, provisioning=True)
    merged = dict(params)
    merged.update((key, value) for key, value in (earlier.get("options") or {}).items() if key in OPTIONS)
    merged["provisioning"] = False
    return merged
