# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Desired state of world: which volume each node should have attached and mounted.

Attach level follows the A/D controller (pkg/controller/volume/attachdetach/util/util.go
ProcessPodVolumes, CreateVolumeSpec; attach_detach_controller.go addNodeToDswp); mount
level follows the kubelet's populator (pkg/kubelet/volumemanager/populator/
desired_state_of_world_populator.go), which runs on every node. Both are keyed by
(unique volume name, node): two pods on one node share one entry.

Where Kubernetes skips a volume silently (unbound claim, missing PV, claimRef uid
mismatch), kubevol reports it in ``blocked`` so a person can act on it. Such a
failure never releases anything: a scheduled pod that is not terminated keeps
what it has mounted and attached (the populator removes a pod's volumes only when
the pod is deleted or terminated: findAndRemoveDeletedPods), so its pairs are
``kept`` whenever the PV behind the claim can still be found.

Local and hostPath PVs are kubevol's own in-tree plugins' (volume/local.py, volume/host_path.py, found through
the registry): never attached, refused with Kubernetes' words where Kubernetes or the operator's driver_options
refuse them (each plugin's refusals, asked by plan/plugin_specs.py), and a pod on a node outside a PV's
nodeAffinity is blocked as the scheduler would never place it there.

Volumes of drivers kubevol has no backend for (other CSI drivers, in-tree
attachable plugins) are foreign: counted, never planned, never blocked; their own
kubelet plugin owns them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import node_is_managed, annotation
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (
    DEFAULT_LOOP_POOLS, FS_GROUP_CHANGE_POLICIES, MAX_GROUP_ID, is_group_id)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import (
    CLAIM_UNBOUND, NODE_UNKNOWN, OBJECT_REFUSED)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.validation import (
    label, plain_name, pod_refusals, refused_text)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.inline import (  # noqa: F401  # pylint: disable=unused-import
    FS_GROUP_POLICIES, InlineVolume, _add_inline_volume, inline_fs_group, inline_volume, lifecycle_mode_error)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import pv_unique_name
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.plugin_specs import affinity_conflict, node_text
# the claim resolution, split out; its names stay importable from here
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.resolve import (  # noqa: F401  # pylint: disable=unused-import
    DEFAULT_KNOWN_DRIVERS, FOREIGN, IN_TREE_ATTACHABLE, VolumeSpec, _Resolver, is_multi_attach_allowed,
    is_pv_read_only, known_drivers_of, volume_spec)

KEEP_TERMINATED_POD_VOLUMES_ANNOTATION = "volumes.kubernetes.io/keep-terminated-pod-volumes"

PodToMount = namedtuple("PodToMount", "uid name read_only fs_group fs_group_change_policy created service_account")
PodToMount.__new__.__defaults__ = (None, None, None, "")
PodToMount.__doc__ = """fs_group, fs_group_change_policy: the pod's securityContext (validated);
created: its creationTimestamp (ReadWriteOncePod: the older pod keeps the volume); service_account: its
spec.serviceAccountName (an external CSI driver's volume_context when its CSIDriver sets podInfoOnMount)."""
NodeVolume = namedtuple("NodeVolume", "spec node attach pods mount_pods read_only claims_read_only")
NodeVolume.__doc__ = """One (volume, node) pair. attach: the A/D controller attaches it here (managed node,
attachable volume). pods: "ns/name" of every pod that references it (multi-attach messages).
mount_pods: PodToMount for each pod whose containers mount or map it. read_only: the PV itself is
read-only (staging is read-only only then; a pod's readOnly is its own bind mount). claims_read_only:
read_only, or every pod's claim source is readOnly (then the filesystem is not grown)."""

DesiredState = namedtuple("DesiredState", "volumes blocked skipped foreign pods_considered protected_pairs "
                                          "protected_pod_uids pod_by_uid kept_pairs live_pods inline_volumes "
                                          "refused_volumes")
DesiredState.__new__.__defaults__ = ({}, {})
DesiredState.__doc__ = """volumes: {(unique name, node): NodeVolume}. blocked: [{node, volume, pod, reason}].
skipped: volumes that are not kubevol's business (nfs, emptyDir, inline CSI, ...); foreign: volumes of a
driver kubevol has no backend for (also counted in skipped). protected_pairs and protected_pod_uids: what
pods outside `scope` use; never torn down. pod_by_uid: uid -> "ns/name". kept_pairs: {(unique name, node):
reason} a live pod holds although its claim cannot be resolved now; never torn down. live_pods: {(pod uid,
node)} of every scheduled pod that is not terminated: what it has mounted there stays mounted. inline_volumes:
{(node, pod uid, volume name): InlineVolume}, the inline ephemeral CSI volumes to publish (inline_volume).
refused_volumes: {unique name: reason} of volumes whose PV, claim or pod a node would refuse (plan_validation): the
planner tears none of them down on any node while no pod can have them set up."""

_FINISHED_PHASES = ("Failed", "Succeeded")


def is_pod_terminated(pod):
    """pkg/volume/util/util.go IsPodTerminated: Failed/Succeeded, or deleted with no container running."""
    if pod.phase in _FINISHED_PHASES:
        return True
    return bool(pod.deletion_timestamp) and all(s != "running" for s in pod.container_states)


def pod_security_problem(pod):
    """Why the pod's securityContext cannot be applied, or None. The API server rejects these; a state file
    may still carry them, and the kubelet would never see such a pod."""
    fs_group = pod.fs_group
    if fs_group is not None and not is_group_id(fs_group):
        return ("securityContext.fsGroup %r is not a group ID: set the pod's fsGroup to an integer from 0 to %d [%s]"
                % (fs_group, MAX_GROUP_ID, OBJECT_REFUSED))
    policy = pod.fs_group_change_policy
    if policy is not None and policy not in FS_GROUP_CHANGE_POLICIES:
        return ("securityContext.fsGroupChangePolicy %r is not a policy: set the pod's to one of %s [%s]"
                % (policy, ", ".join(FS_GROUP_CHANGE_POLICIES), OBJECT_REFUSED))
    return None


_MOUNTED_READ_ONLY, _MOUNTED, _MAPPED = ("Filesystem", True), ("Filesystem", False), ("Block", False)


def _volume_uses(pod):
    """{volume name: (mode used, all mounts read-only)}: what the pod's containers mount or map (shared tuples, none
    built per mount)."""
    uses = {}
    for name, read_only in pod.volume_mounts:
        if not read_only:
            uses[name] = _MOUNTED
        elif name not in uses:
            uses[name] = _MOUNTED_READ_ONLY
    for name in pod.volume_devices:
        uses[name] = _MAPPED
    return uses


_NO_REFUSALS = ()
_make = tuple.__new__


def _blocked(node, volume, pod, reason):
    return {"node": node, "volume": volume, "pod": pod, "reason": reason}


def build_desired_state(index, known_drivers=DEFAULT_KNOWN_DRIVERS, scope=None, loop_pools=DEFAULT_LOOP_POOLS,
                        driver_options=None, provisioning=frozenset()):
    """Walk pods once. scope: a set of "ns/name" pod keys to consider, or None for all pods. loop_pools: the
    operator's pools, the only ones a loop PV may name (plan_validation). driver_options: the plugins' and drivers'
    options (common/driver_options.py): the directories a local or hostPath PV may use. provisioning: the claim keys
    this run provisions (plan/rules_provision.py): their pods wait for the plan made after it, unblocked."""
    resolver = _Resolver(index, known_drivers, loop_pools, driver_options)
    conflicts = {}  # (unique name, node) -> the nodeAffinity conflict, or None
    refused_volumes = resolver.refused
    node_info = {}  # node name -> (managed by the A/D controller, a plain name: validation.pod_refusals' common case)
    keep_terminated = {}
    for node in index.cluster.nodes:
        node_info[node.name] = (node_is_managed(node), plain_name(node.name) is not None)
        keep_terminated[node.name] = annotation(node, KEEP_TERMINATED_POD_VOLUMES_ANNOTATION) == "true"
    volumes = {}
    blocked = []
    skipped = foreign = 0
    considered = 0
    protected_pairs = set()
    protected_uids = set()
    pod_by_uid = {}
    kept_pairs = {}
    live_pods = set()
    inline = {}
    for pod in index.cluster.pods:
        key = pod.namespace + "/" + pod.name
        pod_by_uid[pod.uid] = key
        in_scope = scope is None or key in scope
        if not in_scope:
            protected_uids.add(pod.uid)
        node = pod.node_name
        if not node:  # attach_detach_controller.go podAdd: unscheduled pods are ignored
            continue
        # is_pod_terminated only for the pods it can be true of: finished, or being deleted
        if ((pod.deletion_timestamp or pod.phase in _FINISHED_PHASES) and is_pod_terminated(pod)
                and not keep_terminated.get(node)):
            continue
        if in_scope:
            considered += 1
            live_pods.add((pod.uid, node))
        if not pod.volumes:
            continue
        info = node_info.get(node)
        if info is None:
            if in_scope:
                blocked.append(_blocked(node, None, key, "node %s of pod %s is not in the cluster snapshot: add its "
                                        "Node object, or fix the pod's spec.nodeName [%s]" % (node, key, NODE_UNKNOWN)))
            continue
        managed, plain_node = info
        uses = None  # _volume_uses(pod), made when a volume of it is planned (most pods' are not kubevol's)
        # desired_state_of_world_populator.go findAndAddNewPods: no volume is (re)added for a pod whose
        # containers are terminating; what it has mounted stays until they are gone (findAndRemoveDeletedPods)
        holding = None
        # a uid or nodeName that would be a path on the node: nothing new for it (the node's name tested once)
        refusals = _NO_REFUSALS if plain_node and plain_name(pod.uid) else pod_refusals(pod)
        if refusals:
            holding = "pod %s: %s" % (label(key), refused_text(refusals))
            if in_scope:
                blocked.append(_blocked(node, None, label(key), refused_text(refusals)))
        elif pod.deletion_timestamp:
            holding = "pod %s is terminating (deleted at %s); its volumes stay until its containers stop" % (
                key, pod.deletion_timestamp)
        elif pod.fs_group is not None or pod.fs_group_change_policy is not None:
            problem = pod_security_problem(pod)
            if problem is not None:
                holding = "pod %s: %s" % (key, problem)
                refusals = [problem]  # a node refuses it too (node/volume.py volume_item)
                if in_scope:
                    blocked.append(_blocked(node, None, key, problem))
        for volume in pod.volumes:
            claim = volume.claim_name
            if claim is None:
                if volume.kind == "csi" and in_scope:
                    if uses is None:
                        uses = _volume_uses(pod)
                    if _add_inline_volume(index, resolver.known, pod, key, node, volume, uses.get(volume.name),
                                          inline, blocked, holding, resolver.loop_pools):
                        continue
                skipped += in_scope  # nfs, emptyDir, inline CSI, in-tree disks, ...: the kubelet's or nobody's
                foreign += in_scope and volume.kind in IN_TREE_ATTACHABLE
                continue
            claim_key = pod.namespace + "/" + claim
            if claim_key in provisioning:
                continue  # its volume is provisioned by this run, then planned again
            spec = resolver.resolve(claim_key)
            if spec is None or spec is FOREIGN:
                skipped += in_scope
                foreign += in_scope and spec is FOREIGN
                continue
            if spec.__class__ is str:
                pv = resolver.pv_behind(claim_key)
                spec = node_text(spec, node)
                unique = pv_unique_name(pv) if pv is not None else None
                if unique is not None:
                    # A running pod keeps what it has: a broken claim blocks new mounts, never unmounts.
                    kept_pairs.setdefault((unique, node), "pod %s still uses PV %s on node %s: %s" % (
                        key, pv.name, node, spec))
                if in_scope:
                    blocked.append(_blocked(node, pv.name if pv is not None else None, key, spec))
                continue
            if volume.kind == "ephemeral" and pod.uid not in resolver.index.pvc_by_key[spec.claim_key].owner_uids:
                kept_pairs.setdefault((spec.unique_name, node), "pod %s still uses PV %s on node %s: its generic "
                                      "ephemeral claim %s is not owned by it" % (key, spec.pv_name, node, spec.claim_key))
                if in_scope:
                    blocked.append(_blocked(node, spec.pv_name, key, "claim %s is not owned by pod %s (a generic "
                                            "ephemeral volume's claim): delete the stale claim [%s]"
                                            % (spec.claim_key, key, CLAIM_UNBOUND)))
                continue
            pair = (spec.unique_name, node)
            if not in_scope:
                protected_pairs.add(pair)
                continue
            if spec.node_affinity is not None:
                conflict = conflicts.get(pair, False)
                if conflict is False:
                    conflict = conflicts[pair] = affinity_conflict(spec.pv_name, spec.node_affinity,
                                                                   index.node_by_name.get(node))
                if conflict is not None:  # the scheduler never places it there: nothing is set up, nothing torn down
                    kept_pairs.setdefault(pair, "pod %s on node %s: %s" % (key, node, conflict))
                    blocked.append(_blocked(node, spec.pv_name, key, conflict))
                    continue
            if holding is not None:
                kept_pairs.setdefault(pair, holding)
                if refusals:  # a pod move: the old node keeps the volume while the new node's setup is refused
                    refused_volumes.setdefault(spec.unique_name, holding)
                continue
            if uses is None:
                uses = _volume_uses(pod)
            use = uses.get(volume.name)
            if use is not None and use[0] != spec.mode:
                kept_pairs.setdefault(pair, "pod %s still uses PV %s on node %s: its volumeMode does not match"
                                      % (key, spec.pv_name, node))
                blocked.append(_blocked(node, spec.pv_name, key, "PV %s has volumeMode %s but pod %s uses it as %s: "
                                        "mount a Filesystem PV with volumeMounts and map a Block PV with "
                                        "volumeDevices [%s]" % (spec.pv_name, spec.mode, key, use[0], OBJECT_REFUSED)))
                continue
            # PodToMount and NodeVolume with every field, without the namedtuple's Python __new__ (cluster/objects.py)
            mount = () if use is None else (
                _make(PodToMount, (pod.uid, key, volume.read_only or spec.read_only or use[1], pod.fs_group,
                                   pod.fs_group_change_policy, pod.creation_timestamp, pod.service_account)),)
            nv = volumes.get(pair)
            if nv is None:
                volumes[pair] = _make(NodeVolume, (spec, node, managed and spec.attachable, (key,), mount,
                                                   spec.read_only, spec.read_only or volume.read_only))
            else:  # another pod on the same node (at most a node's pods): the pair's first spec stays
                claims_read_only = nv.claims_read_only and (nv.spec.read_only or volume.read_only)
                volumes[pair] = nv._replace(pods=nv.pods + (key,), mount_pods=nv.mount_pods + mount,
                                            claims_read_only=claims_read_only)
    return DesiredState(volumes, blocked, skipped, foreign, considered, frozenset(protected_pairs),
                        frozenset(protected_uids), pod_by_uid, kept_pairs, frozenset(live_pods), inline,
                        refused_volumes)


def summarize_desired(desired):
    """Counts and per-node PV lists small enough to print."""
    per_node = {}
    attachments = mounts = 0
    for nv in desired.volumes.values():
        names = per_node.get(nv.node)
        if names is None:  # not setdefault: no empty list made per volume
            names = per_node[nv.node] = []
        names.append(nv.spec.pv_name)
        attachments += nv.attach
        mounts += len(nv.mount_pods)
    return {"pods": desired.pods_considered, "volumes": len(desired.volumes), "attachments": attachments,
            "pod_mounts": mounts, "skipped_volumes": desired.skipped, "foreign_volumes": desired.foreign,
            "blocked": len(desired.blocked), "inline_volumes": len(desired.inline_volumes),
            "per_node": dict((n, sorted(v)) for n, v in sorted(per_node.items()))}
