# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the modules for real: python -m <module> args.json, as Ansible runs them."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name, volume_attachment_name

DRIVER = "loop.kubevol.io"
UVN = unique_volume_name(DRIVER, "pv-a.img")
VA = volume_attachment_name("pv-a.img", DRIVER, "node1")
CLUSTER = {"apiVersion": "v1", "items": [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}, "status": {}},
    {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-a"}, "spec": {"capacity": {"storage": "1Gi"}}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "prod"}},
], "kind": "List", "metadata": {"resourceVersion": ""}}  # kubectl's key order: the file shows that it is whole
RECORDS = [
    {"type": "attached", "node": "node1", "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img",
     "device_path": "/dev/loop3"},
    {"type": "in_use", "node": "node1", "unique_volume_names": [UVN], "in_use": True},
]


def run_module(tmp_path, name, args, check=False, diff=False):
    args = dict(args)
    if check:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    args_file = tmp_path / ("args-%s.json" % name)
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run(
        [sys.executable, "-m", "ansible_collections.kubevol.volumes.plugins.modules." + name, str(args_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ), timeout=120, check=False)
    assert "Traceback" not in proc.stderr.decode(), proc.stderr.decode()
    result = json.loads(proc.stdout.decode())
    assert (proc.returncode != 0) == bool(result.get("failed")), result
    return result


@pytest.fixture
def state(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(CLUSTER, sort_keys=False))
    return path


def test_apply_then_idempotent(tmp_path, state):
    args = {"cluster_state": str(state), "records": RECORDS}
    first = run_module(tmp_path, "cluster_volume_record", args)
    assert first["changed"] is True and first["count"] == 2
    assert first["changes"][0]["objects"] == ["VolumeAttachment/" + VA, "Node/node1"]
    assert "diff" not in first
    cl = yaml.safe_load(state.read_text())
    assert cl["items"][0]["status"] == {"volumesAttached": [{"devicePath": "/dev/loop3", "name": UVN}],
                                        "volumesInUse": [UVN]}
    written = state.read_text()
    second = run_module(tmp_path, "cluster_volume_record", args)
    assert second["changed"] is False and second["count"] == 0 and second["changes"] == []
    assert state.read_text() == written


def test_check_and_diff_mode_write_nothing(tmp_path, state):
    original = state.read_text()
    result = run_module(tmp_path, "cluster_volume_record", {"cluster_state": str(state), "records": RECORDS},
                        check=True, diff=True)
    assert result["changed"] is True and result["count"] == 2
    assert "VolumeAttachment/" + VA in result["diff"]["after"]
    assert result["diff"]["before"]["Node/node1"] == CLUSTER["items"][0]
    assert state.read_text() == original
    assert sorted(os.listdir(str(tmp_path))) == ["args-cluster_volume_record.json", "cluster.yaml"]


@pytest.mark.parametrize("records, words", [
    ([{"type": "teleported"}], ["records[0].type", "unknown record type"]),
    ([dict(RECORDS[0], node="node9")], ["Node node9", "not in the cluster state"]),
    ([{"type": "controller_expanded", "pv_name": "pv-a", "capacity": "huge"}], ["capacity", "quantity"]),
])
def test_bad_record_fails_clearly(tmp_path, state, records, words):
    original = state.read_text()
    result = run_module(tmp_path, "cluster_volume_record", {"cluster_state": str(state), "records": records})
    assert result["failed"] is True
    for word in words:
        assert word in result["msg"]
    assert state.read_text() == original


def test_missing_state_file(tmp_path):
    result = run_module(tmp_path, "cluster_volume_record", {"cluster_state": str(tmp_path / "nope.yaml"), "records": RECORDS})
    assert result["failed"] is True and "kubectl get" in result["msg"]


def test_facts_and_query(tmp_path, state):
    result = run_module(tmp_path, "cluster_volume_info",
                        {"cluster_state": str(state), "query": "items[?kind=='PersistentVolume'].metadata.name"})
    assert result["changed"] is False
    assert result["query_result"] == ["pv-a"]
    assert "cluster" not in result  # only the query's answer, not the whole cluster
    whole = run_module(tmp_path, "cluster_volume_info", {"cluster_state": str(state)})
    assert whole["cluster"] == CLUSTER and "query_result" not in whole
    bad = run_module(tmp_path, "cluster_volume_info", {"cluster_state": str(state), "query": "items[?"})
    assert bad["failed"] is True and "query" in bad["msg"]


def test_facts_requires_cluster_state(tmp_path):
    result = run_module(tmp_path, "cluster_volume_info", {})
    assert result["failed"] is True and "cluster_state" in result["msg"]
