# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The volume item of docs/contracts.md section 1 as frozen data, validated before anything runs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.common.value import REQUIRED, Value

FILESYSTEM = "Filesystem"
BLOCK = "Block"


class PodMount(Value):
    FIELDS = (
        ("uid", REQUIRED),  # str
        ("name", ""),  # str
        ("read_only", False),  # bool
        # the pod's securityContext.fsGroup, when its CSIDriver's fsGroupPolicy lets the kubelet apply it
        ("fs_group", None),  # Optional[int]
        ("fs_group_change_policy", None),  # Optional[str]
    )


class VolumeItem(Value):
    FIELDS = (
        ("pv_name", REQUIRED),  # str
        ("driver", REQUIRED),  # str
        ("volume_handle", REQUIRED),  # str
        ("volume_attributes", ()),  # Tuple[Tuple[str, str], ...]
        ("capacity_bytes", None),  # Optional[int]
        ("mode", FILESYSTEM),  # str
        ("fs_type", "ext4"),  # str
        ("mount_options", ()),  # Tuple[str, ...]
        ("read_only", False),  # bool
        ("pods", ()),  # Tuple[PodMount, ...]
        # ReadWriteMany / ReadOnlyMany: the backend lets more than one node attach it
        ("multi_attach", False),  # bool
        ("detach", True),  # bool
        # Unmount the global mount once no pod mount remains (defaults to `detach`): a volume the
        # node keeps attached (e.g. its detach is blocked elsewhere) can still lose its device mount.
        ("unmount_device", True),  # bool
        # an inline ephemeral CSI volume (pod.spec.volumes[].csi): published straight into its one pod, no
        # attach or staging for the cluster; the driver creates its backing volume and deletes it at unpublish
        ("ephemeral", False),  # bool
    )

    @property
    def unique_name(self):
        return names.unique_volume_name(self.driver, self.volume_handle)

    @property
    def attributes(self):
        return dict(self.volume_attributes)

    @property
    def block(self):
        return self.mode == BLOCK

    def attachment_name(self, node_name):
        return names.volume_attachment_name(self.volume_handle, self.driver, node_name)


def volume_item(raw):
    """Build a VolumeItem from one ``volumes`` element; raise UnsafeName/InvalidInput on bad input."""
    if not isinstance(raw, dict):
        raise InvalidInput(field="volumes item", value=raw, reason="must be a dict")
    names.check_component("PV name", raw.get("pv_name"))
    names.check_driver_name(raw.get("driver"))
    names.check_component("volume handle", raw.get("volume_handle"))
    attrs = raw.get("volume_attributes") or {}
    if not isinstance(attrs, dict):
        raise InvalidInput(field="volume_attributes", value=attrs, reason="must be a dict")
    for key, value in attrs.items():
        if "\x00" in str(key) or "\x00" in str(value):
            raise InvalidInput(field="volume_attributes", value=key, reason="NUL is not allowed")
    mode = raw.get("mode") or FILESYSTEM
    if mode not in (FILESYSTEM, BLOCK):
        raise InvalidInput(field="mode", value=mode, reason="must be Filesystem or Block")
    capacity = raw.get("capacity_bytes")
    if capacity is not None and (not isinstance(capacity, int) or capacity < 0):
        raise InvalidInput(field="capacity_bytes", value=capacity, reason="must be a non-negative integer")
    options = tuple(raw.get("mount_options") or ())
    for opt in options:
        if not opt or "," in opt or any(ord(c) < 32 for c in opt):
            raise InvalidInput(field="mount_options", value=opt,
                               reason="each option must be one non-empty option without ',' or control characters")
    pods = []
    for pod in raw.get("pods") or ():
        if not isinstance(pod, dict):
            raise InvalidInput(field="pods item", value=pod, reason="must be a dict")
        names.check_component("pod uid", pod.get("uid"))
        fs_group = pod.get("fs_group")
        if fs_group is not None and not names.is_group_id(fs_group):
            raise InvalidInput(field="pods[].fs_group", value=fs_group,
                               reason="must be a group ID, an integer from 0 to %d" % names.MAX_GROUP_ID)
        change_policy = pod.get("fs_group_change_policy")
        if change_policy is not None and change_policy not in names.FS_GROUP_CHANGE_POLICIES:
            raise InvalidInput(field="pods[].fs_group_change_policy", value=change_policy,
                               reason="must be %s" % " or ".join(names.FS_GROUP_CHANGE_POLICIES))
        pods.append(PodMount(uid=pod["uid"], name=pod.get("name") or "", read_only=bool(pod.get("read_only")),
                             fs_group=fs_group, fs_group_change_policy=change_policy))
    detach = True if raw.get("detach") is None else bool(raw.get("detach"))
    return VolumeItem(
        pv_name=raw["pv_name"], driver=raw["driver"], volume_handle=raw["volume_handle"],
        volume_attributes=tuple(sorted((str(k), str(v)) for k, v in attrs.items())),
        capacity_bytes=capacity, mode=mode, fs_type=raw.get("fs_type") or "ext4",
        mount_options=options, read_only=bool(raw.get("read_only")), pods=tuple(pods),
        multi_attach=bool(raw.get("multi_attach")), detach=detach,
        unmount_device=detach if raw.get("unmount_device") is None else bool(raw.get("unmount_device")) or detach,
        ephemeral=_ephemeral(raw, pods, mode),
    )


def _ephemeral(raw, pods, mode):
    """An inline ephemeral volume's item names exactly one pod, is Filesystem, and its handle is that pod's
    (csi_mounter.go makeVolumeHandle), so the image it names is never another volume's."""
    if not raw.get("ephemeral"):
        return False
    if len(pods) != 1 or mode != FILESYSTEM:
        raise InvalidInput(field="ephemeral", value=raw.get("pv_name"),
                           reason="an inline ephemeral volume names exactly one pod and is Filesystem mode")
    expected = names.ephemeral_volume_handle(pods[0].uid, raw["pv_name"])
    if raw["volume_handle"] != expected:
        raise InvalidInput(field="volume_handle", value=raw["volume_handle"],
                           reason="an inline ephemeral volume's handle is csi-sha256(pod uid + volume name), %s"
                                  % expected)
    return True
