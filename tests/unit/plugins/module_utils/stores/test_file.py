# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""FileStore: the cluster state file read and written as kubectl prints it, each record applied all or nothing under
the file's lock, a crash or a kill never leaving half a file. The run lock beside it: test_file_run_lock.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import multiprocessing
import os
import signal
import time

import pytest
import yaml

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import volume_attachment_name
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import ObjectNotFound
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import file as file_store
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import get_store
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import StoreError, StoreLockTimeout
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore


DRIVER = "loop.kubevol.io"
VA_A = volume_attachment_name("pv-a.img", DRIVER, "node1")

KUBECTL_YAML = """\
apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    annotations:
      volumes.kubernetes.io/controller-managed-attach-detach: "true"
    creationTimestamp: "2026-01-01T00:00:00Z"
    name: node1
  status:
    conditions:
    - lastHeartbeatTime: 2026-01-01T00:00:00Z
      status: "True"
      type: Ready
- apiVersion: v1
  kind: PersistentVolume
  metadata:
    name: pv-a
  spec:
    capacity:
      storage: 1Gi
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: other
    namespace: default
kind: List
metadata:
  resourceVersion: ""
"""


def attached(node="node1", pv="pv-a"):
    return {"type": "attached", "node": node, "pv_name": pv, "driver": DRIVER, "volume_handle": pv + ".img",
            "device_path": "/dev/loop3"}


@pytest.fixture
def yaml_state(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(KUBECTL_YAML)
    return path


@pytest.fixture
def json_state(tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(yaml.safe_load(KUBECTL_YAML.replace("2026-01-01T00:00:00Z", "'2026-01-01T00:00:00Z'"))))
    return path


def kinds(cluster_list):
    return [o["kind"] for o in cluster_list["items"]]


def test_load_yaml_keeps_timestamps_as_strings(yaml_state):
    cl = FileStore(str(yaml_state)).load()
    assert kinds(cl) == ["Node", "PersistentVolume", "ConfigMap"]
    assert cl["items"][0]["status"]["conditions"][0]["lastHeartbeatTime"] == "2026-01-01T00:00:00Z"
    json.dumps(cl)  # JSON-friendly, as module results must be


def test_yaml_round_trip(yaml_state):
    store = FileStore(str(yaml_state))
    result = store.apply([attached()])
    assert result["changed"] is True
    text = yaml_state.read_text()
    assert not text.lstrip().startswith("{")
    cl = yaml.safe_load(text)
    assert kinds(cl) == ["Node", "PersistentVolume", "ConfigMap", "VolumeAttachment"]
    assert list(cl) == ["apiVersion", "items", "kind", "metadata"]  # key order kept (sort_keys False)
    assert "lastHeartbeatTime: '2026-01-01T00:00:00Z'" in text  # stays a string
    assert store.load() == FileStore(str(yaml_state)).load()


def test_json_round_trip(json_state):
    store = FileStore(str(json_state))
    assert store.apply([attached()])["changed"] is True
    text = json_state.read_text()
    cl = json.loads(text)
    assert text.startswith('{"apiVersion":"v1",')  # JSON, compact
    assert text.endswith("}\n") and text.count("\n") == 1  # one line, one trailing newline
    assert kinds(cl)[-1] == "VolumeAttachment"
    assert store.apply([attached()])["changed"] is False


def test_multi_document_yaml_is_refused_and_left_as_it_is(tmp_path):
    """A stream cut short between two documents still parses: a multi-document file is never trusted, not for a
    plan and not for a write (nothing is read from it, so nothing is written back)."""
    path = tmp_path / "multi.yaml"
    text = """\
apiVersion: v1
items:
- {apiVersion: v1, kind: Node, metadata: {name: node1}}
kind: List
metadata: {}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-a}
"""
    path.write_text(text)
    store = FileStore(str(path))
    for attempt in (store.load, lambda: store.apply([attached(node="node1")])):
        with pytest.raises(StoreError, match="not trusted as a whole snapshot: it holds 2 YAML documents") as err:
            attempt()
        assert str(path) in err.value.msg and "-o json > %s" % path in err.value.msg
    assert path.read_text() == text


def test_idempotent_second_apply_does_not_write(yaml_state):
    store = FileStore(str(yaml_state))
    store.apply([attached()])
    before = os.stat(str(yaml_state))
    result = store.apply([attached()])
    assert result == {"changed": False, "changes": [],
                      "diff": {"before": {}, "after": {}, "before_header": str(yaml_state), "after_header": str(yaml_state)}}
    assert os.stat(str(yaml_state)).st_ino == before.st_ino


def test_check_mode_writes_nothing(yaml_state):
    listing = sorted(os.listdir(str(yaml_state.parent)))
    result = FileStore(str(yaml_state)).apply([attached()], check_mode=True)
    assert result["changed"] is True and len(result["changes"]) == 1
    assert "VolumeAttachment/" + VA_A in result["diff"]["after"]
    assert "VolumeAttachment/" + VA_A not in result["diff"]["before"]
    assert result["diff"]["before"]["Node/node1"]["status"].get("volumesAttached") is None
    assert yaml_state.read_text() == KUBECTL_YAML
    assert sorted(os.listdir(str(yaml_state.parent))) == listing  # not even a lock file


def test_all_or_nothing_on_missing_object(yaml_state):
    with pytest.raises(ObjectNotFound, match="node9"):
        FileStore(str(yaml_state)).apply([attached(), attached(node="node9")])
    assert yaml_state.read_text() == KUBECTL_YAML


def test_crash_before_replace_leaves_original(yaml_state, monkeypatch):
    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(file_store.os, "replace", boom)
    with pytest.raises(StoreError, match="renaming the temp file .* failed: No space left on device .ENOSPC.; the "
                                         "state file .* is unchanged: none of this update is in it and no temp file "
                                         "was left; the filesystem holding .* is full"):
        FileStore(str(yaml_state)).apply([attached()])
    assert yaml_state.read_text() == KUBECTL_YAML
    assert sorted(os.listdir(str(yaml_state.parent))) == ["cluster.yaml", "cluster.yaml.lock"]


def test_a_directory_the_user_may_not_write_says_so(tmp_path, monkeypatch):
    """EACCES (root bypasses permissions, so it is simulated here; ENOSPC and EROFS are real in
    tests/integration/stores/test_file_store_disk.py): the state file, the step and the remedy."""
    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    (tmp_path / "Kubevol State").mkdir()  # a path as it is, capitals and all
    yaml_state = tmp_path / "Kubevol State" / "cluster.yaml"
    yaml_state.write_text(KUBECTL_YAML)

    monkeypatch.setattr(file_store.tempfile, "mkstemp", denied)
    with pytest.raises(StoreError) as err:
        FileStore(str(yaml_state)).apply([attached()])
    msg = err.value.msg
    assert "could not write the new state: creating a temp file in %s failed: Permission denied (EACCES)" % (
        yaml_state.parent) in msg, msg
    assert "is unchanged: none of this update is in it and no temp file was left" in msg
    assert "may not write in %s" % yaml_state.parent in msg and "write and search permission on the directory" in msg
    assert yaml_state.read_text() == KUBECTL_YAML


def test_a_run_lock_write_that_fails_names_the_lock_and_leaves_no_temp_file(yaml_state, monkeypatch):
    def denied(src, dst):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(file_store.os, "replace", denied)
    store = FileStore(str(yaml_state))
    with pytest.raises(StoreError) as err:
        store.acquire_run_lock("run-1", timeout=0, who={"host": "h", "pid": 1, "pid_start": None})
    msg = err.value.msg
    assert "could not write the run lock %s.run-lock: renaming the temp file %s.run-lock.tmp over" % (
        yaml_state, yaml_state) in msg, msg
    assert "Permission denied (EACCES); the lock is unchanged (no run holds it), the state file" in msg
    assert "no temp file was left" in msg and "may not write in" in msg
    assert sorted(os.listdir(str(yaml_state.parent))) == ["cluster.yaml", "cluster.yaml.lock"]


def test_mode_kept_and_symlink_followed(yaml_state, tmp_path):
    os.chmod(str(yaml_state), 0o640)
    link = tmp_path / "link.yaml"
    link.symlink_to(yaml_state)
    FileStore(str(link)).apply([attached()])
    assert link.is_symlink()
    assert os.stat(str(yaml_state)).st_mode & 0o777 == 0o640
    assert "VolumeAttachment" in yaml_state.read_text()


def test_stale_temp_files_removed(yaml_state):
    stale = yaml_state.parent / ".cluster.yaml.kubevol-abc123.tmp"
    stale.write_text("partial")
    FileStore(str(yaml_state)).apply([attached()])
    assert not stale.exists()


def _writer_loop(path):
    store = FileStore(path)
    detach = dict(attached(), type="detached")
    while True:
        store.apply([attached()])
        store.apply([detach])


def test_killed_writer_leaves_a_whole_file(yaml_state):
    """SIGKILL a writer at random points: the file always parses, old or new."""
    ctx = multiprocessing.get_context("fork")
    for delay in (0.05, 0.11, 0.17, 0.23):
        proc = ctx.Process(target=_writer_loop, args=(str(yaml_state),))
        proc.start()
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.join()
        cl = FileStore(str(yaml_state)).load()
        assert kinds(cl)[:3] == ["Node", "PersistentVolume", "ConfigMap"]


def _hold_lock(path, held, release):
    with FileStore(path).locked():
        held.set()
        release.wait(10)


def test_lock_contention(yaml_state):
    ctx = multiprocessing.get_context("fork")
    held, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold_lock, args=(str(yaml_state), held, release))
    holder.start()
    try:
        assert held.wait(10)
        start = time.monotonic()
        with pytest.raises(StoreLockTimeout) as err:
            FileStore(str(yaml_state), lock_timeout=0.3).apply([attached()])
        assert time.monotonic() - start >= 0.3  # it waited before giving up
        assert "locked by another kubevol run" in str(err.value) and "cluster.yaml.lock" in str(err.value)
        assert yaml_state.read_text() == KUBECTL_YAML
    finally:
        release.set()
        holder.join(10)
    assert FileStore(str(yaml_state), lock_timeout=5).apply([attached()])["changed"] is True


def test_missing_file_says_how_to_create_it(tmp_path):
    with pytest.raises(StoreError, match="kubectl get nodes,pods,pv,pvc,volumeattachments,csidrivers"):
        FileStore(str(tmp_path / "nope.yaml")).load()


@pytest.mark.parametrize("text, match", [
    ("apiVersion: v1\nitems: [1, 2]\nkind: List\nmetadata: {}\n", "items\\[0\\] is not a Kubernetes object"),
    ("{not json", "invalid"),
    ("a: [\n", "invalid YAML"),
    ("- 1\n---\n3\n", "not trusted as a whole snapshot: it holds 2 YAML documents"),
    ("apiVersion: v1\n", r"no `kind: List` and `metadata:` after its `items` \(its top-level keys are, in order: "
                         r"apiVersion\)"),
])
def test_malformed_files(tmp_path, text, match):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(StoreError, match=match):
        FileStore(str(path)).load()


def test_get_store():
    store = get_store("file", cluster_state="/tmp/x.yaml")
    assert isinstance(store, FileStore) and store.describe() == "file /tmp/x.yaml"
    with pytest.raises(InvalidInput, match="cluster_source"):
        get_store("etcd", cluster_state="/tmp/x.yaml")
    with pytest.raises(InvalidInput, match="cluster_state"):
        get_store("file")
    with pytest.raises(InvalidInput, match="kubeconfig"):
        get_store("file", cluster_state="/tmp/x.yaml", kubeconfig="/root/.kube/config")
