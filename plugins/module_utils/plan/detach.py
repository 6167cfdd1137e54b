# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's rules for volumes only actual state still knows, and for the detach clock.

Names. A volume whose PV is gone (deleted after the attach, a format that failed) is still in actual state by its
unique name (node.status.volumesAttached, the node's own device) and maybe its VolumeAttachment. The A/D controller
detaches it from that alone: its actual state of world keeps the unique name, and the CSI attacher's Detach splits it
into driver and handle and deletes the VolumeAttachment named after them (csi_attacher.go Detach,
getAttachmentName). The node modules, though, take a PV name that is one safe path component. ``gone_volume_name``
gives one that the node accepts, says where it came from, and never the name of another, existing PV; a volume
that has none is blocked, never sent, so that no object that no longer exists makes every run fail.

Clock. reconciler.go reconcile: the first time a detach is wanted and cannot be done, SetDetachRequestTime records
it; once maxWaitForUnmountDuration has passed, a volume on a node that is not healthy (not Ready) is detached
although it may be mounted (forceDetach), without the node. ``detach_clock`` applies that to a node that is still
mounted, or that this run cannot reach at all.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import UnsafeName
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import is_in_tree, plugin_name_of
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (
    OUT_OF_SERVICE_TAINT, check_component, handle_hash, show_handle, show_volume_name, split_unique_volume_name,
    volume_attachment_name)
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import handle_refusal
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import (
    NODE_UNKNOWN, NODE_UNREACHABLE, UNIDENTIFIED, UNMOUNT_WAIT)


def safe_name(value):
    """``value`` when the node modules accept it as a PV name (names.check_component), else None."""
    try:
        return check_component("PV name", value)
    except UnsafeName:
        return None


def volume_attachment_of(p, unique, node):
    """The VolumeAttachment csi_attacher.go names for (driver, handle, node), or None. Every VA is looked up by
    name, also one whose PV is gone (ClusterIndex.va_by_pair has only those naming a PV); built once per plan."""
    parts = split_unique_volume_name(unique)
    if parts is None:
        return None
    by_name = p.__dict__.get("va_by_name")
    if by_name is None:
        by_name = p.va_by_name = dict((va.name, va) for va in p.index.cluster.volume_attachments)
    return by_name.get(volume_attachment_name(parts[1], parts[0], node))


def gone_volume_name(p, unique, node, recorded=None):
    """``(name, how)`` for a volume whose PV is gone, to send to ``node``; ``(None, why)`` when there is none.

    In order: ``recorded`` (what the node itself wrote, e.g. vol_data.json's specVolID), the VolumeAttachment's
    spec.source.persistentVolumeName, the volume handle, a name derived from the handle's sha256; the first that is
    one safe path component and is not the name of an existing PV (whose directories it would name)."""
    plugin = plugin_name_of(unique)
    if is_in_tree(plugin):
        # an in-tree plugin's unique name is <plugin>/<pv name> (GetVolumeName): the PV name is in it
        name = unique[len(plugin) + 1:]
        if safe_name(name):
            return name, "the PV name in its unique volume name"
        return None, ("the PV name in %s is not one safe path component, so no node module can be given it: "
                      "unmount it on the node by hand [%s]" % (show_volume_name(unique), UNIDENTIFIED))
    parts = split_unique_volume_name(unique)
    if parts is None:
        return None, ("%s is not a CSI volume name (kubernetes.io/csi/<driver>^<handle>): release it on the node by "
                      "hand [%s]" % (show_volume_name(unique), UNIDENTIFIED))
    driver, handle = parts
    refused = handle_refusal(driver, handle)  # the API's rule, and the driver's when it names a file after it
    candidates = []
    if recorded:
        candidates.append((recorded, "the PV name the node recorded for it"))
    va = volume_attachment_of(p, unique, node)
    if va is not None and va.pv_name:
        candidates.append((va.pv_name, "its VolumeAttachment %s's spec.source.persistentVolumeName" % va.name))
    candidates.append((handle, "its volume handle"))
    candidates.append(("kubevol-gone-" + handle_hash(handle)[:16], "the sha256 of its volume handle"))
    for name, how in candidates:
        if safe_name(name) and name not in p.index.pv_by_name:
            if refused is not None:
                break  # the node refuses the handle itself: nothing to send
            return name, how
    if refused is None:
        refused = "no name for it is free"
    return None, ("its volume handle '%s' cannot be given to a node module (%s): release the device on the node, "
                  "then delete the VolumeAttachment and the node.status.volumesAttached entry of %s by hand [%s]"
                  % (show_handle(handle), refused, show_volume_name(unique), UNIDENTIFIED))


def gone_note(name, how):
    """The step reason's part that says which name stands for the gone PV."""
    return "its PV is gone: named %s after %s" % (name, how)


def parse_time(text):
    """RFC 3339 as Kubernetes writes it (Z or an offset, optional fraction); None if unreadable."""
    try:
        moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except (AttributeError, ValueError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)


def format_time(moment):
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def detach_request_time(p, av, pv_name):
    """When the detach was first requested: the VA annotation, or now, recorded (SetDetachRequestTime)."""
    requested = parse_time(av.detach_requested_at) if av.detach_requested_at else None
    if requested is not None:
        return requested
    driver, handle = split_unique_volume_name(av.unique_name)
    va_name = av.va_name
    if va_name is None:
        va = volume_attachment_of(p, av.unique_name, av.node)
        va_name = va.name if va is not None else volume_attachment_name(handle, driver, av.node)
    p.detach_requests.append({"name": va_name, "node": av.node, "volume": pv_name, "requested_at": format_time(p.now)})
    return p.now


def detach_clock(p, av, pv_name, node_obj):
    """(expired, waited seconds, healthy): starts the clock on the first call for a detach that waits."""
    waited = (p.now - detach_request_time(p, av, pv_name)).total_seconds()
    healthy = node_obj is not None and node_obj.ready is True
    return waited > p.options.max_wait_for_unmount and p.options.force_detach and not healthy, waited, healthy


def still_mounted_reason(p, node, node_obj, waited, healthy):
    if node_obj is None:
        when = ("after %s (%ds, waited %ds)" % (setting("max_wait_for_unmount"), p.options.max_wait_for_unmount,
                                                max(waited, 0)) if p.options.force_detach
                else "only by hand, or with %s" % setting("force_detach", True))
        return ("node %s has no Node object in the snapshot and may still have the volume mounted, so its detach "
                "waits: it is released %s [%s]" % (node, when, NODE_UNKNOWN))
    evidence = "node facts show it mounted" if p.facts(node) is not None else "node.status.volumesInUse lists it"
    # a Ready node is never force-detached (reconciler.go: only a node that is not healthy)
    later = ("" if healthy or not p.options.force_detach
             else "; it is force-detached after %s (%ds)" % (setting("max_wait_for_unmount"),
                                                             p.options.max_wait_for_unmount))
    return ("volume still mounted on node %s (%s, waited %ds), so it is not detached: stop the pods that use it "
            "there, or taint the node %s if it is shut down%s [%s]"
            % (node, evidence, max(waited, 0), OUT_OF_SERVICE_TAINT, later, UNMOUNT_WAIT))


def unreachable_reason(p, node, error, waited, healthy):
    """Why a detach on a node this run cannot reach waits, and until when."""
    opts = p.options
    # a Ready node's volumes are never released without it; a node that is not Ready's are, in the cluster only
    # (the VolumeAttachment deleted, nothing run on the node), after max_wait_for_unmount
    later = ("" if healthy or not opts.force_detach else "; it is released in the cluster only after %s (%ds)"
             % (setting("max_wait_for_unmount"), opts.max_wait_for_unmount))
    return ("node %s is unreachable (%s), so the detach requested %ds ago waits: make it reachable, or taint it "
            "%s if it is shut down%s [%s]" % (node, error, max(waited, 0), OUT_OF_SERVICE_TAINT, later,
                                              NODE_UNREACHABLE))


def ghost_reason(pm, node, dir_name, item_name):
    """Why a pod volume directory whose vol_data.json names a volume called otherwise on this node is left alone
    (``item_name`` None: its own name, or its pod's uid, is not one the node modules take)."""
    first = ", unmount it," if pm.mounted else ""
    if item_name is None:
        return ("pod volume directory %r of pod %r on node %s has a name the node modules refuse: check what it "
                "holds%s then remove it by hand [%s]" % (dir_name, pm.pod_uid, node, first, UNIDENTIFIED))
    # kubevol tears a pod volume directory down only as the volume both its name and its vol_data.json name
    return ("pod volume directory %s on node %s is named for PV %s but its vol_data.json names volume %s (PV %s): "
            "check what it holds%s then remove it by hand [%s]"
            % (pm.path or "of pod %s" % pm.pod_uid, node, dir_name, show_volume_name(pm.unique_name), item_name,
               first, UNIDENTIFIED))
