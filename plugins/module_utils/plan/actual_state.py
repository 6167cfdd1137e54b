# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Actual state of world: what is attached (from the cluster) and mounted (from node facts).

Attach level is rebuilt as the A/D controller does at start-up
(attach_detach_controller.go populateActualStateOfWorld, processVolumeAttachments):
node.status.volumesAttached on every node is confirmed; a VolumeAttachment with an
existing PV that node status does not list is uncertain; node.status.volumesInUse is
mountedByNode. Mount level comes from node facts (docs/contracts.md section 2), as the
kubelet reconstructs it from its directories: CSI, local-volume and host-path entries alike, each naming its
plugin (a hostPath pod entry is kubevol's check marker, published but never mounted). A node without facts has an unknown mount
level; a node with ``reachable: false`` blocks every step on it.

Reconstruction is per volume (reconstruct_common.go: a volume that fails reconstruction is
queued for cleanup, the rest goes on): an entry that cannot be identified is kept aside in
``uncertain`` instead of failing the whole plan. Entries of drivers kubevol has no backend for
are counted as ``foreign`` and never become actual state: a kubelet only touches its own
plugins' volumes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import annotation
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (
    DETACH_REQUESTED_AT_ANNOTATION, split_unique_volume_name, unique_volume_name)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import pv_unique_name
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import CSI, get_plugin, plugin_name_of

ATTACHED = "attached"
UNCERTAIN = "uncertain"

AttachedVolume = namedtuple("AttachedVolume", "unique_name node pv_name state device_path va_name "
                                              "detach_requested_at")
_make = tuple.__new__
MountedPod = namedtuple("MountedPod", "pod_uid pv_name unique_name mode mounted read_only path root_gid root_mode "
                        "size_bytes plugin published device_mismatch device_number attached_device")
MountedPod.__new__.__defaults__ = (None, None, None, "kubernetes.io/csi", False, False, None, None)
MountedPod.__doc__ = """root_gid, root_mode: the mounted volume root's group and mode ("2775"), for fsGroup;
size_bytes: a Block volume's mapped device size. None when the node did not report them. plugin: the volume
plugin (facts' ``plugin``, else from the unique name); published: a hostPath pod's check marker exists (nothing is
mounted for hostPath: contracts.md section 2). device_mismatch: a Block pod's bound device is not the device
attached for the volume now (device_number: what is bound, "MAJ:MIN"; attached_device: the volume's device now, or
None): the pod's volume is not set up."""
UncertainMount = namedtuple("UncertainMount", "kind path mounted device pod_uid pv_name reason unsafe")
UncertainMount.__new__.__defaults__ = (False,)
UncertainMount.__doc__ = """A global (kind "device") or pod (kind "pod") mount directory that cannot be
identified: no readable vol_data.json and nothing else names its volume."""
NodeMounts = namedtuple("NodeMounts", "node reachable error devices global_mounts pod_mounts uncertain foreign "
                                      "ephemeral")
NodeMounts.__new__.__defaults__ = ({},)
NodeMounts.__doc__ = """devices and global_mounts: {unique name: facts dict}; pod_mounts: {(pod uid, pv): MountedPod};
uncertain: [UncertainMount]; foreign: how many entries belong to drivers kubevol has no backend for;
ephemeral: {(pod uid, volume name): EphemeralMount}, the inline ephemeral CSI volumes (never in pod_mounts)."""
EphemeralMount = namedtuple("EphemeralMount", "pod_uid volume_name unique_name driver volume_handle mounted "
                                              "read_only path image root_gid root_mode")
EphemeralMount.__new__.__defaults__ = (None, None)
EphemeralMount.__doc__ = """An inline ephemeral CSI volume on a node (facts ephemeral_volumes): its pod directory
(vol_data.json volumeLifecycleMode Ephemeral) or only its driver's record (a run killed mid-way). image: what
backs it, as the node names it (loop: the image file), or None. root_gid, root_mode: the mounted root's (fsGroup)."""
ActualState = namedtuple("ActualState", "attached in_use node_facts confirmed_nodes")
ActualState.__doc__ = """attached: {(unique name, node): AttachedVolume}; in_use: {(unique name, node)} from
volumesInUse; node_facts: {node: NodeMounts} (absent: unknown); confirmed_nodes: {unique name: {node}} of
confirmed attachments only (the multi-attach check ignores uncertain ones)."""


def _facts_list(facts, key, node):
    value = facts.get(key) or []
    if not isinstance(value, list):
        raise InvalidInput(field="node_facts[%s].%s" % (node, key), value=type(value).__name__, reason="must be a list")
    for i, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise InvalidInput(field="node_facts[%s].%s[%d]" % (node, key, i), value=entry, reason="must be a mapping")
    return value


def _require(entry, key, node, where, i):
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise InvalidInput(field="node_facts[%s].%s[%d].%s" % (node, where, i, key), value=value,
                           reason="must be a non-empty string")
    return value


def _is_foreign(entry, unique, known_drivers):
    """The node says so, or the entry's driver is not one kubevol has a backend for."""
    if entry.get("foreign"):
        return True
    if known_drivers is None:
        return False
    names = split_unique_volume_name(unique) if unique else None
    driver = names[0] if names else entry.get("driver")
    return bool(driver) and driver not in known_drivers


def _optional_str(entry, key, node, where, i):
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(field="node_facts[%s].%s[%d].%s" % (node, where, i, key), value=value,
                           reason="must be a string or null")
    return value or None


def node_mounts_from_facts(node, facts, pv_by_name, known_drivers=None):
    """Validate one node's facts (contracts.md section 2) into NodeMounts.

    known_drivers: the drivers kubevol has a backend for (None: trust only the facts' own `foreign`)."""
    if not isinstance(facts, dict):
        raise InvalidInput(field="node_facts[%s]" % node, value=type(facts).__name__, reason="must be a mapping")
    if facts.get("reachable", True) is False:
        return NodeMounts(node, False, facts.get("error") or "no error given", {}, {}, {}, [], 0)
    foreign = 0
    uncertain = []
    devices = {}
    for i, dev in enumerate(_facts_list(facts, "devices", node)):
        unique = _require(dev, "unique_volume_name", node, "devices", i)
        if _is_foreign(dev, unique, known_drivers):
            foreign += 1
            continue
        devices[unique] = dev
    global_mounts = {}
    for i, gm in enumerate(_facts_list(facts, "global_mounts", node)):
        unique = _optional_str(gm, "unique_volume_name", node, "global_mounts", i)
        if gm.get("unsafe"):
            uncertain.append(UncertainMount("device", gm.get("path"), bool(gm.get("mounted")), gm.get("device"), None,
                                            gm.get("pv_name"), gm.get("uncertain") or "not a real directory", True))
        elif _is_foreign(gm, unique, known_drivers):
            foreign += 1
        elif unique is None:
            uncertain.append(UncertainMount("device", gm.get("path"), bool(gm.get("mounted")), gm.get("device"), None,
                                            gm.get("pv_name"), gm.get("uncertain") or "its vol_data.json does not "
                                            "name the volume"))
        else:
            global_mounts[unique] = gm
    pod_mounts = {}
    for i, pm in enumerate(_facts_list(facts, "pod_mounts", node)):
        uid = _require(pm, "pod_uid", node, "pod_mounts", i)
        pv_name = _require(pm, "pv_name", node, "pod_mounts", i)
        unique = _optional_str(pm, "unique_volume_name", node, "pod_mounts", i)
        if pm.get("ephemeral") and not pm.get("unsafe") and not _is_foreign(pm, unique, known_drivers):
            continue  # an inline ephemeral volume of a kubevol driver: ephemeral_volumes below
        if pm.get("unsafe"):
            uncertain.append(UncertainMount("pod", pm.get("path"), bool(pm.get("mounted")), pm.get("device"), uid,
                                            pv_name, pm.get("uncertain") or "not a real directory", True))
            continue
        if not unique:
            # reconstruct_common.go: the spec name (the directory) names the PV when vol_data.json cannot
            pv = pv_by_name.get(pv_name)
            unique = pv_unique_name(pv) if pv is not None else None
            if unique is not None and pm.get("plugin") and plugin_name_of(unique) != pm.get("plugin"):
                unique = None  # a directory of another plugin than the PV's: not this PV's mount
        if not unique:
            unique = next((u for u, gm in global_mounts.items() if gm.get("pv_name") == pv_name), None)
        if _is_foreign(pm, unique, known_drivers):
            foreign += 1
            continue
        if unique is None:
            uncertain.append(UncertainMount("pod", pm.get("path"), bool(pm.get("mounted")), pm.get("device"), uid,
                                            pv_name, pm.get("uncertain") or "no vol_data.json and no PV %s" % pv_name))
            continue
        plugin = plugin_name_of(unique) or CSI
        pod_mounts[(uid, pv_name)] = MountedPod(uid, pv_name, unique, pm.get("mode") or "Filesystem",
                                                bool(pm.get("mounted")), bool(pm.get("read_only")), pm.get("path"),
                                                pm.get("root_gid"), pm.get("root_mode"), pm.get("size_bytes"), plugin,
                                                get_plugin(plugin).MARKER and bool(pm.get("published")),
                                                bool(pm.get("device_mismatch")), pm.get("device_number"),
                                                pm.get("attached_device"))
    ephemeral = _ephemeral_from_facts(facts, node, known_drivers)
    foreign += ephemeral.pop(None, 0)
    return NodeMounts(node, True, None, devices, global_mounts, pod_mounts, uncertain, foreign, ephemeral)


def _ephemeral_from_facts(facts, node, known_drivers):
    """{(pod uid, volume name): EphemeralMount} from facts ``ephemeral_volumes``; key None counts foreign entries.
    csi_mounter.go writes volumeLifecycleMode into vol_data.json so that reconstruction knows the volume is
    ephemeral (reconstruct_common.go); kubevol's driver records add what backs it."""
    found = {}
    for i, entry in enumerate(_facts_list(facts, "ephemeral_volumes", node)):
        uid = _require(entry, "pod_uid", node, "ephemeral_volumes", i)
        name = _require(entry, "volume_name", node, "ephemeral_volumes", i)
        unique = _require(entry, "unique_volume_name", node, "ephemeral_volumes", i)
        if _is_foreign(entry, unique, known_drivers):
            found[None] = found.get(None, 0) + 1
            continue
        driver, handle = split_unique_volume_name(unique) or (entry.get("driver"), entry.get("volume_handle"))
        found[(uid, name)] = EphemeralMount(uid, name, unique, driver, handle, bool(entry.get("mounted")),
                                            bool(entry.get("read_only")), entry.get("path"),
                                            _optional_str(entry, "image", node, "ephemeral_volumes", i),
                                            entry.get("root_gid"), entry.get("root_mode"))
    return found


def build_actual_state(index, node_facts=None, known_drivers=None):
    """Attach level from the cluster, mount level from node facts ({node name: facts})."""
    attached = {}
    in_use = set()
    confirmed = {}
    pv_by_unique = index.pv_by_unique_name
    va_by_pair = index.va_by_pair
    for node in index.cluster.nodes:
        name = node.name
        for status in node.volumes_attached:
            pv = pv_by_unique.get(status.name)
            pv_name = pv.name if pv is not None else None
            va = va_by_pair.get((pv_name, name)) if pv_name else None
            # every field given: the tuple without the namedtuple's Python __new__ (a call per attached volume)
            attached[(status.name, name)] = _make(AttachedVolume, (
                status.name, name, pv_name, ATTACHED, status.device_path, va.name if va else None,
                annotation(va, DETACH_REQUESTED_AT_ANNOTATION) if va else None))
            confirmed.setdefault(status.name, set()).add(name)
        for unique in node.volumes_in_use:
            in_use.add((unique, name))
    csidriver = index.csidriver_by_name
    for va in index.cluster.volume_attachments:
        pv = index.pv_by_name.get(va.pv_name) if va.pv_name else None
        if pv is None or pv.csi is None:
            continue  # processVolumeAttachments skips VAs without an existing PV
        driver = csidriver.get(pv.csi.driver)
        if driver is not None and not driver.attach_required:
            continue  # not attachable: no attacher plugin
        pair = (unique_volume_name(pv.csi.driver, pv.csi.volume_handle), va.node_name)
        if pair not in attached:
            attached[pair] = AttachedVolume(pair[0], va.node_name, pv.name, UNCERTAIN, va.device_path, va.name,
                                            annotation(va, DETACH_REQUESTED_AT_ANNOTATION))
    mounts = {}
    if node_facts:
        if not isinstance(node_facts, dict):
            raise InvalidInput(field="node_facts", value=type(node_facts).__name__,
                               reason="must be a mapping of node name to facts")
        for node, facts in node_facts.items():
            mounts[node] = node_mounts_from_facts(node, facts, index.pv_by_name, known_drivers)
            # A device the node itself reports but the cluster has no record of (a lost record, a
            # run killed between attach and record) is attached for real: uncertain, like a VA that
            # node status lacks, so it is detached when no pod wants it and re-recorded when one does.
            for unique, dev in mounts[node].devices.items():
                if (unique, node) not in attached:
                    pv = pv_by_unique.get(unique)
                    attached[(unique, node)] = AttachedVolume(unique, node, pv.name if pv is not None else None,
                                                              UNCERTAIN, dev.get("device"), None, None)
    return ActualState(attached, in_use, mounts, confirmed)


def summarize_actual(actual):
    per_node = {}
    uncertain = 0
    for (unique, node), av in actual.attached.items():
        per_node.setdefault(node, []).append(av.pv_name or unique)
        uncertain += av.state == UNCERTAIN
    unreachable = sorted(n for n, f in actual.node_facts.items() if not f.reachable)
    return {"attached": len(actual.attached), "uncertain": uncertain, "in_use": len(actual.in_use),
            "nodes_with_facts": len(actual.node_facts), "unreachable_nodes": unreachable,
            "pod_mounts": sum(len(f.pod_mounts) for f in actual.node_facts.values()),
            "global_mounts": sum(len(f.global_mounts) for f in actual.node_facts.values()),
            "uncertain_mounts": sum(len(f.uncertain) for f in actual.node_facts.values()),
            "foreign_mounts": sum(f.foreign for f in actual.node_facts.values()),
            "ephemeral_volumes": sum(len(f.ephemeral) for f in actual.node_facts.values()),
            # mounted or mapped from another device than the volume's now (facts device_mismatch): not set up
            "device_mismatches": sum(sum(1 for m in f.pod_mounts.values() if m.device_mismatch)
                                     + sum(1 for g in f.global_mounts.values() if g.get("device_mismatch"))
                                     for f in actual.node_facts.values()),
            "per_node": dict((n, sorted(v)) for n, v in sorted(per_node.items()))}


def facts_errors(node_facts, out_of_service=None):
    """Errors for the nodes whose actual state could not be gathered (unreachable, or the facts module failed).

    node_facts: the planner's {node name: facts}. The planner blocks what needs such a node; this makes
    the run fail at the end as well (a node failed), like a failure in any later phase does. A node with
    the out-of-service taint (out_of_service: names) is expected to be down: not an error.
    """
    errors = []
    down = frozenset(out_of_service or ())
    for node in sorted(node_facts or {}):
        facts = node_facts[node] or {}
        if not facts.get("reachable", True) and node not in down:
            errors.append({"node": node, "phase": "facts", "msg": facts.get("error") or "node facts were not gathered"})
    return errors
