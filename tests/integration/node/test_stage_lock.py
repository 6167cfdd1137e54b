"""The loop driver stages a multi-attach image under its holder lock (drivers/loop.py node_stage), on real loop
devices: while another holder of the lock (another node staging it: nodes share the pool) has it, the mount waits,
probes nothing and formats nothing; once it is released, the mount formats the blank image and mounts it. A
ReadWriteOnce image is staged without the lock (only one node may hold it at all)."""
import fcntl
import hashlib
import os
import time

from conftest import DRIVER

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names

POD = "55555555-5555-4555-8555-555555555555"


def holder_lock(node, vol):
    path = os.path.join(node.pool, ".kubevol-holders",
                        hashlib.sha256(vol["volume_handle"].encode("utf-8")).hexdigest() + ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def start_mount_while_locked(node, vol):
    attached = node.module("k8s_volume_attach", volumes=[vol], provision=True)
    assert attached["_rc"] == 0 and attached["changed"], attached
    fd = holder_lock(node, vol)
    try:
        proc = node.start_module("node_volume_mount", volumes=[vol])
        time.sleep(2.0)
        waited = proc.poll() is None
        mounted_meanwhile = node.mounts_under()
    finally:
        os.close(fd)  # another node done staging it
    out, err = proc.communicate(timeout=120)
    return waited, mounted_meanwhile, proc.returncode, out, err


def test_a_multi_attach_image_is_staged_only_once_the_holder_lock_is_free(node):
    vol = node.vol("pv-shared", fs_type="ext4", multi_attach=True, pods=[{"uid": POD, "name": "default/a"}])
    waited, meanwhile, rc, out, err = start_mount_while_locked(node, vol)
    assert waited and meanwhile == [], (meanwhile, out, err)
    assert rc == 0, (out, err)
    gpath = names.device_mount_path(node.kubelet_dir, DRIVER, "pv-shared.img")
    assert node.mounts_under() == sorted([gpath, names.pod_mount_path(node.kubelet_dir, POD, "pv-shared")])
    assert node.run("blkid", "-p", "-o", "value", "-s", "TYPE", node.image(vol)).stdout.strip() == "ext4"


def test_a_read_write_once_image_does_not_wait_for_the_lock(node):
    vol = node.vol("pv-own", fs_type="ext4", pods=[{"uid": POD, "name": "default/a"}])
    waited, meanwhile, rc, out, err = start_mount_while_locked(node, vol)
    assert not waited and rc == 0, (out, err)
    assert len(meanwhile) == 2, meanwhile
