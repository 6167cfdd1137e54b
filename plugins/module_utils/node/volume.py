# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The volume item of docs/contracts.md section 1 as frozen data, validated before anything runs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.driver_options import normalized
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.common.value import REQUIRED, Value
from ansible_collections.kubevol.volumes.plugins.module_utils import volume as volume_plugins
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import CSI

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
        ("service_account", ""),  # str: spec.serviceAccountName (an external CSI driver's podInfoOnMount)
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
        # the volume plugin; local and hostPath items have driver None, volume_handle = the PV name, and a path
        ("plugin", CSI),  # str
        ("path", None),  # Optional[str]: spec.local.path or spec.hostPath.path
        ("host_path_type", ""),  # str: spec.hostPath.type
        # an external CSI driver's (drivers/external/): its CSIDriver's attachRequired, the PV's accessModes
        ("attach_required", True),  # bool
        ("access_modes", ()),  # Tuple[str, ...]
        ("pod_info_on_mount", False),  # bool: its CSIDriver's podInfoOnMount
        ("secrets", None),  # Optional[Secrets]: never printed
        # Optional[Tuple[(key, value)]]: a controller host's ControllerPublishVolume answer (controller_publish_context)
        ("controller_publish_context", None),
        # the nodes this plan detaches the volume from before this attach (the planner's); only a check run reads it
        ("detached_first_from", ()),  # Tuple[str, ...]
    )

    @property
    def csi(self):
        return self.plugin == CSI

    @property
    def unique_name(self):
        return volume_plugins.unique_name_of(self)

    @property
    def attributes(self):
        return dict(self.volume_attributes)

    @property
    def block(self):
        return self.mode == BLOCK

    def attachment_name(self, node_name):
        return names.volume_attachment_name(self.volume_handle, self.driver, node_name)


def unique_name_of(raw):
    """The unique volume name of a raw ``volumes`` element (not validated): its plugin's rule (volume/)."""
    return volume_plugins.unique_name_of(raw)


def _plugin_fields(raw):
    """(plugin, path, host_path_type) of a raw item; a local or hostPath item names no driver, its handle is its PV
    name and its path is absolute and normalized (validation.ValidatePathNoBacksteps, and more: a PV path with '//'
    or '.' is refused too, so the allowed-directory check compares what is mounted)."""
    pv = raw["pv_name"]
    plugin = raw.get("plugin") or CSI
    known = volume_plugins.names()  # the volume plugins (docs/contracts.md section 1): the registry's
    if plugin not in known:
        raise InvalidInput(field="plugin of PV %s" % pv, value=plugin, volume=pv,
                           reason="must be one of %s" % ", ".join(known))
    path, host_path_type = raw.get("path"), raw.get("host_path_type") or ""
    if plugin == CSI:
        if path is not None or host_path_type:
            raise InvalidInput(field="path of PV %s" % pv, value=path or host_path_type, volume=pv,
                               reason="path and host_path_type are for kubernetes.io/local-volume and "
                                      "kubernetes.io/host-path items only")
        return plugin, None, ""
    if raw.get("driver") not in (None, ""):
        raise InvalidInput(field="driver of PV %s" % pv, value=raw.get("driver"), volume=pv,
                           reason="a %s item names no CSI driver (driver: null)" % plugin)
    if raw.get("volume_handle") not in (None, "", pv):
        raise InvalidInput(field="volume_handle of PV %s" % pv, value=names.show_handle(raw.get("volume_handle")),
                           volume=pv,
                           reason="a %s item's volume handle is its PV name" % plugin)
    # null: a teardown the planner built from node facts alone (the PV is gone); unmounting needs no path, and
    # every step that would use one refuses it (paths.resolve)
    if path is not None and (not isinstance(path, str) or "\x00" in path or not path.startswith("/")
                             or not normalized(path)):
        raise InvalidInput(field="path of PV %s" % pv, value=path, volume=pv,
                           reason="must be an absolute, normalized path (no '.', '..', '//', trailing '/' or NUL)")
    types = volume_plugins.get_plugin(plugin).ITEM_TYPES  # core/v1 HostPathType: "" (HostPathUnset) checks nothing
    if host_path_type not in types:
        raise InvalidInput(field="host_path_type of PV %s" % pv, value=host_path_type, volume=pv,
                           reason="must be %s" % ("empty for a %s volume" % volume_plugins.get_plugin(plugin).KIND
                                                  if types == ("",) else "one of %s, or empty" % ", ".join(types[1:])))
    if raw.get("ephemeral"):
        raise InvalidInput(field="ephemeral of PV %s" % pv, value=True, volume=pv,
                           reason="inline ephemeral volumes are CSI volumes")
    return plugin, path, host_path_type


def volume_item(raw):
    """Build a VolumeItem from one ``volumes`` element; raise UnsafeName/InvalidInput on bad input."""
    if not isinstance(raw, dict):
        raise InvalidInput(field="volumes item", value=raw, reason="must be a dict")
    names.check_component("PV name", raw.get("pv_name"))
    plugin, path, host_path_type = _plugin_fields(raw)
    if plugin == CSI:
        names.check_driver_name(raw.get("driver"))
        # opaque, hashed wherever it names a file: only the API's rule here, the driver's own in its validate()
        problem = names.handle_problem(raw.get("volume_handle"))
        if problem is not None:
            raise InvalidInput(field="volume_handle of PV %s" % raw["pv_name"],
                               value=names.show_handle(raw.get("volume_handle")), volume=raw["pv_name"], reason=problem)
    else:
        raw = dict(raw, driver=None, volume_handle=raw["pv_name"])
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
                             fs_group=fs_group, fs_group_change_policy=change_policy,
                             service_account=str(pod.get("service_account") or "")))
    detach = True if raw.get("detach") is None else bool(raw.get("detach"))
    return VolumeItem(
        pv_name=raw["pv_name"], driver=raw["driver"], volume_handle=raw["volume_handle"],
        volume_attributes=tuple(sorted((str(k), str(v)) for k, v in attrs.items())),
        capacity_bytes=capacity, mode=mode, fs_type=_fs_type(raw),
        mount_options=options, read_only=bool(raw.get("read_only")), pods=tuple(pods),
        multi_attach=bool(raw.get("multi_attach")), detach=detach,
        unmount_device=_unmount_device(raw, plugin, detach),
        ephemeral=_ephemeral(raw, pods, mode), plugin=plugin, path=path, host_path_type=host_path_type,
        attach_required=raw.get("attach_required") is not False,
        access_modes=tuple(str(m) for m in raw.get("access_modes") or ()),
        pod_info_on_mount=raw.get("pod_info_on_mount") is True,
        secrets=_secrets(raw),
        controller_publish_context=_publish_context(raw),
        detached_first_from=_node_names(raw, "detached_first_from"),
    )


def _node_names(raw, field):
    """A list of node names (each one path component: names.check_component) as a tuple."""
    value = raw.get(field) or ()
    if not isinstance(value, (list, tuple)):
        raise InvalidInput(field="%s of PV %s" % (field, raw["pv_name"]), value=value, reason="must be a list of nodes")
    for node in value:
        names.check_component("node name", node)
    return tuple(value)


def _fs_type(raw):
    """ext4 unless given; an inline volume's "" stays "": an external driver's csi.fsType unset is sent empty
    (csi_mounter.go SetUpAt), the plugin picks its own."""
    if raw.get("ephemeral") and raw.get("fs_type") == "":
        return ""
    return raw.get("fs_type") or "ext4"


def _publish_context(raw):
    context = raw.get("controller_publish_context")
    if context is None:
        return None
    if not isinstance(context, dict):
        raise InvalidInput(field="controller_publish_context of PV %s" % raw["pv_name"], value=context,
                           reason="must be a mapping of string to string (ControllerPublishVolume's publish_context)")
    return tuple(sorted((str(k), str(v)) for k, v in context.items()))


class Secrets(dict):
    """{kind: {key: value}}: hashable as the item is, and never printed (an error or a log line showing an item
    shows this placeholder)."""

    def __hash__(self):
        return hash(tuple(sorted(self)))

    def __repr__(self):
        return "<secrets: %s>" % ", ".join(sorted(self))

    __str__ = __repr__


def _secrets(raw):
    """An external CSI driver's secrets ({kind: {key: value}}, node_phases fills them in); refused naming the kind
    and key only, never a value."""
    secrets = raw.get("secrets") or {}
    if not isinstance(secrets, dict):
        raise InvalidInput(field="secrets of PV %s" % raw["pv_name"], value="(hidden)", reason="must be a dict")
    out = {}
    for kind, data in secrets.items():
        if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            raise InvalidInput(field="secrets[%s] of PV %s" % (kind, raw["pv_name"]), value="(hidden)",
                               reason="must map each key to a string")
        out[str(kind)] = dict(data)
    return Secrets(out) if out else None


def _unmount_device(raw, plugin, detach):
    """A CSI volume being detached loses its device mount too; a local or hostPath item has no detach, so its own
    ``unmount_device`` alone says whether the global mount goes (default: ``detach``, true)."""
    if raw.get("unmount_device") is None:
        return detach
    return bool(raw.get("unmount_device")) or (detach and plugin == CSI)


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
        raise InvalidInput(field="volume_handle", value=names.show_handle(raw["volume_handle"]),
                           reason="an inline ephemeral volume's handle is csi-sha256(pod uid + volume name), %s"
                                  % expected)
    return True
