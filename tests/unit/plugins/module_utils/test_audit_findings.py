# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The audit's judgements (module_utils/audit/audit.py) and the by-name detached record it cleans with."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.audit import audit
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import ClusterIndex, cluster_from_data
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (
    ephemeral_volume_handle, unique_volume_name, volume_attachment_name)
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import apply_records

DRIVER = "loop.kubevol.io"
KNOWN = (DRIVER,)
POOL = "/var/lib/kubevol/pool"


def node(name, attached=(), in_use=()):
    status = {"conditions": [{"type": "Ready", "status": "True"}]}
    if attached:
        status["volumesAttached"] = [{"name": n, "devicePath": "/dev/loop1"} for n in attached]
    if in_use:
        status["volumesInUse"] = list(in_use)
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {}, "status": status}


def pv(name, pool=None):
    csi = {"driver": DRIVER, "volumeHandle": name + ".img"}
    if pool:
        csi["volumeAttributes"] = {"pool": pool}
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "csi": csi}}


def va(pv_name, node_name, attached=True, attacher=DRIVER):
    return {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
            "metadata": {"name": volume_attachment_name(pv_name + ".img", attacher, node_name)},
            "spec": {"attacher": attacher, "nodeName": node_name, "source": {"persistentVolumeName": pv_name}},
            "status": {"attached": attached}}


def inline_pod(uid, volume):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "ns", "name": "p", "uid": uid},
            "spec": {"nodeName": "node1", "volumes": [{"name": volume, "csi": {"driver": DRIVER}}],
                     "containers": [{"name": "c"}]}, "status": {"phase": "Running"}}


def index(*items):
    return ClusterIndex(cluster_from_data({"apiVersion": "v1", "kind": "List", "items": list(items)}))


def image(name, pool=POOL, **extra):
    entry = {"pool": pool, "pool_real": pool, "name": name, "path": pool + "/" + name, "size_bytes": 1 << 20,
             "allocated_bytes": 4096, "content": "filesystem", "content_detail": "ext4", "loop_device": None,
             "record": None}
    entry.update(extra)
    return entry


def device(handle):
    return {"unique_volume_name": unique_volume_name(DRIVER, handle), "driver": DRIVER, "volume_handle": handle,
            "device": "/dev/loop7"}


def test_an_image_no_pv_names_is_a_leak_never_cleaned():
    idx = index(node("node1"), pv("pv-a"), pv("pv-b", pool="/srv/other"), inline_pod("uid-1", "scratch"))
    named = audit.named_images(idx, KNOWN)
    images = [image("pv-a.img"), image("pv-b.img"), image("pv-b.img", pool="/srv/other"), image("leak.img"),
              image(ephemeral_volume_handle("uid-1", "scratch")),
              image("gone-inline", record={"ephemeral": True, "volume_handle": "gone-inline"}),
              image("bound.img", loop_device="/dev/loop9", content="unknown", content_detail="blkid failed")]
    found = audit.image_findings("node1", images, named)
    assert [f["where"] for f in found] == [POOL + "/pv-b.img", POOL + "/leak.img", POOL + "/bound.img"]
    assert all(f["kind"] == "leaked_image" and not f["cleanable"] for f in found)
    assert "it holds a filesystem (ext4)" in found[1]["why"] and found[1]["size_bytes"] == 1 << 20
    assert "its content is unknown: blkid failed" in found[2]["why"]
    assert "still attached as /dev/loop9" in found[2]["action"]
    assert audit.named_images(idx, ("other.driver",)) == set()


def test_orphan_pod_dirs_only_empty_ones_are_cleanable():
    report = {"orphan_pod_dirs": [
        {"pod_uid": "u1", "path": "/k/pods/u1", "volume_dirs": [], "mounted": [], "mounted_count": 0, "files": [],
         "file_count": 0, "symlinks": [], "empty": True, "removed": ["/k/pods/u1/volumes", "/k/pods/u1"]},
        {"pod_uid": "u2", "path": "/k/pods/u2", "volume_dirs": [], "mounted": ["/k/pods/u2/volumes/x/m"],
         "mounted_count": 1, "files": [], "file_count": 0, "symlinks": [], "empty": False},
        {"pod_uid": "u3", "path": "/k/pods/u3", "volume_dirs": [], "mounted": [], "mounted_count": 0,
         "files": ["/k/pods/u3/f"], "file_count": 30, "symlinks": [], "empty": False}]}
    found = audit.pod_dir_findings("node1", report)
    assert [(f["cleanable"], f["cleaned"]) for f in found] == [(True, True), (False, False), (False, False)]
    assert "still mounted under it" in found[1]["why"] and "run the reconcile" in found[1]["action"]
    assert "(30 in all)" in found[2]["why"]


def test_volume_attachments_of_missing_pvs_or_nodes_are_cleanable_only_when_no_node_has_them():
    idx = index(node("node1"), node("node2"), pv("pv-live"),
                va("pv-gone", "node1"), va("pv-held", "node1"), va("pv-gone", "node2"), va("pv-gone", "node-x"),
                va("pv-live", "node1", attached=False), va("pv-gone", "node1", attacher="other.csi"))
    facts = {"node1": {"devices": [device("pv-held.img")]}}  # node2 did not answer
    found, records = audit.attachment_findings(idx, facts, {"node1", "node2"}, KNOWN, live_lock=False)
    by_where = dict((f["where"].split("/", 1)[1], f) for f in found)
    cleanable = sorted(name for name, f in by_where.items() if f["cleanable"])
    assert cleanable == sorted([volume_attachment_name("pv-gone.img", DRIVER, "node1"),
                                volume_attachment_name("pv-gone.img", DRIVER, "node-x"),
                                volume_attachment_name("pv-live.img", DRIVER, "node1")])
    assert records == [{"type": "detached", "name": n, "node": by_where[n]["node"]} for n in
                       [r["name"] for r in records]] and len(records) == 3
    held = by_where[volume_attachment_name("pv-held.img", DRIVER, "node1")]
    assert not held["cleanable"] and "reports the device attached" in held["why"]
    unanswered = by_where[volume_attachment_name("pv-gone.img", DRIVER, "node2")]
    assert not unanswered["cleanable"] and "did not answer" in unanswered["why"]
    foreign = by_where[volume_attachment_name("pv-gone.img", "other.csi", "node1")]
    assert not foreign["cleanable"] and "not a kubevol driver" in foreign["why"]
    # while a live run holds the lock an intent may be a run's own: never stale
    found, records = audit.attachment_findings(idx, facts, {"node1", "node2"}, KNOWN, live_lock=True)
    intent = [f for f in found if f["kind"] == "stale_attach_intent"][0]
    assert not intent["cleanable"] and "live run" in intent["why"]


def test_status_entries_a_reachable_node_contradicts():
    gone = unique_volume_name(DRIVER, "pv-a.img")
    here = unique_volume_name(DRIVER, "pv-b.img")
    idx = index(node("node1", attached=[gone]), pv("pv-a"), pv("pv-b"))
    found, records = audit.status_findings(idx, {"in_use_repairs": [
        {"node": "node1", "unique_volume_names": [gone], "in_use": False}]},
        {"node1": {"devices": [device("pv-b.img")]}}, KNOWN)
    kinds = [(f["kind"], f["cleanable"]) for f in found]
    assert kinds == [("status_in_use_not_mounted", True), ("status_attached_no_device", True),
                     ("status_device_not_attached", False)]
    assert records == [{"type": "in_use", "node": "node1", "unique_volume_names": [gone], "in_use": False},
                       {"type": "detached", "node": "node1", "pv_name": "pv-a", "driver": DRIVER,
                        "volume_handle": "pv-a.img"}]
    assert found[2]["unique_volume_name"] == here


def test_plan_findings_are_the_planners_teardown_steps():
    plan = {"plan": [
        {"action": "unmount", "target": "pod", "node": "node1", "volume": "pv-a", "pod_uid": "u1",
         "unique_volume_name": unique_volume_name(DRIVER, "pv-a.img"), "reason": "pod u1 is gone"},
        {"action": "unmount", "target": "device", "node": "node1", "volume": "pv-a",
         "unique_volume_name": unique_volume_name(DRIVER, "pv-a.img"), "reason": "no pod uses it"},
        {"action": "cleanup", "target": "directory", "node": "node1", "volume": "pv-x", "pod_uid": "u2",
         "unique_volume_name": None, "reason": "stale", "path": "/k/pods/u2/volumes/kubernetes.io~csi/pv-x/mount"},
        {"action": "mount", "target": "pod", "node": "node1", "volume": "pv-a", "reason": "x"},
        {"action": "unmount", "target": "pod", "node": "node9", "volume": "pv-a", "pod_uid": "u1", "reason": "x"}]}
    found = audit.plan_findings(plan, {"node1": "/k"}, {"node1": ["/k/pods/u2"]})
    assert [(f["kind"], f["where"]) for f in found] == [
        ("orphaned_pod_volume", "/k/pods/u1/volumes/kubernetes.io~csi/pv-a"),
        ("unused_global_mount", "/k/plugins/kubernetes.io/csi/%s/%s/globalmount" % (
            DRIVER, __import__("hashlib").sha256(b"pv-a.img").hexdigest()))]
    assert not any(f["cleanable"] for f in found)


def test_lock_finding_and_report_lines():
    assert audit.lock_finding("/s.run-lock", None, None) == []
    assert audit.lock_finding("/s.run-lock", {"holder": "r"}, None) == []
    [found] = audit.lock_finding("/s.run-lock", {"holder": "r", "pid": 5, "host": "h"}, "its process is gone")
    assert found["cleanable"] and "run r (pid 5 on host h" in found["why"]
    [line] = audit.report_lines([found])
    assert line == "cluster stale_run_lock /s.run-lock: %s [would be cleaned with @{clean=true}]" % found["why"]
    # the edge says the remedy in its reader's words: the audit playbook's variable, or the module's option
    assert words.say(line, words.ROLE).endswith("[would be cleaned with kubevol_audit_clean=true]")
    assert words.say(line, words.MODULE).endswith("[would be cleaned with clean=true]")
    assert audit.summary([found]) == {"findings": 1, "by_kind": {"stale_run_lock": 1}, "cleanable": 1, "cleaned": 0}


def test_a_detached_record_may_name_its_volume_attachment():
    stale = va("pv-gone", "node1")
    other = va("pv-live", "node1")
    data = {"apiVersion": "v1", "kind": "List", "items": [node("node1", attached=[
        unique_volume_name(DRIVER, "pv-live.img")]), pv("pv-live"), stale, other]}
    changes = apply_records(data, [{"type": "detached", "name": stale["metadata"]["name"], "node": "node1"}])
    assert [c["objects"] for c in changes] == [["VolumeAttachment/" + stale["metadata"]["name"]]]
    assert [o["metadata"]["name"] for o in data["items"] if o["kind"] == "VolumeAttachment"] == \
        [other["metadata"]["name"]]
    assert data["items"][0]["status"]["volumesAttached"]  # the node's status is not touched by name
    assert apply_records(data, [{"type": "detached", "name": stale["metadata"]["name"], "node": "node1"}]) == []
