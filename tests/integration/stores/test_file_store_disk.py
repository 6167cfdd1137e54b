"""The file store on a real full or read-only filesystem: a clear error, the state file intact, no temp file.

Each test mounts a small tmpfs in its own tmp dir, puts the state file there, fills the filesystem (ENOSPC) or
remounts it read-only (EROFS), and unmounts it afterwards, also when the test fails. A write that fails must name
the file, the step, what stayed intact and what to do, and leave nothing behind (before this, a full disk gave a
bare "[Errno 28] No space left on device" and left a 0-byte <state>.run-lock.tmp).
"""
import datetime
import errno
import os
import subprocess

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import StoreError
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore

if os.geteuid() != 0:
    pytest.skip("mounting a tmpfs needs root", allow_module_level=True)

DRIVER = "loop.kubevol.io"
STATE = """\
apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    name: node1
  status: {}
- apiVersion: v1
  kind: PersistentVolume
  metadata:
    name: pv-a
  spec:
    capacity:
      storage: 1Gi
kind: List
metadata:
  resourceVersion: ""
"""
RECORD = {"type": "attached", "node": "node1", "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img",
          "device_path": "/dev/loop3"}
WHO = {"host": "elsewhere", "pid": 1, "pid_start": None}  # a holder on another host: never taken over as dead


def now():
    return datetime.datetime.now(datetime.timezone.utc)


@pytest.fixture
def small_fs(tmp_path):
    """A 256 KiB tmpfs mounted at tmp_path/fs; unmounted (lazily if busy) after the test."""
    mount_point = tmp_path / "fs"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0755", "kubevol-test-full", str(mount_point)],
                   check=True)
    try:
        yield mount_point
    finally:
        if subprocess.run(["umount", str(mount_point)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(mount_point)], check=True)


def fill(directory):
    """Write a filler file until the filesystem is full; returns its path."""
    filler = os.path.join(str(directory), "filler")
    with open(filler, "wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError as err:
            assert err.errno == errno.ENOSPC, err
    with pytest.raises(OSError) as err:  # really full: not even one more byte in a new file
        with open(os.path.join(str(directory), "probe"), "wb") as probe:
            probe.write(b"x")
    assert err.value.errno == errno.ENOSPC
    os.unlink(os.path.join(str(directory), "probe"))
    return filler


def listing(directory):
    return sorted(os.listdir(str(directory)))


def test_full_disk_state_write_says_what_and_leaves_the_state_file_and_no_temp_file(small_fs):
    state = small_fs / "cluster.yaml"
    state.write_text(STATE)
    store = FileStore(str(state))
    with store.locked():
        pass  # the lock file exists already, as after any earlier run
    fill(small_fs)
    with pytest.raises(StoreError) as err:
        store.apply([RECORD])
    msg = err.value.msg
    assert msg.startswith("cluster store file %s: could not write the new state: " % state), msg
    assert "failed: No space left on device (ENOSPC)" in msg, msg
    assert "the state file %s is unchanged: none of this update is in it and no temp file was left" % state in msg
    assert "the filesystem holding %s is full" % small_fs in msg and "run again" in msg
    assert state.read_text() == STATE
    assert listing(small_fs) == ["cluster.yaml", "cluster.yaml.lock", "filler"]
    os.unlink(str(small_fs / "filler"))  # room again: the same records are written
    assert store.apply([RECORD])["changed"] is True
    assert "VolumeAttachment" in state.read_text()


def test_full_disk_run_lock_write_says_what_and_leaves_no_temp_file(small_fs):
    state = small_fs / "cluster.yaml"
    state.write_text(STATE)
    store = FileStore(str(state))
    with store.locked():
        pass
    fill(small_fs)
    with pytest.raises(StoreError) as err:
        store.acquire_run_lock("run-1", timeout=0, who=WHO, now=now)
    msg = err.value.msg
    assert msg.startswith("cluster store file %s: could not write the run lock %s.run-lock: " % (state, state)), msg
    assert "No space left on device (ENOSPC)" in msg
    assert "the lock is unchanged (no run holds it), the state file %s was not touched and no temp file was left" \
        % state in msg, msg
    assert "is full" in msg
    assert listing(small_fs) == ["cluster.yaml", "cluster.yaml.lock", "filler"]  # no 0-byte cluster.yaml.run-lock.tmp
    assert state.read_text() == STATE


def test_full_disk_run_lock_renewal_keeps_the_lock_as_it_was(small_fs):
    state = small_fs / "cluster.yaml"
    state.write_text(STATE)
    store = FileStore(str(state))
    store.acquire_run_lock("run-1", timeout=0, who=WHO, now=now)
    lock = (small_fs / "cluster.yaml.run-lock").read_bytes()
    fill(small_fs)
    with pytest.raises(StoreError) as err:
        store.renew_run_lock("run-1", now=now)
    assert "could not write the run lock" in err.value.msg and "the lock is unchanged (held by run-1 since" in err.value.msg
    assert (small_fs / "cluster.yaml.run-lock").read_bytes() == lock
    assert listing(small_fs) == ["cluster.yaml", "cluster.yaml.lock", "cluster.yaml.run-lock", "filler"]


def test_read_only_filesystem_says_so_and_changes_nothing(small_fs):
    state = small_fs / "cluster.yaml"
    state.write_text(STATE)
    store = FileStore(str(state))
    store.acquire_run_lock("run-1", timeout=0, who=WHO, now=now)
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    before = listing(small_fs)
    for attempt in (lambda: store.apply([RECORD]), lambda: store.release_run_lock("run-1")):
        with pytest.raises(StoreError) as err:
            attempt()
        msg = err.value.msg
        assert ("cannot open the lock file %s.lock, which every run and every write of the state file %s takes: "
                "Read-only file system (EROFS)" % (state, state)) in msg, msg
        assert msg.endswith("[KV-STATE-WRITE]") and msg.count(". ") == 0, msg  # one sentence, with its code
        assert "%s is on a read-only filesystem: remount it read-write" % small_fs in msg
    assert state.read_text() == STATE and listing(small_fs) == before
    assert FileStore(str(state)).load()["items"][0]["kind"] == "Node"  # reading takes no lock: still works


def test_read_only_directory_of_the_state_file_under_a_writable_lock(small_fs, tmp_path):
    """The state file reached through a symlink: the lock lives beside the link (writable), the new file is
    written beside its target, on the read-only filesystem."""
    target = small_fs / "cluster.yaml"
    target.write_text(STATE)
    link = tmp_path / "cluster.yaml"
    link.symlink_to(target)
    subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)
    with pytest.raises(StoreError) as err:
        FileStore(str(link)).apply([RECORD])
    msg = err.value.msg
    assert "could not write the new state: creating a temp file in %s failed: Read-only file system (EROFS)" \
        % small_fs in msg, msg
    assert "the state file %s is unchanged: none of this update is in it and no temp file was left" % target in msg
    assert "%s is on a read-only filesystem" % small_fs in msg
    assert target.read_text() == STATE and listing(small_fs) == ["cluster.yaml"]
