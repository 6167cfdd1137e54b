"""Names and paths as Kubernetes computes them (independent of the collection's names.py)."""
import hashlib

from e2e_lib.environment import DRIVER, KUBELET


def unique_name(handle):
    return "kubernetes.io/csi/%s^%s" % (DRIVER, handle)


def va_name(handle, node):
    """pkg/volume/csi/csi_attacher.go getAttachmentName: csi-<sha256(handle + driver + node)>."""
    return "csi-" + hashlib.sha256((handle + DRIVER + node).encode()).hexdigest()


def pod_mount_path(uid, pv):
    return "%s/pods/%s/volumes/kubernetes.io~csi/%s/mount" % (KUBELET, uid, pv)


def pod_device_path(uid, pv):
    return "%s/pods/%s/volumeDevices/kubernetes.io~csi/%s" % (KUBELET, uid, pv)


def global_mount_path(handle):
    return "%s/plugins/kubernetes.io/csi/%s/%s/globalmount" % (
        KUBELET, DRIVER, hashlib.sha256(handle.encode()).hexdigest())
