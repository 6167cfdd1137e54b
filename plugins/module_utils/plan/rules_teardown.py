# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's teardown rules, in plan order: unidentified mounts, pod mounts, global mounts, detach, and the
inline ephemeral volumes of gone pods. The kubelet tears down before it sets up (reconciler_common.go
unmountVolumes, unmountDetachDevices); the A/D controller detaches before it attaches (reconciler.go reconcile).
Split from planner.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kubevol.volumes.plugins.module_utils.plan.actual_state import UNCERTAIN
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import NODE_UNKNOWN, UNIDENTIFIED, coded
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import PodToMount
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.detach import (
    detach_clock, ghost_reason, gone_note, gone_volume_name, safe_name, still_mounted_reason, unreachable_reason)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.plan_state import _has_out_of_service_taint, _item_from_actual, _step
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import inline_volume_name, split_unique_volume_name
from ansible_collections.kubevol.volumes.plugins.module_utils.common.handles import show_handle, show_volume_name

# The directories volume_detach's stale_paths removes: what the kubelet's CSI plugin creates.
STALE_PATH = re.compile(r"/plugins/kubernetes\.io/csi/[^/]+/[0-9a-f]{64}/globalmount$|"
                        r"/pods/[^/]+/volumes/kubernetes\.io~csi/[^/]+/mount$")


def uncertain_mounts(p):
    """Mount directories that cannot be identified: reconstruct_common.go queues a volume whose reconstruction
    failed for cleanup while the rest goes on. Cleaned when nothing is mounted there, blocked when it is."""
    for node, facts in p.teardown_facts():
        for entry in facts.uncertain:
            if entry.mounted:
                # whatever kubevol device backs it stays attached: something may use it
                for unique, dev in facts.devices.items():
                    if entry.device and dev.get("device") == entry.device:
                        p.still_mounted.add((unique, node))
                        p.kept.setdefault((unique, node), "an unidentified mount uses its device")
            if entry.unsafe:
                # a symlink or a file planted inside the kubelet directory: nothing is done through it
                p.block(node, entry.pv_name, p.desired.pod_by_uid.get(entry.pod_uid), coded(entry.reason, UNIDENTIFIED))
                continue
            if entry.mounted:
                p.block(node, entry.pv_name, p.desired.pod_by_uid.get(entry.pod_uid),
                        "cannot identify the volume mounted at %s on node %s (%s): restore its vol_data.json or "
                        "unmount it by hand [%s]" % (entry.path, node, entry.reason, UNIDENTIFIED))
                continue
            if entry.kind == "pod" and (entry.pod_uid, node) in p.desired.live_pods:
                continue  # a running pod's directory: the mount rules decide
            if not STALE_PATH.search(entry.path or ""):
                p.block(node, entry.pv_name, p.desired.pod_by_uid.get(entry.pod_uid),
                        "stale directory %s on node %s cannot be identified (%s): remove it by hand [%s]"
                        % (entry.path, node, entry.reason, UNIDENTIFIED))
                continue
            p.add(_step("cleanup", "directory", node, entry.pv_name or _dir_label(entry.path), None,
                        "stale %s directory %s: %s; nothing is mounted there" % (
                            "pod volume" if entry.kind == "pod" else "global mount", entry.path, entry.reason),
                        None, pod=p.desired.pod_by_uid.get(entry.pod_uid), pod_uid=entry.pod_uid, path=entry.path))


def _dir_label(path):
    return (path or "").rstrip("/").rsplit("/", 2)[-2] if path else None


def unmount_pods(p):
    """Pod mounts (mounted or orphaned dirs) that no desired pod on that node has: reconciler_common.go
    unmountVolumes and reconstruct.go cleanOrphanVolumes. A pod that is scheduled there and not terminated
    keeps what it has mounted whatever is wrong with its claim (the populator removes a pod's volumes only
    once the pod is deleted or terminated: desired_state_of_world_populator.go findAndRemoveDeletedPods)."""
    pictured = list(p.teardown_facts())
    if not pictured:
        return  # no node facts (a plan from the cluster alone): no pod mount is known to tear down
    protected = p.desired.protected_pod_uids
    live = p.desired.live_pods
    # the wanted pod mounts of the pictured nodes only: a plan of the whole cluster run on a few nodes asks about those
    nodes = frozenset(node for node, _facts in pictured)
    wanted = set()
    for (unique, node), nv in p.desired.volumes.items():
        if node in nodes:
            for pod in nv.mount_pods:
                wanted.add((node, pod.uid, nv.spec.pv_name))
    named = {}  # (unique, node) -> the PV name of this plan's one item of that volume on that node
    for node, facts in pictured:
        for (uid, pv_name), pm in sorted(facts.pod_mounts.items()):
            unique = pm.unique_name
            pair = (unique, node)
            if (node, uid, pv_name) in wanted or uid in protected or unique in p.protected_volumes:
                if pm.mounted:
                    p.still_mounted.add(pair)
                continue
            name = p.desired.pod_by_uid.get(uid)
            if (uid, node) in live:
                if pm.mounted:
                    p.still_mounted.add(pair)
                    p.kept.setdefault(pair, "pod %s still runs on node %s with it mounted" % (name, node))
                continue
            spec = p.spec_for(unique)
            item_name = spec.pv_name if spec is not None else named.setdefault(pair, pv_name)
            if safe_name(pv_name) is None or safe_name(uid) is None:
                item_name = None  # a directory name no node module takes (control characters): never sent
            if item_name != pv_name:
                # its vol_data.json names a volume the plan's item on this node calls otherwise: a step for it
                # would act on that name's directory, never this one (an "applied" step with no effect each run)
                reason = ghost_reason(pm, node, pv_name, item_name)
                if pm.mounted:
                    p.still_mounted.add(pair)
                    p.kept.setdefault(pair, reason)
                p.block(node, pv_name, name or uid, reason)
                continue
            why = ("pod %s no longer uses this volume on node %s" % (name, node) if name
                   else "pod %s is gone from the cluster" % uid)
            if pm.published and not pm.mounted:
                why += ": remove its hostPath check marker"  # host_path.go mounts nothing: only kubevol's record
            elif not pm.mounted:
                why = "orphaned pod volume directory: " + why
            pods = (PodToMount(uid, name or uid, pm.read_only),)
            p.add(_step("unmount", "pod", node, pv_name, unique, why,
                        _item_from_actual(unique, pv_name, spec, pm.mode, pods=pods, detach=False),
                        pod=name, pod_uid=uid))


def unmount_devices(p):
    """Global mounts no pod on that node needs any more: reconciler_common.go unmountDetachDevices."""
    volumes = p.desired.volumes
    protected = p.desired.protected_pairs
    for node, facts in p.teardown_facts():
        for unique, gm in facts.global_mounts.items():
            pair = (unique, node)
            nv = volumes.get(pair)
            if ((nv is not None and nv.mount_pods) or pair in protected or pair in p.still_mounted
                    or unique in p.protected_volumes or pair in p.kept):
                if gm.get("mounted"):
                    p.still_mounted.add(pair)
                continue
            spec, why = p.spec_for(unique), "no pod on node %s uses this volume any more" % node
            pv_name = spec.pv_name if spec is not None else None
            if pv_name is None:  # the PV is gone: vol_data.json's specVolID if the node accepts it, else another
                pv_name, how = gone_volume_name(p, unique, node, recorded=gm.get("pv_name"))
                if pv_name is None:
                    p.block(node, gm.get("pv_name") or show_volume_name(unique), None,
                            "not unmounted: the PV of %s is gone and %s" % (show_volume_name(unique), how))
                    continue
                why += "; " + gone_note(pv_name, how)
            p.add(_step("unmount", "device", node, pv_name, unique, why,
                        _item_from_actual(unique, pv_name, spec, fs_type=gm.get("fs_type"), detach=False)))


def _mounted_by_node(p, pair):
    """The detach guard's evidence: node facts when known (after this plan's unmounts), else volumesInUse;
    a node that no longer exists is assumed to have it mounted (actual_state_of_world.go AddVolumeNode)."""
    if p.facts(pair[1]) is not None:
        return pair in p.still_mounted
    if pair[1] not in p.index.node_by_name:
        return True
    return pair in p.actual.in_use


def detach(p):
    """Attachments no pod on that node wants: reconciler.go reconcile, detach loop with its mounted guard.

    Where nothing can run on the node (unreachable, or not in this run's inventory) the release is
    record-only: with the out-of-service taint at once; on a node whose Node object is gone, or that is not
    Ready, after max_wait_for_unmount (force_detach: an unhealthy node). The controller then removes the
    VolumeAttachment, as the A/D controller does once the CSI driver's ControllerUnpublish returns. The clock
    starts the first time such a detach waits (SetDetachRequestTime, plan_detach.detach_clock). A volume whose
    PV is gone is detached by its unique name (plan_detach.gone_volume_name)."""
    volumes = p.desired.volumes
    protected = p.desired.protected_pairs
    opts = p.options
    for pair, av in p.actual.attached.items():
        if pair in volumes or pair in protected or pair[0] in p.protected_volumes or pair in p.kept:
            continue
        unique, node = pair
        names = split_unique_volume_name(unique)
        if names is None or names[0] not in opts.known_drivers:
            continue  # in-tree or another driver's volume: its own controller's business, never kubevol's
        if node in p.no_picture:
            continue  # blocked once for the whole node
        spec = p.spec_for(unique)
        pv_name, gone = av.pv_name or (spec.pv_name if spec is not None else None), None
        if pv_name is None:
            pv_name, how = gone_volume_name(p, unique, node)
            if pv_name is None:
                p.block(node, show_handle(names[1]), None, "not detached: the PV of %s is gone and %s"
                        % (show_volume_name(unique), how))
                continue
            gone = gone_note(pv_name, how)
        node_obj = p.index.node_by_name.get(node)
        if node_obj is None and not p.index.node_by_name:
            p.block(node, pv_name, None, "not detached from node %s: the cluster snapshot has no Node object at "
                    "all, write it again with the nodes included [%s]" % (node, NODE_UNKNOWN))
            continue
        out_of_service = _has_out_of_service_taint(node_obj)
        error = p.unreachable(node)
        remote = error is not None or p.facts(node) is None  # nothing of this run can reach the node
        record_only = remote and (out_of_service or node_obj is None)
        mounted = _mounted_by_node(p, pair)
        forced = mounted and out_of_service
        if (error is not None and not record_only) or (mounted and not out_of_service):
            expired, waited, healthy = detach_clock(p, av, pv_name, node_obj)
            if not expired:
                unreachable = error is not None and not (mounted and node_obj is None)
                p.block(node, pv_name, None, (unreachable_reason if unreachable else still_mounted_reason)(
                    p, node, error if unreachable else node_obj, waited, healthy))
                continue
            forced, record_only = mounted, remote  # force-detached, without the node when it cannot be reached
        why = "no pod on node %s uses this volume" % node
        if av.state == UNCERTAIN and av.va_name is None:
            why = "node %s reports the device attached but the cluster has no record and no pod uses it" % node
        elif av.state == UNCERTAIN:
            why = "VolumeAttachment %s exists but no pod on node %s uses the volume" % (av.va_name, node)
        if gone:
            why += "; " + gone
        if forced:
            why += "; detaching although still mounted (%s)" % (
                "out-of-service taint" if out_of_service
                else "node %s no longer exists and max_wait_for_unmount has passed" % node if node_obj is None
                else "waited longer than max_wait_for_unmount on a NotReady node")
        extra = {"forced": forced}
        if record_only:
            extra["record_only"] = True
            why += "; released in the cluster only: node %s %s and %s" % (
                node, "is out of service" if out_of_service else "no longer exists" if node_obj is None
                else "is not Ready, max_wait_for_unmount has passed,",
                "is unreachable" if error is not None else "is not in this run's inventory")
        p.detached.add(pair)
        p.add(_step("detach", "device", node, pv_name, unique, why,
                    _item_from_actual(unique, pv_name, spec, detach=True), **extra))


def unpublish_inline(p):
    """Inline ephemeral volumes whose pod is gone from the node or terminated: the kubelet unmounts them
    (reconciler_common.go unmountVolumes; csi_mounter.go TearDownAt, NodeUnpublishVolume) and the driver deletes
    the volume it created for the pod. A pod that is scheduled there and not terminated keeps its volume
    (desired_state_of_world_populator.go findAndRemoveDeletedPods), and a pod outside ``scope`` is not touched.
    The step is an unmount/pod step marked ``ephemeral``; it records nothing in the cluster (no VolumeAttachment,
    no volumesAttached or volumesInUse entry: the kubelet reports only attachable volumes)."""
    for node, facts in p.teardown_facts():
        for (uid, volume_name), em in sorted(facts.ephemeral.items()):
            if ((node, uid, volume_name) in p.desired.inline_volumes or uid in p.desired.protected_pod_uids
                    or (uid, node) in p.desired.live_pods):
                continue
            name = p.desired.pod_by_uid.get(uid)
            pv_name = p.pv_name_for(em.unique_name)
            if pv_name is not None:
                # unpublishing deletes the image created for the pod, which now backs a PV (the same handle)
                # not unpublished, so that the PV's image is never deleted
                p.block(node, volume_name, name or uid, "inline volume %s of pod %s on node %s has the volume handle "
                        "%s, which PV %s also names: unmount it on the node by hand, or give the PV its own image "
                        "[%s]" % (volume_name, name or uid, node, show_handle(em.volume_handle), pv_name,
                                  UNIDENTIFIED))
                continue
            why = ("pod %s no longer runs on node %s" % (name, node) if name
                   else "pod %s is gone from the cluster" % uid)
            why += ": unpublish inline volume %s and delete the volume created for it%s" % (
                volume_name, "" if em.mounted else " (nothing is mounted)")
            item = {"pv_name": volume_name, "driver": em.driver, "volume_handle": em.volume_handle,
                    "volume_attributes": {"pool": em.image.rsplit("/", 1)[0]} if em.image and "/" in em.image else {},
                    "capacity_bytes": 0, "mode": "Filesystem", "fs_type": "ext4", "mount_options": [],
                    "read_only": False, "multi_attach": False, "ephemeral": True, "detach": False,
                    "pods": [{"uid": uid, "name": name or uid, "read_only": em.read_only}]}
            p.add(_step("unmount", "pod", node, "%s/%s" % (name or uid, volume_name), em.unique_name, why, item,
                        pod=name, pod_uid=uid, ephemeral=True,
                        kubernetes_volume_name=inline_volume_name(uid, volume_name)))
