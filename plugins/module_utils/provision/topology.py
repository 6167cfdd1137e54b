# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CreateVolume's accessibility requirements and the PV's nodeAffinity, as the external-provisioner computes them
(kubernetes-csi/external-provisioner pkg/controller/topology.go GenerateAccessibilityRequirements with its defaults,
strict topology off and immediate topology on; GenerateVolumeNodeAffinity).

- The topology keys are the driver's in the CSINodes (the kubelet's registration); a driver that registered none
  on any node gets no requirements (kubevol cannot tell a driver without topology from one that has not
  registered yet: the host's call adds nothing for a plugin without VOLUME_ACCESSIBILITY_CONSTRAINTS either).
- WaitForFirstConsumer (a selected node): the node must have the driver's keys and their labels; requisite: the
  StorageClass's allowedTopologies flattened, else every node's topology with those keys; preferred: requisite
  rotated to start at the selected node's.
- Immediate: requisite as above (allowedTopologies, else the topologies of all nodes); preferred: requisite rotated
  by the claim name's hash (getPVCNameHashAndIndexOffset), which spreads a StatefulSet's volumes.

Pure. A refusal raises TopologyRefused with the external-provisioner's words.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError


class TopologyRefused(KubevolError):
    """No accessibility requirements can be built: nothing is provisioned."""

    code = "KV-TOPOLOGY"


def flatten(allowed):
    """allowedTopologies ((((key, (values...)),...),...)) -> terms, each a sorted tuple of (key, value) (OR of ANDs)."""
    final = []
    for term in allowed:
        old = []
        for key, values in term:
            new = []
            for value in values:
                if not old:
                    new.append(((key, value),))
                else:
                    new.extend(t + ((key, value),) for t in old)
            old = new
        final.extend(old)
    return [tuple(sorted(t)) for t in final]


def _term_of(labels, keys):
    """The node's topology term for ``keys``, or None when a key is missing (extractTopologyTerm)."""
    if any(key not in labels for key in keys):
        return None
    return tuple(sorted((key, labels[key]) for key in keys))


def _subset(term, other):
    """Every segment of ``term`` is in ``other`` (topologyTerm.subset)."""
    return set(term) <= set(other)


def _fnv32(text):
    value = 0x811c9dc5
    for byte in text.encode("utf-8"):
        value = (value * 0x01000193) % (1 << 32)
        value ^= byte
    return value


def claim_hash(name):
    """getPVCNameHashAndIndexOffset: (fnv-1 32 hash of the name's base, the StatefulSet index) of a claim name."""
    base, index = name, 0
    head, dash, tail = name.rpartition("-")
    if dash and tail.isdigit() and int(tail) < (1 << 32):
        index = int(tail)
        base = head.rpartition("-")[2] if "-" in head else head
    return _fnv32(base), index


def requirements(driver, claim_name, allowed, selected_node, keys_by_node, labels_by_node):
    """{requisite: [segments], preferred: [segments]} or None (no topology). ``keys_by_node``: {node: topology keys of
    ``driver``} from the CSINodes; ``labels_by_node``: {node: labels}; ``allowed``: the class's allowedTopologies."""
    keys = None
    selected = None
    if selected_node:
        keys = keys_by_node.get(selected_node)
        if not keys:
            if not any(keys_by_node.values()):
                return None  # the driver registered no topology on any node
            raise TopologyRefused("no topology key found for node %s" % selected_node)
        selected = _term_of(labels_by_node.get(selected_node) or {}, keys)
        if selected is None:
            raise TopologyRefused("topology labels from selected node %s do not match topology keys from CSINode %s"
                                  % (selected_node, list(keys)))
    if allowed:
        requisite = flatten(allowed)
    else:
        if keys is None:
            keys = next((k for _n, k in sorted(keys_by_node.items()) if k), None)
            if not keys:
                return None  # no node registered topology keys for the driver: no requirement
        requisite = [t for t in (_term_of(labels, keys) for _n, labels in sorted(labels_by_node.items())) if t]
        if not requisite:
            raise TopologyRefused("topologyKeys %s were not found on any nodes" % list(keys))
    requisite = sorted(set(t for t in requisite if t), key=lambda t: (len(t), t))
    if not requisite:
        return None
    if selected is None:
        hashed, index = claim_hash(claim_name)
        start = (hashed + index) % len(requisite)
    else:
        start = next((i for i, t in enumerate(requisite) if _subset(t, selected)), None)
        if start is None:
            raise TopologyRefused("topology %s from selected node %s is not in requisite: %s"
                                  % (dict(selected), selected_node, [dict(t) for t in requisite]))
    preferred = requisite[start:] + requisite[:start]
    return {"requisite": [{"segments": dict(t)} for t in requisite],
            "preferred": [{"segments": dict(t)} for t in preferred]}


def node_affinity(accessible_topology):
    """The PV's spec.nodeAffinity from CreateVolume's accessible_topology: one term per segment map, each key In its
    value (GenerateVolumeNodeAffinity); None without topology."""
    terms = []
    for topology in accessible_topology or ():
        segments = (topology or {}).get("segments") or {}
        if segments:
            terms.append({"matchExpressions": [{"key": key, "operator": "In", "values": [segments[key]]}
                                               for key in sorted(segments)]})
    if not terms:
        return None
    return {"required": {"nodeSelectorTerms": terms}}


def matches(requirement, labels):
    """Whether a node with ``labels`` is in the requisite topology (or there is no requirement)."""
    if not requirement:
        return True
    return any(all(labels.get(k) == v for k, v in t["segments"].items()) for t in requirement["requisite"])
