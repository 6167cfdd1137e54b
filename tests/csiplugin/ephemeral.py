"""The test CSI plugin's inline ephemeral volumes (CSI spec, "Ephemeral volumes"; Kubernetes passes
``csi.storage.k8s.io/ephemeral: "true"`` in volume_context when the CSIDriver says podInfoOnMount).

Test code only (never shipped). NodePublishVolume creates the volume, NodeUnpublishVolume deletes it: the plugin
owns its lifetime. A volume is a directory ``STATE/ephemeral/<volume_id>`` bind-mounted at the target (read-only
when asked), as csi-driver-host-path serves its ephemeral volumes, and as secrets-store-csi-driver and
cert-manager's csi-driver serve theirs (files, not block devices): no loop device or image to leak on a shared
kernel, and its data is readable from the state directory after the pod wrote it. Each volumeAttribute
``file.<name>`` becomes a file ``<name>`` holding its value, written when the volume is created (the driver's
content, as a secrets-store or certificate driver writes its files). Secrets are never written anywhere.
"""
import os
import re
import shutil

from backend import PluginError, mount_at, run

EPHEMERAL_KEY = "csi.storage.k8s.io/ephemeral"
FILE_PREFIX = "file."


def requested(request):
    return request.volume_context.get(EPHEMERAL_KEY) == "true"


def _directory(pool, volume_id):
    if not volume_id or not re.match(r"^[A-Za-z0-9][A-Za-z0-9._-]*$", volume_id):
        raise PluginError("INVALID_ARGUMENT", "bad volume_id %r" % volume_id)
    return os.path.join(pool.state_dir, "ephemeral", volume_id)


def publish(pool, state, request):
    """Create the volume (once) and bind-mount it at the target; a second call for the same target is a no-op."""
    if request.volume_capability.WhichOneof("access_type") != "mount":
        raise PluginError("INVALID_ARGUMENT", "an ephemeral volume is a mount volume")
    volumes = state.setdefault("ephemeral", {})
    known = volumes.get(request.volume_id)
    if known is not None and known["target"] != request.target_path:
        raise PluginError("ALREADY_EXISTS", "ephemeral volume %s is published at %s"
                          % (request.volume_id, known["target"]))
    directory = _directory(pool, request.volume_id)
    if known is None:
        os.makedirs(directory, mode=0o755, exist_ok=True)
        for key, value in sorted(request.volume_context.items()):
            name = key[len(FILE_PREFIX):]
            if key.startswith(FILE_PREFIX) and name and "/" not in name and name not in (".", ".."):
                with open(os.path.join(directory, name), "w") as handle:
                    handle.write(value)
        volumes[request.volume_id] = {"target": request.target_path, "directory": directory}
    os.makedirs(request.target_path, exist_ok=True)  # the SP creates target_path (spec: NodePublishVolume)
    if mount_at(request.target_path) is None:
        run("mount", "--bind", directory, request.target_path)
        if request.readonly:
            run("mount", "-o", "remount,bind,ro", request.target_path)


def delete(pool, state, volume_id):
    """After NodeUnpublishVolume unmounted the target: delete the volume (nothing when it is not an ephemeral one)."""
    known = state.get("ephemeral", {}).pop(volume_id, None)
    if known is None:
        return
    directory = _directory(pool, volume_id)
    if mount_at(directory) is None and os.path.isdir(directory):
        shutil.rmtree(directory)
