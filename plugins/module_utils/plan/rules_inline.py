# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's setup rule for inline ephemeral CSI volumes: published straight into their pod, with no attach and
no staging. Split from rules_setup.py, whose fsGroup check it shares."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.plan.plan_state import _step
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import unreachable_text
from ansible_collections.kubevol.volumes.plugins.module_utils.common.quantity import format_bytes
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.rules_setup import _root_needs_fs_group


def _inline_item(iv):
    """The volume item (contracts.md section 1) of an inline ephemeral volume: its one pod, its own handle. An
    external driver's also carries podInfoOnMount and the nodePublishSecretRef (a reference: run/csi_secrets.py
    reads the Secret for the node task, never into the plan)."""
    item = {"pv_name": iv.volume_name, "driver": iv.driver, "volume_handle": iv.volume_handle,
            "volume_attributes": dict(iv.volume_attributes), "capacity_bytes": iv.capacity_bytes,
            "mode": "Filesystem", "fs_type": iv.fs_type, "mount_options": [], "read_only": False,
            "multi_attach": False, "ephemeral": True,
            "pods": [{"uid": iv.pod_uid, "name": iv.pod, "read_only": iv.read_only}]}
    if iv.external:
        if iv.pod_info_on_mount:
            item["pod_info_on_mount"] = True
        if iv.secret_ref:
            item["secret_refs"] = {"node_publish": iv.secret_ref}
    return item


def publish_inline(p):
    """Inline ephemeral CSI volumes (pod.spec.volumes[].csi) to publish: csi_plugin.go getVolumeLifecycleMode
    (a pod's csi source is Ephemeral) and supportsVolumeLifecycleMode (checked in desired_state.inline_volume);
    the volume is neither attachable nor device-mountable (csi_plugin.go CanAttach, CanDeviceMount), so there is
    no attach, no VolumeAttachment and no staging: csi_mounter.go SetUpAt publishes it straight into
    pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount with the handle makeVolumeHandle gives, once per pod
    (util.go GetUniqueVolumeNameFromSpecWithPod: kubernetes.io/csi/<pod uid>-<volume>). The step is a mount/pod
    step marked ``ephemeral``: the driver creates the volume for the pod there. A pod runs on one node: while
    another node still reports the pod's inline volume (its nodeName was rewritten in a snapshot) and this plan
    does not unpublish it there, that volume is the pod's data and nothing new is created for it."""
    unpublishing = set((s["node"], s["pod_uid"], s["item"]["pv_name"]) for s in p.phases[("unmount", "pod")]
                       if s.get("ephemeral"))
    published_on = {}
    for node, facts in p.actual.node_facts.items():
        if facts.reachable:
            for uid, volume in facts.ephemeral:
                if (node, uid, volume) not in unpublishing:
                    published_on.setdefault((uid, volume), []).append(node)
    for key in sorted(p.desired.inline_volumes):
        iv = p.desired.inline_volumes[key]
        label = "%s/%s" % (iv.pod, iv.volume_name)
        error = p.unreachable(iv.node)
        if error is not None:
            p.block(iv.node, label, iv.pod, unreachable_text(iv.node, error))
            continue
        elsewhere = sorted(n for n in published_on.get((iv.pod_uid, iv.volume_name), ()) if n != iv.node)
        if elsewhere:
            p.block(iv.node, label, iv.pod, "pod %s's inline volume %s is still on node %s, where the snapshot does "
                    "not place the pod: delete the pod there and let the volume go with it [KV-MULTI-ATTACH]"
                    % (iv.pod, iv.volume_name, ", ".join(elsewhere)))
            continue
        facts = p.facts(iv.node)
        current = facts.ephemeral.get((iv.pod_uid, iv.volume_name)) if facts is not None else None
        if iv.external:
            why = ("pod %s uses inline volume %s: NodePublishVolume of driver %s into the pod's directory (%s)"
                   % (iv.pod, iv.volume_name, iv.driver, iv.kubernetes_name))
        else:
            why = ("pod %s uses inline volume %s: create and publish its %s %s volume (%s)"
                   % (iv.pod, iv.volume_name, format_bytes(iv.capacity_bytes), iv.fs_type, iv.kubernetes_name))
        if current is not None and current.mounted:
            # published; a pod's spec cannot change, so neither can its read-only flag; its fsGroup is re-checked
            if iv.fs_group is None or not _root_needs_fs_group(current, iv.fs_group):
                continue
            why = "apply fsGroup %d of pod %s to inline volume %s (volume root has group %s, mode %s)" % (
                iv.fs_group, iv.pod, iv.volume_name, current.root_gid, current.root_mode)
        extra = {}
        if iv.fs_group is not None:
            extra = {"pod_fs_group": iv.fs_group, "pod_fs_group_change_policy": iv.fs_group_change_policy or "Always"}
        if iv.pod_info_on_mount and iv.service_account:
            extra["pod_service_account"] = iv.service_account  # csi_mounter.go getPodInfoAttrs
        p.add(_step("mount", "pod", iv.node, label, iv.unique_name, why, _inline_item(iv), pod=iv.pod,
                    pod_uid=iv.pod_uid, pod_read_only=iv.read_only, ephemeral=True,
                    kubernetes_volume_name=iv.kubernetes_name, **extra))
