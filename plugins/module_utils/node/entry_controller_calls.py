# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""csi_controller_calls' entry, on a controller host: its argument spec and its work, the I-th operation on the
I-th volume item (node/controller_host.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node import controller_host
from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import node_context
from ansible_collections.kubevol.volumes.plugins.module_utils.node.entry import said_in


def argspec():
    return node_args.volumes_argspec(
        controller_host=dict(type="str", required=True),
        operations=dict(type="list", elements="dict", required=True, options=dict(
            op=dict(type="str", required=True, choices=["unpublish", "publish", "expand"]),
            node=dict(type="str", required=True),
            node_id=dict(type="str"))))


def run(module):
    module = said_in(module)
    params = module.params
    host = params["controller_host"]
    if len(params["operations"]) != len(params["volumes"]):
        module.fail_json(msg="csi_controller_calls: operations and volumes must be as many (the I-th operation is on "
                             "the I-th volume)")
    operations = [dict(op, volume=volume) for op, volume in zip(params["operations"], params["volumes"])]
    try:
        # the controller host's context, as a node's: the settings group whole (its command limits, driver_options)
        ctx = node_context(dict(params, node_name=host), check_mode=module.check_mode)
    except KubevolError as err:
        module.fail_json(msg=err.msg, **err.to_result())
    results, failures = controller_host.run_operations(ctx.runner, host, operations, ctx.driver_options,
                                                       check_mode=module.check_mode)
    changed = not module.check_mode and any(r.get("called") for r in results)
    if failures:
        module.fail_json(msg="%d controller call(s) failed on controller host %s: %s" % (
            len(failures), host, "; ".join(f["msg"] for f in failures)), operations=results, failures=failures,
            changed=changed)
    module.exit_json(changed=changed, operations=results, failures=[])
