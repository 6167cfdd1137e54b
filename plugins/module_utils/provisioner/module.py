# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volume_provision_calls' entry (node/entry.py names it): its argument spec and its work, in the reader's words
(node/entry.py said_in): the operations on this host (provisioner/calls.py), their results and failures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import node_context
from ansible_collections.kubevol.volumes.plugins.module_utils.node.entry import said_in
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.args import calls_argspec
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.calls import run_operations


def argspec():
    return calls_argspec()


def run(module):
    run_calls(said_in(module))


def run_calls(module):
    params = module.params
    host = params["host"]
    try:
        # the host's context, as a node's: the settings group whole (its command limits, kubelet_dir, driver_options)
        ctx = node_context(dict(params, node_name=host), check_mode=module.check_mode)
    except KubevolError as err:
        module.fail_json(msg=err.msg, **err.to_result())
    results, failures = run_operations(ctx.runner, ctx.kubelet_dir, host, params["operations"], ctx.driver_options,
                                       params["secrets"], module.check_mode)
    changed = not module.check_mode and any(r.get("called") for r in results)
    if failures:
        module.fail_json(msg="%d of %d operation(s) failed on host %s: %s" % (
            len(failures), len(params["operations"]), host, "; ".join(f["msg"] for f in failures)),
            operations=results, failures=failures, changed=changed)
    module.exit_json(changed=changed, operations=results, failures=[])
