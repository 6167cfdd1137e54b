# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each node module does once its arguments are parsed: its argument spec and its work, by module name.

A module file parses its arguments with AnsibleModule (``argspec(name)``) and calls ``run(name, module)``.
The reconcile role's engine (plugins/action/node_phases.py) runs those same public modules, through
Ansible's own module execution.

Node code only: this file and what it imports travel in every node module's AnsiballZ payload, so it imports
nothing of the planner, the cluster store or the cluster's credentials (tests/unit/plugins/modules/test_node_payload.py
checks each module's payload). The imports of the work are inside the functions: a module's process imports
only the node code it runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args


def _volume_info(module):
    from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import node_context
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.facts import node_facts

    try:
        ctx = node_context(module.params, check_mode=module.check_mode)
        facts = node_facts(ctx, fs_sizes=module.params["fs_sizes"])
    except KubevolError as err:
        module.fail_json(msg=err.msg, **err.to_result())
    for text in ctx.warnings:  # e.g. a node plugin that gave no node id (facts.csi_node_ids)
        module.warn(text)
    module.exit_json(changed=False, node_facts=facts)


def _volume_attach(module):
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import run_volumes
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.operations import attach_volume

    provision = module.params["provision"]
    run_volumes(module, lambda ctx, item: attach_volume(ctx, item, provision=provision),
                volume_attachments=lambda results: [r["volume_attachment"] for r in results if r["volume_attachment"]],
                volumes_attached=lambda results: [r["volumes_attached"] for r in results if r["volumes_attached"]])


def _volume_mount(module):
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import run_volumes
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.operations import mount_volume

    force, timeout = module.params["force"], module.params["device_timeout"]
    run_volumes(module, lambda ctx, item: mount_volume(ctx, item, force=force, device_timeout=timeout))


def _fs_expand(module):
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import run_volumes
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.operations import expand_controller, expand_node

    run_volumes(module, expand_controller if module.params["stage"] == "controller" else expand_node)


def _volume_detach(module):
    from ansible_collections.kubevol.volumes.plugins.module_utils.node import stale
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import run_volumes
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.operations import detach_volume

    force = module.params["force"]
    checked = []

    def prepare(ctx, items):
        # Every stale path is checked before anything runs: a refused path fails the call with nothing changed.
        # Each volume decides for itself before it acts (detach_volume calls plan_detach first): one blocked
        # volume (still mounted, an unsafe path) fails alone, never the node's other volumes.
        checked.extend(stale.check_paths(ctx, module.params["stale_paths"]))

    run_volumes(module, lambda ctx, item: detach_volume(ctx, item, force=force), prepare=prepare,
                finish=lambda ctx: stale.remove_stale(ctx, checked))


def _volume_setup(module):
    """node_volume_setup; each phase's own options were checked against setup_phase_specs() by the caller."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.setup import run_setup

    result = run_setup(module)
    for text in result.pop("warnings_text"):
        module.warn(text)
    module.exit_json(**result)


def _csi_controller_calls(module):
    """csi_controller_calls, on a controller host: the I-th operation on the I-th volume item."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.controller_host import run_operations
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import node_context

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
    results, failures = run_operations(ctx.runner, host, operations, ctx.driver_options, check_mode=module.check_mode)
    changed = not module.check_mode and any(r.get("called") for r in results)
    if failures:
        module.fail_json(msg="%d controller call(s) failed on controller host %s: %s" % (
            len(failures), host, "; ".join(f["msg"] for f in failures)), operations=results, failures=failures,
            changed=changed)
    module.exit_json(changed=changed, operations=results, failures=[])


def _volume_provision_calls(module):
    """volume_provision_calls, on a host that provisions: CreateVolume, DeleteVolume (provisioner/)."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.module import run_calls

    run_calls(module)


def _provision_calls_argspec():
    from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.args import calls_argspec

    return calls_argspec()


# module name -> (its argument spec, its work)
MODULES = {
    "node_volume_info": (lambda: node_args.node_argspec(fs_sizes=dict(type="bool", default=True)), _volume_info),
    "k8s_volume_attach": (lambda: node_args.volumes_argspec(provision=dict(type="bool", default=False)),
                          _volume_attach),
    "node_volume_mount": (lambda: node_args.volumes_argspec(force=dict(type="bool", default=False),
                                                            device_timeout=dict(type="int", default=30)),
                          _volume_mount),
    "fs_expand": (lambda: node_args.volumes_argspec(stage=dict(type="str", default="node",
                                                               choices=["node", "controller"])), _fs_expand),
    "volume_detach": (lambda: node_args.volumes_argspec(volumes_required=False, force=dict(type="bool", default=False),
                                                        stale_paths=dict(type="list", elements="str", default=[])),
                      _volume_detach),
    "node_volume_setup": (node_args.setup_argspec, _volume_setup),
    "csi_controller_calls": (lambda: node_args.volumes_argspec(
        controller_host=dict(type="str", required=True),
        operations=dict(type="list", elements="dict", required=True, options=dict(
            op=dict(type="str", required=True, choices=["unpublish", "publish", "expand"]),
            node=dict(type="str", required=True),
            node_id=dict(type="str")))), _csi_controller_calls),
    "volume_provision_calls": (_provision_calls_argspec, _volume_provision_calls),
}


def argspec(name):
    """The argument spec of node module ``name`` (its short name, ``volume_detach``)."""
    return MODULES[name][0]()


def _said_in(module, reader):
    """``module`` with its exit, failure and warnings said in ``reader``'s words (common/words.py): the node code
    names a setting once, as a token, and only this edge knows who reads the result."""
    exit_json, fail_json, warn = module.exit_json, module.fail_json, module.warn
    module.exit_json = lambda **result: exit_json(**words.say_all(result, reader))
    module.fail_json = lambda msg, **result: fail_json(msg=words.say(msg, reader), **words.say_all(result, reader))
    module.warn = lambda text: warn(words.say(text, reader))
    return module


def run(name, module):
    """Node module ``name``'s work; ends in module.exit_json or module.fail_json."""
    MODULES[name][1](_said_in(module, module.params.get("words") or words.MODULE))
