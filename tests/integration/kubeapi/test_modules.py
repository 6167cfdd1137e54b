"""cluster_volume_info and cluster_volume_record with cluster_source=kubernetes, run as Ansible runs them
(python -m <module> args.json) against the fake API server, through the real kubernetes client."""
import json
import os
import subprocess
import sys

from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name, volume_attachment_name

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


EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                       "examples", "cluster.yaml")


def test_the_planner_reads_the_api_as_it_reads_the_file(api, tmp_path):
    """volume_reconcile_plan with cluster_source=kubernetes: the module file, and the action plugin ad hoc (what the
    reconcile role runs, in the controller's process), plan from the API what they plan from the same objects in a
    file; paged reads, the token never printed."""
    api.load_file(EXAMPLE)
    from_file, _raw = run_module(tmp_path, "volume_reconcile_plan", {"cluster_state": EXAMPLE})
    assert not from_file.get("failed") and from_file["summary"]["attach"] == 4, from_file
    from_api, raw = run_module(tmp_path, "volume_reconcile_plan",
                               {"cluster_source": "kubernetes", "host": api.url, "api_key": TOKEN, "page_size": 2})
    assert not from_api.get("failed"), from_api
    # the same steps; a reason lists pods in the order they came, and the API lists them by namespace and name
    steps = [sorted((s["action"], s["target"], s["node"], s["volume"], s["pod"] or "") for s in result["plan"])
             for result in (from_api, from_file)]
    assert steps[0] == steps[1] and from_api["summary"] == from_file["summary"]
    assert TOKEN not in raw
    assert len(api.requests("GET", "/api/v1/pods")) >= 2  # 4 pods, 2 per page
    env = dict(os.environ, K8S_AUTH_HOST=api.url, K8S_AUTH_API_KEY=TOKEN, ANSIBLE_LOCALHOST_WARNING="False",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="False", ANSIBLE_NOCOLOR="1")
    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible"), "localhost", "-m",
                          "kubevol.volumes.volume_reconcile_plan", "-a", "cluster_source=kubernetes output=summary"],
                         cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, timeout=120, check=False)
    assert res.returncode == 0 and "localhost | SUCCESS" in res.stdout, res.stdout
    summary = json.JSONDecoder().raw_decode(res.stdout[res.stdout.index(" => ") + 4:])[0]["summary"]
    assert summary == from_file["summary"] and TOKEN not in res.stdout
