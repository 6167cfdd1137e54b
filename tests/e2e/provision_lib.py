"""Helpers of the provisioning end-to-end tests (test_provisioning.py with the file store, test_provisioning_api.py with
the fake API server): the test CSI plugin on each SSH test node with topology, the StorageClasses, claims and pods of
a volume's life from a claim, and what a run made of them."""
import json
import os
import subprocess

from e2e_lib import KUBELET, node_object, write_list
from fakeapi import FakeApiServer, write_kubeconfig
from csi_lib import DRIVER, NodePlugin, _loops_backed_under

KEY = "topology.csi.kubevol.test/node"
LOOP = "loop.kubevol.io"
OPTIONS = {DRIVER: {"controller": "node"}}
CREATE_CALLS = ("CreateVolume", "DeleteVolume")


def stop_plugins(cluster, plugins):
    """Stop the test CSI plugins start_plugins started, unmount what they mounted, and detach the loop devices the
    node side attached for them (found by the backing files' inodes under the cluster's csi-pool)."""
    for plugin in plugins.values():
        plugin.stop()
        plugin.unmount_all()
    for device in _loops_backed_under(os.path.join(cluster.dir, "csi-pool")):
        subprocess.run(["losetup", "-d", device], check=False)


def start_plugins(cluster, max_volumes=2):
    """The test plugin on every node, sharing one pool (the cluster's csi-pool): topology on, its node id the node's
    name, at most ``max_volumes`` volumes per node."""
    pool = os.path.join(cluster.dir, "csi-pool")
    os.makedirs(pool, exist_ok=True)
    plugins = {}
    for node in cluster.nodes:
        plugins[node] = NodePlugin(cluster, node, pool).start(
            node_id=node, topology=True, max_volumes_per_node=max_volumes, expected_secrets=None,
            controller_caps=["CREATE_DELETE_VOLUME", "CREATE_DELETE_SNAPSHOT", "CLONE_VOLUME", "EXPAND_VOLUME"])
    return plugins, pool


def storage_class(name, provisioner=DRIVER, mode="WaitForFirstConsumer", policy="Delete", **extra):
    obj = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
           "provisioner": provisioner, "volumeBindingMode": mode, "reclaimPolicy": policy}
    obj.update(extra)
    return obj


def claim(name, cls, size="64Mi", namespace="apps"):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"namespace": namespace, "name": name, "uid": "uid-%s-%s" % (namespace, name)},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                     "resources": {"requests": {"storage": size}}},
            "status": {"phase": "Pending"}}


def pod(name, node, claims, namespace="apps"):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": namespace, "name": name, "uid": "p-" + name,
                         "creationTimestamp": "2026-11-28T10:00:00Z"},
            "spec": {"nodeName": node, "volumes": [{"name": c, "persistentVolumeClaim": {"claimName": c}}
                                                   for c in claims],
                     "containers": [{"name": "c", "volumeMounts": [{"name": c, "mountPath": "/" + c}
                                                                   for c in claims]}]},
            "status": {"phase": "Running"}}


def base_objects(nodes):
    return [node_object(n) for n in nodes] + [
        storage_class("csi-wffc"),
        storage_class("csi-node2", mode="Immediate", allowedTopologies=[
            {"matchLabelExpressions": [{"key": KEY, "values": ["node2"]}]}]),
        storage_class("loop-wffc", provisioner=LOOP, parameters={"csi.storage.k8s.io/fstype": "xfs"}),
        storage_class("loop-retain", provisioner=LOOP, policy="Retain"),
    ]


def volume_name(namespace, name):
    return "pvc-uid-%s-%s" % (namespace, name)


def target(pod_name, pv):
    return "%s/pods/p-%s/volumes/kubernetes.io~csi/%s/mount" % (KUBELET, pod_name, pv)


def by_name(data, kind):
    return dict((o["metadata"]["name"], o) for o in data["items"] if o["kind"] == kind)


def calls(plugins, since=None):
    """[(node, method, request)] of the provisioning calls, since the counts ``since`` ({node: count})."""
    found = []
    for node, plugin in sorted(plugins.items()):
        for entry in plugin.calls()[(since or {}).get(node, 0):]:
            if entry["method"] in CREATE_CALLS:
                found.append((node, entry["method"], entry["request"], entry["code"]))
    return found


def counts(plugins):
    return dict((node, len(plugin.calls())) for node, plugin in plugins.items())


def images(pool):
    return sorted(name for name in os.listdir(pool) if name.endswith(".img"))


def extra(options=None):
    return ["-e", json.dumps({"kubevol_driver_options": options or OPTIONS})]


def api_store_cluster(cluster, objects, token):
    """A generator for a module fixture: ``cluster`` with the test CSI plugins on its nodes and a fake API server
    holding ``objects(cluster)`` as the store (``cluster.options`` points the role at it); everything it started is
    stopped, and the loop devices under the plugins' pool detached, when the fixture ends."""
    api = FakeApiServer(tokens=[token]).start()
    plugins = {}
    try:
        plugins, pool = start_plugins(cluster)
        cluster.plugins, cluster.csi_pool, cluster.api, cluster.shared = plugins, pool, api, {}
        api.load(objects(cluster))
        write_list(cluster.state, [])  # not read: the API is the store
        config = write_kubeconfig(os.path.join(cluster.dir, "kubeconfig"), {"fake": {"server": api.url,
                                                                                     "token": token}})
        cluster.options = ["-e", json.dumps({"kubevol_cluster_source": "kubernetes",
                                             "kubevol_k8s_auth": {"kubeconfig": config},
                                             "kubevol_driver_options": {DRIVER: {"controller": "node"}}})]
        yield cluster
    finally:
        stop_plugins(cluster, plugins)
        api.stop()
