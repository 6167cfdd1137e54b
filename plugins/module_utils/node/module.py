# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The glue every node module shares: build the context, run a phase per volume, report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import node_context


def context_from(module, params=None):
    """The call's NodeContext: the node's settings taken whole from the module's parameters (node_context)."""
    return node_context(module.params if params is None else params, check_mode=module.check_mode)


def merge_diff(results):
    """One diff for the call from each volume's {before, after}; removes it from the volume results."""
    before, after = {}, {}
    for res in results:
        diff = res.pop("diff", None) or {}
        before.update(diff.get("before") or {})
        after.update(diff.get("after") or {})
    return {"before": before, "after": after}


def run_volumes(module, phase, prepare=None, finish=None, **extra_results):
    """Validate all volumes, run ``prepare(ctx, items)`` (checks of the call's own input that refuse it as a
    whole before anything runs), then ``phase(ctx, item)`` per volume under its lock, then ``finish(ctx)`` (a
    dict of extra results; its ``changed`` is or-ed into the call's); exit or fail.

    A volume that fails (refused at validation, a driver the node has no backend for, its phase raising) fails
    alone: the others run and are returned in ``volumes``; ``extra_results`` builders see only those done.
    """
    failed, out, warnings = volumes_result(module, module.params, module.params["volumes"], phase, prepare, finish,
                                           extra_results)
    for text in warnings:
        module.warn(text)
    if failed:
        module.fail_json(**out)
    module.exit_json(**out)


def pending_grows(results, node):
    """The call's ``pending`` list, beside ``failures``: one entry per volume whose grow is pending (node/expand.py
    pending), done for this call but not grown; None for a call whose results have no ``pending`` (not a node-side
    expansion). docs/contracts.md section 1."""
    grows = [r for r in results if r.get("stage") == "node" and "pending" in r]  # (a mount's check-mode
    if not grows:                                                                # ``pending`` is a text)
        return None
    return [dict(r["pending"], volume=r["pv_name"], unique_volume_name=r.get("unique_volume_name"), node=node)
            for r in grows if isinstance(r["pending"], dict)]


def _failed(err, ctx):
    result = err.to_result()
    if isinstance(result.get("volumes"), list):
        merge_diff(result["volumes"])
    result["msg"] = err.msg
    return True, result, list(ctx.warnings if ctx else ())


def volumes_result(module, params, volumes, phase, prepare=None, finish=None, extra_results=None):
    """One node phase over ``volumes`` as run_volumes runs it, returned instead of exiting:
    (failed, the module result, warnings). ``params`` give node_name, kubelet_dir, run_dir, lock_timeout."""
    ctx = None
    try:
        ctx = context_from(module, params)
        items = ctx.items(volumes)
        if prepare is not None:
            prepare(ctx, items)  # refuses the call as a whole: nothing has run yet
    except KubevolError as err:
        return _failed(err, ctx)
    error = None
    try:
        done = ctx.run_each(items, lambda item: phase(ctx, item))
    except KubevolError as err:
        error = err  # carries the volumes done (run_each): the finish still runs, and they are reported
        done = list(err.kwargs.get("volumes") or ())
    try:
        extra = dict(finish(ctx)) if finish is not None else {}
    except KubevolError as err:
        # the volumes done stay reported as done: a failure after them never takes them back
        extra = {}
        if error is None:
            err.kwargs.update(volumes=done, completed=[r["pv_name"] for r in done], failures=[],
                              changed=any(r.get("changed") for r in done), node=ctx.node_name)
            error = err
        else:
            error.add(suffix="; then: %s" % err.quoted_in(error))
    pending = pending_grows(done, ctx.node_name)
    if error is not None:
        error.kwargs.update((k, v) for k, v in extra.items() if k != "changed")
        if pending is not None:
            error.kwargs["pending"] = pending
        return _failed(error, ctx)
    diff = merge_diff(done)
    out = dict(changed=any(r["changed"] for r in done), volumes=done, node_name=ctx.node_name)
    if pending is not None:
        out["pending"] = pending
    for key, build in (extra_results or {}).items():
        out[key] = build(done)
    extra_changed = extra.pop("changed", False)
    out.update(extra)
    out["changed"] = out["changed"] or bool(extra_changed)
    if module._diff:
        out["diff"] = diff
    return False, out, list(ctx.warnings)
