# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's setup rules, in plan order: attach (with the multi-attach check), the global device mount,
ReadWriteOncePod and pod mounts with fsGroup (inline ephemeral volumes: rules_inline.py). Kubernetes: reconciler.go
attachDesiredVolumes; reconciler_common.go mountOrAttachVolumes; operation_generator.go GenerateMountVolumeFunc.
Split from planner.py. Per volume, a mapping is asked only when it has entries (a key's hash reads its strings), and
the mounts write out plan_state._step and _Plan.item_of (a desired pair is its spec's unique name and its node)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.plan.actual_state import ATTACHED
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.plan_state import _step, _volume_item
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_identity import remap_reason
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_limits import MAX_VOLUME_COUNT_EXCEEDED
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import (
    ATTACH_WAIT, NODE_UNREACHABLE, unreachable_text)
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import CSI, get_plugin
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import STAGE_LOCKED, driver_capabilities


def _multi_attach_error(p, nv, holders, pod):
    """reconciler.go reportMultiAttachError, worded as Kubernetes words it, relative to `pod`'s namespace."""
    users = []
    for holder in sorted(holders):
        other = p.desired.volumes.get((nv.spec.unique_name, holder))
        if other is not None:
            users.extend(other.pods)
    prefix = 'Multi-Attach error for volume "%s" ' % nv.spec.pv_name
    if not users:
        return prefix + "Volume is already exclusively attached to one node and can't be attached to another"
    namespace = pod.split("/", 1)[0]
    same = sorted(u.split("/", 1)[1] for u in users if u.split("/", 1)[0] == namespace)
    others = len(users) - len(same)
    if not same:
        return prefix + "Volume is already used by %d pod(s) in different namespaces" % others
    msg = prefix + "Volume is already used by pod(s) %s" % ", ".join(same)
    return msg + (" and %d pod(s) in different namespaces" % others if others else "")


def attach(p):
    """Desired attachments not confirmed: reconciler.go attachDesiredVolumes with the multi-attach check."""
    attached = p.actual.attached
    reachable_facts, unreachable_errors = p.reachable_facts, p.unreachable_errors
    first_setup = {}  # unique name -> the one node that may set it up this run (None: any)
    setup_index = []  # (set up somewhere, wanted where), built on the first multi-attach volume
    # unique name -> the nodes whose own teardown detaches it in this plan, before any attach (a release recorded
    # without its node leaves the node's hold on the backing: it is not one of them)
    detached_from = {}
    for step in p.phases[("detach", "device")]:
        if not step.get("record_only"):
            detached_from.setdefault(step["unique_volume_name"], []).append(step["node"])
    attacher = {}  # plugin name -> whether it has an attacher (asked once per plugin, not per volume)
    for pair, nv in p.desired.volumes.items():
        av = attached.get(pair)
        if av is not None and av.detach_requested_at:
            # attachDesiredVolumes ResetDetachRequestTime: wanted again, the old request is stale
            p.detach_requests_to_clear.append({"name": av.va_name, "node": nv.node, "volume": nv.spec.pv_name})
        spec = nv.spec
        if spec.attachable and spec.plugin not in attacher:
            attacher[spec.plugin] = p.plugin(spec).ATTACHABLE
        if not spec.attachable or not attacher[spec.plugin]:
            continue  # attachRequired: false, or a plugin without an attacher (local, hostPath): no attach
        unique, node = pair
        facts = reachable_facts.get(node) if reachable_facts else None
        device_seen = facts is not None and unique in facts.devices
        if not nv.attach:
            if av is None and not device_seen:
                p.not_attached[pair] = ("volume %s waits for its attach on node %s, which is not managed by the "
                                        "attach/detach controller: annotate the Node "
                                        "volumes.kubernetes.io/controller-managed-attach-detach=true [%s]"
                                        % (nv.spec.pv_name, node, ATTACH_WAIT))
            continue
        error = unreachable_errors.get(node) if unreachable_errors else None
        if error is not None:
            p.not_attached[pair] = unreachable_text(node, error)
            p.block(node, nv.spec.pv_name, None, p.not_attached[pair])
            continue
        if av is not None and av.state == ATTACHED:
            if facts is None or device_seen:
                continue
            why = "node status reports it attached but node facts show no device: attaching again (uncertain)"
        elif av is not None and av.va_name is None:
            why = "node %s reports the device but the cluster has no record of it: attaching again (uncertain)" % node
        elif av is not None:
            why = "VolumeAttachment %s is not confirmed in node status: attaching again (uncertain)" % av.va_name
        else:
            why = "pod(s) %s on node %s use it" % (", ".join(nv.pods), node)
        if not nv.spec.multi_attach_allowed:
            holders = _holders(p, unique, node)
            if holders:
                _block_multi_attach(p, nv, holders)
                continue
        else:
            if unique not in first_setup:
                first_setup[unique] = _first_setup_node(p, nv, setup_index)
            first = first_setup[unique]
            if first is not None and first != node:
                # a multi-attach volume that no node has mounted may be blank: two nodes formatting it at once
                # would each make a filesystem
                p.not_attached[pair] = (
                    "volume %s waits for node %s to set it up first: the next run attaches and mounts it on node %s "
                    "[%s]" % (nv.spec.pv_name, first, node, ATTACH_WAIT))
                continue
        p.attached_to.setdefault(unique, set()).add(node)
        # No release of another node's hold in the backend goes with the attach: the out-of-service taint and a
        # detach recorded without the node release the records, not the node's device (a node that was only
        # unreachable still has it). The backend waits for that node's own detach, or the operator's
        # force_release_holders (drivers/loop.py attach).
        item = p.item_of(nv)
        first = sorted(n for n in detached_from.get(unique, ()) if n != node)
        if first:
            # the nodes whose detach the real run does first (an RWO pod move): a check run, which detaches
            # nothing, counts their holds released for this attach only (drivers/loop_holders.py)
            item["detached_first_from"] = first
        p.add(_step("attach", "device", node, nv.spec.pv_name, unique, why, item))


def _first_setup_node(p, nv, index):
    """The one node that may attach and mount a multi-attach volume in this run, or None when any may: when
    kubevol's own driver formats it (format only if blank) and no node has it mounted or in use, a filesystem may
    not exist yet, and nodes that probe at once could each find it blank and format it (on shared storage the
    second mkfs would destroy the first node's filesystem). So one node goes first: one that holds it already,
    else the first by name; the others follow on the next run, when its mount shows the filesystem exists.
    Kubernetes leaves this to the CSI driver's NodeStageVolume; kubevol's drivers are the ones that format. A
    driver that stages under a storage-side lock (STAGE_LOCKED: the loop driver) needs no such turn.
    ``index`` holds, once built (one pass per plan), the volumes set up somewhere and where each is wanted."""
    spec = nv.spec
    if spec.mode != "Filesystem" or p.plugin(spec).NAME != CSI:
        return None
    capabilities = driver_capabilities(spec.driver)
    if capabilities is None or STAGE_LOCKED in capabilities:
        return None  # an external driver formats in its own NodeStageVolume; a locked stage takes turns itself
    if not index:
        set_up = set(u for u, _node in p.actual.in_use)  # node status volumesInUse: mounted, so formatted
        for facts in p.reachable_facts.values():
            set_up.update(u for u, gm in facts.global_mounts.items() if gm and gm.get("mounted"))
        wanted = {}
        for (u, node), other in p.desired.volumes.items():
            if other.mount_pods and other.spec.multi_attach_allowed and node not in p.unreachable_errors:
                wanted.setdefault(u, []).append(node)
        index.extend((set_up, wanted))
    set_up, wanted = index
    unique = spec.unique_name
    nodes = wanted.get(unique, ())
    if unique in set_up or len(nodes) < 2:
        return None
    held = set(p.actual.confirmed_nodes.get(unique, ()))
    return sorted(nodes, key=lambda node: (node not in held, node))[0]


def _holders(p, unique, node):
    """Other nodes that hold the volume after this plan: confirmed, not detached here, or attached here, or
    with an attachment not confirmed yet that the node has not reported gone (unreachable, or its device seen).

    An attachment on a node the snapshot has no Node object for (deleted, or missing from a partial
    snapshot) counts too until it is released: the A/D controller's actual state keeps it after the
    Node is gone (actual_state_of_world.go), so the volume waits for its (forced) detach."""
    holders = set(n for n in p.actual.confirmed_nodes.get(unique, ()) if (unique, n) not in p.detached)
    holders |= p.attached_to.get(unique, set())
    holders |= set(n for n in p.nodeless_holders.get(unique, ()) if (unique, n) not in p.detached)
    holders |= set(n for n in p.unconfirmed_holders.get(unique, ()) if (unique, n) not in p.detached)
    holders.discard(node)
    return holders


def _block_multi_attach(p, nv, holders):
    unconfirmed = p.unconfirmed_holders.get(nv.spec.unique_name, ())
    down = []
    for h in sorted(holders):
        error = p.unreachable(h)
        if h in unconfirmed:
            down.append("node %s may hold it (an attachment not confirmed, %s)" % (
                h, "and the node is unreachable: %s" % error if error is not None else "and the node reports its device"))
        elif error is not None:
            down.append("%s unreachable: %s" % (h, error))
    for pod in nv.pods:
        reason = _multi_attach_error(p, nv, holders, pod)
        where = " (%s)" % "; ".join(down) if down else ""
        p.block(nv.node, nv.spec.pv_name, pod, "%s%s [KV-MULTI-ATTACH]" % (reason, where))
    p.not_attached[(nv.spec.unique_name, nv.node)] = "Multi-Attach error"


def mount_devices(p):
    """Global (staging) mounts for Filesystem volumes with pods to mount: MountVolume's MountDevice half."""
    reachable_facts, unreachable_errors, not_attached = p.reachable_facts, p.unreachable_errors, p.not_attached
    device_changed, items = p.device_changed, p.items
    device_mount = {}  # plugin name -> whether it plans a device mount (asked once per plugin, not per volume)
    add = p.phases[("mount", "device")].append
    for pair, nv in p.desired.volumes.items():
        mount_pods = nv.mount_pods
        if not mount_pods:
            continue
        unique, node = pair
        error = unreachable_errors.get(node) if unreachable_errors else None
        if error is not None:
            p.block(node, nv.spec.pv_name, None, unreachable_text(node, error))
            continue
        waiting = not_attached.get(pair) if not_attached else None
        if waiting is not None:
            # an unreachable node, a volume limit and a Multi-Attach error block their attach already
            if not waiting.startswith(MAX_VOLUME_COUNT_EXCEEDED) and NODE_UNREACHABLE not in waiting \
                    and waiting != "Multi-Attach error":
                p.block(node, nv.spec.pv_name, None, waiting)
            continue
        spec = nv.spec
        if spec.mode != "Filesystem" or (device_changed and pair in device_changed):
            continue  # Block volumes are mapped per pod; a stale global mount is blocked (rules_identity.py)
        if spec.plugin not in device_mount:
            device_mount[spec.plugin] = p.plugin(spec).plans_device_mount()
        if not device_mount[spec.plugin]:
            continue  # hostPath mounts nothing; a local PV's device mount (block-backed only) is its pod step's
        facts = reachable_facts.get(node) if reachable_facts else None
        current = facts.global_mounts.get(unique) if facts is not None else None
        why = "pod(s) %s on node %s mount it" % (
            mount_pods[0].name if len(mount_pods) == 1 else ", ".join([m.name for m in mount_pods]), node)
        if current and current.get("mounted"):
            writers = [m.name for m in mount_pods if not m.read_only]
            if not current.get("read_only") or nv.read_only or not writers:
                continue
            # NodeStage is read-write; readOnly is applied per pod at publish (csi_attacher.go MountDevice,
            # csi_mounter.go SetUpAt). A staging mount an older run left read-only is fixed for its writers.
            why = "remount read-write: the staging mount is read-only but pod(s) %s write to it" % ", ".join(writers)
        item = items.get(pair)
        if item is None:
            item = items[pair] = _volume_item(spec)
        add({"action": "mount", "target": "device", "node": node, "volume": spec.pv_name, "pod": None,
             "pod_uid": None, "reason": why, "unique_volume_name": unique, "item": item})


def read_write_once_pod(p):
    """A ReadWriteOncePod volume serves one pod: operation_generator.go GenerateMountVolumeFunc refuses a second
    pod with "volume uses the ReadWriteOncePod access mode and is already in use by another pod" (the
    scheduler's VolumeRestrictions plugin keeps such a pod Pending; e2e storage/testsuites/readwriteoncepod.go).
    Across nodes the volume is not multi-attachable, so attach already refuses a second node. On one node the
    pod that has it mounted keeps it, else the oldest pod (creationTimestamp, then name)."""
    for pair, nv in p.desired.volumes.items():
        if len(nv.mount_pods) < 2 or "ReadWriteOncePod" not in nv.spec.access_modes:  # most have one pod
            continue
        facts = p.facts(nv.node)

        def holds(pod, nv=nv, facts=facts):
            current = facts.pod_mounts.get((pod.uid, nv.spec.pv_name)) if facts is not None else None
            return current is not None and current.mounted

        ordered = sorted(nv.mount_pods, key=lambda m: (not holds(m), m.created or "", m.name))
        for pod in ordered[1:]:
            if holds(pod):
                continue  # mounted before: a running pod keeps what it has
            p.rwop_refused.add((pod.uid, pair))
            p.block(nv.node, nv.spec.pv_name, pod.name,
                    "volume uses the ReadWriteOncePod access mode and is already in use by another pod (%s): "
                    "delete one of the pods or give this one its own claim [KV-MULTI-ATTACH]" % ordered[0].name)


def fs_group_to_apply(p, spec, pod):
    """The fsGroup the kubelet applies after publishing, or None: csi_mounter.go supportsFSGroup. The CSIDriver's
    fsGroupPolicy None: never; File: always; ReadWriteOnceWithFSType (the default): only when the PV names an
    fsType and its access modes include ReadWriteOnce. Block volumes have no files to re-group."""
    if pod.fs_group is None or spec.mode != "Filesystem" or pod.read_only:
        return None
    applies = get_plugin(spec.plugin).FS_GROUP  # an in-tree plugin's own rule (local: yes; hostPath: never)
    if applies is not None:
        return pod.fs_group if applies else None
    policy = spec.fs_group_policy
    if policy == "File":
        return pod.fs_group
    if policy != "ReadWriteOnceWithFSType":
        return None
    pv = p.index.pv_by_name.get(spec.pv_name)
    if pv is None or pv.csi is None or not pv.csi.fs_type or "ReadWriteOnce" not in spec.access_modes:
        return None
    return pod.fs_group


def _root_needs_fs_group(current, fs_group):
    """The mounted root lacks the group, group rw or setgid (volume_linux.go requiresPermissionChange).
    Facts that do not report the root (an older node module) never trigger a step."""
    if current.root_gid is None or current.root_mode is None:
        return False
    mode = int(str(current.root_mode), 8)
    return current.root_gid != fs_group or mode & 0o2000 == 0 or mode & 0o070 != 0o070


def mount_pods(p):
    """Pod mounts (Filesystem) or maps (Block) not yet in place: MountVolume's SetUp half, with the pod's fsGroup
    applied after the mount (SetVolumeOwnership)."""
    reachable_facts, unreachable_errors, not_attached = p.reachable_facts, p.unreachable_errors, p.not_attached
    rwop_refused, device_changed, items = p.rwop_refused, p.device_changed, p.items
    add = p.phases[("mount", "pod")].append
    for pair, nv in p.desired.volumes.items():
        unique, node = pair
        if not nv.mount_pods or (unreachable_errors and node in unreachable_errors) or (
                not_attached and pair in not_attached) or (device_changed and pair in device_changed):
            continue
        facts = reachable_facts.get(node) if reachable_facts else None
        spec = nv.spec
        item = None
        for pod in nv.mount_pods:
            if rwop_refused and (pod.uid, pair) in rwop_refused:
                continue
            # fs_group_to_apply's first test, here: most pods have no fsGroup
            fs_group = fs_group_to_apply(p, spec, pod) if pod.fs_group is not None else None
            current = facts.pod_mounts.get((pod.uid, spec.pv_name)) if facts is not None else None
            if current is not None and current.published and not current.mounted:
                continue  # hostPath: its check passed for this pod (the marker exists); nothing is mounted
            if current is not None and current.mounted and not current.device_mismatch:
                if current.read_only != pod.read_only:
                    why = "remount: read-only changed"
                elif fs_group is not None and _root_needs_fs_group(current, fs_group):
                    why = "apply fsGroup %d of pod %s (volume root has group %s, mode %s)" % (
                        fs_group, pod.name, current.root_gid, current.root_mode)
                else:
                    continue
            elif current is not None and current.mounted:
                why = remap_reason(current, pod.name, node)  # a Block map on another device (rules_identity.py)
            else:
                why = "pod %s uses it" % pod.name
            if item is None:
                item = items.get(pair)
                if item is None:
                    item = items[pair] = _volume_item(spec)
            # the volume's one item; each pod step carries its pod's read-only flag and fsGroup
            step = {"action": "mount", "target": "pod", "node": node, "volume": spec.pv_name, "pod": pod.name,
                    "pod_uid": pod.uid, "reason": why, "unique_volume_name": unique, "item": item,
                    "pod_read_only": pod.read_only}
            if fs_group is not None:
                step["pod_fs_group"] = fs_group
                step["pod_fs_group_change_policy"] = pod.fs_group_change_policy or "Always"
            if pod.service_account and item.get("pod_info_on_mount"):
                step["pod_service_account"] = pod.service_account  # csi_mounter.go getPodInfoAttrs
            add(step)
