# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The glue every node module shares: build the context, run a phase per volume, report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import module_runner


def context_from(module):
    params = module.params
    return NodeContext(module_runner(module), node_name=params.get("node_name"),
                       kubelet_dir=params.get("kubelet_dir"), run_dir=params.get("run_dir") or "/run/kubevol",
                       lock_timeout=params.get("lock_timeout") or 0, check_mode=module.check_mode)


def merge_diff(results):
    """One diff for the call from each volume's {before, after}; removes it from the volume results."""
    before, after = {}, {}
    for res in results:
        diff = res.pop("diff", None) or {}
        before.update(diff.get("before") or {})
        after.update(diff.get("after") or {})
    return {"before": before, "after": after}


def run_volumes(module, phase, prepare=None, **extra_results):
    """Validate all volumes, run ``prepare(ctx, items)`` (decisions that may refuse the whole call),
    then ``phase(ctx, item)`` per volume under its lock; exit or fail."""
    ctx = None
    try:
        ctx = context_from(module)
        items = ctx.items(module.params["volumes"])
        if prepare is not None:
            prepare(ctx, items)
        results = ctx.run_each(items, lambda item: phase(ctx, item))
    except KubevolError as err:
        for text in (ctx.warnings if ctx else ()):
            module.warn(text)
        result = err.to_result()
        if isinstance(result.get("volumes"), list):
            merge_diff(result["volumes"])
        module.fail_json(msg=err.msg, **result)
    for text in ctx.warnings:
        module.warn(text)
    diff = merge_diff(results)
    out = dict(changed=any(r["changed"] for r in results), volumes=results, node_name=ctx.node_name)
    for key, build in extra_results.items():
        out[key] = build(results)
    if module._diff:
        out["diff"] = diff
    module.exit_json(**out)
