# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each node module does once its arguments are parsed, in one place for its two callers.

A module file parses its arguments with AnsibleModule and calls ``run(name, module)``. The reconcile
role's engine (plugins/action/node_phases.py, plugin_utils/node_runner.py) parses the same arguments on
the controller with the same spec (``argspec(name)``) and calls ``run`` on the node through
``direct_main``, with a stand-in that has the five things the node code asks of AnsibleModule:
``params``, ``check_mode``, ``_diff``, ``warn`` and ``exit_json``/``fail_json``. The node code
then runs exactly as the module runs it, without Ansible's module wrapper on the node.

The imports are inside the functions: each module compiles only the node code it runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils import node_args


def _volume_info(module):
    from ansible_collections.kubevol.volumes.plugins.module_utils.errors import KubevolError
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.facts import node_facts
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import process_runner

    try:
        ctx = NodeContext(process_runner(), node_name=module.params["node_name"],
                          kubelet_dir=module.params["kubelet_dir"])
        facts = node_facts(ctx, fs_sizes=module.params["fs_sizes"])
    except KubevolError as err:
        module.fail_json(msg=err.msg, **err.to_result())
    module.exit_json(changed=False, node_facts=facts)


def _volume_attach(module):
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import run_volumes
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.operations import attach_volume

    provision = module.params["provision"]
    run_volumes(module, lambda ctx, item: attach_volume(ctx, item, provision=provision),
                volume_attachments=lambda results: [r["volume_attachment"] for r in results],
                volumes_attached=lambda results: [r["volumes_attached"] for r in results])


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
}


def argspec(name):
    """The argument spec of node module ``name`` (its short name, ``volume_detach``)."""
    return MODULES[name][0]()


def run(name, module):
    """Node module ``name``'s work; ends in module.exit_json or module.fail_json."""
    MODULES[name][1](module)


class _Exit(BaseException):
    """exit_json or fail_json was called: the result is on the stand-in. A BaseException, as AnsibleModule's
    SystemExit is: a handler of Exception in the node code does not swallow the end of the run."""


class DirectModule(object):
    """What the node code asks of AnsibleModule, for arguments the controller has already parsed."""

    def __init__(self, params, check_mode=False, diff=False):
        self.params = params
        self.check_mode = check_mode
        self._diff = diff
        self.warnings = []
        self.result = None

    def warn(self, warning):
        self.warnings.append(warning)

    def exit_json(self, **result):
        self.result = result
        raise _Exit()

    def fail_json(self, msg, **result):
        result.update(failed=True, msg=msg)
        self.exit_json(**result)


def _log_invocation(name, params):
    """The "Invoked with" line AnsibleModule writes to the node's syslog for each module run: the audit trail of
    what ran there stays the same whichever way the module's work ran."""
    try:
        import syslog

        syslog.openlog("ansible-%s" % name, 0, syslog.LOG_USER)
        syslog.syslog(syslog.LOG_INFO, "Invoked with %s" % " ".join("%s=%s" % (k, params[k]) for k in sorted(params)))
    except Exception:  # pylint: disable=broad-except
        pass  # as AnsibleModule: a node without syslog runs the module all the same


def direct_main(request):
    """Run ``request`` ({module, params, check_mode, diff}) as the node module would: its result dict."""
    module = DirectModule(request["params"], bool(request.get("check_mode")), bool(request.get("diff")))
    _log_invocation(request["module"], module.params)
    try:
        run(request["module"], module)
    except _Exit:
        pass
    result = module.result
    if result is None:
        result = {"failed": True, "msg": "node module %s ended without a result" % request["module"]}
    if module.warnings:
        result["warnings"] = list(result.get("warnings") or ()) + module.warnings
    return result
