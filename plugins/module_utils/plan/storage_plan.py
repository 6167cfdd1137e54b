# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A volume's life from a claim in the plan: the CSI registrations, provisioning and deletion planned in the same
pass as the node steps (plan/planner.py plan_cluster), and what the plan result says of them.

Result keys (docs/contracts.md section 3, docs/provisioning.md):

- ``provisioning``: the create_volume operations (plan/rules_provision.py), then the create_snapshot ones
  (plan/rules_snapshot.py), each with its host;
- ``deletions``: the delete_volume and delete_snapshot operations (plan/rules_delete.py); ``deletion_guard``;
- ``storage_records``: what the run writes at its start: claims let go, PVs Released, the provisioning intents
  (provisioning_started), the bindings of volumes provisioned by an earlier run and of pre-provisioned snapshots;
- ``registrations``: the node_registration records (plan/registration.py).

A plan without claims to provision or volumes to delete has empty lists: the run's task sequence is the one it
always was (run/executor.py run_tasks).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.plan.provision_hosts import Hosts
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.registration import storage_view
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_delete import plan_deletions
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_provision import (
    Provisioning, plan_provisioning)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_snapshot import Snapshots, plan_snapshots

StoragePlan = namedtuple("StoragePlan", "view hosts provisioning scope snapshots")
StoragePlan.__doc__ = """What plan() needs of the storage side: the StorageView, the Hosts, the Provisioning planned
before the desired state (its claims are left out of the desired state's blocked entries), the scope and the
Snapshots (planned with the provisioning: not again after it)."""


def storage_plan(index, node_facts, options, scope):
    """The StoragePlan of a plan from ``index`` and the run's raw node facts."""
    view = storage_view(index, node_facts)
    hosts = Hosts(index, options, view, node_facts)
    provisioning = plan_provisioning(index, options, view, node_facts, scope, hosts) if options.provisioning \
        else Provisioning()
    snapshots = plan_snapshots(index, options, hosts, scope) if options.provisioning else Snapshots()
    return StoragePlan(view, hosts, provisioning, scope, snapshots)


def add_storage(p, storage, result):
    """The plan result ``result`` of plan ``p`` (its rules done) with the storage side's keys and blocked entries."""
    deletions = plan_deletions(p, storage.hosts, storage.scope)
    snapshots = storage.snapshots
    result["provisioning"] = storage.provisioning.operations + snapshots.operations
    result["deletions"] = deletions.operations
    result["deletion_guard"] = deletions.guard
    result["storage_records"] = deletions.records + storage.provisioning.records + snapshots.records
    result["registrations"] = storage.view.records
    return storage.provisioning.blocked + snapshots.blocked + deletions.blocked
