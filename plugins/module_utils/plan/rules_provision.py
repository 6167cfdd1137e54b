# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's provisioning rule: which unbound claims get CreateVolume, where, and with what, as the PV controller
(pkg/controller/volume/persistentvolume/pv_controller.go syncUnboundClaim, provisionClaim), the scheduler's volume
binding (selected-node) and the external-provisioner (kubernetes-csi/external-provisioner pkg/controller/
controller.go prepareProvision, topology.go) decide it.

A claim is provisioned when it has no volumeName, is not being deleted, and its StorageClass (``storageClassName``,
or the default class when unset; "" asks for none) names a CSI driver kubevol drives (loop, or one configured in
driver_options). WaitForFirstConsumer waits for a consumer: the scheduler's ``volume.kubernetes.io/selected-node``
when set, else the node of the oldest running pod that uses the claim. A claim a PV already names (a run that
created the PV and was stopped before it bound the claim) is bound, never provisioned twice. A claim whose data
source is a VolumeSnapshot or a claim is restored or cloned: CreateVolume gets that content source
(provision/content_source.py, refused when the source is not ready, too big or of another driver); another kind of
data source is left to its populator.

Each claim becomes one operation ``create_volume`` for the host where the driver's Controller service runs
(plan/provision_hosts.py), with the request CreateVolume gets and the template of the PV the run writes from the
answer (provision/volume.py). Pure: no I/O; refusals are blocked entries, in the external-provisioner's words.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.storage import (
    WAIT_FOR_FIRST_CONSUMER, default_class)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.provision_hosts import Hosts
from ansible_collections.kubevol.volumes.plugins.module_utils.provision import storage_class as sc
from ansible_collections.kubevol.volumes.plugins.module_utils.provision.content_source import (
    ContentSourceRefused, content_source, restores)
from ansible_collections.kubevol.volumes.plugins.module_utils.provision.topology import TopologyRefused, requirements
from ansible_collections.kubevol.volumes.plugins.module_utils.provision.volume import (
    PROVISIONED_BY, template, volume_name)

SELECTED_NODE = "volume.kubernetes.io/selected-node"
_FINISHED = ("Failed", "Succeeded")


def _consumers(index, scope):
    """{claim key: [(creationTimestamp, "ns/name", node), ...]} of the scheduled pods that are not finished (or being
    deleted) and use the claim, oldest first; pods outside ``scope`` are left out."""
    found = {}
    for pod in index.cluster.pods:
        key = pod.namespace + "/" + pod.name
        if not pod.node_name or pod.phase in _FINISHED or pod.deletion_timestamp:
            continue
        if scope is not None and key not in scope:
            continue
        for volume in pod.volumes:
            if volume.claim_name:
                found.setdefault(pod.namespace + "/" + volume.claim_name, []).append(
                    (pod.creation_timestamp or "", key, pod.node_name))
    for users in found.values():
        users.sort()
    return found


def _pv_naming(index):
    """{(namespace, name, uid): PV} of the PVs whose claimRef names a claim."""
    return dict(((pv.claim_ref.namespace or "default", pv.claim_ref.name, pv.claim_ref.uid), pv)
                for pv in index.cluster.persistent_volumes if pv.claim_ref is not None and pv.claim_ref.name)


class Provisioning:
    """The outcome of the rule: ``operations`` (create_volume), ``blocked`` entries, ``records`` written before the
    operations run (provisioning_started, and the bindings of volumes provisioned before), and ``claims``, the claim
    keys this rule speaks for: provisioned by this run (their pods follow in the same run) or refused here (the
    reason is this rule's entry); the desired state does not block their pods for an unbound claim again."""

    def __init__(self):
        self.operations = []
        self.blocked = []
        self.records = []
        self.claims = set()

    def block(self, claim, pods, reason):
        self.claims.add(claim)
        for _created, pod, node in pods or [(None, None, None)]:
            self.blocked.append({"node": node, "volume": None, "pod": pod, "reason": "claim %s: %s" % (claim, reason),
                                 "action": "provision"})


def plan_provisioning(index, options, view, node_facts, scope=None, hosts=None):
    """The Provisioning of this plan. ``view``: the StorageView (plan/registration.py); ``node_facts``: the raw node
    facts of the run ({node: facts}); ``scope``: the pods in scope ("ns/name"), or None; ``hosts``: the Hosts
    (plan/provision_hosts.py) when made already."""
    out = Provisioning()
    if options.stage == "node":
        return out  # the node stage is the kubelet's: nothing is provisioned there
    classes = dict((c.name, c) for c in index.cluster.storage_classes)
    if not classes:
        return out
    default = default_class(index.cluster.storage_classes)
    known = frozenset(options.known_drivers or ())
    unbound = []
    for claim in index.cluster.claims:
        if claim.volume_name or claim.deletion_timestamp or not claim.uid:
            continue
        # unset: the default class (the DefaultStorageClass admission and the PV controller give it); "": none
        cls = default if claim.storage_class is None else classes.get(claim.storage_class)
        if cls is None:
            continue  # no class: a static PV's claim; a class not there: the PV controller waits for it
        if cls.provisioner in known:  # else another provisioner's claim
            unbound.append((claim, cls))
    if not unbound:
        return out  # a cluster with every claim bound: no pass over its pods
    consumers = _consumers(index, scope)
    naming = _pv_naming(index)
    hosts = hosts or Hosts(index, options, view, node_facts)
    for claim, cls in sorted(unbound, key=lambda pair: (pair[0].namespace, pair[0].name)):
        key = claim.namespace + "/" + claim.name
        pods = consumers.get(key) or []
        if scope is not None and not pods:
            continue  # a scoped run provisions only the claims its pods use
        made = naming.get((claim.namespace, claim.name, claim.uid))
        if made is not None and dict(made.annotations).get(PROVISIONED_BY) == cls.provisioner:
            out.records.append(_bind_again(made, claim))
            out.claims.add(key)
            continue
        _claim_operation(out, index, hosts, claim, key, cls, pods)
    return out


def _bind_again(pv, claim):
    """A PV made for the claim by an earlier run that stopped before the claim was bound: bind it now."""
    return {"type": "provisioned", "pvc": claim.namespace + "/" + claim.name, "claim_uid": claim.uid,
            "pv": {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv.name}}}


def _claim_operation(out, index, hosts, claim, key, cls, pods):
    if claim.data_source is not None and not restores(claim):
        return  # another kind: an external populator provisions it (prepareProvision IgnoredError)
    if claim.has_selector:
        out.block(key, pods, "claim Selector is not supported; remove spec.selector to have it provisioned")
        return
    selected = None
    if cls.binding_mode == WAIT_FOR_FIRST_CONSUMER:
        selected = dict(claim.annotations).get(SELECTED_NODE) or (pods[0][2] if pods else None)
        if not selected:
            return  # WaitForFirstConsumer: no pod uses it yet
    name = volume_name(claim.uid)
    parameters = dict(cls.parameters)
    try:
        fs_type = sc.fs_type(parameters)
        create = sc.create_parameters(parameters)
        secret = sc.secret_reference("provisioner", parameters, name, claim)
        refs = sc.pv_secret_refs(parameters, name, claim)
        topology = requirements(cls.provisioner, claim.name, cls.allowed_topologies, selected,
                                hosts.topology_keys(cls.provisioner), hosts.view.labels)
    except (sc.ClassRefused, TopologyRefused) as err:
        out.block(key, pods, "StorageClass %s: %s; nothing was provisioned, fix the class or the claim [%s]"
                  % (cls.name, err.text, err.code))
        return
    source, source_what = None, None
    if claim.data_source is not None:
        try:
            source, _size, source_what = content_source(index, claim, cls)
        except ContentSourceRefused as err:
            out.block(key, pods, err.msg)
            return
    host, why_not = hosts.for_create(cls.provisioner, selected, topology)
    if host is None:
        out.block(key, pods, why_not)
        return
    users = ", ".join(pod for _created, pod, _node in pods) or "no pod yet"
    out.claims.add(key)
    out.records.append(dict({"type": "provisioning_started", "pvc": key, "driver": cls.provisioner},
                            **({"selected_node": selected} if selected else {})))
    out.operations.append({
        "op": "create_volume", "host": host, "driver": cls.provisioner, "claim": key, "claim_uid": claim.uid,
        "name": name, "storage_class": cls.name, "binding_mode": cls.binding_mode, "selected_node": selected,
        "secret_ref": secret, "pods": [pod for _created, pod, _node in pods],
        "request": {"capacity_bytes": claim.request_bytes, "access_modes": list(claim.access_modes),
                    "volume_mode": claim.volume_mode, "fs_type": fs_type, "mount_flags": list(cls.mount_options),
                    "parameters": create, "accessibility_requirements": topology, "content_source": source},
        "pv": template(name, cls.provisioner, claim, cls, fs_type, secret, refs),
        "reason": "claim %s (StorageClass %s, %s%s%s) is unbound, used by %s" % (
            key, cls.name, cls.binding_mode, ", node %s" % selected if selected else "",
            ", from %s" % source_what if source_what else "", users)})
