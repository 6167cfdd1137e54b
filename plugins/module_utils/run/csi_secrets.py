# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An external CSI driver's secrets, read from the Secret objects its PVs reference, for the node task only.

The plan carries each item's ``secret_refs`` ({kind: "namespace/name"}: spec.csi's *SecretRef, cluster/pv.py),
never a value: a plan is printed. node_phases (controller side) fills in ``secrets`` ({kind: {key: value}}) right
before it runs the node modules, whose ``volumes[].secrets`` option is ``no_log``, as the kubelet reads them when
it calls the driver (pkg/volume/csi/csi_client.go getCredentialsFromSecret, via csi_attacher.go, csi_mounter.go,
expander.go). A Secret that is missing or unreadable fails the volume that needs it on that node, naming the PV
and the reference, never a value (drivers/external/secrets.py SecretUnavailable); the node's other volumes run.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import CSI_SECRET_REFS
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.secrets import (
    InlineSecretUnavailable, SecretUnavailable, secret_data)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import (
    CLUSTER_STORE_ARGSPEC, CLUSTER_STORE_REQUIRED_IF, get_store, store_options)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import StoreError
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import unique_name_of


def needs_secrets(items):
    return any(item.get("secret_refs") for item in items or ())


class _Finder:
    """Secret objects by (namespace, name), from the store the run uses (the file's List, or the API one by one)."""

    def __init__(self, cluster_store):
        validated = ArgumentSpecValidator(CLUSTER_STORE_ARGSPEC, required_if=CLUSTER_STORE_REQUIRED_IF).validate(
            cluster_store or {})
        if validated.error_messages:
            raise ValueError("the cluster store options: %s" % "; ".join(validated.error_messages))
        params = validated.validated_parameters
        self.store = get_store(params["cluster_source"], **store_options(params))
        self.source = params["cluster_source"]
        self._secrets = None

    def __call__(self, namespace, name):
        if self.source == "file":
            if self._secrets is None:
                data = self.store.load()
                self._secrets = {}
                for obj in (data or {}).get("items") or ():
                    if isinstance(obj, dict) and obj.get("kind") == "Secret":
                        meta = obj.get("metadata") or {}
                        self._secrets[(meta.get("namespace"), meta.get("name"))] = obj
            return self._secrets.get((namespace, name))
        return self.store.get("Secret", name, namespace)

    def close(self):
        close = getattr(self.store, "close", None)
        if close is not None:
            close()


def _unavailable(item):
    """The error for a Secret ``item`` cannot have: a PV's names the PV, an inline volume's its pod and volume."""
    if item.get("ephemeral"):
        pods = item.get("pods") or ()
        pod = (pods[0].get("name") or pods[0].get("uid")) if pods else "?"
        return lambda **kw: InlineSecretUnavailable(volume=item["pv_name"], pod=pod, driver=item.get("driver"), **kw)
    return lambda **kw: SecretUnavailable(pv=item["pv_name"], **kw)


def _with_item_secrets(item, find, fields):
    """``item`` with ``secrets`` filled in from its ``secret_refs``; raises SecretUnavailable naming the reference."""
    refs = item.get("secret_refs") or {}
    if not refs:
        return item
    secrets = {}
    unavailable = _unavailable(item)
    for kind, ref in sorted(refs.items()):
        namespace, _sep, name = str(ref).partition("/")
        field = fields.get(kind, kind)
        if not namespace or not name:
            raise unavailable(field=field, ref=repr(ref), reason="is not a {name, namespace} reference")
        try:
            secret = find(namespace, name)
        except StoreError as exc:  # the API refused or failed: say which PV needs it (the message has no value)
            raise unavailable(field=field, ref=ref, reason="cannot be read (%s)" % exc.msg) from None
        if secret is None:
            raise unavailable(field=field, ref=ref, reason="does not exist")
        try:
            secrets[kind] = secret_data(secret)
        except ValueError as exc:
            raise unavailable(field=field, ref=ref, reason="cannot be read (%s)" % exc) from None
    return dict(item, secrets=secrets)


def secrets_by_volume(items, cluster_store):
    """(``items`` that can run, with their ``secrets`` filled in; the refused: ``[(item, error)]``). A Secret that
    cannot be had fails only the volume that needs it, as the kubelet fails only that volume's mount: the node's
    other volumes still run (node_phases reports the refused one as that volume's failure on the node)."""
    if not needs_secrets(items):
        return items, []
    find = _Finder(cluster_store)
    ready, refused = [], []
    try:
        for item in items:
            try:
                ready.append(_with_item_secrets(item, find, dict(CSI_SECRET_REFS)))
            except (SecretUnavailable, InlineSecretUnavailable) as err:
                refused.append((item, err))
        return ready, refused
    finally:
        find.close()


def with_refused(outcome, module, node, refused):
    """A node module's ``outcome`` with the volumes refused for their Secrets (``secrets_by_volume``) added as
    failures, in the shape the node modules give theirs (node/context.py run_each): the outcome fails, each refused
    volume is one ``failures`` entry, and what the module completed stays in ``volumes`` (recorded as done)."""
    if not refused:
        return outcome
    entries = [{"volume": item["pv_name"], "unique_volume_name": unique_name_of(item), "node": node,
                "msg": "volume %s: %s" % (item["pv_name"], err.msg)} for item, err in refused]
    msgs = [outcome["msg"]] if outcome.get("failed") and outcome.get("msg") else []
    msgs.append("%s on node %s did not run %d volume(s) whose Secrets it could not have: %s" % (
        module, node, len(entries), "; ".join(entry["msg"] for entry in entries)))
    return dict(outcome, failed=True, msg="; ".join(msgs), volumes=list(outcome.get("volumes") or ()),
                failures=list(outcome.get("failures") or ()) + entries)


def read_secrets(refs, cluster_store):
    """{ref: ({key: value}, None) or (None, why it cannot be had)} of the Secrets ``refs`` ("namespace/name") name: a
    StorageClass's provisioner secret for CreateVolume and DeleteVolume (plugins/action/volume_provision.py)."""
    refs = sorted(set(ref for ref in refs if ref))
    if not refs:
        return {}
    find = _Finder(cluster_store)
    found = {}
    try:
        for ref in refs:
            namespace, _sep, name = ref.partition("/")
            try:
                secret = find(namespace, name)
                found[ref] = (secret_data(secret), None) if secret is not None else (None, "does not exist")
            except StoreError as exc:
                found[ref] = (None, "cannot be read (%s)" % exc.msg)
            except ValueError as exc:
                found[ref] = (None, "cannot be read (%s)" % exc)
        return found
    finally:
        find.close()
