# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Attach, mount and expand one node's volumes in one module execution (node_volume_setup).

Each phase runs exactly as its public module runs it (node/module.py volumes_result) and its result has
that module's shape; a volume that failed in a phase is left out of the later ones, as the controller's
executor.advance leaves it out when the phases run as separate module calls.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import phases
from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import volumes_result
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import unique_name_of
from ansible_collections.kubevol.volumes.plugins.module_utils.node.operations import (
    attach_volume, expand_controller, expand_node, mount_volume)


def _attach(opts):
    return lambda ctx, item: attach_volume(ctx, item, provision=opts.get("provision"))


def _mount(opts):
    return lambda ctx, item: mount_volume(ctx, item, force=opts.get("force"), device_timeout=opts.get("device_timeout"))


# setup phase (common/phases.py SETUP_PHASES) -> (its per-volume function given the phase's options, extra results)
OPERATIONS = {
    # local and hostPath items are not attachable: no VolumeAttachment, no volumesAttached entry
    "attach": (_attach, {"volume_attachments": lambda done: [r["volume_attachment"] for r in done
                                                             if r["volume_attachment"]],
                         "volumes_attached": lambda done: [r["volumes_attached"] for r in done
                                                           if r["volumes_attached"]]}),
    "mount": (_mount, {}),
    "expand_controller": (lambda opts: expand_controller, {}),
    "expand_node": (lambda opts: expand_node, {}),
}


def _key(raw):
    return unique_name_of(raw)


def _failed_keys(result, volumes):
    """The volumes of a failed phase that it did not complete (run_each reports only the completed in `volumes`)."""
    completed = set(v.get("unique_volume_name") for v in result.get("volumes") or ())
    return set(_key(raw) for raw in volumes) - completed


def run_setup(module):
    """{changed, phase_results, warnings}: the phases with volumes, in the phase table's order (phases.run_in_order,
    the loop node_phases runs on the controller too)."""
    params = module.params
    failed = set()
    warnings = []

    def work(phase):
        return [raw for raw in (params.get(phase) or {}).get("volumes") or () if _key(raw) not in failed]

    def run(phase, volumes):
        build, extra = OPERATIONS[phase]
        phase_failed, result, phase_warnings = volumes_result(module, params, volumes, build(params.get(phase) or {}),
                                                              extra_results=extra)
        warnings.extend(phase_warnings)
        if phase_failed:
            result["failed"] = True
            failed.update(_failed_keys(result, volumes))
        return result

    phase_results = phases.run_in_order(phases.SETUP_PHASES, work, run)
    return {"changed": any(r.get("changed") for r in phase_results.values()), "phase_results": phase_results,
            "warnings_text": warnings}
