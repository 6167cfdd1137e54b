# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's expansion rules: the controller grows the backing volume and the PV (external-resizer), then the
node grows the filesystem (desired_state_of_world_populator.go checkVolumeFSResize, node_expander.go), each only
where the volume's plugin (and CSI driver) can. Split from planner.py.

A node-side grow that failed or could not run (its claim carries kubevol.io/node-expansion-pending: records/claim.py)
is not planned again on every run: only when what made it fail may have changed, or after its backoff (grow_waits);
otherwise it is listed as pending. A grow that works only offline gets its window when the pods using the volume
restart or move (offline_grow_window). docs/planner.md, rule 9.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.plan.plan_state import _item, _item_from_actual, _step
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import EXPANSION, unreachable_text
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import GrowPending
from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import format_bytes
from ansible_collections.kubevol.volumes.plugins.module_utils.records.claim import parse_time, pending_memo
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import CSI
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import (
    CONTROLLER_EXPAND, NODE_EXPAND, driver_capabilities)


def _first_node(p, nvs):
    reachable = [nv.node for nv in nvs if p.unreachable(nv.node) is None]
    return min(reachable) if reachable else None


INFEASIBLE_RESIZE = ("ControllerResizeInfeasible", "NodeResizeInfeasible")
NODE_RESIZE_STATES = ("NodeResizePending", "NodeResizeInProgress")


def expansion_refused(spec):
    """RecoverVolumeExpansionFailure (GA in 1.34; external-resizer, node_expander.go): an expansion marked infeasible
    is not retried until the user lowers the request below the size that failed (allocatedResources). The reason
    to block it, or None."""
    if spec.resize_status not in INFEASIBLE_RESIZE or spec.allocated_bytes is None:
        return None
    if spec.request_bytes < spec.allocated_bytes:
        return None  # lowered: a new attempt at the smaller size
    floor = " (not below its capacity %s)" % format_bytes(spec.claim_capacity_bytes) if spec.claim_capacity_bytes else ""
    return ("the expansion of claim %s to %s was marked %s and is not retried at that size: lower its "
            "spec.resources.requests.storage below %s%s [%s]" % (
                spec.claim_key, format_bytes(spec.allocated_bytes), spec.resize_status,
                format_bytes(spec.allocated_bytes), floor, EXPANSION))


def not_expandable(p, spec):
    """Why a volume cannot be expanded at all, or None: expand_controller.go syncHandler finds no
    ExpandableVolumePlugin (and no CSI driver) for it. A CSI driver of kubevol that declares no expansion counts as
    such a plugin."""
    plugin = p.plugin(spec)
    capabilities = driver_capabilities(spec.driver) if plugin.NAME == CSI else None
    if capabilities is not None:
        can = CONTROLLER_EXPAND in capabilities
    else:
        can = plugin.CONTROLLER_EXPANDABLE or plugin.NODE_EXPANDABLE
    if can:
        return None
    # Kubernetes' expand controller's words: "didn't find a plugin capable of expanding the volume"
    return ("claim %s: didn't find a plugin capable of expanding the volume (the %s %s cannot grow): set its "
            "spec.resources.requests.storage back to %s, or move the data to a larger volume [%s]"
            % (spec.claim_key, "CSI driver" if plugin.NAME == CSI else "volume plugin",
               spec.driver if plugin.NAME == CSI else plugin.NAME, format_bytes(spec.capacity_bytes), EXPANSION))


def node_expands(p, spec):
    """Whether the node grows this volume after the controller (NodeExpandableVolumePlugin, a CSI driver's
    node expansion)."""
    plugin = p.plugin(spec)
    capabilities = driver_capabilities(spec.driver) if plugin.NAME == CSI else None
    if capabilities is not None:
        return NODE_EXPAND in capabilities
    return plugin.NODE_EXPANDABLE


def expand_controller(p):
    """PVC requests more than the PV has: the external-resizer grows the backing volume, then the PV.
    An expansion marked infeasible waits for a lower request (expansion_refused)."""
    by_pv = {}
    for nv in p.desired.volumes.values():
        spec = nv.spec
        if spec.request_bytes > spec.capacity_bytes:
            by_pv.setdefault(spec.pv_name, []).append(nv)
    for pv_name, nvs in by_pv.items():
        spec = nvs[0].spec
        refused = expansion_refused(spec) or not_expandable(p, spec)
        if refused is not None:
            for nv in nvs:
                p.block(nv.node, pv_name, None, refused)
            continue
        node = _first_node(p, nvs)
        if node is None:
            p.block(nvs[0].node, pv_name, None, unreachable_text(nvs[0].node, p.unreachable(nvs[0].node)))
            continue
        p.grown_to[pv_name] = spec.request_bytes
        what, extra = "grow the backing volume", {}
        if not p.plugin(spec).CONTROLLER_EXPANDABLE:
            # a local volume: no backing volume for a controller to grow; the PV records the size and the node
            # grows a block-backed filesystem (local.go NodeExpand)
            what, extra = "nothing to grow on the controller (%s); record the PV's capacity" % spec.plugin, {
                "record_only": True}
        p.add(_step("expand", "controller", node, pv_name, spec.unique_name,
                    "PVC %s requests %s, PV has %s: %s" % (
                        spec.claim_key, format_bytes(spec.request_bytes), format_bytes(spec.capacity_bytes), what),
                    _item(spec), size_from=spec.capacity_bytes, size_to=spec.request_bytes, pvc=spec.claim_key,
                    **extra))


def _node_grow_target(p, nv):
    """The size the node grows ``nv``'s filesystem (or Block device) to in this plan, or None: a pair with pods to
    mount read-write whose PV (or the size the controller grows it to) is above the claim's capacity, whose plugin
    grows on the node, and whose recorded expansion state lets the node act. Blocks what may never be grown."""
    spec = nv.spec
    if not nv.mount_pods or nv.claims_read_only or spec.claim_capacity_bytes is None:
        return None
    target = p.grown_to.get(spec.pv_name, spec.capacity_bytes)
    if target <= spec.claim_capacity_bytes:
        return None
    refused = expansion_refused(spec) or not_expandable(p, spec)
    if refused is not None:
        p.block(nv.node, spec.pv_name, None, refused)
        return None
    if not node_expands(p, spec):
        return None  # the driver has no node expansion: the resize is finished once the controller's is
    if ((spec.allocated_bytes is not None or spec.resize_status) and spec.pv_name not in p.grown_to
            and spec.resize_status not in NODE_RESIZE_STATES):
        return None  # node_expander.go: neither pending nor in progress on the node: nothing for the kubelet
    return target


def _pending_claims(p):
    """The claims whose node-side grow is pending somewhere (their annotation): one pass over the claims, so that
    a cluster with none (the usual case) costs the rules below nothing per volume."""
    return frozenset(key for key, pvc in p.index.pvc_by_key.items() if getattr(pvc, "expansion_pending", None))


def _memo(p, nv):
    """What the last pending grow of ``nv``'s claim on its node recorded (records/claim.py), or None."""
    pvc = p.index.pvc_by_key.get(nv.spec.claim_key) if nv.spec.claim_key else None
    return pending_memo(getattr(pvc, "expansion_pending", None), nv.node) if pvc is not None else None


def _same_conditions(memo, nv, target):
    """True when the node's pending grow failed at this size, with these pods: nothing the plan can see has changed
    since (a pod that moved here finds no entry of this node)."""
    return memo.get("size") == target and sorted(memo.get("pods") or ()) == sorted(pod.uid for pod in nv.mount_pods)


def grow_pending_text(step, detail, offline, retry_after=None):
    """One sentence for a pending grow (the plan's, and the run's report: run/outcome.py): what waits, where, why, and
    what to do: for a grow that works only offline Kubernetes' own remedy, restart (or move) the pods that use it."""
    pods = list(step.get("pods") or ())
    if offline and pods:
        todo = "restart %s (or move %s to another node): it grows offline at its next mount" % (
            ("pod " if len(pods) == 1 else "pods ") + ", ".join(pods), "it" if len(pods) == 1 else "them")
    elif offline:
        todo = "it grows offline at its next mount"
    elif retry_after:
        todo = "it is tried again from %s, or at once when its pods restart or move" % retry_after
    else:
        todo = "it is tried again after a backoff, or at once when its pods restart or move"
    return "grow of volume %s%s to %s on node %s is pending: %s; %s [%s]" % (
        step.get("volume"), " (claim %s)" % step["pvc"] if step.get("pvc") else "", format_bytes(step["size_to"]),
        step.get("node"), detail or "the node did not say why", todo, GrowPending.code)


def grow_waits(p, nv, target, memo, remounted):
    """True when the node's grow of ``nv`` is not tried in this plan: it is pending and nothing that made it fail
    may have changed. It is tried again on another node, at another size or with another set of pods (restarted:
    new uids; moved; added or gone), or when this plan mounts the volume anew (``remounted``: a new mount sees the
    grown device, and the stage grows an ext filesystem offline); a grow that failed for a cause the plan cannot see
    (a tool installed since, a driver's answer) also once the backoff the claim records is over. A grow that can
    work only offline waits for its pods, as the kubelet's in-use expansion error does (node_expander.go,
    FailedPrecondition): trying it mounted again would fail again."""
    if memo is None or not _same_conditions(memo, nv, target) or (nv.spec.unique_name, nv.node) in remounted:
        return False
    if memo.get("offline"):
        return True
    retry = parse_time(memo.get("retryAfter"))
    return retry is not None and p.now < retry


def expand_node(p):
    """PV capacity above PVC status capacity on a volume pods use read-write:
    desired_state_of_world_populator.go checkVolumeFSResize. A Filesystem volume's filesystem grows; a Block
    volume's device is rescanned (NodeExpandVolume runs for Block volumes too). With the PVC's expansion state
    recorded (RecoverVolumeExpansionFailure) the node acts only on NodeResizePending / NodeResizeInProgress
    (node_expander.go runPreCheck); otherwise the expansion counts as finished. A grow the claim says is pending is
    planned again only when grow_waits says so; otherwise it is one of the plan's ``pending`` entries.
    Each step names the pods that use the volume there (``pods``, ``pod_uids``: what a pending grow's record keeps)
    and which attempt it is under the same conditions (``attempt``: the backoff's)."""
    pending_claims = _pending_claims(p)
    remounted = frozenset((s["unique_volume_name"], s["node"]) for kind in (("mount", "device"), ("mount", "pod"))
                          for s in p.phases[kind]) if pending_claims else frozenset()
    not_attached, device_changed, grown_to = p.not_attached, p.device_changed, p.grown_to
    for pair, nv in p.desired.volumes.items():
        if (not_attached and pair in not_attached) or (device_changed and pair in device_changed):
            continue  # device_changed: its global mount is another device's (rules_identity): nothing to grow there
        spec = nv.spec
        # _node_grow_target's first tests, here: most volumes are no larger than their claim says (a mapping is
        # asked only when it has entries: a key's hash reads its strings)
        if not nv.mount_pods or nv.claims_read_only or spec.claim_capacity_bytes is None or \
                (grown_to.get(spec.pv_name, spec.capacity_bytes) if grown_to else spec.capacity_bytes) \
                <= spec.claim_capacity_bytes:
            continue
        target = _node_grow_target(p, nv)
        if target is None:
            continue
        error = p.unreachable(nv.node)
        if error is not None:
            p.block(nv.node, spec.pv_name, None, unreachable_text(nv.node, error))
            continue
        what = "grow the filesystem" if spec.mode == "Filesystem" else "rescan the block device"
        memo = _memo(p, nv) if spec.claim_key in pending_claims else None
        step = _step("expand", "node", nv.node, spec.pv_name, spec.unique_name,
                     "PV capacity %s is above the claim's %s: %s" % (
                         format_bytes(target), format_bytes(spec.claim_capacity_bytes), what), _item(spec),
                     size_from=spec.claim_capacity_bytes, size_to=target, pvc=spec.claim_key,
                     pods=sorted(pod.name for pod in nv.mount_pods),
                     pod_uids=sorted(pod.uid for pod in nv.mount_pods),
                     attempt=(memo.get("attempt") or 0) + 1 if memo and _same_conditions(memo, nv, target) else 1)
        if grow_waits(p, nv, target, memo, remounted):
            p.pending.append({"node": nv.node, "volume": spec.pv_name, "pod": None, "action": "expand",
                              "pvc": spec.claim_key, "reason": grow_pending_text(
                                  step, memo.get("detail"), memo.get("offline"), memo.get("retryAfter"))})
            continue
        p.add(step)


def offline_grow_window(p):
    """A grow that works only offline (an ext filesystem the node could not grow mounted: its claim's pending grow
    says ``offline``) gets its window when no pod mount of the volume is left on the node after this plan's pod
    unmounts (its pods restarted, with new uids, or moved): the global mount is unmounted too and staged again, and
    the stage grows the filesystem before it mounts it (stage.grow_offline, operation_generator.go
    expandVolumeDuringMount), as the kubelet's teardown and setup of a restarted pod do. Runs after unmount_pods
    (``still_mounted`` then holds the pod mounts that stay), before unmount_devices."""
    pending_claims = _pending_claims(p)
    if not pending_claims:
        return
    mount_device = p.phases[("mount", "device")].append
    for pair, nv in p.desired.volumes.items():
        if nv.spec.claim_key not in pending_claims:
            continue
        unique, node = pair
        facts = p.facts(node)
        if facts is None or node in p.no_picture or pair in p.still_mounted or nv.spec.mode != "Filesystem":
            continue
        current = facts.global_mounts.get(unique)
        if not current or not current.get("mounted"):
            continue
        memo = _memo(p, nv)
        if not memo or not memo.get("offline") or _node_grow_target(p, nv) is None:
            continue
        why = ("grow the filesystem offline: no pod of node %s has it mounted any more (its pods restarted or "
               "moved), so it is staged again and grown before it is mounted" % node)
        p.add(_step("unmount", "device", node, nv.spec.pv_name, unique, why,
                    _item_from_actual(unique, nv.spec.pv_name, nv.spec, fs_type=current.get("fs_type"), detach=False)))
        if p.plugin(nv.spec).plans_device_mount():
            mount_device(_step("mount", "device", node, nv.spec.pv_name, unique, why, p.item_of(nv)))
