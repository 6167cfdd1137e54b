# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the inline ephemeral volume tests share (test_planner_inline.py, test_planner_inline_unpublish.py): the
planner run, a CSIDriver with its lifecycle modes, a pod with an inline volume, a node's facts with it published,
the plan's steps and blocked reasons."""

import datetime
import hashlib
import os
import sys


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from simulate import LOOP, facts, pod  # noqa: E402

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    inline_volume_name, unique_volume_name)
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import PlanOptions, plan_cluster  # noqa


NOW = datetime.datetime(2026, 11, 22, 12, 0, 0, tzinfo=datetime.timezone.utc)
UID = "uid-p"
HANDLE = "csi-" + hashlib.sha256((UID + "scratch").encode()).hexdigest()
UNIQUE = unique_volume_name(LOOP, HANDLE)
POOL = "/var/lib/kubevol/pool"


def run(data, node_facts=None, scope=None, **options):
    opts = PlanOptions(True, 360, (LOOP,), NOW, options.get("max_teardown_fraction", 0.5),
                       options.get("max_teardown_count", 20), options.get("allow_mass_teardown", False),
                       options.get("loop_pools", (POOL,)))
    return plan_cluster(ClusterIndex(cluster_from_data(data)), node_facts, opts, scope)


def ephemeral_driver(modes=("Persistent", "Ephemeral"), name=LOOP):
    spec = {"attachRequired": True}
    if modes is not None:
        spec["volumeLifecycleModes"] = list(modes)
    return {"kind": "CSIDriver", "metadata": {"name": name}, "spec": spec}


def inline_pod(key="ns/p", node_name="node1", attributes=None, driver=LOOP, read_only=False, fs_type=None,
               mounted_as="volumeMounts", **kwargs):
    csi = {"driver": driver, "volumeAttributes": {"size": "64Mi"} if attributes is None else attributes}
    if read_only:
        csi["readOnly"] = True
    if fs_type:
        csi["fsType"] = fs_type
    kwargs.setdefault("uid", "uid-" + key.split("/")[1])
    obj = pod(key, node_name, volumes=[{"name": "scratch", "csi": csi}], **kwargs)
    container = obj["spec"]["containers"][0]
    if mounted_as == "volumeMounts":
        container["volumeMounts"].append({"name": "scratch", "mountPath": "/scratch"})
    elif mounted_as == "volumeDevices":
        container["volumeDevices"].append({"name": "scratch", "devicePath": "/dev/x"})
    return obj


def with_ephemeral(node_name, uid=UID, volume="scratch", mounted=True, read_only=False, image=None,
                   pod_dir=True, driver=LOOP):
    """Node facts with one inline ephemeral volume (its pod dir in pod_mounts, and ephemeral_volumes)."""
    f = facts(node_name)
    handle = "csi-" + hashlib.sha256((uid + volume).encode()).hexdigest()
    unique = unique_volume_name(driver, handle)
    path = "/var/lib/kubelet/pods/%s/volumes/kubernetes.io~csi/%s/mount" % (uid, volume)
    if pod_dir:
        f["pod_mounts"].append({"pod_uid": uid, "pv_name": volume, "mode": "Filesystem", "path": path,
                                "mounted": mounted, "read_only": read_only, "device": "/dev/loop7" if mounted else None,
                                "unique_volume_name": unique, "driver": driver, "foreign": driver != LOOP,
                                "uncertain": None, "unsafe": False, "ephemeral": True})
    f["ephemeral_volumes"] = [{"pod_uid": uid, "volume_name": volume, "driver": driver, "volume_handle": handle,
                               "unique_volume_name": unique, "kubernetes_volume_name": inline_volume_name(uid, volume),
                               "path": path, "mounted": mounted, "read_only": read_only,
                               "device": "/dev/loop7" if mounted else None,
                               "image": image if image is not None else POOL + "/" + handle, "size_bytes": 67108864,
                               "foreign": driver != LOOP}]
    return f


def steps(result):
    return [(s["action"], s["target"], s["node"], s["volume"], s["pod"]) for s in result["plan"]]


def reasons(result):
    return [b["reason"] for b in result["blocked"]]
