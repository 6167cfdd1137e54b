# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The desired state's claim resolution: PVC -> bound PV -> VolumeSpec, once per claim however many pods use it
(pkg/controller/volume/attachdetach/util/util.go getPVCFromCache, getPVSpecFromCache, CreateVolumeSpec; the kubelet's
desired_state_of_world_populator.go getPVCExtractPV), and which drivers a plan acts on.

Split from desired_state.py, which walks the pods and asks this for each claim they name.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.common.driver_options import external_drivers
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import DEFAULT_LOOP_POOLS, unique_volume_name
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import (
    CLAIM_UNBOUND, OBJECT_REFUSED, PV_MISSING)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.validation import (
    name_refusals, normalized_pools, pv_refusals, pvc_refusals, refused_text)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.inline import FS_GROUP_POLICIES
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import DEFAULT_FS_TYPE, FS_TYPES
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import (
    BLOCK as BLOCK_CAPABILITY, driver_capabilities, own_drivers)
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import CSI
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import pv_unique_name
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.plugin_specs import (
    node_text, plugin_refusals, plugin_volume_spec)

DEFAULT_KNOWN_DRIVERS = own_drivers()  # every driver kubevol has a backend for (the drivers/ registry)


def known_drivers_of(known_drivers, driver_options):
    """The drivers a plan acts on: the operator's ``known_drivers`` when given, else kubevol's own and every CSI
    driver ``driver_options`` configures as external (common/driver_options.py external_drivers). An external
    driver's capabilities are unknown at plan time (driver_capabilities has none): it is attachable as its CSIDriver
    says (attachRequired), Block and expansion are allowed, and its node plugin refuses what it cannot do."""
    if known_drivers is not None:
        return tuple(known_drivers)
    return tuple(sorted(set(DEFAULT_KNOWN_DRIVERS) | set(external_drivers(driver_options, DEFAULT_KNOWN_DRIVERS))))


FOREIGN = "foreign"  # resolve(): a volume of a driver kubevol has no backend for

# in-tree plugins with an attacher.go that kubevol has no backend for
IN_TREE_ATTACHABLE = frozenset(("gcePersistentDisk", "awsElasticBlockStore", "azureDisk", "cinder", "vsphereVolume",
                                "iscsi", "fc", "rbd", "flexVolume"))

VolumeSpec = namedtuple("VolumeSpec", "pv_name unique_name driver volume_handle volume_attributes capacity_bytes "
                                      "mode fs_type mount_options read_only multi_attach_allowed attachable "
                                      "claim_key request_bytes claim_capacity_bytes access_modes fs_group_policy "
                                      "allocated_bytes resize_status plugin path host_path_type node_affinity "
                                      "secret_refs pod_info_on_mount")
VolumeSpec.__new__.__defaults__ = ((), "ReadWriteOnceWithFSType", None, None, CSI, None, "", None, (), False)
VolumeSpec.__doc__ = """One bound PV kubevol serves (CSI with a known driver, local, hostPath), resolved once however
many pods use it. plugin: the volume plugin's name (volume/); path, host_path_type: a local or hostPath PV's;
node_affinity: the PV's nodeAffinity terms (cluster/pv.py), or None.
access_modes: the PV's. fs_group_policy, pod_info_on_mount: its CSIDriver's. allocated_bytes, resize_status: the PVC's
status.allocatedResources / allocatedResourceStatuses for storage (expansion recovery)."""


def is_pv_read_only(pv):
    """The PV itself is read-only: spec.csi.readOnly, or ReadOnlyMany is its only access mode."""
    return bool(pv.csi and pv.csi.read_only) or ("ReadOnlyMany" in pv.access_modes
                                                 and set(pv.access_modes) == {"ReadOnlyMany"})


def is_multi_attach_allowed(access_modes):
    """pkg/volume/util/util.go IsMultiAttachAllowed for a PV: no modes, RWX or ROX allow it."""
    if not access_modes:
        return True
    return "ReadWriteMany" in access_modes or "ReadOnlyMany" in access_modes


_make = tuple.__new__  # volume_spec gives every field: the tuple without the namedtuple's Python __new__
_UNRESOLVED = object()  # _Resolver.cache: not resolved yet (None is a result)


class _Resolver:
    """PVC -> bound PV -> VolumeSpec, cached per claim (util.go getPVCFromCache, getPVSpecFromCache)."""

    def __init__(self, index, known_drivers, loop_pools=DEFAULT_LOOP_POOLS, driver_options=None):
        self.index = index
        self.driver_options = driver_options or {}
        self.known = tuple(known_drivers)
        self.loop_pools = normalized_pools(loop_pools)
        self.refused = {}  # unique name -> why a node would refuse its PV or claim
        self.cache = {}
        self.pv_by_claim = None
        self.drivers = {}  # CSI driver name -> what _driver makes of it: asked once per driver, not once per claim

    def resolve(self, claim_key):
        """A VolumeSpec, None (not kubevol's business), FOREIGN, or a str reason (blocked)."""
        result = self.cache.get(claim_key, _UNRESOLVED)
        if result is _UNRESOLVED:  # most claims are used by one pod: a miss each, no KeyError raised
            result = self.cache[claim_key] = self._resolve(claim_key)
        return result

    def pv_behind(self, claim_key):
        """The PV a claim that does not resolve still points at (PVC volumeName, else a PV's claimRef), or None."""
        pvc = self.index.pvc_by_key.get(claim_key)
        if pvc is not None and pvc.volume_name:
            return self.index.pv_by_name.get(pvc.volume_name)
        if self.pv_by_claim is None:
            self.pv_by_claim = dict(((pv.claim_ref.namespace or "default") + "/" + (pv.claim_ref.name or ""), pv)
                                    for pv in self.index.cluster.persistent_volumes if pv.claim_ref is not None)
        return self.pv_by_claim.get(claim_key)

    def _resolve(self, claim_key):
        pvc = self.index.pvc_by_key.get(claim_key)
        if pvc is None:
            return "claim %s does not exist: create it, or fix the pod's claimName [%s]" % (claim_key, CLAIM_UNBOUND)
        if pvc.phase != "Bound" or not pvc.volume_name:
            # the kubelet's words (desired_state_of_world_populator.go getPVCExtractPV): "has non-bound phase"
            return ("claim %s has non-bound phase %r and volumeName %r: wait for it to bind, or check its "
                    "StorageClass and PV [%s]" % (claim_key, pvc.phase, pvc.volume_name, CLAIM_UNBOUND))
        pv = self.index.pv_by_name.get(pvc.volume_name)
        if pv is None:
            return "PV %s of claim %s does not exist: restore the PV, or create the claim again [%s]" % (
                pvc.volume_name, claim_key, PV_MISSING)
        if pv.claim_ref is None:
            return "PV %s is not bound to claim %s yet (no spec.claimRef): wait for the binding [%s]" % (
                pv.name, claim_key, CLAIM_UNBOUND)
        if pv.claim_ref.uid != pvc.uid:
            return ("PV %s is bound to another claim named %s (claimRef uid %s, the claim's uid %s): bind the claim to "
                    "another PV [%s]" % (pv.name, claim_key, pv.claim_ref.uid, pvc.uid, CLAIM_UNBOUND))
        if pv.source is not None:  # an in-tree plugin's (local, hostPath): its rules are its class's
            refusals = pvc_refusals(pvc) + name_refusals(pv) + plugin_refusals(pv, self.driver_options)
            if refusals:  # nothing of it reaches a node
                reason = refused_text(refusals)
                self.refused[pv_unique_name(pv)] = node_text(reason)
                return reason  # its node placeholder is filled per pod (plugin_specs.node_text)
            return volume_spec(pv, pvc, False)
        if pv.csi is None:
            return FOREIGN if pv.source_kind in IN_TREE_ATTACHABLE else None
        csi = pv.csi
        driver = self.drivers.get(csi.driver)
        if driver is None:
            driver = self.drivers[csi.driver] = self._driver(csi.driver)
        if driver.__class__ is str:  # FOREIGN, or why its CSIDriver is refused
            return driver
        attach_required, fs_group_policy, pod_info_on_mount, block_allowed = driver
        if pv.volume_mode != "Block" and (csi.fs_type or DEFAULT_FS_TYPE) not in FS_TYPES:
            # the kubelet would fail the mount (unknown filesystem type); kubevol never formats it either
            return ("PV %s: csi.fsType %r is not one kubevol formats or mounts: set the PV's csi.fsType to one of "
                    "%s [%s]" % (pv.name, csi.fs_type, ", ".join(sorted(FS_TYPES)), OBJECT_REFUSED))
        if pv.volume_mode == "Block" and not block_allowed:
            return ("PV %s: volumeMode Block is not supported by kubevol's driver %s: use volumeMode Filesystem [%s]"
                    % (pv.name, csi.driver, OBJECT_REFUSED))
        refusals = pvc_refusals(pvc) + pv_refusals(pv, self.loop_pools)
        unique = self.index.unique_name_by_pv_name.get(pv.name)
        if unique is None or self.index.pv_by_unique_name.get(unique) is not pv:  # another PV of the same name
            unique = unique_volume_name(csi.driver, csi.volume_handle)
        if refusals:  # a name, quantity or pool a node would refuse: nothing of it reaches a node
            reason = self.refused[unique] = refused_text(refusals)
            return reason
        return volume_spec(pv, pvc, attach_required, fs_group_policy, pod_info_on_mount, unique)

    def _driver(self, name):
        """What a CSI driver's claims share: FOREIGN (a driver kubevol has no backend for), the reason its CSIDriver
        is refused, or (attach required, fsGroupPolicy, podInfoOnMount, Block allowed)."""
        if name not in self.known:
            return FOREIGN  # a kubelet only touches its own plugins' volumes
        driver_object = self.index.csidriver_by_name.get(name)
        if driver_object is not None and driver_object.fs_group_policy not in FS_GROUP_POLICIES:
            return ("CSIDriver %s has an unknown spec.fsGroupPolicy %r: set one of %s [%s]"
                    % (name, driver_object.fs_group_policy, ", ".join(FS_GROUP_POLICIES), OBJECT_REFUSED))
        capabilities = driver_capabilities(name)  # None: an external driver's, asked on the node
        # csi_plugin.go skipAttach: no CSIDriver object means attach is required
        return (driver_object is None or driver_object.attach_required,
                driver_object.fs_group_policy if driver_object is not None else FS_GROUP_POLICIES[0],
                driver_object is not None and driver_object.pod_info_on_mount,
                capabilities is None or BLOCK_CAPABILITY in capabilities)


def volume_spec(pv, pvc, attachable, fs_group_policy=FS_GROUP_POLICIES[0], pod_info_on_mount=False,
                unique_name=None):
    """A VolumeSpec for a CSI or an in-tree plugin's PV (pvc None: a PV only actual state still refers to).
    unique_name: a CSI PV's unique volume name when the caller has it (the cluster index computed it)."""
    if pv.csi is None:
        return plugin_volume_spec(VolumeSpec, pv, pvc, is_pv_read_only(pv), is_multi_attach_allowed(pv.access_modes))
    csi = pv.csi
    return _make(VolumeSpec, (
        pv.name, unique_name or unique_volume_name(csi.driver, csi.volume_handle), csi.driver, csi.volume_handle,
        csi.volume_attributes, pv.capacity_bytes, pv.volume_mode, csi.fs_type or DEFAULT_FS_TYPE, pv.mount_options,
        is_pv_read_only(pv), is_multi_attach_allowed(pv.access_modes), attachable,
        pvc.namespace + "/" + pvc.name if pvc else None, pvc.request_bytes if pvc else 0,
        pvc.capacity_bytes if pvc else None, tuple(pv.access_modes), fs_group_policy,
        pvc.allocated_bytes if pvc else None, pvc.resize_status if pvc else None, CSI, None, "",
        pv.node_affinity, tuple(csi.secret_refs), pod_info_on_mount))
