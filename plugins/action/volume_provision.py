# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volume_provision: one host's share of a plan's CreateVolume and CreateSnapshot (task provision) or DeleteVolume
and DeleteSnapshot (task delete) operations (run/provision_outcome.py), run there by module volume_provision_calls.
Internal to the reconcile role.

The role delegates this task to each host the plan names (delegate_to): the module runs over that host's own
connection. Here, on the Ansible controller: the host's operations cut from the plan minus the run's failures, and the
Secrets they name (a StorageClass's provisioner secret, a PV's deletion secret) read from the cluster store and passed
in the module's no_log option. A CreateVolume whose Secret cannot be had is not called (the external-provisioner
retries it); a DeleteVolume goes on without it (the Secret may be gone with the claim's namespace)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node.node_args import task_settings
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.args import (
    PROVISION_LEGACY, provision_argspec)
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record
from ansible_collections.kubevol.volumes.plugins.module_utils.run.csi_secrets import read_secrets
from ansible_collections.kubevol.volumes.plugins.module_utils.run.provision_outcome import host_operations
from ansible_collections.kubevol.volumes.plugins.module_utils.run.run_lock_task import kept_renewed
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import with_group_defaults
from ansible_collections.kubevol.volumes.plugins.plugin_utils import task_args

ARGSPEC = provision_argspec()


def _secrets(ops, cluster_store, host):
    """(the operations to run, their secrets in order, a failure entry per CreateVolume whose Secret is missing)."""
    found = read_secrets([op.get("secret_ref") for op in ops], cluster_store)
    kept, secrets, refused = [], [], []
    for op in ops:
        data, why = found.get(op.get("secret_ref"), ({}, None))
        if why is not None and op["op"] == "create_volume":
            refused.append({"op": op["op"], "claim": op.get("claim"), "name": op.get("name"), "uncertain": False,
                            "msg": "CreateVolume %s for claim %s on host %s was not called: its StorageClass's "
                                   "provisioner secret %s %s; create the Secret, then run again"
                                   % (op["name"], op["claim"], host, op["secret_ref"], why)})
            continue
        if why is not None and op["op"] == "create_snapshot":
            refused.append({"op": op["op"], "snapshot": op.get("snapshot"), "content_name": op.get("content_name"),
                            "uncertain": False,
                            "msg": "CreateSnapshot %s for VolumeSnapshot %s on host %s was not called: its "
                                   "VolumeSnapshotClass's snapshotter secret %s %s; create the Secret, then run again"
                                   % (op["name"], op["snapshot"], host, op["secret_ref"], why)})
            continue
        kept.append(op)
        secrets.append(data or {})
    return kept, secrets, refused


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        params = task_args.validated(self._task.args, ARGSPEC, "kubevol.volumes.volume_provision")
        host, reader = params["host"], params["words"]
        params["cluster_store"] = with_group_defaults(params["cluster_store"], self._task.module_defaults,
                                                      self._templar.template)
        try:
            # the node's settings group, checked once here, handed whole to the module on the host
            settings = task_settings(params, PROVISION_LEGACY)
            plan = plan_record.plan_of(params["plan"], params["cluster_store"])
            ops = host_operations(plan, params["task"], host, params["failures"])
            ops, secrets, refused = _secrets(ops, params["cluster_store"], host)
        except KubevolError as err:
            result.update(failed=True, msg=words.say("kubevol.volumes.volume_provision on %s: %s" % (host, err.msg),
                                                     reader))
            return result
        result.update(changed=False, operations=[], failures=refused, host=host)
        if ops:
            args = dict(settings, host=host, operations=ops, secrets=secrets, words=reader)
            renewal_warnings = []
            try:
                # the run's lock renewed while the calls run, as during a node task (run_lock_task.kept_renewed)
                with kept_renewed(params["cluster_store"], params["run_lock"], renewal_warnings):
                    outcome = self._execute_module(module_name="kubevol.volumes.__internal.volume_provision_calls",
                                                   module_args=args, task_vars=task_vars)
            except AnsibleConnectionFailure as err:
                outcome = {"unreachable": True, "failed": True, "msg": "host %s is unreachable: %s" % (host, err)}
            result.update(outcome)
            result["failures"] = list(outcome.get("failures") or ()) + refused
            if renewal_warnings:
                result["warnings"] = ["host %s: %s" % (host, w) for w in renewal_warnings]
        if refused:
            messages = [result["msg"]] if result.get("failed") and result.get("msg") else []
            result.update(failed=True, msg="; ".join(messages + [entry["msg"] for entry in refused]))
        result["host"] = host
        return result
