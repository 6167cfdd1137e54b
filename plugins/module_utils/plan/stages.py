# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stages of a reconcile: the plan of one side of Kubernetes' split, for runs that can be sliced (docs/fleet.md).

Kubernetes splits volume work between two reconcilers that meet only through API objects:

- the kubelet (pkg/kubelet/volumemanager/reconciler/reconciler_common.go), one per node, which unmounts what no
  pod on its node uses (unmountVolumes, unmountDetachDevices), mounts what is attached to it for its pods
  (mountOrAttachVolumes, waitForVolumeAttach: a volume that is not attached yet waits), grows filesystems
  (operation_generator.go GenerateExpandInUseVolumeFunc) and reports its mounted volumes in
  node.status.volumesInUse (kubelet_node_status.go); it never attaches or detaches a volume the A/D controller
  manages;
- the attach/detach controller (pkg/controller/volume/attachdetach/reconciler/reconciler.go reconcile), one for
  the cluster, which detaches what no pod on a node needs once that node no longer reports it in volumesInUse
  (the mounted guard), attaches what pods need (with the multi-attach check) and records VolumeAttachments;
  the external-resizer grows the backing volume.

``stage`` (PlanOptions.stage, role variable kubevol_stage) selects a side:

- ``all`` (the default): both, as one controller runs them today. Nothing here runs.
- ``node``: the kubelet's share. It may run on any subset of nodes (``--limit``: one slice), at once with other
  slices and with the attach/detach stage. Only the nodes of this run (those with node facts) get steps; a mount
  whose attach this plan would make waits ("waiting for the attach/detach stage"), as a node-side expansion whose
  controller expansion this plan would make. No VolumeAttachment is written: the detach request times and their
  clearing are the controller's.
- ``attach_detach``: the controller's share, one holder of the run lock at a time. A detach waits while its node
  has it in use: the plan unmounts it on that node (the node stage's work), or node.status.volumesInUse lists it
  (the node has not reported it unmounted), unless it is forced or released in the records only. Every attach of
  an exclusive volume still held by such a node waits too (the multi-attach check runs after this). The node's
  volumesInUse is the kubelet's record: this stage does not repair it.

Steps of the other stage are left out silently (they are that stage's work); steps that depend on one of them get
a blocked entry naming the stage they wait for, never a failure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import STAGE_WAIT, UNMOUNT_WAIT

ALL = "all"
NODE = "node"
ATTACH_DETACH = "attach_detach"
STAGES = (ALL, NODE, ATTACH_DETACH)

# the step kinds each stage carries out
NODE_KINDS = frozenset([("cleanup", "directory"), ("unmount", "pod"), ("unmount", "device"), ("mount", "device"),
                        ("mount", "pod"), ("expand", "node")])
ATTACH_DETACH_KINDS = frozenset([("detach", "device"), ("attach", "device"), ("expand", "controller")])
KINDS = {NODE: NODE_KINDS, ATTACH_DETACH: ATTACH_DETACH_KINDS}

WAIT_ATTACH = ("waiting for the attach/detach stage: volume %s is not attached to node %s yet (%s): run that stage, "
               "then the node stage again [" + STAGE_WAIT + "]")
WAIT_RESIZE = ("waiting for the attach/detach stage: the backing volume of %s is grown first (to %s bytes): run that "
               "stage, then the node stage again [" + STAGE_WAIT + "]")
WAIT_UNMOUNT = ("waiting for node %s to unmount it: %s; run the node stage, then the attach/detach stage again ["
                + UNMOUNT_WAIT + "]")


def check_stage(stage):
    """``stage`` when it is one of STAGES, else ValueError naming the choices."""
    if stage not in STAGES:
        raise ValueError("stage %r is not one of %s" % (stage, ", ".join(STAGES)))
    return stage


def hold_detaches(p):
    """The attach/detach stage's mounted guard, applied right after the detach rule and before the attach rule:
    reconciler.go reconcile detaches only a volume the node no longer reports in use (attachedVolume.MountedByNode
    from node.status.volumesInUse); a whole reconcile unmounts and detaches in one run, but in this stage the
    unmount is the node stage's. A held detach is dropped and blocked, and its pair no longer counts as detached,
    so the attach rule sees the node as a holder (Multi-Attach error) for an exclusive volume. Forced and
    record-only detaches go on: the node is out of service, gone, or unhealthy past max_wait_for_unmount."""
    if p.options.stage != ATTACH_DETACH:
        return
    unmounting = set((s["unique_volume_name"], s["node"]) for kind in (("unmount", "pod"), ("unmount", "device"))
                     for s in p.phases[kind])
    kept = []
    for step in p.phases[("detach", "device")]:
        pair = (step["unique_volume_name"], step["node"])
        why = None
        if step.get("forced") or step.get("record_only"):
            pass
        elif pair in unmounting:
            why = "its node stage has not unmounted it yet (the plan unmounts it there)"
        elif pair in p.actual.in_use:
            why = "node.status.volumesInUse of node %s still lists it" % step["node"]
        if why is None:
            kept.append(step)
            continue
        p.detached.discard(pair)
        _block(p, step, None, WAIT_UNMOUNT % (step["node"], why))
    p.phases[("detach", "device")] = kept


def keep_stage(p, nodes=None):
    """The steps of ``p.options.stage`` only, after every rule (and refuse_unsafe_steps) ran; what depends on a
    step of the other stage is blocked instead. ``nodes``: the node stage's nodes (those with node facts in this
    run: its slice); None keeps every node."""
    stage = p.options.stage
    if stage == ALL:
        return
    own = KINDS[stage]
    if stage == NODE:
        _node_stage(p, nodes)
    for kind in list(p.phases):
        if kind not in own:
            p.phases[kind] = []


def _node_stage(p, nodes):
    """waitForVolumeAttach (reconciler_common.go): the kubelet mounts only what is attached; a mount whose attach
    is in this plan waits for the attach/detach stage, as a node expansion whose controller expansion is."""
    attaching = dict(((s["unique_volume_name"], s["node"]), s["reason"]) for s in p.phases[("attach", "device")])
    growing = dict((s["unique_volume_name"], s.get("size_to")) for s in p.phases[("expand", "controller")])
    for kind in (("mount", "device"), ("mount", "pod"), ("expand", "node")):
        kept = []
        for step in p.phases[kind]:
            pair = (step["unique_volume_name"], step["node"])
            if nodes is not None and step["node"] not in nodes:
                continue  # another slice's node
            if pair in attaching:
                _block(p, step, step.get("pod"), WAIT_ATTACH % (step["volume"], step["node"], attaching[pair]))
            elif kind == ("expand", "node") and pair[0] in growing:
                _block(p, step, None, WAIT_RESIZE % (step["volume"], growing[pair[0]]))
            else:
                kept.append(step)
        p.phases[kind] = kept
    if nodes is not None:
        for kind in NODE_KINDS:
            p.phases[kind] = [s for s in p.phases[kind] if s["node"] in nodes]
        p.blocked = [b for b in p.blocked if b.get("node") is None or b["node"] in nodes]


def _block(p, step, pod, reason):
    """A blocked entry for the step held back, naming its action (the plan table's first column)."""
    p.blocked.append({"node": step["node"], "volume": step["volume"], "pod": pod, "reason": reason,
                      "action": step["action"]})


def stage_records(p, result):
    """The plan result's records of the other stage left out: the detach request times (annotations on
    VolumeAttachments) are the attach/detach controller's; the volumesInUse repairs the kubelet's."""
    stage = p.options.stage
    if stage == NODE:
        result["detach_requests"] = []
        result["detach_requests_to_clear"] = []
    elif stage == ATTACH_DETACH:
        result["in_use_repairs"] = []
        result["registrations"] = []  # the kubelet's CSI registration (plan/registration.py)
    if stage != ALL:
        result["stage"] = stage
    return result
