# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""PersistentVolumes of the cluster model: their sources (csi; an in-tree plugin's, parsed by the plugin found
through the registry: local, hostPath) and their nodeAffinity.

Split from objects.py: the PV builder and the node-affinity rules. A malformed field raises (objects.py turns it into
MalformedObject naming the PV and the field). nodeAffinity is validated as the API server validates it
(pkg/apis/core/validation ValidateVolumeNodeAffinity, ValidateNodeSelector) and matched as
k8s.io/component-helpers/scheduling/corev1/nodeaffinity does (NodeSelector.Match: terms ORed, requirements ANDed).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.kubevol.volumes.plugins.module_utils.common.fields import optional_str, pairs, require_str, strings
from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import to_bytes
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import find_plugin_by_spec, in_tree_plugins
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import CSIPlugin

_EMPTY = {}
_make = tuple.__new__  # build_pv gives every field in order: the namedtuple's own __new__ is a Python call per PV

ClaimRef = namedtuple("ClaimRef", "namespace name uid")
CSISource = namedtuple("CSISource", "driver volume_handle fs_type read_only volume_attributes secret_refs")
CSISource.__new__.__defaults__ = ((),)
CSISource.__doc__ = """spec.csi. secret_refs: ((kind, "namespace/name"), ...) of its *SecretRef fields (kinds as
drivers/external/requests.py SECRET_KINDS), for an external CSI driver's calls; never the secrets themselves."""
# spec.csi's secret references by the kind an external CSI driver's item carries them under (drivers/external/
# secrets.py SECRET_REFS: a unit test keeps them equal)
CSI_SECRET_REFS = (("controller_publish", "controllerPublishSecretRef"), ("node_stage", "nodeStageSecretRef"),
                   ("node_publish", "nodePublishSecretRef"), ("controller_expand", "controllerExpandSecretRef"),
                   ("node_expand", "nodeExpandSecretRef"))


_SECRET_REF_FIELDS = frozenset(field for _kind, field in CSI_SECRET_REFS)


def _secret_refs(csi):
    """((kind, "namespace/name"), ...) of spec.csi's secret references; an incomplete one is kept as given, for the
    node task to refuse naming it (drivers/external/secrets.py)."""
    if _SECRET_REF_FIELDS.isdisjoint(csi):
        return ()  # most PVs name no Secret: one test of the keys instead of a look-up per field
    refs = []
    for kind, field in CSI_SECRET_REFS:
        ref = csi.get(field)
        if isinstance(ref, dict) and ref:
            refs.append((kind, "%s/%s" % (ref.get("namespace") or "", ref.get("name") or "")))
    return tuple(refs)


Requirement = namedtuple("Requirement", "key operator values")
SelectorTerm = namedtuple("SelectorTerm", "match_expressions match_fields")
PersistentVolume = namedtuple("PersistentVolume", "name capacity_bytes access_modes volume_mode mount_options "
                                                  "claim_ref csi source_kind source node_affinity reclaim_policy "
                                                  "storage_class annotations phase deletion_timestamp")
PersistentVolume.__new__.__defaults__ = (None, None, None, "Retain", "", (), "", None)
PersistentVolume.__doc__ = """source_kind: csi, the spec key of an in-tree plugin kubevol serves (local, hostPath)
or the first other source key; source: that in-tree plugin's source as its parse_source made it (volume/local.py
LocalSource, volume/host_path.py HostPathSource), else None; node_affinity: a tuple of SelectorTerm
(spec.nodeAffinity.required.nodeSelectorTerms), or None when the PV has no nodeAffinity. reclaim_policy:
spec.persistentVolumeReclaimPolicy (the API server defaults a PV's to Retain); storage_class: spec.storageClassName;
annotations: (key, value) pairs; phase: status.phase as written ("" when absent)."""

PV_NOT_SOURCE_KEYS = frozenset(("capacity", "accessModes", "volumeMode", "mountOptions", "claimRef",
                                "persistentVolumeReclaimPolicy", "storageClassName", "nodeAffinity",
                                "volumeAttributesClassName"))
LABEL_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
FIELD_OPERATORS = ("In", "NotIn")
NODE_NAME_FIELD = "metadata.name"  # the one field nodeaffinity.go's field selector supports


def _int64(value):
    """A Gt/Lt value: an integer as strconv.ParseInt reads it, or None."""
    try:
        text = value.strip() if isinstance(value, str) else None
        return int(text, 10) if text and text == value else None
    except ValueError:
        return None


def _requirement(raw, where, fields=False):
    """One NodeSelectorRequirement, validated (validation.go validateNodeSelectorRequirement,
    validateNodeFieldSelectorRequirement)."""
    if not isinstance(raw, dict):
        raise TypeError("%s must be a mapping" % where)
    key = require_str(raw.get("key"), where + ".key")
    operator = raw.get("operator")
    values = strings(raw.get("values"), where + ".values")
    allowed = FIELD_OPERATORS if fields else LABEL_OPERATORS
    if operator not in allowed:
        raise ValueError("%s.operator %r is not a valid operator (valid: %s)" % (where, operator, ", ".join(allowed)))
    if fields:
        if key != NODE_NAME_FIELD:
            raise ValueError("%s.key %r: the only field a node selector supports is %s" % (where, key, NODE_NAME_FIELD))
        if len(values) != 1:
            raise ValueError("%s.values: must have one element for a field selector, got %d" % (where, len(values)))
    elif operator in ("In", "NotIn") and not values:
        raise ValueError("%s.values: must be specified when operator is In or NotIn" % where)
    elif operator in ("Exists", "DoesNotExist") and values:
        raise ValueError("%s.values: may not be specified when operator is Exists or DoesNotExist" % where)
    elif operator in ("Gt", "Lt") and (len(values) != 1 or _int64(values[0]) is None):
        raise ValueError("%s.values: must be a single integer when operator is Gt or Lt, got %r"
                         % (where, list(values)))
    return Requirement(key, operator, values)


def node_affinity(raw):
    """spec.nodeAffinity -> a tuple of SelectorTerm; None when absent. Raises naming the field."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise TypeError("spec.nodeAffinity must be a mapping")
    required = raw.get("required")
    if required is None:
        # ValidateVolumeNodeAffinity: a nodeAffinity must have required
        raise ValueError("spec.nodeAffinity.required: Required value: must specify required node constraints")
    if not isinstance(required, dict):
        raise TypeError("spec.nodeAffinity.required must be a mapping")
    terms = required.get("nodeSelectorTerms")
    if not isinstance(terms, list) or not terms:
        raise ValueError("spec.nodeAffinity.required.nodeSelectorTerms: Required value: must have at least one node "
                         "selector term")
    result = []
    for i, term in enumerate(terms):
        where = "spec.nodeAffinity.required.nodeSelectorTerms[%d]" % i
        if not isinstance(term, dict):
            raise TypeError("%s must be a mapping" % where)
        expressions = tuple(_requirement(r, "%s.matchExpressions[%d]" % (where, j))
                            for j, r in enumerate(term.get("matchExpressions") or ()))
        fields = tuple(_requirement(r, "%s.matchFields[%d]" % (where, j), fields=True)
                       for j, r in enumerate(term.get("matchFields") or ()))
        result.append(SelectorTerm(expressions, fields))
    return tuple(result)


def _label_matches(req, labels):
    """labels.Requirement.Matches (k8s.io/apimachinery/pkg/labels/selector.go)."""
    present = req.key in labels
    op = req.operator
    if op == "In":
        return present and labels[req.key] in req.values
    if op == "NotIn":
        return not present or labels[req.key] not in req.values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if not present:
        return False
    have, want = _int64(labels[req.key]), _int64(req.values[0])
    if have is None or want is None:
        return False
    return have > want if op == "Gt" else have < want


def _field_matches(req, node_name):
    """nodeaffinity.go: fields.Requirement on metadata.name (In: equal, NotIn: not equal)."""
    if req.operator == "In":
        return node_name in req.values
    return node_name not in req.values


def node_matches(terms, node_name, labels):
    """NodeSelector.Match: any term whose requirements all hold; a term with no requirement matches nothing
    (nodeaffinity.go newNodeSelectorTerm). labels: a mapping."""
    for term in terms:
        if not term.match_expressions and not term.match_fields:
            continue
        if (all(_label_matches(r, labels) for r in term.match_expressions)
                and all(_field_matches(r, node_name) for r in term.match_fields)):
            return True
    return False


def pv_unique_name(pv):
    """GetUniqueVolumeNameFromSpec of a PV kubevol's plugins serve (volume/), or None."""
    csi = pv.csi
    if csi is not None:
        return CSIPlugin.unique_name_of(csi.driver, csi.volume_handle)
    plugin = find_plugin_by_spec(pv)
    return plugin.unique_name({"pv_name": pv.name}) if plugin is not None else None


def build_pv(obj):
    """A PersistentVolume from a PV object (objects.py's builder for kind PersistentVolume)."""
    where = "metadata.name"
    name = obj["metadata"]["name"]
    if not name or name.__class__ is not str:
        require_str(name, "metadata.name")
    spec = obj["spec"]
    where = "spec.capacity.storage"
    storage = (spec.get("capacity") or _EMPTY).get("storage")
    capacity = to_bytes(storage, where) if storage is not None else 0
    where = "spec.claimRef"
    ref = spec.get("claimRef")
    claim_ref = None
    if ref:
        namespace, claim = ref.get("namespace"), ref.get("name")
        if namespace.__class__ is not str or claim.__class__ is not str:  # the calls only when the cheap test fails
            optional_str(namespace, "namespace")
            optional_str(claim, "name")
        claim_ref = _make(ClaimRef, (namespace, claim, ref.get("uid")))
    source = None
    where = "spec.csi"
    csi = spec.get("csi")
    if csi is not None:
        driver = csi["driver"]
        if not driver or driver.__class__ is not str:  # the call only when the cheap test fails: every PV runs this
            require_str(driver, "driver")
        handle = csi["volumeHandle"]
        if not handle or handle.__class__ is not str:
            require_str(handle, "volumeHandle")
        fs_type = csi.get("fsType")
        if fs_type is not None and fs_type.__class__ is not str:
            optional_str(fs_type, "fsType")
        csi = _make(CSISource, (driver, handle, fs_type or "", bool(csi.get("readOnly")),
                                pairs(csi.get("volumeAttributes"), "volumeAttributes"), _secret_refs(csi)))
        source_kind = "csi"
    else:
        # plugins.go FindPluginBySpec: the first in-tree plugin whose spec key the PV has parses its source
        plugin = next((cls for cls in in_tree_plugins() if spec.get(cls.SPEC_KEY) is not None), None)
        if plugin is not None:
            where = "spec." + plugin.SPEC_KEY
            source_kind, source = plugin.SPEC_KEY, plugin.parse_source(spec[plugin.SPEC_KEY])
        else:
            source_kind = next((k for k in spec if k not in PV_NOT_SOURCE_KEYS), "unknown")
    where = "spec.nodeAffinity"
    affinity = spec.get("nodeAffinity")
    affinity = node_affinity(affinity) if affinity is not None else None
    where = "spec.accessModes"
    modes = strings(spec.get("accessModes"), "accessModes")
    where = "spec.mountOptions"
    options = spec.get("mountOptions")
    options = strings(options, "mountOptions") if options else ()
    where = "metadata.annotations"
    meta = obj["metadata"]
    annotations = pairs(meta.get("annotations"), where) if meta.get("annotations") else ()
    return _make(PersistentVolume, (
        name, capacity, modes, spec.get("volumeMode") or "Filesystem", options, claim_ref, csi, source_kind, source,
        affinity, spec.get("persistentVolumeReclaimPolicy") or "Retain", spec.get("storageClassName") or "",
        annotations, (obj.get("status") or _EMPTY).get("phase") or "", meta.get("deletionTimestamp")))
