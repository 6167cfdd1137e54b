# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's findings: what a node or the cluster holds that nothing needs, why, and who may clean it.

Pure: the action plugin (plugins/action/volume_audit.py, audit_task.py) gathers the nodes' answers
(node_volume_audit) and the cluster store; this module judges them. Each finding is a dict:

- ``kind`` (KINDS) and ``what``, a phrase saying what it is;
- ``node`` (or None for a cluster object) and ``where``: a path on the node, or ``Kind/name``;
- ``why``: why it is a leak;
- ``cleanable``: whether ``clean: true`` removes it (rmdir of an empty directory, a record that contradicts no node,
  a dead run's lock); ``cleaned`` once it was; ``action``: what the operator does when it is not cleanable.

The rules are Kubernetes' housekeeping, where a rule exists: the kubelet's cleanupOrphanedPodDirs
(pkg/kubelet/kubelet_volumes.go) for pod directories, its reconciler's unmountVolumes / unmountDetachDevices
(reconciler_common.go) for orphaned pod volumes and unused global mounts (the planner's own steps, never written
twice), its node status updater (kubelet_node_status.go volumesInUse, the planner's in_use_repairs) and the A/D
controller's processVolumeAttachments (attach_detach_controller.go: a VolumeAttachment without its PV is not
actual state) for the records. A leaked image has no Kubernetes rule: the external-provisioner deletes a volume
only for a PV with reclaimPolicy Delete; an image no PV names has nothing that would ever delete it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.node.node_args import DEFAULT_LOOP_POOLS

LOOP_DRIVER = "loop.kubevol.io"
KINDS = {
    "orphan_pod_dir": "a pod directory of a pod the cluster no longer binds to this node",
    "orphaned_pod_volume": "a pod volume directory (or mount) of a pod gone from this node",
    "stale_volume_dir": "a volume directory nothing identifies and nothing mounts",
    "unused_global_mount": "a global (staging) mount no pod on this node uses",
    "leaked_image": "an image in a loop pool that no PersistentVolume names",
    "stale_volume_attachment": "a VolumeAttachment of a PV or node that no longer exists",
    "stale_attach_intent": "a VolumeAttachment written as an intent (attached: false) that no node reports",
    "status_in_use_not_mounted": "a node.status.volumesInUse entry of a volume the node has not mounted",
    "status_mounted_not_in_use": "a volume the node has mounted that node.status.volumesInUse lacks",
    "status_attached_no_device": "a node.status.volumesAttached entry of a volume whose device the node does not have",
    "status_device_not_attached": "a device the node has attached that node.status.volumesAttached lacks",
    "stale_run_lock": "a run lock of a run that is over",
}
# said as clean=true to a module caller, kubevol_audit_clean=true to a playbook user (common/words.py)
CLEAN_HINT = "%s removes it" % setting("clean", True)


def finding(kind, node, where, why, cleanable=False, action=None, **extra):
    out = {"kind": kind, "what": KINDS[kind], "node": node, "where": where, "why": why, "cleanable": cleanable,
           "cleaned": False, "action": CLEAN_HINT if cleanable and action is None else action}
    out.update(extra)
    return out


# -- the node's share ---------------------------------------------------------------------------------
def node_pod_uids(index, node):
    """The pods the cluster binds to ``node`` (every phase: a terminated pod's directory is the reconcile's)."""
    return sorted(set(p.uid for p in index.cluster.pods if p.node_name == node and p.uid))


def _norm(path):
    return os.path.normpath(path) if isinstance(path, str) and path else None


def named_images(index, known_drivers):
    """{(pool, handle)} of the loop images the cluster names: PVs, and inline ephemeral volumes (their handle is
    csi-sha256(pod uid + volume name), csi_mounter.go makeVolumeHandle)."""
    if LOOP_DRIVER not in known_drivers:
        return set()
    named = set()
    for pv in index.cluster.persistent_volumes:
        if pv.csi is not None and pv.csi.driver == LOOP_DRIVER:
            pool = dict(pv.csi.volume_attributes or ()).get("pool") or DEFAULT_LOOP_POOLS[0]
            named.add((_norm(pool), pv.csi.volume_handle))
    for pod in index.cluster.pods:
        for vol in pod.volumes:
            if vol.kind == "csi" and vol.csi is not None and vol.csi.driver == LOOP_DRIVER and pod.uid:
                pool = dict(vol.csi.volume_attributes or ()).get("pool") or DEFAULT_LOOP_POOLS[0]
                named.add((_norm(pool), names.ephemeral_volume_handle(pod.uid, vol.name)))
    return named


def image_findings(node, images, named):
    found = []
    for image in images:
        if image.get("record") and image["record"].get("ephemeral"):
            continue  # an inline volume's image: its record names it, unpublish deletes it with its pod
        if any((pool, image["name"]) in named for pool in (_norm(image["pool"]), _norm(image["pool_real"]))):
            continue
        content = image["content"]
        holds = {"filesystem": "it holds a filesystem (%s)" % image.get("content_detail"),
                 "signature": "it holds a signature (%s)" % image.get("content_detail"),
                 "none": "blkid finds no signature in it (%d bytes allocated)" % image["allocated_bytes"],
                 }.get(content, "its content is unknown: %s" % image.get("content_detail"))
        why = ("no PersistentVolume names it (csi.driver %s, csi.volumeHandle %s, volumeAttributes.pool %s) and no "
               "inline volume's record does; %s" % (LOOP_DRIVER, image["name"], image["pool"], holds))
        action = ("kubevol never deletes an image: if its data is still needed, bind a PV to it (volumeHandle %s, "
                  "volumeAttributes.pool %s); otherwise back it up and delete it by hand" % (image["name"], image["pool"]))
        if image.get("loop_device"):
            why += "; it is still bound to %s" % image["loop_device"]
            action = ("it is still attached as %s: find what uses it (findmnt %s) and detach it (losetup -d) before "
                      "anything else; then: %s" % (image["loop_device"], image["loop_device"], action))
        found.append(finding("leaked_image", node, image["path"], why, False, action, size_bytes=image["size_bytes"],
                             allocated_bytes=image["allocated_bytes"], content=content,
                             content_detail=image.get("content_detail"), loop_device=image.get("loop_device")))
    return found


def pod_dir_findings(node, report):
    found = []
    for entry in report.get("orphan_pod_dirs") or ():
        why = "pod %s is not bound to node %s in the cluster" % (entry["pod_uid"], node)
        removed = entry.get("removed") or []
        extra = dict(volume_dirs=entry["volume_dirs"], removed=removed)
        if entry["empty"]:
            item = finding("orphan_pod_dir", node, entry["path"], why + "; only empty directories are left", True,
                           **extra)
            item["cleaned"] = entry["path"] in removed
            found.append(item)
            continue
        if entry["mounted_count"]:
            why += "; still mounted under it: %s" % ", ".join(entry["mounted"])
            action = ("volume paths are still mounted: run the reconcile (it unmounts kubevol's volumes of gone pods); "
                      "unmount another plugin's by hand; then audit again with %s" % setting("clean", True))
        else:
            more = " (%d in all)" % entry["file_count"] if entry["file_count"] > len(entry["files"]) else ""
            why += "; files are left in it: %s%s" % (", ".join(entry["files"] + entry["symlinks"]), more)
            action = ("run the reconcile (it tears down kubevol's volume directories); look at what else is left and "
                      "remove it by hand")
        if removed:
            why += "; its empty directories were removed: %s" % ", ".join(removed)
        found.append(finding("orphan_pod_dir", node, entry["path"], why, False, action, **extra))
    return found


def node_findings(index, node, report, known_drivers):
    """The findings of one node's node_volume_audit answer."""
    return (pod_dir_findings(node, report)
            + image_findings(node, report.get("pool_images") or (), named_images(index, known_drivers)))


# -- the cluster's share --------------------------------------------------------------------------------
def _within(path, removed):
    return any(path == r or path.startswith(r + os.sep) for r in removed)


def plan_findings(plan_result, kubelet_dirs, removed):
    """The planner's own teardown steps (unmount/pod, unmount/device, cleanup/directory) as findings: a reconcile
    would run them; the audit never unmounts."""
    found = []
    for step in plan_result.get("plan") or ():
        node = step["node"]
        kubelet_dir = kubelet_dirs.get(node)
        key = (step["action"], step["target"])
        if kubelet_dir is None or key not in (("unmount", "pod"), ("unmount", "device"), ("cleanup", "directory")):
            continue
        unique = step.get("unique_volume_name")
        parts = names.split_unique_volume_name(unique) if unique else None
        if key == ("cleanup", "directory"):
            kind, where = "stale_volume_dir", step.get("path")
            action = "run the reconcile: it removes the directory (volume_detach stale_paths)"
        elif key == ("unmount", "pod"):
            kind, where = "orphaned_pod_volume", names.pod_volume_dir(kubelet_dir, step["pod_uid"], step["volume"])
            action = "run the reconcile: it unmounts the volume from the gone pod and removes the directory"
        else:
            kind = "unused_global_mount"
            where = names.device_mount_path(kubelet_dir, parts[0], parts[1]) if parts else unique
            action = "run the reconcile: it unmounts the global mount (and detaches the volume if no pod needs it)"
        if where and _within(where, removed.get(node, ())):
            continue  # its empty directories were just removed by this audit
        found.append(finding(kind, node, where, step["reason"], False, action, volume=step.get("volume")))
    return found


def status_findings(index, plan_result, facts, known_drivers):
    """(findings, records): status entries that contradict a reachable node's facts."""
    found, records = [], []
    for repair in plan_result.get("in_use_repairs") or ():
        node = repair["node"]
        for unique in repair["unique_volume_names"]:
            if repair["in_use"]:
                why = "node %s has %s mounted but its node.status.volumesInUse does not list it" % (
                    node, names.show_volume_name(unique))
                kind = "status_mounted_not_in_use"
            else:
                why = "node %s lists %s in node.status.volumesInUse but has it mounted nowhere" % (
                    node, names.show_volume_name(unique))
                kind = "status_in_use_not_mounted"
            found.append(finding(kind, node, "Node/%s" % node, why, True, unique_volume_name=unique))
        records.append({"type": "in_use", "node": node, "unique_volume_names": list(repair["unique_volume_names"]),
                        "in_use": repair["in_use"]})
    for node, node_facts in sorted(facts.items()):
        obj = index.node_by_name.get(node)
        if obj is None:
            continue
        devices = dict((d.get("unique_volume_name"), d) for d in node_facts.get("devices") or ())
        listed = set()
        for entry in obj.volumes_attached:
            listed.add(entry.name)
            parts = names.split_unique_volume_name(entry.name)
            if not parts or parts[0] not in known_drivers or entry.name in devices:
                continue
            pv = index.pv_by_unique_name.get(entry.name)
            found.append(finding("status_attached_no_device", node, "Node/%s" % node,
                                 "node %s lists %s in node.status.volumesAttached but reports no device for it"
                                 % (node, names.show_volume_name(entry.name)), True, unique_volume_name=entry.name))
            records.append({"type": "detached", "node": node, "pv_name": pv.name if pv else parts[1],
                            "driver": parts[0], "volume_handle": parts[1]})
        for unique in sorted(set(devices) - listed):
            if unique:
                found.append(finding("status_device_not_attached", node, "Node/%s" % node,
                                     "node %s has %s attached (%s) but node.status.volumesAttached does not list it"
                                     % (node, names.show_volume_name(unique), devices[unique].get("device")), False,
                                     "run the reconcile: it records the attachment, or detaches it when no pod "
                                     "uses it", unique_volume_name=unique))
    return found, records


def _reported_va_names(facts):
    """{VolumeAttachment name: node} of every device a reachable node reports, named for that node."""
    out = {}
    for node, node_facts in facts.items():
        for dev in node_facts.get("devices") or ():
            if dev.get("volume_handle") and dev.get("driver"):
                out[names.volume_attachment_name(dev["volume_handle"], dev["driver"], node)] = node
    return out


def attachment_findings(index, facts, answered, known_drivers, live_lock):
    """(findings, records): VolumeAttachments of missing PVs or nodes, and intents no node reports. Cleanable only
    when the VA's node answered this audit (or no host answers for it and the Node is gone) and reports no device
    for it, and no live run holds the lock (a run writes its intents before its nodes attach)."""
    found, records = [], []
    reported = _reported_va_names(facts)
    for va in index.cluster.volume_attachments:
        pv = index.pv_by_name.get(va.pv_name) if va.pv_name else None
        node_gone = va.node_name not in index.node_by_name
        if pv is None or node_gone:
            kind = "stale_volume_attachment"
            why = "%s%s" % ("its PV %s no longer exists" % va.pv_name if pv is None else "",
                            ("%snode %s no longer exists" % ("; " if pv is None else "", va.node_name))
                            if node_gone else "")
        elif not va.attached:
            kind = "stale_attach_intent"
            why = "it is an attach intent (status.attached false) for node %s" % va.node_name
        else:
            continue
        where = "VolumeAttachment/%s" % va.name
        if va.name in reported:
            why += "; but node %s reports the device attached" % reported[va.name]
            found.append(finding(kind, va.node_name, where, why, False,
                                 "run the reconcile: it detaches the device the record names"))
            continue
        if va.attacher not in known_drivers:
            found.append(finding(kind, va.node_name, where, why + "; its attacher %s is not a kubevol driver"
                                 % va.attacher, False, "left to that driver's controller; delete it by hand if it "
                                                       "is truly gone"))
            continue
        if va.node_name in facts:
            why += "; node %s reports no device for it" % va.node_name
        elif node_gone and va.node_name not in answered:
            why += "; no host answers for node %s and no reachable node reports its device" % va.node_name
        else:
            found.append(finding(kind, va.node_name, where, why + "; node %s did not answer this audit" % va.node_name,
                                 False, "audit again with node %s reachable in the play" % va.node_name))
            continue
        if kind == "stale_attach_intent" and live_lock:
            found.append(finding(kind, va.node_name, where, why + "; a live run holds the lock and may be "
                                 "attaching it now", False, "audit again once that run has ended"))
            continue
        found.append(finding(kind, va.node_name, where, why, True, pv_name=va.pv_name))
        records.append({"type": "detached", "name": va.name, "node": va.node_name})
    return found, records


def lock_finding(location, record, reason):
    if record is None or reason is None:
        return []
    why = "run %s (pid %s on host %s, renewed %s) holds it, and %s" % (
        record.get("holder"), record.get("pid"), record.get("host"), record.get("renewed"), reason)
    return [finding("stale_run_lock", None, location, why, True)]


def report_lines(findings):
    """One line per finding, for a person."""
    lines = []
    for f in findings:
        state = ("cleaned" if f["cleaned"] else "would be cleaned with %s" % setting("clean", True) if f["cleanable"]
                 else "operator: %s" % f["action"])
        lines.append("%s %s %s: %s [%s]" % (f["node"] or "cluster", f["kind"], f["where"], f["why"], state))
    return lines


def summary(findings):
    counts = {}
    for f in findings:
        counts[f["kind"]] = counts.get(f["kind"], 0) + 1
    return {"findings": len(findings), "by_kind": counts, "cleanable": sum(1 for f in findings if f["cleanable"]),
            "cleaned": sum(1 for f in findings if f["cleaned"])}
