# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the planner's rules share (plan/planner.py): the phases, the options, the volume items, the steps and
_Plan, the inputs and lookups of one plan being built. Split from planner.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.plan.actual_state import UNCERTAIN
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import NODE_UNKNOWN
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import DEFAULT_KNOWN_DRIVERS, volume_spec
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import DEFAULT_LOOP_POOLS, OUT_OF_SERVICE_TAINT, split_unique_volume_name
from ansible_collections.kubevol.volumes.plugins.module_utils.common.phases import STEP_KINDS
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import CSI, get_plugin, is_in_tree, plugin_name_of


DEFAULT_MAX_TEARDOWN_FRACTION = 0.5
DEFAULT_MAX_TEARDOWN_COUNT = 20

PlanOptions = namedtuple("PlanOptions", "force_detach max_wait_for_unmount known_drivers now max_teardown_fraction "
                                        "max_teardown_count allow_mass_teardown loop_pools driver_options stage "
                                        "max_volume_deletions allow_mass_deletion provisioning")
PlanOptions.__new__.__defaults__ = (True, 360, DEFAULT_KNOWN_DRIVERS, None, DEFAULT_MAX_TEARDOWN_FRACTION,
                                    DEFAULT_MAX_TEARDOWN_COUNT, False, DEFAULT_LOOP_POOLS, None, "all", 3, False, True)
PlanOptions.__doc__ = """force_detach: allow the timeout override (reconciler.go !disableForceDetachOnTimeout).
max_wait_for_unmount: seconds (ReconcilerMaxWaitForUnmountDuration, 6 min). now: an aware datetime.
max_teardown_fraction, max_teardown_count, allow_mass_teardown: the teardown guard (teardown_guard).
loop_pools: the operator's loop pools (the nodes' loop_pools): a loop volume naming another is refused here.
driver_options: {plugin or driver name: {option: value}} (common/driver_options.py; None: the defaults): the
directories local and hostPath PVs may use.
stage: all (the whole reconcile), node (the kubelet's share) or attach_detach (the A/D controller's): plan/stages.py.
max_volume_deletions, allow_mass_deletion: the deletion guard (plan/rules_delete.py); provisioning: False plans no
CreateVolume (the plan made again after this run's provisioning: plan/storage_plan.py)."""


def _volume_item(spec):
    """The volume item of a resolved PV without its per-step ``pods`` and ``detach``: what lean_plan keeps. A local
    or hostPath item also names its plugin, path and hostPath type (contracts.md section 1); a CSI item leaves
    ``plugin`` out (its default)."""
    item = {"pv_name": spec.pv_name, "driver": spec.driver, "volume_handle": spec.volume_handle,
            "volume_attributes": dict(spec.volume_attributes), "capacity_bytes": spec.capacity_bytes,
            "mode": spec.mode, "fs_type": spec.fs_type,
            "mount_options": list(spec.mount_options) if spec.mount_options else [],  # most have none
            "read_only": spec.read_only, "multi_attach": spec.multi_attach_allowed}
    if spec.plugin == CSI:
        if spec.driver not in DEFAULT_KNOWN_DRIVERS:
            # an external CSI driver's item (drivers/external/): what its requests are built from
            item["attach_required"] = bool(spec.attachable)
            item["access_modes"] = list(spec.access_modes or ())
            if spec.pod_info_on_mount:
                item["pod_info_on_mount"] = True  # its pods' name, namespace, uid, service account in volume_context
            if spec.secret_refs:
                # the references only: node_phases reads the Secrets when it runs the node task (never in a plan)
                item["secret_refs"] = dict(spec.secret_refs)
    else:
        item["plugin"] = spec.plugin
        item["path"] = spec.path
        item["host_path_type"] = spec.host_path_type
    return item


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
    plugin = plugin_name_of(unique_name)
    if is_in_tree(plugin):
        # a local or hostPath (in-tree plugin's) volume whose PV is gone: its unique name is <plugin>/<pv>; the teardown needs no path
        item = {"plugin": plugin, "pv_name": pv_name, "driver": None, "volume_handle": pv_name, "path": None,
                "host_path_type": "", "volume_attributes": {}, "capacity_bytes": 0, "mode": mode,
                "fs_type": fs_type or "ext4", "mount_options": [], "read_only": False, "multi_attach": False,
                "pods": [{"uid": p.uid, "name": p.name, "read_only": p.read_only} for p in pods]}
        if detach is not None:
            item["detach"] = detach
        return item
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
        self.phases = dict((phase, []) for phase in STEP_KINDS)
        self.items = {}  # (unique name, node) -> the volume item of that desired pair (item_of)
        self._plugins = {}  # plugin name -> class (plugin())
        self.blocked = list(desired.blocked)
        self.pending = []               # node-side grows not tried in this plan (rules_expand.py grow_waits)
        self.detach_requests = []
        self.detach_requests_to_clear = []
        self.spec_by_unique = {key[0]: nv.spec for key, nv in desired.volumes.items()}
        self.still_mounted = set()      # (unique, node) with a mount that survives this plan's unmounts
        self.detached = set()           # (unique, node) detached by this plan
        self.attached_to = {}           # unique -> nodes this plan attaches to
        self.not_attached = {}          # (unique, node) -> why the device will not be there
        self.device_changed = {}        # (unique, node) -> why its global mount is not its device now (blocked)
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

    def plugin(self, spec):
        """The volume plugin class of a VolumeSpec (volume/): its capabilities decide which steps apply. Looked up
        in the registry once per plugin name in a plan (the rules ask it for every volume)."""
        cls = self._plugins.get(spec.plugin)
        if cls is None:
            cls = self._plugins[spec.plugin] = get_plugin(spec.plugin)
        return cls

    def add(self, step):
        self.phases[(step["action"], step["target"])].append(step)

    def item_of(self, nv):
        """The volume item of a desired (volume, node) pair, built once for all its steps. It names no pods (each
        step names its own), so lean_plan keeps it as it is."""
        key = (nv.spec.unique_name, nv.node)
        item = self.items.get(key)
        if item is None:
            item = self.items[key] = _volume_item(nv.spec)
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
            # the snapshot is not a picture of this node: nothing is unmounted or detached there
            missing[node] = ("node %s reports %d volume mount(s) or device(s) but the cluster snapshot has no Node "
                             "object %s: write the snapshot again with its nodes, or fix the host's %s [%s]"
                             % (node, held, node, setting("node_name"), NODE_UNKNOWN))
    return missing


def _has_out_of_service_taint(node):
    """reconciler.go hasOutOfServiceTaint: the key alone counts."""
    return node is not None and any(t.key == OUT_OF_SERVICE_TAINT for t in node.taints)
