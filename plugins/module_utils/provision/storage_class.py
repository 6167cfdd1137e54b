# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a StorageClass's parameters give CreateVolume and the PV, as the external-provisioner reads them
(kubernetes-csi/external-provisioner pkg/controller/controller.go prepareProvision, removePrefixedParameters,
getSecretReference, verifyAndGetSecretNameAndNamespaceTemplate, resolveTemplate).

- ``csi.storage.k8s.io/fstype`` (or the deprecated ``fstype``) is the filesystem; both at once is refused.
- The parameters sent to the driver are the class's without the ``csi.storage.k8s.io/`` keys; an unknown key with
  that prefix is refused (the deprecated ``csiProvisionerSecretName``-style keys are kept, as there).
- The secrets: each kind's ``csi.storage.k8s.io/<kind>-secret-name`` and ``-namespace`` (or the deprecated
  ``csi<Kind>SecretName``), else the default ``csi.storage.k8s.io/secret-name`` / ``-namespace``, as templates:
  the namespace may use ``${pv.name}`` and ``${pvc.namespace}``, the name also ``${pvc.name}`` and
  ``${pvc.annotations['<key>']}``; the result must be a DNS-1123 label (namespace) or subdomain (name).

Pure: the planner resolves them (plan/rules_provision.py); refusals raise ClassRefused with the
external-provisioner's words.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError

PREFIX = "csi.storage.k8s.io/"
FS_TYPE = PREFIX + "fstype"

# kind -> (its name in messages, deprecated name key, deprecated namespace key); the prefixed keys are
# PREFIX + "<kind>-secret-name" / "-namespace"
SECRET_KINDS = (
    ("provisioner", "Provisioner", "csiProvisionerSecretName", "csiProvisionerSecretNamespace"),
    ("controller-publish", "ControllerPublish", "csiControllerPublishSecretName",
     "csiControllerPublishSecretNamespace"),
    ("node-stage", "NodeStage", "csiNodeStageSecretName", "csiNodeStageSecretNamespace"),
    ("node-publish", "NodePublish", "csiNodePublishSecretName", "csiNodePublishSecretNamespace"),
    ("controller-expand", "ControllerExpand", None, None),
    ("node-expand", "NodeExpand", None, None),
    ("controller-modify", "ControllerModify", None, None),
)
DEFAULT_SECRET = ("", "Default", None, None)  # csi.storage.k8s.io/secret-name, secret-namespace
KNOWN_KEYS = frozenset([FS_TYPE] + [PREFIX + "%s-secret-%s" % (kind, part) for kind, _n, _d, _e in SECRET_KINDS
                                    for part in ("name", "namespace")]
                       + [PREFIX + "secret-name", PREFIX + "secret-namespace"])
# the PV's spec.csi secret references, filled from the class's secrets of these kinds
PV_SECRET_REFS = (("controller-publish", "controllerPublishSecretRef"), ("node-stage", "nodeStageSecretRef"),
                  ("node-publish", "nodePublishSecretRef"), ("controller-expand", "controllerExpandSecretRef"),
                  ("node-expand", "nodeExpandSecretRef"))

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_TOKEN = re.compile(r"\$(\{[^}]*\}|[A-Za-z0-9_]+|.)")


class ClassRefused(KubevolError):
    """A StorageClass (or its claim) the external-provisioner would refuse: nothing is provisioned."""

    code = "KV-STORAGECLASS"


def fs_type(parameters):
    """The filesystem the class asks for ("" when none), as prepareProvision reads it."""
    found = [value for key, value in parameters.items() if key.lower() == "fstype" or key == FS_TYPE]
    if len(found) > 1:
        raise ClassRefused('fstype specified in parameters with both "fstype" and "%s" keys' % FS_TYPE)
    return found[0] if found else ""


def create_parameters(parameters):
    """The parameters CreateVolume gets: removePrefixedParameters."""
    kept = {}
    for key, value in parameters.items():
        if key.startswith(PREFIX):
            if key not in KNOWN_KEYS:
                raise ClassRefused('found unknown parameter key "%s" with reserved namespace %s' % (key, PREFIX))
            continue
        kept[key] = value
    return kept


def is_dns1123_label(value):
    return len(value) <= 63 and bool(_LABEL.match(value))


def is_dns1123_subdomain(value):
    return 0 < len(value) <= 253 and all(_LABEL.match(part) for part in value.split("."))


def resolve_template(template, params):
    """os.Expand over ``params``; an unknown token is refused, naming every one (resolveTemplate)."""
    missing = set()

    def expand(match):
        token = match.group(1)
        key = token[1:-1] if token.startswith("{") else token
        if key not in params:
            missing.add(key)
            return ""
        return params[key]
    resolved = _TOKEN.sub(expand, template)
    if missing:
        raise ClassRefused("invalid tokens: %s" % ", ".join('"%s"' % m for m in sorted(missing)))
    return resolved


def _templates(kind, parameters):
    """(name template, namespace template) of one kind's secret, or None
    (verifyAndGetSecretNameAndNamespaceTemplate)."""
    key, label, old_name, old_namespace = kind
    prefix = PREFIX + (key + "-" if key else "")
    names = [parameters[k] for k in (old_name, prefix + "secret-name") if k and k in parameters]
    namespaces = [parameters[k] for k in (old_namespace, prefix + "secret-namespace") if k and k in parameters]
    if len(names) > 1 or len(namespaces) > 1:
        raise ClassRefused('%s secrets specified in parameters with both "csi" and "%s" keys' % (label, PREFIX))
    if len(names) != len(namespaces):
        raise ClassRefused("either name and namespace for %s secrets specified, Both must be specified" % label)
    if not names:
        return None
    if not names[0] or not namespaces[0]:
        raise ClassRefused("%s secrets specified in parameters but value of either namespace or name is empty"
                           % label)
    return names[0], namespaces[0]


def secret_reference(kind, parameters, pv_name, claim):
    """"namespace/name" of ``kind``'s secret (provisioner, node-stage, ...) for the PV ``pv_name`` of ``claim`` (a
    PersistentVolumeClaim of the model, or None), or None when the class names none (getSecretReference)."""
    entry = next(k for k in SECRET_KINDS if k[0] == kind)
    templates = _templates(entry, parameters) or _templates(DEFAULT_SECRET, parameters)
    if templates is None:
        return None
    name_template, namespace_template = templates
    namespace_params = {"pv.name": pv_name}
    name_params = {"pv.name": pv_name}
    if claim is not None:
        namespace_params["pvc.namespace"] = claim.namespace
        name_params.update({"pvc.name": claim.name, "pvc.namespace": claim.namespace})
        name_params.update(("pvc.annotations['%s']" % k, v) for k, v in claim.annotations)
    try:
        namespace = resolve_template(namespace_template, namespace_params)
        name = resolve_template(name_template, name_params)
    except ClassRefused as err:
        raise ClassRefused("error resolving the %s secret of the StorageClass: %s" % (entry[1], err.text))
    if not is_dns1123_label(namespace):
        raise ClassRefused('"%s" resolved to "%s" which is not a valid namespace name'
                           % (namespace_template, namespace))
    if not is_dns1123_subdomain(name):
        raise ClassRefused('"%s" resolved to "%s" which is not a valid secret name' % (name_template, name))
    return "%s/%s" % (namespace, name)


def pv_secret_refs(parameters, pv_name, claim):
    """{spec.csi field: {namespace, name}} of the secret references the PV carries."""
    refs = {}
    for kind, field in PV_SECRET_REFS:
        ref = secret_reference(kind, parameters, pv_name, claim)
        if ref is not None:
            namespace, name = ref.split("/", 1)
            refs[field] = {"namespace": namespace, "name": name}
    return refs
