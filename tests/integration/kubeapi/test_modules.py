"""cluster_volume_info and cluster_volume_record with cluster_source=kubernetes, run as Ansible runs them
(python -m <module> args.json) against the fake API server, through the real kubernetes client."""
import json
import os
import subprocess
import sys

from ansible_collections.kubevol.volumes.plugins.module_utils.names import unique_volume_name, volume_attachment_name

TOKEN = "kubevol-test-token"  # as in conftest.py

DRIVER = "loop.kubevol.io"
VA = volume_attachment_name("pv-a.img", DRIVER, "node1")
OBJECTS = [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}, "status": {}},
    {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-a"},
     "spec": {"capacity": {"storage": "1Gi"}, "csi": {"driver": DRIVER, "volumeHandle": "pv-a.img"}}},
    {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "prod"}, "spec": {"nodeName": "node1"}},
]


def run_module(tmp_path, name, args, env=None, check=False, diff=False):
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    path = tmp_path / ("args-%s.json" % name)
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    full_env = dict(os.environ)
    full_env.update(env or {})
    res = subprocess.run([sys.executable, "-m", "ansible_collections.kubevol.volumes.plugins.modules." + name, str(path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=full_env,
                         timeout=120, check=False)
    return json.loads(res.stdout), res.stdout


def test_facts_with_kubeconfig_context_and_query(api, kubeconfig, tmp_path):
    api.load(OBJECTS)
    out, _raw = run_module(tmp_path, "cluster_volume_info", {
        "cluster_source": "kubernetes", "kubeconfig": kubeconfig, "context": "kind-kubevol",
        "query": "items[?kind=='PersistentVolume'].metadata.name"})
    assert not out.get("failed"), out
    assert out["changed"] is False and out["query_result"] == ["pv-a"]
    assert out["source"] == "kubernetes " + api.url
    assert "cluster" not in out  # only the query's answer
    out, _raw = run_module(tmp_path, "cluster_volume_info", {
        "cluster_source": "kubernetes", "kubeconfig": kubeconfig, "context": "kind-kubevol"})
    assert sorted(o["kind"] for o in out["cluster"]["items"]) == ["Node", "PersistentVolume", "Pod"]


def test_facts_env_fallbacks_and_no_log(api, tmp_path):
    api.load(OBJECTS)
    out, raw = run_module(tmp_path, "cluster_volume_info", {"cluster_source": "kubernetes", "page_size": 1},
                          env={"K8S_AUTH_HOST": api.url, "K8S_AUTH_API_KEY": TOKEN})
    assert not out.get("failed"), out
    assert len(api.requests("GET", "/api/v1/nodes")) == 1 and len(api.requests("GET", "/api/v1/pods")) == 1
    out, raw = run_module(tmp_path, "cluster_volume_info", {"cluster_source": "kubernetes", "host": api.url,
                                                            "username": "admin", "password": "s3cret"})
    assert not out.get("failed"), out
    assert "s3cret" not in raw  # no_log
    out, raw = run_module(tmp_path, "cluster_volume_info", {"cluster_source": "kubernetes", "host": api.url,
                                                            "api_key": "wrong-secret-token"})
    assert out["failed"] and "HTTP 401" in out["msg"] and "wrong-secret-token" not in raw


def test_record_writes_and_reports(api, kubeconfig, tmp_path):
    api.load(OBJECTS)
    records = [{"type": "attached", "node": "node1", "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img",
                "device_path": "/dev/loop3"},
               {"type": "in_use", "node": "node1", "unique_volume_names": [unique_volume_name(DRIVER, "pv-a.img")],
                "in_use": True}]
    args = {"cluster_source": "kubernetes", "kubeconfig": kubeconfig, "context": "kind-kubevol", "records": records}
    out, _stdout = run_module(tmp_path, "cluster_volume_record", args, check=True, diff=True)
    assert out["changed"] and api.get("VolumeAttachment", VA) is None
    out, _stdout = run_module(tmp_path, "cluster_volume_record", args, diff=True)
    assert out["changed"] and out["count"] == 2 and "VolumeAttachment/" + VA in out["diff"]["after"]
    assert api.get("VolumeAttachment", VA)["status"]["attached"] is True
    out, _stdout = run_module(tmp_path, "cluster_volume_record", args)
    assert out["changed"] is False


def test_record_errors(api, kubeconfig, tmp_path):
    api.load(OBJECTS)
    base = {"cluster_source": "kubernetes", "kubeconfig": kubeconfig, "context": "kind-kubevol"}
    api.deny.add(("create", "volumeattachments"))
    out, _stdout = run_module(tmp_path, "cluster_volume_record", dict(base, records=[
        {"type": "attached", "node": "node1", "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img",
         "device_path": ""}]))
    assert out["failed"] and "HTTP 403" in out["msg"] and "'create'" in out["msg"] and "RBAC" in out["msg"]
    out, _stdout = run_module(tmp_path, "cluster_volume_record", dict(base, records=[
        {"type": "node_expanded", "pvc": "prod/none", "capacity": "1Gi"}]))
    assert out["failed"] and "PersistentVolumeClaim prod/none" in out["msg"]
    # options of the other store are refused
    out, _stdout = run_module(tmp_path, "cluster_volume_record", dict(base, cluster_state="/tmp/x", records=[]))
    assert out["failed"] and "cluster_state" in out["msg"]
    out, _stdout = run_module(tmp_path, "cluster_volume_info", {"cluster_source": "file",
                                                                "cluster_state": "/tmp/x.yaml", "host": api.url})
    assert out["failed"] and "host" in out["msg"]
