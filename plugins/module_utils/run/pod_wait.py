# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""pod_volumes_wait's decisions: is every volume kubevol manages for a pod published for it on its node, and if not, why.

The kubelet's volume manager answers the same question for its pods with WaitForAttachAndMount
(pkg/kubelet/volumemanager/volume_manager.go): it waits until every volume the pod's containers mount or map is in the
actual state of the world for that pod, and on timeout names the volumes still unattached or unmounted. kubevol has
no long-running manager, so a pod's volume is ready only when its node's facts show it published at the pod's path
(the volume plugin says how that shows: volume/ ``pod_published``; an inline ephemeral volume: its facts entry
mounted) and nothing in the plan is blocked or still to run for it (attach, mount; an expansion does not hold a pod
back, as it does not in the kubelet). What is not ready is explained in the planner's own words (its blocked entries,
else the steps a reconcile would still run), so a Multi-Attach held by another pod, an unbound claim or a failed node
say so. A volume kubevol does not set up (a secret, configMap, emptyDir, downwardAPI or projected volume, another CSI
driver's PV, a volume no container uses) is listed as not waited for, with why, and never counted as a ready mount.
Which plugin a volume is, and whether kubevol serves it, the volume plugin registry says (volume/). Pure: the action
plugin (plugins/action/pod_volumes_wait.py) polls the store and the node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import pv_unique_name
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (
    ephemeral_volume_handle, unique_volume_name)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import CLUSTER_STORE_ARGSPEC
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import (
    find_plugin_by_spec, plugin_for_spec_key)
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import BLOCK_MODE, FILESYSTEM

READY = "ready"
WAITING = "waiting"
NOT_WAITED = "not_waited"  # a volume kubevol does not set up (secret, emptyDir, another driver's, ...): listed, not waited for
SETUP_ACTIONS = ("attach", "mount")  # the steps a pod waits for (an expansion does not hold it back)
REQUIRED_ONE_OF = [("pods", "label_selector")]
# pod_volumes_wait's top-level options of the node's settings from before its node_settings (node_args.task_settings)
WAIT_LEGACY = ("kubelet_dir", "driver_options")


def argspec():
    """pod_volumes_wait's options (documented in plugins/modules/pod_volumes_wait.py)."""
    return dict(
        CLUSTER_STORE_ARGSPEC,
        pods=dict(type="list", elements="str", default=[]),
        label_selector=dict(type="str"),
        timeout=dict(type="int", default=300),
        interval=dict(type="int", default=5),
        node_name=dict(type="str"),
        known_drivers=dict(type="list", elements="str"),
        # the node's settings group, given whole to the node's facts (and its driver_options to the plan): the
        # reconcile role's, so that the volumes are waited for as the reconcile sees them
        node_settings=node_args.settings_argspec(),
        **node_args.legacy_argspec(WAIT_LEGACY)
    )


def parse_selector(text):
    """An equality-based label selector (``app=db,tier!=cache``, kubectl's -l) -> [(key, op, value)]."""
    terms = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        op = "!=" if "!=" in part else "==" if "==" in part else "=" if "=" in part else None
        if op is None:
            raise InvalidInput(field="label_selector", value=text,
                               reason="each term must be key=value, key==value or key!=value (set-based selectors "
                                      "are not supported)")
        key, value = (s.strip() for s in part.split(op, 1))
        if not key:
            raise InvalidInput(field="label_selector", value=text, reason="a term has no label key")
        terms.append((key, "!=" if op == "!=" else "=", value))
    return terms


def _matches(labels, terms):
    for key, op, value in terms:
        if (labels.get(key) == value) != (op == "="):
            return False
    return True


def select_pods(raw_items, pods=None, label_selector=None):
    """The "namespace/name" keys of the pods named in ``pods`` or matched by ``label_selector``, from the raw
    List items (labels are not in the planner's model). A named pod the cluster lacks is an error."""
    terms = parse_selector(label_selector) if label_selector else None
    found, selected = set(), []
    for obj in raw_items:
        if not isinstance(obj, dict) or obj.get("kind") != "Pod":
            continue
        meta = obj.get("metadata") or {}
        key = "%s/%s" % (meta.get("namespace") or "default", meta.get("name"))
        found.add(key)
        if terms is not None and _matches(meta.get("labels") or {}, terms):
            selected.append(key)
    for key in pods or ():
        if "/" not in key:
            key = "default/" + key
        if key not in found:
            raise InvalidInput(field="pods", value=key, reason="no such pod in the cluster (namespace/name)")
        if key not in selected:
            selected.append(key)
    return selected


def _pv_of(index, pod, volume):
    pvc = index.pvc_by_key.get("%s/%s" % (pod.namespace, volume.claim_name))
    return index.pv_by_name.get(pvc.volume_name) if pvc is not None and pvc.volume_name else None


def _blockers(plan_result, node, pod_key, names):
    """The planner's blocked reasons that hold this pod's volume back on its node: entries for the pod that name the
    volume (any of ``names``: its PV, its pod volume name or label) or none, and the volume's own (no pod)."""
    reasons = []
    for entry in plan_result.get("blocked") or ():
        if entry.get("node") not in (node, None):
            continue
        volume = entry.get("volume")
        if entry.get("pod") == pod_key and (volume is None or volume in names):
            reasons.append(entry["reason"])
        elif entry.get("pod") is None and volume is not None and volume in names:
            reasons.append(entry["reason"])
    return reasons


def _pending(plan_result, node, unique, pod_uid):
    """The setup steps a reconcile would still run for this volume on this node (for this pod, or its device)."""
    return ["%s/%s (%s)" % (s["action"], s["target"], s["reason"]) for s in plan_result.get("plan") or ()
            if s.get("node") == node and s.get("unique_volume_name") == unique and s["action"] in SETUP_ACTIONS
            and s.get("pod_uid") in (None, pod_uid)]


def _used(pod):
    """{volume name: mode} of what the pod's containers mount (Filesystem) or map (Block)."""
    used = dict((name, FILESYSTEM) for name, _read_only in pod.volume_mounts or ())
    used.update((name, BLOCK_MODE) for name in pod.volume_devices or ())
    return used


def _waiting(out, blockers, pending, default):
    reason = "; ".join(blockers)
    if not reason and pending:
        reason = "a reconcile would still run: " + "; ".join(pending)
    out.update(state=WAITING, reason=reason or default)
    return out


def volume_state(index, plan_result, node, facts, pod, volume, known_drivers):
    """{volume, pv, state, reason} of one of the pod's volumes on ``node`` (facts: NodeMounts or None)."""
    key = "%s/%s" % (pod.namespace, pod.name)
    out = {"volume": volume.name, "pv": None, "state": WAITING, "reason": None}
    mode = _used(pod).get(volume.name)
    pv = _pv_of(index, pod, volume) if volume.claim_name is not None else None
    if pv is not None:
        out["pv"] = pv.name
    if mode is None:
        # the kubelet's populator skips a volume no container uses (GetPodVolumeNames), and so does its wait
        out.update(state=NOT_WAITED, reason="no container of the pod mounts or maps it")
        return out
    if volume.claim_name is None:
        plugin = plugin_for_spec_key(volume.kind)
        if plugin is None or not plugin.EPHEMERAL:
            out.update(state=NOT_WAITED, reason="%s volume: not one kubevol sets up" % volume.kind)
            return out
        why = plugin.not_served(None, volume.driver, known_drivers)
        if why is not None:
            out.update(state=NOT_WAITED, reason=why)
            return out
        blockers = _blockers(plan_result, node, key, (volume.name, "%s/%s" % (key, volume.name)))
        unique = unique_volume_name(volume.driver, ephemeral_volume_handle(pod.uid, volume.name))
        pending = _pending(plan_result, node, unique, pod.uid)
        current = facts.ephemeral.get((pod.uid, volume.name)) if facts is not None else None
        if current is not None and current.mounted and current.unique_name == unique and not blockers \
                and not pending:
            out.update(state=READY)
            return out
        return _waiting(out, blockers, pending, "inline volume %s is not published for the pod on node %s yet; run "
                        "the reconcile" % (volume.name, node))
    if pv is None:
        blockers = _blockers(plan_result, node, key, ())
        return _waiting(out, blockers, [], "claim %s/%s is not bound to a PV yet: wait for it to bind [KV-CLAIM-UNBOUND]"
                        % (pod.namespace, volume.claim_name))
    plugin = find_plugin_by_spec(pv)
    if plugin is None:
        out.update(state=NOT_WAITED, reason="PV %s (%s): not one kubevol sets up" % (pv.name, pv.source_kind))
        return out
    why = plugin.not_served(pv.name, pv.csi.driver if pv.csi is not None else None, known_drivers)
    if why is not None:
        out.update(state=NOT_WAITED, reason=why)
        return out
    blockers = _blockers(plan_result, node, key, (pv.name,))
    unique = pv_unique_name(pv)
    pending = _pending(plan_result, node, unique, pod.uid)
    current = facts.pod_mounts.get((pod.uid, pv.name)) if facts is not None else None
    if current is not None and current.unique_name != unique:
        current = None  # another volume's entry under the PV's name (a re-created PV): not this one's
    if plugin.pod_published(current, mode) and not blockers and not pending:
        out.update(state=READY)
        return out
    return _waiting(out, blockers, pending, "not %s for the pod on node %s yet; run the reconcile" % (
        "mapped" if mode == BLOCK_MODE else "mounted", node))


def _unreachable(node, error):
    return "node %s is unreachable (%s): make it reachable and wait again [KV-NODE-UNREACHABLE]" % (node, error)


def pod_states(index, plan_result, keys, node_facts, known_drivers, unreachable=None):
    """[{pod, node, ready, volumes}] for the pods ``keys`` whose node is in ``node_facts`` ({node: NodeMounts});
    ``unreachable`` ({node: error}) gives the reason for the pods of a node whose facts could not be read. A pod is
    ready when every volume kubevol sets up for it is (its not-waited volumes do not count)."""
    unreachable = unreachable or {}
    by_key = dict(("%s/%s" % (p.namespace, p.name), p) for p in index.cluster.pods)
    states = []
    for key in keys:
        pod = by_key[key]
        node = pod.node_name or None
        entry = {"pod": key, "node": node, "ready": False, "volumes": []}
        if node is None:
            entry["reason"] = "pod %s is not scheduled to a node yet" % key
        elif node in unreachable:
            entry["reason"] = _unreachable(node, unreachable[node])
        elif node not in node_facts:
            entry["reason"] = ("pod %s is scheduled to node %s, which no host of this play answers for: add the node "
                               "to the play's hosts, or map its host to it with %s" % (key, node, setting("node_name")))
        else:
            facts = node_facts[node]
            if not facts.reachable:
                entry["reason"] = _unreachable(node, facts.error)
            else:
                entry["volumes"] = [volume_state(index, plan_result, node, facts, pod, v, known_drivers)
                                    for v in pod.volumes]
                entry["ready"] = all(v["state"] != WAITING for v in entry["volumes"])
        states.append(entry)
    return states


def not_ready_message(states, waited):
    """The timeout's message: each volume not ready and what blocks it."""
    lines = []
    for entry in states:
        if entry["ready"]:
            continue
        if entry.get("reason"):
            lines.append("%s: %s" % (entry["pod"], entry["reason"]))
            continue
        for vol in entry["volumes"]:
            if vol["state"] == WAITING:
                lines.append("%s volume %s%s on node %s: %s" % (
                    entry["pod"], vol["volume"], " (PV %s)" % vol["pv"] if vol["pv"] else "", entry["node"],
                    vol["reason"]))
    return "volumes not ready after %ds: %s" % (waited, " | ".join(lines))
