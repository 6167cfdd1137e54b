# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's device identity rule: a volume is set up on a node only when what is mounted or mapped for it there
is the device attached for it now (node facts ``device_mismatch``, docs/contracts.md section 2).

A device that goes away outside kubevol (a plain ``losetup -d``, a disk that dropped off its bus) gives its number to
the next device the kernel attaches, so a pod's Block map or a global mount kept from before shows another volume's
data. The kubelet keeps a mapped device open for as long as a pod maps it, so that it cannot go (pkg/volume/util
util.go MapBlockVolume, its "descriptor lock": "the block device is silently removed and attached another device
with the same name. Container runtime can't handle this problem"). kubevol has no long-running process to hold it;
it compares the numbers on every run instead:

- a Block pod map on another number is mapped again (its ``mount/pod`` step: unbind, bind the volume's device,
  node/publish.py block_target). The node's side is then right, but a running container keeps the device node its
  runtime made from the number when the container started (the CRI hands the runtime the pod's map path, and the
  runtime creates the container's node from it once), so the step's reason tells the operator to restart the pod;
- a global mount on another device is not swapped under running pods (their binds show its filesystem, and what they
  wrote went to that device): the volume is blocked on that node, naming its pods, and nothing of it is mounted,
  remounted or grown there; once its pods are stopped, the teardown unmounts the stale mount as any other.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError

REMAPPED = "KV-BLOCK-REMAPPED"  # the code a remap step's reason ends with (docs/errors.md)


class DeviceChanged(KubevolError):
    """A global mount on another device than the one attached for its volume now: blocked, never swapped."""
    code = "KV-DEVICE-CHANGED"
    message = ("volume {volume} on node {node} is blocked: its global mount {path} is on device {mounted}, not on the "
               "device attached for it now ({attached}), and kubevol does not swap it under running pods; stop pod(s) "
               "{pods}, run the reconcile so that it unmounts the stale mount, then start them again")


def _device(number, device):
    return "%s (%s)" % (device, number) if device else number


def stale_global_mounts(p):
    """Block every desired (volume, node) pair whose global mount is on another device than the volume's own now;
    the pairs go in ``p.device_changed`` so that the mount and expansion rules leave them alone."""
    if not p.reachable_facts:
        return  # no node facts: no global mount is known
    for pair, nv in p.desired.volumes.items():
        if not nv.mount_pods:
            continue
        unique, node = pair
        facts = p.reachable_facts.get(node)
        current = facts.global_mounts.get(unique) if facts is not None else None
        if not current or not current.get("mounted") or not current.get("device_mismatch"):
            continue
        attached = current.get("attached_device")
        error = DeviceChanged(volume=nv.spec.pv_name, node=node, path=current.get("path"),
                              mounted=_device(current.get("device_number"), current.get("device")),
                              attached=attached or "none", pods=", ".join(nv.pods))
        reason = error.msg  # it ends with its code
        p.device_changed[pair] = reason
        p.block(node, nv.spec.pv_name, None, reason)


def remap_reason(current, pod, node):
    """The reason of a Block pod's mount/pod step whose map is on another device than the volume's now."""
    attached = current.attached_device
    now = ("the volume's device now is %s" % attached if attached else
           "the volume has no device attached now (it is attached first)")
    return ("map again: pod %s's block device on node %s is %s, and %s; restart the pod once it is mapped, its "
            "containers keep the device they started with [%s]" % (pod, node, current.device_number or "unknown",
                                                                   now, REMAPPED))
