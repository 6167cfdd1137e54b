"""The run's plan record as ConfigMaps (run/plan_record_k8s.py), through the real kubernetes client against the fake
API server (tests/fakeapi), which refuses a ConfigMap over 1 MiB as kube-apiserver does.

A cluster big enough that its plan takes several chunks (names and uids are UUIDs, as in a real cluster: they do
not compress away), planned by the real planner, written and read back: every object under the limit (as the API
validates it, and as JSON), every part of the plan written once, a node's share read with two GETs, a tampered or
missing chunk refused naming the run and the object, the pruning rule, and a 403 that names what to grant.
"""
import base64
import gzip
import json
import os
import time
import uuid

import pytest

from fakeapi import MAX_CONFIGMAP_BYTES

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record, plan_record_k8s
from ansible_collections.kubevol.volumes.plugins.module_utils.run.plan_view import node_slice

TOKEN = "kubevol-test-token"
NAMESPACE = "kubevol-system"
WHERE = "k8s:" + NAMESPACE
NODES = 150
VOLUMES_PER_NODE = 140


def big_cluster():
    """NODES nodes, each with VOLUMES_PER_NODE pods and claims to attach and mount: every volume is a step."""
    items = [{"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "loop.kubevol.io"},
              "spec": {"attachRequired": True}}]
    for n in range(NODES):
        node = "node-%s" % uuid.uuid4().hex[:12]
        items.append({"apiVersion": "v1", "kind": "Node", "spec": {},
                      "metadata": {"name": node,
                                   "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
                      "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        for _v in range(VOLUMES_PER_NODE):
            pv, claim, uid, ns = "pvc-%s" % uuid.uuid4(), "data-%s" % uuid.uuid4().hex[:10], str(uuid.uuid4()), "ns-%d" % (n % 7)
            items.append({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
                          "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                   "claimRef": {"namespace": ns, "name": claim, "uid": uid},
                                   "csi": {"driver": "loop.kubevol.io", "volumeHandle": "%s.img" % uuid.uuid4(),
                                           "fsType": "ext4", "volumeAttributes": {"pool": "/var/lib/kubevol/pool"}}},
                          "status": {"phase": "Bound"}})
            items.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                          "metadata": {"namespace": ns, "name": claim, "uid": uid},
                          "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": pv,
                                   "resources": {"requests": {"storage": "1Gi"}}},
                          "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}})
            items.append({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"namespace": ns, "name": "app-%s" % uuid.uuid4().hex[:10],
                                       "uid": str(uuid.uuid4())},
                          "spec": {"nodeName": node, "containers": [{"name": "app", "image": "app:1"}],
                                   "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]},
                          "status": {"phase": "Running",
                                     "containerStatuses": [{"name": "app", "state": {"running": {}}}]}})
    return {"apiVersion": "v1", "kind": "List", "items": items}


@pytest.fixture(scope="module")
def big_plan():
    result = plan_cluster(ClusterIndex(cluster_from_data(big_cluster())), None, PlanOptions())
    assert len(result["plan"]) >= NODES * VOLUMES_PER_NODE
    return result


@pytest.fixture
def connection(api):
    return {"cluster_source": "kubernetes", "host": api.url, "api_key": TOKEN}


def configmaps(api, run_id=None):
    found = [cm for cm in api.list("ConfigMap") if cm["metadata"]["namespace"] == NAMESPACE]
    return [cm for cm in found if run_id is None or cm["metadata"]["labels"][plan_record_k8s.RUN] == run_id]


def recorded(plan):
    """What a record keeps of a plan result: the desired and actual states without their per_node lists
    (plan_record_parts.STATES)."""
    return dict((key, dict((k, v) for k, v in value.items() if k != "per_node") if key in ("desired", "actual")
                 else value) for key, value in plan.items())


def size(cm):
    return (sum(len(v.encode()) for v in (cm.get("data") or {}).values())
            + sum(len(base64.b64decode(v)) for v in (cm.get("binaryData") or {}).values()))


def test_a_big_plan_in_chunks_under_the_limit_read_back_whole_and_by_node(api, connection, big_plan):
    hosts = sorted(big_plan["by_node"])[:-1] + ["node-without-work"]  # one planned node is not a host of this run
    handle = plan_record.write(big_plan, WHERE, nodes=hosts, connection=connection)
    run_id = handle["run_id"]
    assert handle["path"] == "k8s:%s/%s" % (NAMESPACE, run_id) and set(handle) == {"path", "run_id", "digest"}
    objects = configmaps(api, run_id)
    parts = [cm["metadata"]["labels"][plan_record_k8s.PART] for cm in objects]
    assert parts.count("b") > 2, parts  # the hosts' shares took several buckets
    assert parts.count("p") == 1 and parts.count("manifest") == 1 and parts.count("begin") == 1, parts
    assert all(size(cm) <= plan_record_k8s.CHUNK_BYTES < MAX_CONFIGMAP_BYTES for cm in objects)
    assert all(len(json.dumps(cm)) < MAX_CONFIGMAP_BYTES for cm in objects)  # also as JSON, base64 and metadata
    # every part of the plan once: the steps are in the shares only, not again in the rest (the record used to hold
    # the whole plan and each host's share again); and compressed
    chunks = {}
    for cm in objects:
        if cm.get("binaryData"):
            part, _sep, index = cm["metadata"]["name"].rpartition("-")
            chunks.setdefault(part, []).append((int(index), base64.b64decode(cm["binaryData"]["chunk"])))
    unpacked = sum(len(gzip.decompress(b"".join(data for _i, data in sorted(found)))) for found in chunks.values())
    whole = len(json.dumps(recorded(big_plan), separators=(",", ":")).encode())
    assert unpacked < 1.1 * whole and sum(size(cm) for cm in objects) < whole / 5, (unpacked, whole)
    assert all(cm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "kubevol" for cm in objects)
    # the manifest was the last object written
    posts = [r for r in api.log if r["method"] == "POST" and "configmaps" in r["path"]]
    assert all(r["status"] == 201 for r in posts)
    last = max(objects, key=lambda cm: int(cm["metadata"]["resourceVersion"]))
    assert last["metadata"]["name"] == "kubevol-plan-" + run_id.lower()

    assert plan_record.read_plan(handle, connection) == recorded(big_plan)
    node = hosts[0]
    # the node's bucket: one chunk, or more when its compressed shares pass CHUNK_BYTES
    found = plan_record.manifest(handle, connection)
    number = plan_record_k8s._bucket(node, len(found["buckets"]))
    chunks = len(found["buckets"][number]["chunks"])
    del api.log[:]
    share = plan_record.read_node(handle, node, connection)
    assert share == node_slice(big_plan, node) and share["plan"]
    # the manifest, then each chunk of the node's bucket; nothing listed, nothing of the whole plan
    gets = [r["path"].rsplit("/", 1)[1] for r in api.log]
    assert [r["method"] for r in api.log] == ["GET"] * (1 + chunks), api.log
    assert gets[0] == "kubevol-plan-" + run_id.lower() and gets[1:] == [
        "%s-b-%d-%d" % (gets[0], number, index) for index in range(chunks)], gets
    assert plan_record.read_node(handle, "node-without-work", connection) == {"plan": [], "volume_items": {}}
    outsider = sorted(big_plan["by_node"])[-1]  # not a host: in the rest
    assert plan_record.read_node(handle, outsider, connection) == node_slice(big_plan, outsider)


def test_the_fake_refuses_a_configmap_over_1_mib_as_the_api_does(api, connection):
    """What makes the chunking necessary, through the same client (a chunk of CHUNK_BYTES passes)."""
    with plan_record_k8s._Api(connection, NAMESPACE) as writer:
        writer.create("20261125T000000Z-00000000", "fits", "p", binary=b"x" * plan_record_k8s.CHUNK_BYTES)
        with pytest.raises(KubevolError, match=r'HTTP 422.*ConfigMap \\?"too-big\\?" is invalid: \[\]: Too long: '
                                               r'must have at most 1048576 bytes'):
            writer.create("20261125T000000Z-00000000", "too-big", "p", binary=b"x" * (MAX_CONFIGMAP_BYTES + 1))


def test_a_tampered_or_missing_chunk_is_refused(api, connection, big_plan):
    handle = plan_record.write(big_plan, WHERE, connection=connection)
    run_id = handle["run_id"]
    chunk = "kubevol-plan-%s-b-1-0" % run_id.lower()

    def tamper(cm):
        data = bytearray(base64.b64decode(cm["binaryData"]["chunk"]))
        data[100] ^= 1
        cm["binaryData"]["chunk"] = base64.b64encode(bytes(data)).decode()

    api.mutate("ConfigMap", chunk, tamper, NAMESPACE)
    with pytest.raises(KubevolError) as err:
        plan_record.read_plan(handle, connection)
    assert "plan record of run %s: ConfigMap %s/%s is not the one this run wrote" % (run_id, NAMESPACE, chunk) \
        in err.value.msg and "run the reconcile again" in err.value.msg
    api.delete("ConfigMap", chunk, NAMESPACE)
    with pytest.raises(KubevolError, match="ConfigMap %s/%s is missing" % (NAMESPACE, chunk)):
        plan_record.read_plan(handle, connection)
    with pytest.raises(KubevolError, match="manifest ConfigMap .* is not the one this run wrote"):
        plan_record.read_plan(dict(handle, digest="0" * 64), connection)
    api.delete("ConfigMap", "kubevol-plan-" + run_id.lower(), NAMESPACE)
    with pytest.raises(KubevolError, match="manifest ConfigMap %s/kubevol-plan-%s is missing" % (NAMESPACE, run_id.lower())):
        plan_record.manifest(handle, connection)
    with pytest.raises(KubevolError, match="needs the API's connection options"):
        plan_record.read_plan(handle)


def test_pruning_keeps_the_current_and_unfinished_records(api, connection):
    now = time.time()
    small = {"plan": [], "volume_items": {}, "by_node": {}}
    ids = [plan_record.new_run_id(now - 300 + i) for i in range(4)]
    handles = [plan_record.write(small, WHERE, run_id, connection=connection) for run_id in ids]
    for handle in handles[:2]:
        plan_record.finish(handle, connection)
    # a killed writer, long ago: its begin marker and a chunk, no manifest
    killed = plan_record.new_run_id(now - plan_record.STALE_TEMP_SECONDS - 60)
    with plan_record_k8s._Api(connection, NAMESPACE) as writer:
        writer.create(killed, plan_record_k8s._name(killed, "begin"), "begin", marker=True)
        writer.create(killed, plan_record_k8s._name(killed, "p", 0), "p", binary=b"half")
    writing = plan_record.new_run_id(now - 5)  # a writer still at work: its parts, no manifest yet
    with plan_record_k8s._Api(connection, NAMESPACE) as writer:
        writer.create(writing, plan_record_k8s._name(writing, "begin"), "begin", marker=True)
        writer.create(writing, plan_record_k8s._name(writing, "p", 0), "p", binary=b"half")
    old = plan_record.new_run_id(now - plan_record.UNFINISHED_SECONDS - 60)  # a killed run's whole record
    plan_record.write(small, WHERE, old, keep=10, connection=connection)
    unrelated = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "someone-elses", "namespace": NAMESPACE, "labels": {plan_record_k8s.RUN: old}}}
    api.put(unrelated)
    plan_record.prune(WHERE, current=ids[3], now=now, connection=connection)
    left = set(cm["metadata"]["labels"].get(plan_record_k8s.RUN) for cm in configmaps(api)
               if cm["metadata"]["name"] != "someone-elses")
    # ids[0] and ids[1] finished and beyond keep: gone; ids[2] unfinished and young: kept; ids[3] current; the
    # writer at work kept; the killed writer's parts and the killed run's record gone
    assert left == {ids[2], ids[3], writing}, left
    assert api.get("ConfigMap", "someone-elses", NAMESPACE)  # no kubevol label: never touched
    assert plan_record.read_plan(handles[2], connection) == small


def test_a_403_on_configmaps_names_what_to_grant(api, connection):
    api.deny.add(("create", "configmaps"))
    with pytest.raises(KubevolError) as err:
        plan_record.write({"plan": [], "volume_items": {}}, WHERE, connection=connection)
    msg = err.value.msg
    assert "HTTP 403" in msg and "needs verb 'create' on configmaps (core) in namespace %s" % NAMESPACE in msg, msg
    assert "get/list/create/delete/deletecollection on configmaps (core) in namespace %s" % NAMESPACE in msg
    assert TOKEN not in msg


def test_the_runs_own_steps_read_the_copy_on_the_controller_and_another_reader_the_api(api, connection, big_plan,
                                                                                       tmp_path):
    """plan_record.write local_copy: every step of a run runs on its controller, which reads the copy there (no
    request, no Kubernetes client in a node task's worker); a reader without it (another controller, the copy gone)
    reads the same record from the API, and finishing marks both."""
    hosts = sorted(big_plan["by_node"])[:3]
    local = str(tmp_path / "kubevol-plans")
    handle = plan_record.write(big_plan, WHERE, nodes=hosts, connection=connection, local_copy=local)
    assert handle["local"]["run_id"] == handle["run_id"] and handle["local"]["path"].startswith(local)
    del api.log[:]
    assert plan_record.read_node(handle, hosts[0], connection) == node_slice(big_plan, hosts[0])
    assert plan_record.read_plan(handle, connection) == recorded(big_plan)
    assert api.log == []  # nothing asked of the API
    elsewhere = dict(handle, local=dict(handle["local"], path=str(tmp_path / "gone")))
    assert plan_record.read_node(elsewhere, hosts[1], connection) == node_slice(big_plan, hosts[1])
    assert [r["method"] for r in api.log] == ["GET"] * 2, api.log
    plan_record.finish(handle, connection)
    assert os.path.exists(os.path.join(handle["local"]["path"], plan_record.FINISHED))
    assert "finished" in [cm["metadata"]["labels"][plan_record_k8s.PART] for cm in configmaps(api, handle["run_id"])]
