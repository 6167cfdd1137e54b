# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""pod_wait's decisions (module_utils/run/pod_wait.py), one poll as the action plugin makes it: a pod's volume is ready
only when its node's facts show it published at the pod's path, for every plugin kubevol serves (CSI of its own and
external drivers, local, hostPath, inline ephemeral), and nothing is blocked or still to run for it; what kubevol does
not set up is listed as not waited for, never as a ready mount."""

import datetime
import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import LOOP, bound, cluster, csidriver, facts, node, pod, pvc, uvn  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (  # noqa: E402
    ClusterIndex, cluster_from_data)
from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options as driver_opts  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.actual_state import build_actual_state  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.desired_state import (  # noqa: E402
    build_desired_state, known_drivers_of)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run import pod_wait  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.run.pod_wait import (  # noqa: E402
    NOT_WAITED, READY, WAITING, pod_states)

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0, tzinfo=datetime.timezone.utc)
KUBELET = "/var/lib/kubelet"
LOCAL, HOST_PATH = "kubernetes.io/local-volume", "kubernetes.io/host-path"
EXTERNAL = "hostpath.csi.k8s.io"
UID = "uid-ns-p"
OPTIONS = {LOCAL: {"paths": ["/mnt/disks"]}, HOST_PATH: {"paths": ["/srv"]}}


def look(data, node_facts, keys=("ns/p",), driver_options=None, known_drivers=None):
    """One poll of pod_volumes_wait (plugins/action/pod_volumes_wait.py _poll) over a cluster List and node facts."""
    options = driver_opts.validate(OPTIONS if driver_options is None else driver_options)
    known = known_drivers_of(known_drivers, options)
    pools = tuple(driver_opts.loop_pools(options))
    index = ClusterIndex(cluster_from_data(data))
    actual = build_actual_state(index, node_facts, known)
    desired = build_desired_state(index, known, None, pools, options)
    result = plan(desired, actual, index, PlanOptions(known_drivers=known, now=NOW, allow_mass_teardown=True,
                                                      loop_pools=pools, driver_options=options))
    return pod_states(index, result, list(keys), actual.node_facts, known)


def volumes(states):
    [entry] = states
    return dict((v["volume"], v) for v in entry["volumes"])


def source_pv(name, source, claim="ns/a", mode="Filesystem"):
    ns, claim_name = claim.split("/")
    spec = {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "volumeMode": mode,
            "claimRef": {"namespace": ns, "name": claim_name, "uid": "uid-" + claim}}
    spec.update(source)
    if "local" in source:
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node1"]}]}]}}
    return {"kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def labelled_node():
    obj = node("node1")
    obj["metadata"]["labels"] = {"kubernetes.io/hostname": "node1"}
    return obj


def plugin_entry(plugin, pv_name, mounted=True, mode="Filesystem", uid=UID, **extra):
    where = "volumes" if mode == "Filesystem" else "volumeDevices"
    entry = {"plugin": plugin, "pod_uid": uid, "pv_name": pv_name, "unique_volume_name": "%s/%s" % (plugin, pv_name),
             "driver": None, "foreign": False, "mode": mode, "mounted": mounted, "read_only": False,
             "path": "%s/pods/%s/%s/%s/%s" % (KUBELET, uid, where, plugin.replace("/", "~"), pv_name),
             "device": "/dev/sdb" if mounted else None, "uncertain": None, "unsafe": False, "ephemeral": False}
    entry.update(extra)
    return entry


def with_pods(node_facts, *entries):
    node_facts["pod_mounts"].extend(entries)
    return node_facts


# ---- local and hostPath: ready only when the node shows them published ---------------------------------------

def local_cluster(mode="Filesystem", path="/mnt/disks/d1"):
    devices = ("a",) if mode == "Block" else ()
    return cluster(labelled_node(), source_pv("pv-l", {"local": {"path": path}}, mode=mode), pvc("ns/a", "pv-l"),
                   pod("ns/p", "node1", ["a"], devices=devices))


def test_a_local_volume_nothing_mounted_for_waits_naming_the_step_a_reconcile_would_run():
    # a pod added to the cluster file with no reconcile: its node has nothing of it
    [vol] = volumes(look(local_cluster(), {"node1": facts("node1")})).values()
    assert vol["state"] == WAITING and vol["pv"] == "pv-l"
    assert vol["reason"].startswith("a reconcile would still run: mount/pod (pod ns/p uses it)"), vol


def test_a_local_volume_whose_pod_directory_exists_unmounted_waits():
    node_facts = with_pods(facts("node1"), plugin_entry(LOCAL, "pv-l", mounted=False))
    states = look(local_cluster(), {"node1": node_facts})
    assert volumes(states)["v-a"]["state"] == WAITING and states[0]["ready"] is False


def test_a_local_volume_bound_into_the_pod_is_ready():
    node_facts = with_pods(facts("node1"), plugin_entry(LOCAL, "pv-l"))
    states = look(local_cluster(), {"node1": node_facts})
    assert volumes(states)["v-a"] == {"volume": "v-a", "pv": "pv-l", "state": READY, "reason": None}
    assert states[0]["ready"] is True


def test_a_local_block_volume_is_ready_when_mapped_not_when_mounted_as_a_filesystem():
    mapped = with_pods(facts("node1"), plugin_entry(LOCAL, "pv-l", mode="Block"))
    assert volumes(look(local_cluster("Block"), {"node1": mapped}))["v-a"]["state"] == READY
    wrong = with_pods(facts("node1"), plugin_entry(LOCAL, "pv-l", mode="Filesystem"))
    assert volumes(look(local_cluster("Block"), {"node1": wrong}))["v-a"]["state"] == WAITING


def test_a_local_volume_the_operator_does_not_allow_waits_with_the_planners_refusal():
    states = look(local_cluster(path="/srv/elsewhere"), {"node1": facts("node1")})
    vol = volumes(states)["v-a"]
    assert vol["state"] == WAITING and "outside the directories allowed" in vol["reason"], vol


def host_cluster():
    return cluster(labelled_node(), source_pv("pv-h", {"hostPath": {"path": "/srv/data", "type": "Directory"}}),
                   pvc("ns/a", "pv-h"), pod("ns/p", "node1", ["a"]))


def test_a_host_path_volume_waits_until_its_type_check_passed_on_the_node():
    vol = volumes(look(host_cluster(), {"node1": facts("node1")}))["v-a"]
    assert vol["state"] == WAITING and "mount/pod" in vol["reason"]
    marker = plugin_entry(HOST_PATH, "pv-h", mounted=False, published=True, device=None)
    states = look(host_cluster(), {"node1": with_pods(facts("node1"), marker)})
    assert volumes(states)["v-a"]["state"] == READY and states[0]["ready"] is True
    # a directory the facts do not count as kubevol's marker (a symlink, a file on the way) is not ready
    unsafe = plugin_entry(HOST_PATH, "pv-h", mounted=False, published=False, device=None)
    assert volumes(look(host_cluster(), {"node1": with_pods(facts("node1"), unsafe)}))["v-a"]["state"] == WAITING


# ---- CSI: kubevol's own driver, external drivers, the device under a Block map --------------------------------

def csi_cluster(*extra, devices=(), request=None, attached=()):
    sizes = {"request": request} if request else {}
    volume = bound("pv-a", "ns/a", mode="Block" if devices else "Filesystem", **sizes)
    return cluster(node("node1", attached=attached), *volume, pod("ns/p", "node1", ["a"], devices=devices), *extra)


def test_a_loop_volume_mounted_for_the_pod_is_ready():
    node_facts = facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[(UID, "pv-a")])
    states = look(csi_cluster(attached=[uvn("pv-a")]), {"node1": node_facts})
    assert volumes(states)["v-a"]["state"] == READY and states[0]["ready"] is True


def test_a_mounted_volume_with_setup_still_to_run_waits():
    # node status says attached but the node shows no device: the reconcile attaches it again first
    node_facts = facts("node1", global_mounts=["pv-a"], pod_mounts=[(UID, "pv-a")])
    vol = volumes(look(csi_cluster(attached=[uvn("pv-a")]), {"node1": node_facts}))["v-a"]
    assert vol["state"] == WAITING and vol["reason"].startswith("a reconcile would still run: attach/device"), vol


def test_an_expansion_still_to_run_does_not_hold_a_pod_back():
    node_facts = facts("node1", devices=["pv-a"], global_mounts=["pv-a"], pod_mounts=[(UID, "pv-a")])
    states = look(csi_cluster(request="2Gi", attached=[uvn("pv-a")]), {"node1": node_facts})
    assert volumes(states)["v-a"]["state"] == READY


def test_a_block_map_on_another_device_than_the_volumes_waits_for_the_map_again():
    node_facts = facts("node1", devices=["pv-a"])
    node_facts["pod_mounts"].append({
        "plugin": "kubernetes.io/csi", "pod_uid": UID, "pv_name": "pv-a", "mode": "Block", "mounted": True,
        "path": "/p", "read_only": False, "device": "/dev/loop3", "unique_volume_name": uvn("pv-a"), "driver": LOOP,
        "device_number": "7:3", "attached_device": "/dev/loop5", "device_mismatch": True})
    vol = volumes(look(csi_cluster(devices=("a",), attached=[uvn("pv-a")]), {"node1": node_facts}))["v-a"]
    assert vol["state"] == WAITING and "map again" in vol["reason"] and "restart the pod" in vol["reason"], vol


def external_cluster():
    return cluster(node("node1"), *bound("pv-x", "ns/a", driver=EXTERNAL), pod("ns/p", "node1", ["a"]),
                   csidriver(EXTERNAL, attach_required=False))


def external_mount(mounted=True):
    unique = unique_volume_name(EXTERNAL, "pv-x.img")
    return {"plugin": "kubernetes.io/csi", "pod_uid": UID, "pv_name": "pv-x", "mode": "Filesystem", "path": "/p",
            "mounted": mounted, "read_only": False, "device": None, "unique_volume_name": unique, "driver": EXTERNAL,
            "foreign": False}


def test_an_external_drivers_volume_is_waited_for_when_driver_options_configure_it():
    options = dict(OPTIONS, **{EXTERNAL: {"controller": "node"}})
    node_facts = facts("node1")
    vol = volumes(look(external_cluster(), {"node1": node_facts}, driver_options=options))["v-a"]
    assert vol["state"] == WAITING, vol
    node_facts = with_pods(facts("node1"), external_mount())
    unique = unique_volume_name(EXTERNAL, "pv-x.img")
    node_facts["global_mounts"].append({"plugin": "kubernetes.io/csi", "unique_volume_name": unique, "driver": EXTERNAL,
                                        "volume_handle": "pv-x.img", "pv_name": "pv-x", "path": "/g", "mounted": True,
                                        "device": None, "fs_type": None, "read_only": False, "foreign": False})
    states = look(external_cluster(), {"node1": node_facts}, driver_options=options)
    assert volumes(states)["v-a"]["state"] == READY and states[0]["ready"] is True


def test_another_drivers_volume_is_not_waited_for_and_says_why():
    states = look(external_cluster(), {"node1": facts("node1")})
    vol = volumes(states)["v-a"]
    assert vol["state"] == NOT_WAITED and vol["pv"] == "pv-x"
    assert "CSI driver %s, which kubevol does not drive" % EXTERNAL in vol["reason"]
    assert "configure it in @{driver_options[%s]} to have kubevol drive it" % EXTERNAL in vol["reason"], vol
    assert states[0]["ready"] is True  # nothing of it is kubevol's to wait for


# ---- what kubevol does not set up --------------------------------------------------------------------------------

KUBELET_VOLUMES = [{"name": "s", "secret": {"secretName": "x"}}, {"name": "c", "configMap": {"name": "x"}},
                   {"name": "e", "emptyDir": {}}, {"name": "d", "downwardAPI": {"items": []}},
                   {"name": "j", "projected": {"sources": []}}]


def test_secret_config_map_empty_dir_downward_api_and_projected_volumes_are_not_waited_for():
    obj = pod("ns/p", "node1", ["a"], volumes=KUBELET_VOLUMES)
    mounts = [{"name": v["name"], "mountPath": "/" + v["name"]} for v in KUBELET_VOLUMES]
    obj["spec"]["containers"][0]["volumeMounts"] += mounts
    data = cluster(labelled_node(), source_pv("pv-l", {"local": {"path": "/mnt/disks/d1"}}), pvc("ns/a", "pv-l"), obj)
    states = look(data, {"node1": facts("node1")})
    found = volumes(states)
    for name, kind in (("s", "secret"), ("c", "configMap"), ("e", "emptyDir"), ("d", "downwardAPI"),
                       ("j", "projected")):
        assert found[name] == {"volume": name, "pv": None, "state": NOT_WAITED,
                               "reason": "%s volume: not one kubevol sets up" % kind}
    # they are never counted as ready: the pod still waits for its local volume
    assert found["v-a"]["state"] == WAITING and states[0]["ready"] is False
    assert [v["state"] for v in found.values()].count(READY) == 0


def test_a_pod_with_only_kubelet_volumes_has_nothing_to_wait_for():
    obj = pod("ns/p", "node1", volumes=KUBELET_VOLUMES[:1])
    obj["spec"]["containers"][0]["volumeMounts"] = [{"name": "s", "mountPath": "/s"}]
    states = look(cluster(node("node1"), obj), {"node1": facts("node1")})
    assert states[0]["ready"] is True and [v["state"] for v in states[0]["volumes"]] == [NOT_WAITED]


def test_a_volume_no_container_uses_is_not_waited_for():
    obj = pod("ns/p", "node1", ["a"])
    obj["spec"]["containers"][0]["volumeMounts"] = []
    data = cluster(labelled_node(), source_pv("pv-l", {"local": {"path": "/mnt/disks/d1"}}), pvc("ns/a", "pv-l"), obj)
    vol = volumes(look(data, {"node1": facts("node1")}))["v-a"]
    assert vol == {"volume": "v-a", "pv": "pv-l", "state": NOT_WAITED,
                   "reason": "no container of the pod mounts or maps it"}


def test_an_nfs_pv_is_not_waited_for():
    nfs = source_pv("pv-n", {"nfs": {"server": "s", "path": "/e"}})
    data = cluster(node("node1"), nfs, pvc("ns/a", "pv-n"), pod("ns/p", "node1", ["a"]))
    vol = volumes(look(data, {"node1": facts("node1")}))["v-a"]
    assert vol["state"] == NOT_WAITED and vol["reason"] == "PV pv-n (nfs): not one kubevol sets up"


def test_an_unbound_claim_waits():
    data = cluster(node("node1"), pvc("ns/a", "", phase="Pending"), pod("ns/p", "node1", ["a"]))
    vol = volumes(look(data, {"node1": facts("node1")}))["v-a"]
    assert vol["state"] == WAITING and "claim ns/a has non-bound phase" in vol["reason"], vol


# ---- inline ephemeral CSI volumes ---------------------------------------------------------------------------------

def inline_cluster(driver=LOOP):
    csi = {"driver": driver, "volumeAttributes": {"size": "64Mi"}}
    obj = pod("ns/p", "node1", volumes=[{"name": "scratch", "csi": csi}])
    obj["spec"]["containers"][0]["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
    spec = {"attachRequired": True, "volumeLifecycleModes": ["Persistent", "Ephemeral"]}
    return cluster(node("node1"), obj, {"kind": "CSIDriver", "metadata": {"name": driver}, "spec": spec})


def ephemeral(mounted=True, driver=LOOP):
    node_facts = facts("node1")
    handle = "csi-" + hashlib.sha256((UID + "scratch").encode()).hexdigest()
    node_facts["ephemeral_volumes"] = [{
        "pod_uid": UID, "volume_name": "scratch", "driver": driver, "volume_handle": handle,
        "unique_volume_name": unique_volume_name(driver, handle), "path": "/p", "mounted": mounted,
        "read_only": False, "device": "/dev/loop7", "image": "/var/lib/kubevol/pool/" + handle}]
    return node_facts


def test_an_inline_volume_is_ready_once_published_in_the_pods_directory():
    vol = volumes(look(inline_cluster(), {"node1": facts("node1")}))["scratch"]
    assert vol["state"] == WAITING and "mount/pod" in vol["reason"], vol
    assert volumes(look(inline_cluster(), {"node1": ephemeral(mounted=False)}))["scratch"]["state"] == WAITING
    states = look(inline_cluster(), {"node1": ephemeral()})
    assert volumes(states)["scratch"] == {"volume": "scratch", "pv": None, "state": READY, "reason": None}


def test_an_inline_volume_of_another_driver_is_not_waited_for():
    vol = volumes(look(inline_cluster("other.csi.io"), {"node1": facts("node1")}))["scratch"]
    assert vol["state"] == NOT_WAITED and "CSI driver other.csi.io" in vol["reason"], vol


def test_an_inline_volume_of_an_external_driver_configured_in_driver_options_is_waited_for():
    options = dict(OPTIONS, **{EXTERNAL: {"controller": "node"}})
    vol = volumes(look(inline_cluster(EXTERNAL), {"node1": facts("node1")}, driver_options=options))["scratch"]
    assert vol["state"] == WAITING, vol
    states = look(inline_cluster(EXTERNAL), {"node1": ephemeral(driver=EXTERNAL)}, driver_options=options)
    assert volumes(states)["scratch"]["state"] == READY


# ---- the timeout's message --------------------------------------------------------------------------------------

def test_the_timeout_names_each_volume_waited_for_and_not_the_others():
    obj = pod("ns/p", "node1", ["a"], volumes=KUBELET_VOLUMES[:1])
    obj["spec"]["containers"][0]["volumeMounts"].append({"name": "s", "mountPath": "/s"})
    data = cluster(labelled_node(), source_pv("pv-l", {"local": {"path": "/mnt/disks/d1"}}), pvc("ns/a", "pv-l"), obj)
    msg = pod_wait.not_ready_message(look(data, {"node1": facts("node1")}), 7)
    assert msg.startswith("volumes not ready after 7s: ns/p volume v-a (PV pv-l) on node node1: a reconcile would "
                          "still run: mount/pod"), msg
    assert "volume s " not in msg
