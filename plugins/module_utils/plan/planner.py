# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner: desired + actual state -> ordered plan steps (docs/contracts.md section 3).

A pure function, no I/O; ``now`` comes in through the options. One small function per
rule, called in the order of the plan: the kubelet tears down before it sets up
(pkg/kubelet/volumemanager/reconciler/reconciler_common.go: unmountVolumes,
unmountDetachDevices, mountOrAttachVolumes), and the A/D controller detaches before it
attaches so a rescheduled RWO volume can follow its pod
(pkg/controller/volume/attachdetach/reconciler/reconciler.go reconcile). Every rule walks
its input once, so planning is linear in the cluster size. docs/planner.md explains each rule.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import re
from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.plan.actual_state import (
    ATTACHED, UNCERTAIN, build_actual_state, summarize_actual)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import gc_paused
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import (
    DEFAULT_KNOWN_DRIVERS, PodToMount, build_desired_state, summarize_desired, volume_spec)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.detach import (
    detach_clock, ghost_reason, gone_note, gone_volume_name, safe_name, still_mounted_reason, unreachable_reason)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import format_bytes
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (
    DEFAULT_LOOP_POOLS, OUT_OF_SERVICE_TAINT, inline_volume_name, split_unique_volume_name)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.validation import (
    check_loop_pools, refuse_unsafe_steps)

PHASES = (("unmount", "pod"), ("unmount", "device"), ("cleanup", "directory"), ("detach", "device"),
          ("attach", "device"), ("mount", "device"), ("mount", "pod"), ("expand", "controller"), ("expand", "node"))
# The directories volume_detach's stale_paths removes: what the kubelet's CSI plugin creates.
STALE_PATH = re.compile(r"/plugins/kubernetes\.io/csi/[^/]+/[0-9a-f]{64}/globalmount$|"
                        r"/pods/[^/]+/volumes/kubernetes\.io~csi/[^/]+/mount$")
TEARDOWN = frozenset((("unmount", "pod"), ("unmount", "device"), ("detach", "device")))

DEFAULT_MAX_TEARDOWN_FRACTION = 0.5
DEFAULT_MAX_TEARDOWN_COUNT = 20

PlanOptions = namedtuple("PlanOptions", "force_detach max_wait_for_unmount known_drivers now max_teardown_fraction "
                                        "max_teardown_count allow_mass_teardown loop_pools")
PlanOptions.__new__.__defaults__ = (True, 360, DEFAULT_KNOWN_DRIVERS, None, DEFAULT_MAX_TEARDOWN_FRACTION,
                                    DEFAULT_MAX_TEARDOWN_COUNT, False, DEFAULT_LOOP_POOLS)
PlanOptions.__doc__ = """force_detach: allow the timeout override (reconciler.go !disableForceDetachOnTimeout).
max_wait_for_unmount: seconds (ReconcilerMaxWaitForUnmountDuration, 6 min). now: an aware datetime.
max_teardown_fraction, max_teardown_count, allow_mass_teardown: the teardown guard (teardown_guard).
loop_pools: the operator's loop pools (the nodes' loop_pools): a loop volume naming another is refused here."""


class TeardownRefused(KubevolError):
    """The teardown guard tripped: carries the whole plan result so that the caller can show it."""

    def __init__(self, result):
        guard = result["teardown_guard"]
        listing = "; ".join("%s %s (%s)" % (v["node"], v["volume"], ", ".join(v["steps"])) for v in guard["volumes"])
        msg = ("refusing a mass teardown: this plan would unmount or detach %d of the %d volumes mounted now (the "
               "teardown guard allows at most %d volumes and, from two on, at most %g%% of them): %s. Nothing was "
               "changed on any node. If the cluster snapshot is wrong (a truncated or empty kubectl output, pods "
               "missing), fix it. If this teardown is wanted, allow it for one run with allow_mass_teardown=true "
               "(reconcile role: -e kubevol_allow_mass_teardown=true), or raise max_teardown_fraction / "
               "max_teardown_count (kubevol_max_teardown_fraction / kubevol_max_teardown_count)"
               % (guard["teardown"], guard["mounted"], guard["max_teardown_count"],
                  guard["max_teardown_fraction"] * 100, listing))
        fields = dict((k, result[k]) for k in ("plan", "blocked", "teardown_guard", "summary", "desired", "actual",
                                               "table") if k in result)
        super(TeardownRefused, self).__init__(msg, step="plan", **fields)


def _volume_item(spec):
    """The volume item of a resolved PV without its per-step ``pods`` and ``detach``: what lean_plan keeps."""
    return {"pv_name": spec.pv_name, "driver": spec.driver, "volume_handle": spec.volume_handle,
            "volume_attributes": dict(spec.volume_attributes), "capacity_bytes": spec.capacity_bytes,
            "mode": spec.mode, "fs_type": spec.fs_type, "mount_options": list(spec.mount_options),
            "read_only": spec.read_only, "multi_attach": spec.multi_attach_allowed}


def _item(spec, pods=(), detach=None):
    """The volume item (contracts.md section 1) for a resolved PV; read_only is the PV's own."""
    item = _volume_item(spec)
    item["pods"] = [{"uid": p.uid, "name": p.name, "read_only": p.read_only} for p in pods]
    if detach is not None:
        item["detach"] = detach
    return item


def _item_from_actual(unique_name, pv_name, spec=None, mode="Filesystem", fs_type=None, pods=(), detach=None):
    """An item for something only actual state knows (its PV may be gone): names from the unique name."""
    if spec is not None:
        return _item(spec, pods, detach)
    driver, handle = split_unique_volume_name(unique_name)
    item = {"pv_name": pv_name, "driver": driver, "volume_handle": handle, "volume_attributes": {},
            "capacity_bytes": 0, "mode": mode, "fs_type": fs_type or "ext4", "mount_options": [], "read_only": False,
            "multi_attach": False,
            "pods": [{"uid": p.uid, "name": p.name, "read_only": p.read_only} for p in pods]}
    if detach is not None:
        item["detach"] = detach
    return item


def _step(action, target, node, volume, unique_name, reason, item, pod=None, pod_uid=None, **extra):
    step = {"action": action, "target": target, "node": node, "volume": volume, "pod": pod, "pod_uid": pod_uid,
            "reason": reason, "unique_volume_name": unique_name, "item": item}
    if extra:
        step.update(extra)
    return step


class _Plan:
    """What the rules share while one plan is built: inputs, lookups and the growing result."""

    def __init__(self, desired, actual, index, options):
        self.desired = desired
        self.actual = actual
        self.index = index
        self.options = options
        self.now = options.now or datetime.datetime.now(datetime.timezone.utc)
        self.phases = dict((phase, []) for phase in PHASES)
        self._items = {}
        self.blocked = list(desired.blocked)
        self.detach_requests = []
        self.detach_requests_to_clear = []
        self.spec_by_unique = dict((key[0], nv.spec) for key, nv in desired.volumes.items())
        self.still_mounted = set()      # (unique, node) with a mount that survives this plan's unmounts
        self.detached = set()           # (unique, node) detached by this plan
        self.attached_to = {}           # unique -> nodes this plan attaches to
        self.not_attached = {}          # (unique, node) -> why the device will not be there
        self.grown_to = {}              # pv -> capacity after this plan's controller expansion
        self.rwop_refused = set()       # (pod uid, (unique, node)): a ReadWriteOncePod volume another pod has
        # A volume a pod outside `scope` uses is out of this run's hands on every node: tearing down a
        # leftover mount of it (e.g. after that pod moved) would act on a pod the run must not touch.
        self.protected_volumes = frozenset(unique for unique, _node in desired.protected_pairs)
        # A volume whose PV, claim or pod a node would refuse (plan_validation) and that no pod can have set up: a
        # pod that moved keeps it where it was, on every node, until the object is fixed.
        refused = [u for u in desired.refused_volumes if u not in self.spec_by_unique]
        if refused:
            self.protected_volumes = self.protected_volumes.union(refused)
        # Pairs a live pod still holds although its claim does not resolve now: never torn down.
        self.kept = dict(desired.kept_pairs)
        # node facts split once by reachability: the mount rules ask per (volume, node) pair
        self.unreachable_errors = dict((node, facts.error) for node, facts in actual.node_facts.items()
                                       if not facts.reachable)
        self.reachable_facts = dict((node, facts) for node, facts in actual.node_facts.items() if facts.reachable)
        self.no_picture = _nodes_without_picture(actual, index)
        self.out_of_service = frozenset(n.name for n in index.cluster.nodes if _has_out_of_service_taint(n))
        self.nodeless_holders = {}      # unique -> nodes without a Node object that have it attached
        self.unconfirmed_holders = {}   # unique -> nodes with an attachment node status has not confirmed
        for (unique, node), av in actual.attached.items():
            if node not in index.node_by_name:
                self.nodeless_holders.setdefault(unique, set()).add(node)
            elif av.state == UNCERTAIN:
                facts = self.facts(node)
                if facts is None or unique in facts.devices:
                    # a VolumeAttachment recorded before the attach (or a device the node reports): it may be
                    # attached until the node itself says it is not (actual_state_of_world.go uncertain)
                    self.unconfirmed_holders.setdefault(unique, set()).add(node)

    def add(self, step):
        self.phases[(step["action"], step["target"])].append(step)

    def item_of(self, nv):
        """The volume item of a desired (volume, node) pair, built once for all its steps. It names no pods (each
        step names its own), so lean_plan keeps it as it is."""
        key = (nv.spec.unique_name, nv.node)
        item = self._items.get(key)
        if item is None:
            item = self._items[key] = _volume_item(nv.spec)
        return item

    def block(self, node, volume, pod, reason):
        self.blocked.append({"node": node, "volume": volume, "pod": pod, "reason": reason})

    def unreachable(self, node):
        """The error text when node facts say the node cannot be reached, else None."""
        return self.unreachable_errors.get(node)

    def facts(self, node):
        """Reachable node facts, or None when the mount level of the node is unknown."""
        return self.reachable_facts.get(node)

    def teardown_facts(self):
        """(node, facts) of the nodes whose mounts may be torn down: reachable, and pictured by the snapshot."""
        for node, facts in self.actual.node_facts.items():
            if facts.reachable and node not in self.no_picture:
                yield node, facts

    def spec_for(self, unique_name):
        """The desired VolumeSpec, else one built from the PV if it still exists, else None."""
        spec = self.spec_by_unique.get(unique_name)
        if spec is None:
            pv = self.index.pv_by_unique_name.get(unique_name)
            if pv is not None:
                spec = self.spec_by_unique[unique_name] = volume_spec(pv, None, True)
        return spec

    def pv_name_for(self, unique_name, fallback=None):
        pv = self.index.pv_by_unique_name.get(unique_name)
        return pv.name if pv is not None else fallback


def _nodes_without_picture(actual, index):
    """Nodes whose facts report volumes but whose Node object the snapshot lacks: {node: reason}.

    Such a snapshot is not a picture of that node (a truncated kubectl output, a List of another cluster),
    so nothing is unmounted or detached there. The kubelet likewise removes nothing before its pod
    sources are ready (reconstruct.go readyToUnmount, populatorHasAddedPods)."""
    missing = {}
    for node, facts in actual.node_facts.items():
        if not facts.reachable or node in index.node_by_name:
            continue
        held = (len(facts.devices) + len(facts.global_mounts) + len(facts.pod_mounts) + len(facts.uncertain)
                + len(facts.ephemeral))
        if held:
            missing[node] = ("the cluster snapshot has no Node object %s, but the node reports %d volume mount(s) "
                             "or device(s): the snapshot is not a picture of this node, so nothing is unmounted or "
                             "detached there. Check the snapshot (kubectl get nodes,pods,pv,pvc,volumeattachments,"
                             "csidrivers -A -o yaml) and the inventory's node names (kubevol_node_name)" % (node, held))
    return missing


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
                p.block(node, entry.pv_name, p.desired.pod_by_uid.get(entry.pod_uid), entry.reason)
                continue
            if entry.mounted:
                p.block(node, entry.pv_name, p.desired.pod_by_uid.get(entry.pod_uid),
                        "cannot identify the volume mounted at %s (%s); kubevol leaves it and its device alone: "
                        "restore its vol_data.json or unmount it by hand" % (entry.path, entry.reason))
                continue
            if entry.kind == "pod" and (entry.pod_uid, node) in p.desired.live_pods:
                continue  # a running pod's directory: the mount rules decide
            if not STALE_PATH.search(entry.path or ""):
                p.block(node, entry.pv_name, p.desired.pod_by_uid.get(entry.pod_uid),
                        "stale directory %s cannot be identified (%s) and is not one kubevol removes (a CSI globalmount "
                        "or a pod's volume mount directory); remove it by hand" % (entry.path, entry.reason))
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
    volumes = p.desired.volumes
    protected = p.desired.protected_pod_uids
    live = p.desired.live_pods
    wanted = set()
    for (unique, node), nv in volumes.items():
        for pod in nv.mount_pods:
            wanted.add((node, pod.uid, nv.spec.pv_name))
    named = {}  # (unique, node) -> the PV name of this plan's one item of that volume on that node
    for node, facts in p.teardown_facts():
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
            if not pm.mounted:
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
                    p.block(node, gm.get("pv_name") or unique, None, "not unmounted: the PV of %s is gone and %s"
                            % (unique, how))
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


def _has_out_of_service_taint(node):
    """reconciler.go hasOutOfServiceTaint: the key alone counts."""
    return node is not None and any(t.key == OUT_OF_SERVICE_TAINT for t in node.taints)


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
                p.block(node, names[1], None, "not detached: the PV of %s is gone and %s" % (unique, how))
                continue
            gone = gone_note(pv_name, how)
        node_obj = p.index.node_by_name.get(node)
        if node_obj is None and not p.index.node_by_name:
            p.block(node, pv_name, None, "not detached: the cluster snapshot has no Node object at all, so it is not "
                    "a picture of the cluster's nodes; write it again with nodes included (kubectl get nodes,pods,"
                    "pv,pvc,volumeattachments,csidrivers -A -o yaml)")
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
    for pair, nv in p.desired.volumes.items():
        av = attached.get(pair)
        if av is not None and av.detach_requested_at:
            # attachDesiredVolumes ResetDetachRequestTime: wanted again, the old request is stale
            p.detach_requests_to_clear.append({"name": av.va_name, "node": nv.node, "volume": nv.spec.pv_name})
        if not nv.spec.attachable:
            continue  # attachRequired: false, the kubelet mounts without an attach
        unique, node = pair
        facts = reachable_facts.get(node)
        device_seen = facts is not None and unique in facts.devices
        if not nv.attach:
            if av is None and not device_seen:
                p.not_attached[pair] = ("node %s is not managed by the attach/detach controller (no annotation "
                                        "volumes.kubernetes.io/controller-managed-attach-detach)" % node)
            continue
        error = unreachable_errors.get(node)
        if error is not None:
            p.not_attached[pair] = "node unreachable: %s" % error
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
        p.attached_to.setdefault(unique, set()).add(node)
        # No release of another node's hold in the backend goes with the attach: the out-of-service taint and a
        # detach recorded without the node release the records, not the node's device (a node that was only
        # unreachable still has it). The backend waits for that node's own detach, or the operator's
        # force_release_holders (drivers/loop.py attach).
        p.add(_step("attach", "device", node, nv.spec.pv_name, unique, why, p.item_of(nv)))


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
        p.block(nv.node, nv.spec.pv_name, pod, reason + (" (%s)" % "; ".join(down) if down else ""))
    p.not_attached[(nv.spec.unique_name, nv.node)] = "Multi-Attach error"


def mount_devices(p):
    """Global (staging) mounts for Filesystem volumes with pods to mount: MountVolume's MountDevice half."""
    reachable_facts, unreachable_errors, not_attached = p.reachable_facts, p.unreachable_errors, p.not_attached
    add = p.phases[("mount", "device")].append
    for pair, nv in p.desired.volumes.items():
        if not nv.mount_pods:
            continue
        unique, node = pair
        error = unreachable_errors.get(node)
        if error is not None:
            p.block(node, nv.spec.pv_name, None, "node unreachable: %s" % error)
            continue
        waiting = not_attached.get(pair)
        if waiting is not None:
            if not waiting.startswith("node unreachable") and waiting != "Multi-Attach error":
                p.block(node, nv.spec.pv_name, None, "volume is not attached: %s" % waiting)
            continue
        if nv.spec.mode != "Filesystem":
            continue  # Block volumes are mapped per pod
        facts = reachable_facts.get(node)
        current = facts.global_mounts.get(unique) if facts is not None else None
        why = "pod(s) %s on node %s mount it" % (", ".join([m.name for m in nv.mount_pods]), node)
        if current and current.get("mounted"):
            writers = [m.name for m in nv.mount_pods if not m.read_only]
            if not current.get("read_only") or nv.read_only or not writers:
                continue
            # NodeStage is read-write; readOnly is applied per pod at publish (csi_attacher.go MountDevice,
            # csi_mounter.go SetUpAt). A staging mount an older run left read-only is fixed for its writers.
            why = "remount read-write: the staging mount is read-only but pod(s) %s write to it" % ", ".join(writers)
        add(_step("mount", "device", node, nv.spec.pv_name, unique, why, p.item_of(nv)))


def read_write_once_pod(p):
    """A ReadWriteOncePod volume serves one pod: operation_generator.go GenerateMountVolumeFunc refuses a second
    pod with "volume uses the ReadWriteOncePod access mode and is already in use by another pod" (the
    scheduler's VolumeRestrictions plugin keeps such a pod Pending; e2e storage/testsuites/readwriteoncepod.go).
    Across nodes the volume is not multi-attachable, so attach already refuses a second node. On one node the
    pod that has it mounted keeps it, else the oldest pod (creationTimestamp, then name)."""
    for pair, nv in p.desired.volumes.items():
        if "ReadWriteOncePod" not in nv.spec.access_modes or len(nv.mount_pods) < 2:
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
                    "volume uses the ReadWriteOncePod access mode and is already in use by another pod (%s); "
                    "delete one of the pods or give this one its own claim" % ordered[0].name)


def fs_group_to_apply(p, spec, pod):
    """The fsGroup the kubelet applies after publishing, or None: csi_mounter.go supportsFSGroup. The CSIDriver's
    fsGroupPolicy None: never; File: always; ReadWriteOnceWithFSType (the default): only when the PV names an
    fsType and its access modes include ReadWriteOnce. Block volumes have no files to re-group."""
    if pod.fs_group is None or spec.mode != "Filesystem" or pod.read_only:
        return None
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
    rwop_refused = p.rwop_refused
    add = p.phases[("mount", "pod")].append
    for pair, nv in p.desired.volumes.items():
        unique, node = pair
        if not nv.mount_pods or node in unreachable_errors or pair in not_attached:
            continue
        facts = reachable_facts.get(node)
        item = None
        for pod in nv.mount_pods:
            if rwop_refused and (pod.uid, pair) in rwop_refused:
                continue
            # fs_group_to_apply's first test, here: most pods have no fsGroup
            fs_group = fs_group_to_apply(p, nv.spec, pod) if pod.fs_group is not None else None
            current = facts.pod_mounts.get((pod.uid, nv.spec.pv_name)) if facts is not None else None
            if current is not None and current.mounted:
                if current.read_only != pod.read_only:
                    why = "remount: read-only changed"
                elif fs_group is not None and _root_needs_fs_group(current, fs_group):
                    why = "apply fsGroup %d of pod %s (volume root has group %s, mode %s)" % (
                        fs_group, pod.name, current.root_gid, current.root_mode)
                else:
                    continue
            else:
                why = "pod %s uses it" % pod.name
            # the volume's one item; each pod step carries its pod's read-only flag and fsGroup
            extra = {}
            if fs_group is not None:
                extra = {"pod_fs_group": fs_group, "pod_fs_group_change_policy": pod.fs_group_change_policy or "Always"}
            if item is None:
                item = p.item_of(nv)
            add(_step("mount", "pod", node, nv.spec.pv_name, unique, why, item, pod=pod.name,
                      pod_uid=pod.uid, pod_read_only=pod.read_only, **extra))


def _inline_item(iv):
    """The volume item (contracts.md section 1) of an inline ephemeral volume: its one pod, its own handle."""
    return {"pv_name": iv.volume_name, "driver": iv.driver, "volume_handle": iv.volume_handle,
            "volume_attributes": dict(iv.volume_attributes), "capacity_bytes": iv.capacity_bytes,
            "mode": "Filesystem", "fs_type": iv.fs_type, "mount_options": [], "read_only": False,
            "multi_attach": False, "ephemeral": True,
            "pods": [{"uid": iv.pod_uid, "name": iv.pod, "read_only": iv.read_only}]}


def publish_inline(p):
    """Inline ephemeral CSI volumes (pod.spec.volumes[].csi) to publish: csi_plugin.go getVolumeLifecycleMode
    (a pod's csi source is Ephemeral) and supportsVolumeLifecycleMode (checked in desired_state.inline_volume);
    the volume is neither attachable nor device-mountable (csi_plugin.go CanAttach, CanDeviceMount), so there is
    no attach, no VolumeAttachment and no staging: csi_mounter.go SetUpAt publishes it straight into
    pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount with the handle makeVolumeHandle gives, once per pod
    (util.go GetUniqueVolumeNameFromSpecWithPod: kubernetes.io/csi/<pod uid>-<volume>). The step is a mount/pod
    step marked ``ephemeral``: the driver creates the volume for the pod there. A pod runs on one node: while
    another node still reports the pod's inline volume (its nodeName was rewritten in a snapshot) and this plan
    does not unpublish it there, that volume is the pod's data and nothing new is created for it."""
    unpublishing = set((s["node"], s["pod_uid"], s["item"]["pv_name"]) for s in p.phases[("unmount", "pod")]
                       if s.get("ephemeral"))
    published_on = {}
    for node, facts in p.actual.node_facts.items():
        if facts.reachable:
            for uid, volume in facts.ephemeral:
                if (node, uid, volume) not in unpublishing:
                    published_on.setdefault((uid, volume), []).append(node)
    for key in sorted(p.desired.inline_volumes):
        iv = p.desired.inline_volumes[key]
        label = "%s/%s" % (iv.pod, iv.volume_name)
        error = p.unreachable(iv.node)
        if error is not None:
            p.block(iv.node, label, iv.pod, "node unreachable: %s" % error)
            continue
        elsewhere = sorted(n for n in published_on.get((iv.pod_uid, iv.volume_name), ()) if n != iv.node)
        if elsewhere:
            p.block(iv.node, label, iv.pod, "pod %s's inline volume %s is still on node %s, where the snapshot does "
                    "not place the pod; a pod runs on one node: remove it there first (delete the pod and let "
                    "the volume go with it)" % (iv.pod, iv.volume_name, ", ".join(elsewhere)))
            continue
        facts = p.facts(iv.node)
        current = facts.ephemeral.get((iv.pod_uid, iv.volume_name)) if facts is not None else None
        why = ("pod %s uses inline volume %s: create and publish its %s %s volume (%s)"
               % (iv.pod, iv.volume_name, format_bytes(iv.capacity_bytes), iv.fs_type, iv.kubernetes_name))
        if current is not None and current.mounted:
            # published; a pod's spec cannot change, so neither can its read-only flag; its fsGroup is re-checked
            if iv.fs_group is None or not _root_needs_fs_group(current, iv.fs_group):
                continue
            why = "apply fsGroup %d of pod %s to inline volume %s (volume root has group %s, mode %s)" % (
                iv.fs_group, iv.pod, iv.volume_name, current.root_gid, current.root_mode)
        extra = {}
        if iv.fs_group is not None:
            extra = {"pod_fs_group": iv.fs_group, "pod_fs_group_change_policy": iv.fs_group_change_policy or "Always"}
        p.add(_step("mount", "pod", iv.node, label, iv.unique_name, why, _inline_item(iv), pod=iv.pod,
                    pod_uid=iv.pod_uid, pod_read_only=iv.read_only, ephemeral=True,
                    kubernetes_volume_name=iv.kubernetes_name, **extra))


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
                p.block(node, volume_name, name or uid, "inline volume %s of pod %s has the volume handle %s, which PV "
                        "%s also names: it is not unpublished, so that the PV's image is never deleted. Unmount it "
                        "on the node by hand, or give the PV its own image" % (
                            volume_name, name or uid, em.volume_handle, pv_name))
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
    return ("the expansion of PVC %s to %s was marked %s; it is not retried at that size: lower "
            "spec.resources.requests.storage below %s%s to try a size that can work" % (
                spec.claim_key, format_bytes(spec.allocated_bytes), spec.resize_status,
                format_bytes(spec.allocated_bytes), floor))


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
        refused = expansion_refused(spec)
        if refused is not None:
            p.block(nvs[0].node, pv_name, None, refused)
            continue
        node = _first_node(p, nvs)
        if node is None:
            p.block(nvs[0].node, pv_name, None, "node unreachable: %s" % p.unreachable(nvs[0].node))
            continue
        p.grown_to[pv_name] = spec.request_bytes
        p.add(_step("expand", "controller", node, pv_name, spec.unique_name,
                    "PVC %s requests %s, PV has %s: grow the backing volume" % (
                        spec.claim_key, format_bytes(spec.request_bytes), format_bytes(spec.capacity_bytes)),
                    _item(spec), size_from=spec.capacity_bytes, size_to=spec.request_bytes, pvc=spec.claim_key))


def expand_node(p):
    """PV capacity above PVC status capacity on a volume pods use read-write:
    desired_state_of_world_populator.go checkVolumeFSResize. A Filesystem volume's filesystem grows; a Block
    volume's device is rescanned (NodeExpandVolume runs for Block volumes too). With the PVC's expansion state
    recorded (RecoverVolumeExpansionFailure) the node acts only on NodeResizePending / NodeResizeInProgress
    (node_expander.go runPreCheck); otherwise the expansion counts as finished."""
    for pair, nv in p.desired.volumes.items():
        spec = nv.spec
        if not nv.mount_pods or nv.claims_read_only or spec.claim_capacity_bytes is None:
            continue
        target = p.grown_to.get(spec.pv_name, spec.capacity_bytes)
        if target <= spec.claim_capacity_bytes or pair in p.not_attached:
            continue
        refused = expansion_refused(spec)
        if refused is not None:
            p.block(nv.node, spec.pv_name, None, refused)
            continue
        if ((spec.allocated_bytes is not None or spec.resize_status) and spec.pv_name not in p.grown_to
                and spec.resize_status not in NODE_RESIZE_STATES):
            continue  # node_expander.go: neither pending nor in progress on the node: nothing for the kubelet
        error = p.unreachable(nv.node)
        if error is not None:
            p.block(nv.node, spec.pv_name, None, "node unreachable: %s" % error)
            continue
        what = "grow the filesystem" if spec.mode == "Filesystem" else "rescan the block device"
        p.add(_step("expand", "node", nv.node, spec.pv_name, spec.unique_name,
                    "PV capacity %s is above the claim's %s: %s" % (
                        format_bytes(target), format_bytes(spec.claim_capacity_bytes), what), _item(spec),
                    size_from=spec.claim_capacity_bytes, size_to=target, pvc=spec.claim_key))


def in_use_repairs(p, steps):
    """node.status.volumesInUse set right from what each reachable node has mounted, as the kubelet reports its
    mounted volumes in volumesInUse on every status update (kubelet_node_status.go): ``{node,
    unique_volume_names, in_use: true}`` for mounted volumes the list lacks (a record lost with a killed run, an
    API gone after the mount) and ``in_use: false`` for listed volumes of a kubevol driver the node no longer
    has mounted. Pairs this plan mounts or tears down are left to their own records; other drivers' entries
    belong to their own node plugins and are never touched."""
    pictured = [(node, facts) for node, facts in p.teardown_facts() if node in p.index.node_by_name]
    if not pictured:
        return []  # no node facts (a plan from the cluster alone): nothing mounted is known to repair from
    planned = set((s["unique_volume_name"], s["node"]) for s in steps
                  if (s["action"], s["target"]) in (("unmount", "device"), ("detach", "device"), ("mount", "device"),
                                                    ("mount", "pod")))
    listed = {}
    for unique, node in p.actual.in_use:
        listed.setdefault(node, set()).add(unique)
    still_mounted = {}
    for unique, node in p.still_mounted:  # grouped once: a scan per node would be nodes x mounts
        still_mounted.setdefault(node, []).append(unique)
    known = frozenset(p.options.known_drivers or ())
    missing, stale = {}, {}
    for node, facts in pictured:
        mounted = set(u for u, gm in facts.global_mounts.items() if gm.get("mounted"))
        mounted.update(pm.unique_name for pm in facts.pod_mounts.values() if pm.mounted and pm.mode == "Block")
        mounted.update(still_mounted.get(node, ()))
        for unique in mounted - listed.get(node, set()):
            if (unique, node) not in planned:
                missing.setdefault(node, []).append(unique)
        for unique in listed.get(node, set()) - mounted:
            parts = split_unique_volume_name(unique)
            if parts and parts[0] in known and (unique, node) not in planned:
                stale.setdefault(node, []).append(unique)
    repairs = [{"node": node, "unique_volume_names": sorted(names), "in_use": True}
               for node, names in sorted(missing.items())]
    repairs.extend({"node": node, "unique_volume_names": sorted(names), "in_use": False}
                   for node, names in sorted(stale.items()))
    return repairs


def _mounted_now(p):
    """(unique name, node) pairs mounted now: node facts where known, else node.status.volumesInUse."""
    mounted = set()
    for node, facts in p.reachable_facts.items():
        mounted.update((unique, node) for unique, gm in facts.global_mounts.items() if gm.get("mounted"))
        mounted.update((pm.unique_name, node) for pm in facts.pod_mounts.values() if pm.mounted)
        mounted.update((em.unique_name, node) for em in facts.ephemeral.values() if em.mounted)
    with_facts = p.reachable_facts
    mounted.update(pair for pair in p.actual.in_use if pair[1] not in with_facts)
    return mounted


def teardown_guard(p, steps):
    """terraform's prevent_destroy, linux-system-roles storage's safe_mode: a plan that would unmount or
    detach more than max_teardown_count of the volumes mounted now, or (two or more) more than
    max_teardown_fraction of them, is refused unless allow_mass_teardown. A snapshot that lost its pods
    looks exactly like a cluster that wants every volume gone; this guard is the last line before the nodes."""
    opts = p.options
    mounted = _mounted_now(p)
    torn = {}
    for step in steps:
        if (step["action"], step["target"]) not in TEARDOWN:
            continue
        pair = (step["unique_volume_name"], step["node"])
        if pair in mounted:
            torn.setdefault(pair, []).append("%s/%s" % (step["action"], step["target"]))
    count = len(torn)
    over = count > opts.max_teardown_count or (count > 1 and count > opts.max_teardown_fraction * len(mounted))
    return {"mounted": len(mounted), "teardown": count, "max_teardown_fraction": opts.max_teardown_fraction,
            "max_teardown_count": opts.max_teardown_count, "allow_mass_teardown": bool(opts.allow_mass_teardown),
            "tripped": bool(over and not opts.allow_mass_teardown),
            "volumes": [{"node": node, "volume": p.pv_name_for(unique, split_unique_volume_name(unique)[1]
                                                               if split_unique_volume_name(unique) else unique),
                         "steps": torn[(unique, node)]} for unique, node in sorted(torn, key=lambda u: (u[1], u[0]))]}


def lean_plan(steps, in_place=False):
    """{plan, volume_items, by_node} from ordered steps that each carry their volume item (``item``).

    Each (node, volume) item is kept once in ``volume_items`` ({node: {unique name: item}}, without the per-step
    ``pods`` and ``detach``); a step names it by node and unique_volume_name, and a pod-level step keeps its
    pod's read-only flag (``pod_read_only``). ``by_node`` holds the positions of each node's steps, so each
    host's slice is cut in its own size. The result grows with steps + volumes, not steps x item size.
    in_place: the steps and their items are the caller's own (the planner's), changed instead of copied; an item
    without ``pods`` and ``detach`` is kept as it is."""
    plan, items, by_node = [], {}, {}
    node = node_items = positions = None  # the last step's node: the steps of a phase come node by node
    for step in steps:
        if not in_place:
            step = dict(step)
        if step["node"] != node or positions is None:
            node = step["node"]
            node_items = items.get(node)
            positions = by_node.get(node)
            if positions is None:
                positions = by_node[node] = []
        item = step.pop("item", None)
        if item is not None:
            if node_items is None:
                node_items = items[node] = {}
            unique = step["unique_volume_name"]
            if unique not in node_items:
                if in_place and "pods" not in item and "detach" not in item:
                    node_items[unique] = item
                else:
                    kept = node_items[unique] = dict(item)
                    kept.pop("pods", None)
                    kept.pop("detach", None)
            if "pod_read_only" not in step and step.get("pod_uid") is not None and item.get("pods"):
                step["pod_read_only"] = bool(item["pods"][0].get("read_only"))
        positions.append(len(plan))
        plan.append(step)
    return {"plan": plan, "volume_items": items, "by_node": by_node}


def _sort_key(step):
    return (step["node"] or "", step["volume"] or "", step["pod"] or "", step["pod_uid"] or "")


def _in_order(steps):
    """The steps stably sorted by _sort_key. They are grouped by node first and each node's few steps sorted
    alone: the same order as one sort, with far fewer comparisons (about a dozen steps per node at 5,000 nodes)."""
    by_node = {}
    for step in steps:
        node = step["node"] or ""
        group = by_node.get(node)
        if group is None:
            group = by_node[node] = []
        group.append(step)
    ordered = []
    for node in sorted(by_node):
        ordered.extend(sorted(by_node[node], key=_sort_key) if len(by_node[node]) > 1 else by_node[node])
    return ordered


def plan(desired, actual, index, options=None):
    """The ordered plan. Returns {plan, volume_items, by_node, blocked, detach_requests, detach_requests_to_clear, summary,
    teardown_guard, in_use_repairs, nodes_out_of_service}: ``plan`` is the steps in order, each naming its node and
    volume; ``volume_items`` holds the volume item of each (node, volume) once; ``by_node`` the positions of each node's
    steps."""
    options = options or PlanOptions()
    if not isinstance(options.max_wait_for_unmount, int) or options.max_wait_for_unmount < 0:
        raise InvalidInput(field="max_wait_for_unmount", value=options.max_wait_for_unmount,
                           reason="must be a non-negative number of seconds")
    if not isinstance(options.max_teardown_fraction, (int, float)) or not 0 <= options.max_teardown_fraction <= 1:
        raise InvalidInput(field="max_teardown_fraction", value=options.max_teardown_fraction,
                           reason="must be a number from 0 to 1 (0.5: at most half of the mounted volumes)")
    if not isinstance(options.max_teardown_count, int) or options.max_teardown_count < 0:
        raise InvalidInput(field="max_teardown_count", value=options.max_teardown_count,
                           reason="must be a non-negative number of volumes")
    check_loop_pools(options.loop_pools)
    p = _Plan(desired, actual, index, options)
    for node, reason in sorted(p.no_picture.items()):
        p.block(node, None, None, reason)
    uncertain_mounts(p)     # kubelet: what reconstruction could not identify, per volume
    unmount_pods(p)         # kubelet: pods first, so their devices become free
    unpublish_inline(p)     # kubelet: inline ephemeral volumes of gone pods; the driver deletes them
    unmount_devices(p)      # kubelet: then the global mounts no pod needs
    detach(p)               # controller: detach before attach so an RWO volume can follow its pod
    attach(p)               # controller: attach, refusing a second node for RWO/RWOP volumes
    mount_devices(p)        # kubelet: stage the device once per node
    read_write_once_pod(p)  # kubelet: one pod per ReadWriteOncePod volume
    mount_pods(p)           # kubelet: then publish it to each pod
    publish_inline(p)       # kubelet: inline ephemeral volumes, published straight into their pod
    expand_controller(p)    # resizer: grow the backing volume and the PV
    expand_node(p)          # kubelet: then grow the filesystem on the node using it
    refuse_unsafe_steps(p, PHASES, options.loop_pools)  # last line before any node: what a node would refuse
    steps = []
    summary = {}
    for phase in PHASES:
        phase_steps = _in_order(p.phases[phase])
        steps.extend(phase_steps)
        summary[phase[0]] = summary.get(phase[0], 0) + len(phase_steps)
    lean = lean_plan(steps, in_place=True)
    blocked = dict(((b["node"], b["volume"], b["pod"], b["reason"]), b) for b in p.blocked)  # each entry once
    summary["blocked"] = len(blocked)
    summary["skipped"] = desired.skipped
    return {"plan": lean["plan"], "volume_items": lean["volume_items"], "by_node": lean["by_node"],
            "blocked": [blocked[key] for key in sorted(blocked, key=lambda k: tuple(x or "" for x in k))],
            "detach_requests": p.detach_requests, "detach_requests_to_clear": p.detach_requests_to_clear,
            "teardown_guard": teardown_guard(p, steps), "summary": summary, "in_use_repairs": in_use_repairs(p, steps),
            "nodes_out_of_service": sorted(p.out_of_service)}


def plan_cluster(index, node_facts=None, options=None, scope=None):
    """Desired state, actual state and plan in one call: what volume_reconcile_plan returns."""
    options = options or PlanOptions()
    with gc_paused():  # the states and the plan are acyclic; see cluster.gc_paused
        desired = build_desired_state(index, options.known_drivers, scope, options.loop_pools)
        actual = build_actual_state(index, node_facts, options.known_drivers)
        result = plan(desired, actual, index, options)
        result["desired"] = summarize_desired(desired)
        result["actual"] = summarize_actual(actual)
    return result


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc)
