# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The provisioning rule (plan/rules_provision.py, plan/provision_hosts.py, provision/): which unbound claims get
CreateVolume, on which host, with which request and which PV template, as the PV controller, the scheduler's volume
binding and the external-provisioner (controller.go prepareProvision, topology.go) decide it; and what is refused,
in their words."""

import datetime
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import LOOP, cluster, facts, node, pod  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (  # noqa: E402
    ClusterIndex, cluster_from_data)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.provision.topology import claim_hash  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.provision.volume import binary_si, pv_object  # noqa

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
EXT = "csi.kubevol.test"
KEY = "topology.csi.kubevol.test/node"
OPTIONS = {EXT: {"controller": "node"}}


def run(data, node_facts=None, options=None, scope=None, **extra):
    opts = PlanOptions(True, 360, (LOOP, EXT, "remote.csi", "bare.csi"), NOW, 0.5, 20, False,
                       ("/var/lib/kubevol/pool",), options or OPTIONS, **extra)
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts, scope)


def storage_class(name="fast", provisioner=LOOP, mode="WaitForFirstConsumer", default=False, **extra):
    obj = {"kind": "StorageClass", "metadata": {"name": name}, "provisioner": provisioner,
           "volumeBindingMode": mode, "reclaimPolicy": "Delete"}
    if default:
        obj["metadata"]["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    obj.update(extra)
    return obj


def claim(name="data", cls="fast", size="64Mi", uid=None, **spec):
    body = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if cls is not None:
        body["storageClassName"] = cls
    body.update(spec)
    return {"kind": "PersistentVolumeClaim", "metadata": {"namespace": "ns", "name": name, "uid": uid or "u-" + name},
            "spec": body, "status": {"phase": "Pending"}}


def registered(name, driver=EXT):
    f = facts(name)
    f["csi_nodes"] = {driver: {"node_id": name, "max_volumes_per_node": 0, "topology": {KEY: name}}}
    return f


def ops(result):
    return result["provisioning"]


def test_wait_for_first_consumer_provisions_on_the_pods_node():
    data = cluster(node("node1"), node("node2"), storage_class(), claim(), pod("ns/web", "node2", ["data"]))
    result = run(data, {"node1": facts("node1"), "node2": facts("node2")})
    op, = ops(result)
    assert (op["op"], op["host"], op["driver"], op["claim"], op["name"], op["selected_node"]) == (
        "create_volume", "node2", LOOP, "ns/data", "pvc-u-data", "node2")
    assert op["request"] == {"capacity_bytes": 64 << 20, "access_modes": ["ReadWriteOnce"], "volume_mode": "Filesystem",
                             "fs_type": "", "mount_flags": [], "parameters": {}, "accessibility_requirements": None,
                             "content_source": None}
    pv = op["pv"]
    assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == LOOP
    assert pv["spec"]["claimRef"] == {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": "ns",
                                      "name": "data", "uid": "u-data"}
    assert (pv["spec"]["persistentVolumeReclaimPolicy"], pv["spec"]["storageClassName"]) == ("Delete", "fast")
    assert result["storage_records"] == [{"type": "provisioning_started", "pvc": "ns/data", "driver": LOOP,
                                          "selected_node": "node2"}]
    # the pod waits for the plan made after it, unblocked: no "non-bound" entry
    assert result["blocked"] == [] and result["plan"] == []
    # no consumer: WaitForFirstConsumer waits; the scheduler's selected-node annotation decides when set
    assert ops(run(cluster(node("node1"), storage_class(), claim()), {"node1": facts("node1")})) == []
    chosen = claim()
    chosen["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "node1"}
    data = cluster(node("node1"), node("node2"), storage_class(), chosen, pod("ns/web", "node2", ["data"]))
    assert ops(run(data, {"node1": facts("node1"), "node2": facts("node2")}))[0]["host"] == "node1"


def test_the_class_decides_which_claims_and_how():
    params = {"csi.storage.k8s.io/fstype": "xfs", "tier": "gold", "csiProvisionerSecretName": "old-style",
              "csiProvisionerSecretNamespace": "${pvc.namespace}",
              "csi.storage.k8s.io/node-stage-secret-name": "${pvc.name}-stage",
              "csi.storage.k8s.io/node-stage-secret-namespace": "${pvc.namespace}"}
    data = cluster(node("node1"), storage_class(mode="Immediate", default=True, parameters=params,
                                                mountOptions=["noatime"]),
                   claim("unset", cls=None), claim("none", cls=""), claim("other", cls="nfs"),
                   storage_class("nfs", provisioner="nfs.example.com", mode="Immediate"))
    op, = ops(run(data, {"node1": facts("node1")}))
    assert op["claim"] == "ns/unset"  # no class: the default one; "": none; another provisioner's: not ours
    assert (op["request"]["fs_type"], op["request"]["mount_flags"]) == ("xfs", ["noatime"])
    # the csi.storage.k8s.io/ keys are not sent; the deprecated secret keys are
    assert op["request"]["parameters"] == {"tier": "gold", "csiProvisionerSecretName": "old-style",
                                           "csiProvisionerSecretNamespace": "${pvc.namespace}"}
    assert op["secret_ref"] == "ns/old-style"
    pv = op["pv"]
    assert pv["spec"]["csi"]["nodeStageSecretRef"] == {"namespace": "ns", "name": "unset-stage"}
    assert pv["spec"]["csi"]["fsType"] == "xfs" and pv["spec"]["mountOptions"] == ["noatime"]
    assert pv["metadata"]["annotations"]["volume.kubernetes.io/provisioner-deletion-secret-name"] == "old-style"


@pytest.mark.parametrize("params, words", [
    ({"csi.storage.k8s.io/unknown": "x"}, 'found unknown parameter key "csi.storage.k8s.io/unknown" with reserved '
                                          "namespace csi.storage.k8s.io/"),
    ({"fstype": "ext4", "csi.storage.k8s.io/fstype": "xfs"}, 'fstype specified in parameters with both "fstype"'),
    ({"csi.storage.k8s.io/provisioner-secret-name": "s"}, "either name and namespace for Provisioner secrets"),
    ({"csi.storage.k8s.io/provisioner-secret-name": "${pv.uid}", "csi.storage.k8s.io/provisioner-secret-namespace":
      "ns"}, 'invalid tokens: "pv.uid"'),
    ({"csi.storage.k8s.io/provisioner-secret-name": "${pvc.name}", "csi.storage.k8s.io/provisioner-secret-namespace":
      "${pvc.name}"}, "invalid tokens: \"pvc.name\""),
])
def test_the_external_provisioners_refusals(params, words):
    data = cluster(node("node1"), storage_class(mode="Immediate", parameters=params), claim())
    result = run(data, {"node1": facts("node1")})
    assert ops(result) == []
    entry, = result["blocked"]
    assert entry["action"] == "provision" and words in entry["reason"] and "claim ns/data" in entry["reason"]


def test_claims_it_does_not_provision():
    snap = claim("restore", dataSource={"apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot",
                                        "name": "s"})
    populated = claim("populated", dataSource={"apiGroup": "example.com", "kind": "Widget", "name": "w"})
    selected = claim("picky", selector={"matchLabels": {"a": "b"}})
    deleted = claim("deleted")
    deleted["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    data = cluster(node("node1"), storage_class(mode="Immediate"), snap, populated, selected, deleted)
    result = run(data, {"node1": facts("node1")})
    assert ops(result) == []
    reasons = dict((b["reason"].split(":")[0], b["reason"]) for b in result["blocked"])
    assert sorted(reasons) == ["claim ns/picky", "claim ns/restore"]
    assert "claim Selector is not supported" in reasons["claim ns/picky"]
    assert "does not exist" in reasons["claim ns/restore"] and "[KV-CONTENT-SOURCE]" in reasons["claim ns/restore"]
    # the node stage, and the plan made again after provisioning, provision nothing
    assert ops(run(cluster(node("node1"), storage_class(mode="Immediate"), claim()), {"node1": facts("node1")},
                   stage="node")) == []
    assert ops(run(cluster(node("node1"), storage_class(mode="Immediate"), claim()), {"node1": facts("node1")},
                   provisioning=False)) == []


def test_a_volume_made_before_is_bound_never_made_twice():
    made = {"kind": "PersistentVolume",
            "metadata": {"name": "pvc-u-data", "annotations": {"pv.kubernetes.io/provisioned-by": LOOP}},
            "spec": {"claimRef": {"namespace": "ns", "name": "data", "uid": "u-data"},
                     "csi": {"driver": LOOP, "volumeHandle": "pvc-u-data"}}}
    data = cluster(node("node1"), storage_class(mode="Immediate"), claim(), made)
    result = run(data, {"node1": facts("node1")})
    assert ops(result) == []
    assert [r["type"] for r in result["storage_records"]] == ["provisioned"]
    assert result["storage_records"][0]["pv"]["metadata"]["name"] == "pvc-u-data"


def topology_cluster(*objects):
    return cluster(node("node1"), node("node2"), node("node3"), *objects)


def test_immediate_topology_from_all_nodes_or_allowed_topologies():
    node_facts = dict((n, registered(n)) for n in ("node1", "node2", "node3"))
    data = topology_cluster(storage_class(provisioner=EXT, mode="Immediate"), claim("data-web-1"))
    op, = ops(run(data, node_facts))
    requisite = [{"segments": {KEY: n}} for n in ("node1", "node2", "node3")]
    start = sum(claim_hash("data-web-1")) % 3
    assert op["request"]["accessibility_requirements"] == {"requisite": requisite,
                                                           "preferred": requisite[start:] + requisite[:start]}
    assert op["host"] == "node1"  # the first node of the run in the requisite topology that registered the driver
    allowed = [{"matchLabelExpressions": [{"key": KEY, "values": ["node3", "node2"]}]}]
    data = topology_cluster(storage_class(provisioner=EXT, mode="Immediate", allowedTopologies=allowed), claim())
    op, = ops(run(data, node_facts))
    assert op["request"]["accessibility_requirements"]["requisite"] == [{"segments": {KEY: "node2"}},
                                                                        {"segments": {KEY: "node3"}}]
    assert op["host"] == "node2"


def test_wait_for_first_consumer_topology_starts_at_the_selected_node():
    node_facts = dict((n, registered(n)) for n in ("node1", "node2", "node3"))
    data = topology_cluster(storage_class(provisioner=EXT), claim(), pod("ns/web", "node3", ["data"]))
    op, = ops(run(data, node_facts))
    assert op["host"] == "node3"
    assert op["request"]["accessibility_requirements"]["preferred"][0] == {"segments": {KEY: "node3"}}
    # the selected node did not register the driver while others did: no topology key for it
    node_facts["node3"] = facts("node3")
    result = run(data, node_facts)
    assert ops(result) == [] and "no topology key found for node node3" in result["blocked"][0]["reason"]


def test_where_create_volume_runs():
    data = cluster(node("node1"), node("node2"), storage_class("r", provisioner="remote.csi", mode="Immediate"),
                   storage_class("b", provisioner="bare.csi", mode="Immediate"), claim("a", cls="r"),
                   claim("b", cls="b"), storage_class(), claim("w"), pod("ns/web", "node2", ["w"]))
    options = dict(OPTIONS, **{"remote.csi": {"controller": "ctl", "controller_socket": "/run/r.sock"},
                               "bare.csi": {"socket": "/run/b.sock"}})
    result = run(data, {"node1": facts("node1")}, options=options)
    assert [(op["claim"], op["host"]) for op in ops(result)] == [("ns/a", "ctl")]
    reasons = dict((b["reason"].split(":")[0], b["reason"]) for b in result["blocked"])
    assert "kubevol does not know where it runs: set @{driver_options[bare.csi]}" in reasons["claim ns/b"]
    assert "its selected node node2 is not in this run" in reasons["claim ns/w"]


def test_a_scoped_run_provisions_only_its_pods_claims():
    data = cluster(node("node1"), storage_class(mode="Immediate"), claim("mine"), claim("lonely"),
                   pod("ns/web", "node1", ["mine"]), pod("ns/other", "node1", ["x"]))
    assert [op["claim"] for op in ops(run(data, {"node1": facts("node1")}))] == ["ns/lonely", "ns/mine"]
    assert [op["claim"] for op in ops(run(data, {"node1": facts("node1")}, scope={"ns/web"}))] == ["ns/mine"]


def test_the_pv_written_from_the_answer():
    """provision/volume.py: the template completed with CreateVolume's answer (external-provisioner Provision)."""
    data = cluster(node("node1"), storage_class(mode="Immediate"), claim(size="1Gi"))
    op, = ops(run(data, {"node1": facts("node1")}))
    answer = {"volume_id": "vol-9", "capacity_bytes": 0, "volume_context": {"pool": "/p"},
              "accessible_topology": [{"segments": {"zone": "a", "rack": "r1"}}, {"segments": {"zone": "b"}}]}
    pv = pv_object(op["pv"], answer, 1 << 30)
    assert pv["spec"]["capacity"] == {"storage": "1Gi"}  # 0: unknown, the request's
    assert pv["spec"]["csi"]["volumeHandle"] == "vol-9"
    assert pv["spec"]["csi"]["volumeAttributes"] == {"storage.kubernetes.io/csiProvisionerIdentity": "kubevol",
                                                     "pool": "/p"}
    assert pv["spec"]["nodeAffinity"] == {"required": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]},
                              {"key": "zone", "operator": "In", "values": ["a"]}]},
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}
    assert "nodeAffinity" not in pv_object(op["pv"], answer, 1 << 30, topology_supported=False)["spec"]
    assert op["pv"]["spec"]["csi"] == {"driver": LOOP, "fsType": ""}  # the template is left as it was
    assert [binary_si(n) for n in (1 << 30, 64 << 20, 1000000000, 1500, 0)] == ["1Gi", "64Mi", "1000000000", "1500",
                                                                                "0"]
