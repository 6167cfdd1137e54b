"""Helpers of test_csi_driver.py and test_csi_driver_errors.py: volume items as the node code gives them to
ExternalCsiDriver, the driver pointed at the test plugin, the kubelet's directories, the plugin's call log."""
import os
import subprocess
import sys
from types import SimpleNamespace

from ansible_collections.kubevol.volumes.plugins.module_utils.csi.client import CsiClient
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.driver import external_driver_class

NAME = "csi.kubevol.test"
MiB = 1024 * 1024
SIZE = 320 * MiB
ATTACH = ["CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME", "EXPAND_VOLUME"]
SECRET = "Sup3r-s3cret-do-not-print"
READ_ONLY_CALLS = {"GetPluginInfo", "Probe", "NodeGetInfo", "NodeGetCapabilities", "ControllerGetCapabilities",
                   "GetPluginCapabilities"}
PLUGIN_PYTHON = os.environ.get("KUBEVOL_CSI_PLUGIN_PYTHON") or (
    "/usr/bin/python3" if os.path.exists("/usr/bin/python3") and subprocess.run(
        ["/usr/bin/python3", "-c", "import grpc, google.protobuf"], stderr=subprocess.DEVNULL, check=False).returncode == 0
    else sys.executable)
REGISTRAR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "csiplugin",
                         "registrar.py")


def pod(uid="pod-a", **kw):
    fields = dict(uid=uid, name="ns1/web-%s" % uid, read_only=False, fs_group=None, service_account="sa1")
    fields.update(kw)
    return SimpleNamespace(**fields)


def item(handle, **kw):
    """A volume item as the node code gives it (node/volume.py VolumeItem plus the fields of the external driver:
    access_modes, attach_required, pod_info_on_mount, secrets, pv_capacity_bytes)."""
    fields = dict(pv_name="pv-" + handle, driver=NAME, volume_handle=handle, volume_attributes=(("tier", "gold"),),
                  capacity_bytes=None, pv_capacity_bytes=None, mode="Filesystem", fs_type="ext4", mount_options=(),
                  read_only=False, pods=(), multi_attach=False, ephemeral=False, access_modes=("ReadWriteOnce",),
                  attach_required=True, pod_info_on_mount=False, secrets={})
    fields.update(kw)
    return SimpleNamespace(**fields)


def external(plugin, node="node1", **options):
    options.setdefault("socket", plugin.socket)
    options.setdefault("timeout", 30)
    return external_driver_class(NAME)(None, plugin.work, node, {NAME: options})


def create(plugin, handle, size=64 * MiB):
    with CsiClient(plugin.socket, timeout=30) as csi:
        csi.call("CreateVolume", {"name": handle, "capacity_range": {"required_bytes": size}})


def dirs(plugin, handle, *pods):
    """The kubelet's staging path and each pod's target (whose parent the node code creates)."""
    staging = plugin.path("plugins", "kubernetes.io", "csi", NAME, handle, "globalmount")
    plugin.run("mkdir", "-p", staging)
    targets = []
    for uid in pods:
        parent = plugin.path("pods", uid, "volumes", "kubernetes.io~csi", "pv-" + handle)
        plugin.run("mkdir", "-p", parent)
        targets.append(os.path.join(parent, "mount"))
    return [staging] + targets


def methods(plugin):
    return [c["method"] for c in plugin.calls()]


def requests_of(plugin, method):
    return [c["request"] for c in plugin.calls() if c["method"] == method]
