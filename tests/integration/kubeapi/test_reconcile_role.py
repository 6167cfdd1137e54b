"""The reconcile role end to end with kubevol_cluster_source=kubernetes: 2 local SSH nodes
(scripts/testnodes.py), the example cluster in the fake API server, playbooks/reconcile.yml.

1. the API dies in the middle of the first run (at the first node status write after the attach
   phase): the play fails naming the request and the API server;
2. after the API is back, a second run converges: mounts on the nodes, VolumeAttachments and node
   status in the API;
3. a third run (auth from the K8S_AUTH_* environment this time) changes nothing;
4. a run in check mode writes nothing to the API, no plan record either.

Each run's plan is a record in the API (run/plan_record_k8s.py): ConfigMaps in the run lock's namespace, its node
tasks reading their own shares from there.
"""
import os
import re
import subprocess
import sys
import tempfile

import pytest
import yaml

from fakeapi import Die

from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name, volume_attachment_name

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TESTNODES = os.path.join(REPO, "scripts", "testnodes.py")
PLAYBOOK = os.path.join(REPO, "playbooks", "reconcile.yml")
TOKEN = "kubevol-test-token"
NODES = ("node1", "node2")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="test nodes need root"),
    pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="openssh-server missing"),
]


@pytest.fixture
def nodes():
    state = tempfile.mkdtemp(prefix="kvk-", dir="/tmp")
    try:
        subprocess.run([sys.executable, TESTNODES, "up", str(len(NODES)), "--state-dir", state,
                        "--base-port", str(24000 + os.getpid() % 1000 * 4)], check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=180)
        yield state
    finally:
        subprocess.run([sys.executable, TESTNODES, "down", "--state-dir", state, "--purge"], check=False,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=180)


def example_cluster():
    """examples/cluster.yaml without node3 and its pods (the test has two nodes)."""
    with open(os.path.join(REPO, "examples", "cluster.yaml")) as fh:
        items = yaml.safe_load(fh)["items"]
    return [o for o in items if not (o["kind"] == "Node" and o["metadata"]["name"] not in NODES)
            and not (o["kind"] == "Pod" and o["spec"].get("nodeName") not in NODES)]


def expected_attachments(items):
    """{(node, pv name): (driver, handle, volume mode, pod uid)} for the pods on the test nodes."""
    pvcs = dict(((o["metadata"]["namespace"], o["metadata"]["name"]), o) for o in items if o["kind"] == "PersistentVolumeClaim")
    pvs = dict((o["metadata"]["name"], o) for o in items if o["kind"] == "PersistentVolume")
    wanted = {}
    for pod in (o for o in items if o["kind"] == "Pod"):
        for volume in pod["spec"].get("volumes") or []:
            claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim:
                continue
            pv = pvs[pvcs[(pod["metadata"]["namespace"], claim)]["spec"]["volumeName"]]
            wanted[(pod["spec"]["nodeName"], pv["metadata"]["name"])] = (
                pv["spec"]["csi"]["driver"], pv["spec"]["csi"]["volumeHandle"], pv["spec"].get("volumeMode", "Filesystem"),
                pod["metadata"]["uid"])
    return wanted


def playbook(state, extra_vars, env=None, options=()):
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
            os.path.join(state, "inventory", "hosts.yml"), PLAYBOOK, "-e", "kubevol_cluster_source=kubernetes",
            "-e", "kubevol_provision=true", "-e", yaml.safe_dump(extra_vars, default_flow_style=True).strip()]
    argv.extend(options)
    full = dict(os.environ)
    full.update({
        "ANSIBLE_HOME": os.path.join(state, "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": os.path.join(state, "ansible-tmp"),
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_FORKS": "10",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_INVENTORY_HOST_PATTERN_MISMATCH": "error",
    })
    for name in list(full):
        if name.startswith("K8S_AUTH_"):
            del full[name]
    full.update(env or {})
    res = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
                         env=full, timeout=600, check=False)
    return res.returncode, res.stdout


def recap(output):
    """{host: {ok, changed, failed, ...}} from PLAY RECAP."""
    found = {}
    for host, fields in re.findall(r"^(\S+)\s+:\s+(ok=.*)$", output, re.M):
        found[host] = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", fields))
    return found


def node_mounts(state, node):
    res = subprocess.run([sys.executable, TESTNODES, "ssh", "--state-dir", state, node,
                          "findmnt -rn -o TARGET; ls -1 /var/lib/kubelet/pods/*/volumeDevices/*/ 2>/dev/null || true"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=True, timeout=60)
    return res.stdout


def test_reconcile_role_against_the_api(nodes, api, kubeconfig, tmp_path):
    items = example_cluster()
    api.load(items)
    wanted = expected_attachments(items)
    assert {n for n, _pv in wanted} == set(NODES)
    auth = {"kubevol_k8s_auth": {"kubeconfig": kubeconfig, "context": "kind-kubevol"}}

    # 1. The API dies at the first node status write (recording the attach phase).
    def die(server, request):
        if request["plural"] == "nodes" and request["sub"] == "status":
            raise Die()
        return False

    api.hooks.append(die)
    rc, out = playbook(nodes, auth)
    assert rc != 0, out
    assert "cannot reach the API server at %s" % api.url in out, out[-4000:]
    assert "nodes" in out
    assert api.httpd is None  # it really stopped
    api.hooks.remove(die)

    # 2. The API is back: the next run converges.
    api.restart()
    del api.log[:]
    rc, out = playbook(nodes, auth)
    assert rc == 0, out[-6000:]
    # its plan is a record in the API: ConfigMaps in the run lock's namespace, the manifest among them, marked
    # finished by the run's last step; the run's own steps read its copy on the controller (plan_record.write
    # local_copy: a node task reading from the API would import the client in its worker), so no share is fetched
    runs = record_runs(api)
    assert len(runs) >= 2, runs  # the failed run's record and this one's
    current = max(runs)
    # (each host's share in a bucket of hosts: written once, run/plan_record_parts.py)
    assert {"manifest", "begin", "finished", "p", "b"} <= runs[current] and "n" not in runs[current], runs
    share_gets = [r for r in api.requests("GET") if re.search(r"/configmaps/kubevol-plan-%s-" % current.lower(),
                                                              r["path"])]
    assert share_gets == [], share_gets
    vas = dict((va["metadata"]["name"], va) for va in api.list("VolumeAttachment"))
    assert len(vas) == len(wanted)
    for (node, pv), (driver, handle, mode, uid) in wanted.items():
        va = vas[volume_attachment_name(handle, driver, node)]
        assert va["spec"] == {"attacher": driver, "nodeName": node, "source": {"persistentVolumeName": pv}}
        assert va["status"]["attached"] is True and va["status"]["attachmentMetadata"]["devicePath"].startswith("/dev/loop")
        status = api.get("Node", node)["status"]
        uvn = unique_volume_name(driver, handle)
        assert uvn in [e["name"] for e in status["volumesAttached"]]
        assert uvn in status["volumesInUse"]
        mounts = node_mounts(nodes, node)
        if mode == "Filesystem":
            assert "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/%s/mount" % (uid, pv) in mounts, mounts
        else:
            assert pv in mounts, mounts
    for node in NODES:
        assert api.get("Node", node)["status"]["conditions"][0]["type"] == "Ready"  # the rest of the status is kept

    # 3. Again, authenticated from the environment: nothing to do.
    del api.log[:]
    rc, out = playbook(nodes, {}, env={"K8S_AUTH_HOST": api.url, "K8S_AUTH_API_KEY": TOKEN})
    assert rc == 0, out[-6000:]
    counts = recap(out)
    assert set(NODES) <= set(counts), out[-3000:]
    assert all(c["changed"] == 0 and c["failed"] == 0 for c in counts.values()), counts
    # nothing written but the run lock, the Lease taken (created the first time, updated now) and released, and
    # the run's plan record (ConfigMaps in the lock's namespace: created, older records pruned)
    lease_path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kubevol-reconcile"
    record_path = "/api/v1/namespaces/kube-system/configmaps"
    writes = [(w["method"], w["path"]) for w in api.writes()]
    assert [w for w in writes if not w[1].startswith(record_path)] == [("PUT", lease_path), ("PUT", lease_path)]
    assert ("POST", record_path) in writes, writes
    # this run's record, the one before it (plan_record.KEEP) and the first run's: killed before its end, it is
    # kept until it is 12 hours old (plan_record.UNFINISHED_SECONDS), as a slice still running would be
    assert len(record_runs(api)) == 3, record_runs(api)
    lease = api.get("Lease", "kubevol-reconcile", "kube-system")
    assert not lease["spec"].get("holderIdentity") and lease["spec"]["leaseTransitions"] >= 1
    pod_lists = api.requests("GET", "/api/v1/pods")
    assert len(pod_lists) == 1 and pod_lists[0]["query"]["fieldSelector"] == "spec.nodeName!="

    # 4. Check mode: nothing written to the API, the plan record kept on the controller.
    before = record_runs(api)
    del api.log[:]
    rc, out = playbook(nodes, auth, options=["--check"])
    assert rc == 0, out[-6000:]
    assert api.writes() == [] and record_runs(api) == before, api.writes()


def record_runs(api):
    """{run id: the parts of its plan record} of the ConfigMaps in the API."""
    runs = {}
    for cm in api.list("ConfigMap"):
        labels = cm["metadata"].get("labels") or {}
        if labels.get("app.kubernetes.io/managed-by") == "kubevol":
            assert cm["metadata"]["namespace"] == "kube-system"
            runs.setdefault(labels["kubevol.io/plan-run"], set()).add(labels["kubevol.io/plan-part"])
    return runs
