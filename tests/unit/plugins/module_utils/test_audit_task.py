# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""volume_audit's cluster share on a real file store: read-only by default and in check mode; with clean, the
stale VolumeAttachment and a dead run's lock go, under the run lock; a live run's lock keeps every record."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import socket
import subprocess

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.kubevol.volumes.plugins.module_utils.audit import audit_task

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import volume_attachment_name

DRIVER = "loop.kubevol.io"
GONE_VA = volume_attachment_name("pv-gone.img", DRIVER, "node1")


def _state(tmp_path):
    items = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}, "spec": {},
              "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
             {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": GONE_VA},
              "spec": {"attacher": DRIVER, "nodeName": "node1", "source": {"persistentVolumeName": "pv-gone"}},
              "status": {"attached": True}}]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def _params(state, clean):
    facts = {"node_name": "node1", "reachable": True, "error": None, "kubelet_dir": "/k", "devices": [],
             "global_mounts": [], "pod_mounts": [], "ephemeral_volumes": []}
    args = {"scope": "cluster", "cluster_state": state, "clean": clean,
            "node_reports": [{"node_name": "node1", "node_facts": facts, "kubelet_dir": "/k", "findings": [],
                              "pool_problems": [{"pool": "/p", "reason": "cannot list pool /p on node node1"}]},
                             {"node_name": "node2", "failed": True, "msg": "unreachable"}]}
    return ArgumentSpecValidator(audit_task.argspec(), required_if=audit_task.REQUIRED_IF).validate(
        args).validated_parameters


def _lock(state, pid, host=None):
    record = {"holder": "old-run", "host": host or socket.gethostname(), "pid": pid, "pid_start": None,
              "since": "2026-11-25T00:00:00.000000Z", "renewed": run_lock.format_time(run_lock.utc_now()),
              "duration": 600}
    with open(state + ".run-lock", "w") as handle:
        json.dump(record, handle)


def _dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _kinds(result):
    return dict((f["kind"], f) for f in result["findings"])


def test_read_only_by_default_and_in_check_mode(tmp_path):
    state = _state(tmp_path)
    _lock(state, _dead_pid())
    before = [open(p, "rb").read() for p in (state, state + ".run-lock")]
    for clean, check in ((False, False), (True, True)):
        result = audit_task.cluster_scope(_params(state, clean), check_mode=check)
        assert [open(p, "rb").read() for p in (state, state + ".run-lock")] == before
        kinds = _kinds(result)
        assert kinds["stale_volume_attachment"]["cleanable"] and not kinds["stale_volume_attachment"]["cleaned"]
        assert kinds["stale_run_lock"]["cleanable"] and "is gone" in kinds["stale_run_lock"]["why"]
        assert result["unreachable_nodes"] == {"node2": "unreachable"} and not result["changed"]
        assert result["notes"] == ["node node1: cannot list pool /p on node node1"]


def test_clean_removes_the_stale_record_and_the_dead_lock(tmp_path):
    state = _state(tmp_path)
    _lock(state, _dead_pid())
    result = audit_task.cluster_scope(_params(state, True), owner=run_lock.owner(os.getpid()))
    kinds = _kinds(result)
    assert result["changed"] and kinds["stale_volume_attachment"]["cleaned"] and kinds["stale_run_lock"]["cleaned"]
    assert not os.path.exists(state + ".run-lock")  # the audit's own lock is released too
    with open(state) as handle:
        assert [o["kind"] for o in json.load(handle)["items"]] == ["Node"]
    again = audit_task.cluster_scope(_params(state, True))
    assert not again["changed"] and again["findings"] == []


def test_a_live_runs_lock_keeps_every_record(tmp_path):
    state = _state(tmp_path)
    _lock(state, os.getpid(), host="another-controller")  # live: not expired, not this host's to judge
    before = open(state, "rb").read()
    result = audit_task.cluster_scope(_params(state, True))
    assert open(state, "rb").read() == before and os.path.exists(state + ".run-lock")
    kinds = _kinds(result)
    assert "stale_run_lock" not in kinds and not kinds["stale_volume_attachment"]["cleaned"]
    assert not kinds["stale_volume_attachment"]["cleanable"] and "live run holds" in result["notes"][-1]
