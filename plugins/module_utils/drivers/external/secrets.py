# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The secrets of a CSI PersistentVolume, read from the Secret objects its ``spec.csi.*SecretRef`` name.

For the controller side (planning), which has the cluster's objects: ``item_secrets(csi_spec, find_secret)``
gives the volume item's ``secrets`` ({kind: {key: value}}, requests.SECRET_KINDS) that ExternalCsiDriver passes
to each call. Kubernetes: pkg/volume/csi/csi_util.go / csi_plugin.go ``getCredentialsFromSecret``
(``credentials[name] = string(data)`` for every key of ``secret.Data``), csi_attacher.go (nodeStageSecretRef),
csi_mounter.go (nodePublishSecretRef), expander.go (nodeExpandSecretRef), external-attacher
(controllerPublishSecretRef, for publish and unpublish), external-resizer (controllerExpandSecretRef).

A Secret that is missing or unreadable fails that volume naming the reference (namespace/name) and the PV,
never a value. The item carrying secrets must be passed to nodes with ``no_log`` (the module option), and
nothing that prints an item (a plan table, a diff, a result) may print ``secrets``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError

# requests.SECRET_KINDS -> the PV's spec.csi field
SECRET_REFS = (
    ("controller_publish", "controllerPublishSecretRef"),
    ("node_stage", "nodeStageSecretRef"),
    ("node_publish", "nodePublishSecretRef"),
    ("controller_expand", "controllerExpandSecretRef"),
    ("node_expand", "nodeExpandSecretRef"),
)


class SecretUnavailable(KubevolError):
    message = ("PersistentVolume {pv}: spec.csi.{field} names Secret {ref}, which {reason}; the volume's CSI calls need "
               "it: create that Secret (or fix the reference), then run again")


class InlineSecretUnavailable(SecretUnavailable):
    """An inline ephemeral volume's csi.nodePublishSecretRef (a Secret in the pod's namespace: csi_mounter.go
    SetUpAt)."""
    message = ("inline volume {volume} of pod {pod} (driver {driver}): csi.{field} names Secret {ref}, which {reason}; "
               "NodePublishVolume needs it: create that Secret in the pod's namespace (or fix the reference), then run "
               "again")


def secret_refs(pv_name, csi_spec):
    """{kind: (namespace, name)} of the references the PV's spec.csi sets."""
    refs = {}
    for kind, field in SECRET_REFS:
        ref = (csi_spec or {}).get(field)
        if not ref:
            continue
        if not isinstance(ref, dict) or not ref.get("name") or not ref.get("namespace"):
            raise SecretUnavailable(pv=pv_name, field=field, ref=repr(ref), reason="is not a {name, namespace} reference")
        refs[kind] = (str(ref["namespace"]), str(ref["name"]))
    return refs


def secret_data(secret):
    """A Secret object's ``data`` decoded (base64 -> text, as string(data) in Go), plus ``stringData`` when a
    manifest still carries it (the API server folds it into data)."""
    out = {}
    for key, value in ((secret or {}).get("data") or {}).items():
        try:
            out[str(key)] = base64.b64decode(str(value), validate=True).decode("utf-8", "surrogateescape")
        except (binascii.Error, ValueError):
            raise ValueError("key %r is not base64" % str(key)) from None
    for key, value in ((secret or {}).get("stringData") or {}).items():
        out[str(key)] = str(value)
    return out


def item_secrets(pv_name, csi_spec, find_secret):
    """The item's ``secrets``: ``find_secret(namespace, name)`` returns the Secret object (a dict) or None."""
    result = {}
    for kind, (namespace, name) in sorted(secret_refs(pv_name, csi_spec).items()):
        field = dict(SECRET_REFS)[kind]
        ref = "%s/%s" % (namespace, name)
        secret = find_secret(namespace, name)
        if secret is None:
            raise SecretUnavailable(pv=pv_name, field=field, ref=ref, reason="does not exist")
        try:
            result[kind] = secret_data(secret)
        except ValueError as exc:
            raise SecretUnavailable(pv=pv_name, field=field, ref=ref, reason="cannot be read (%s)" % exc) from None
    return result
