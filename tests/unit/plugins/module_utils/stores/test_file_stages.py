# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A sliced run's writers at once on one state file (docs/fleet.md): node-stage slices write their nodes'
volumesInUse while the attach/detach stage writes VolumeAttachments and volumesAttached. The file store re-reads
the file under its flock and applies each write's records to what it read (FileStore.update), so no writer's
record is lost to another's stale copy. Real processes, a real file and flock."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import multiprocessing

from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import volume_attachment_name
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore

DRIVER = "loop.kubevol.io"
NODES = ["node%d" % i for i in range(1, 5)]
WRITES = 15


def unique(pv):
    return "kubernetes.io/csi/%s^%s.img" % (DRIVER, pv)


def _node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def _node_stage(path, node):
    """One slice of the node stage: the kubelet's records of its own node, one write per volume it mounts."""
    store = FileStore(path, lock_timeout=60)
    for i in range(WRITES):
        store.apply([{"type": "in_use", "node": node, "unique_volume_names": [unique("%s-v%d" % (node, i))],
                      "in_use": True}])


def _attach_detach_stage(path):
    """The attach/detach stage: an intent, then the attach, of one volume per node per write."""
    store = FileStore(path, lock_timeout=60)
    for i in range(WRITES):
        for node in NODES:
            pv = "ad-%s-%d" % (node, i)
            base = {"node": node, "pv_name": pv, "driver": DRIVER, "volume_handle": pv + ".img"}
            store.apply([dict(base, type="attach_intent")])
            store.apply([dict(base, type="attached", device_path="/dev/loop%d" % i)])


def test_node_stage_slices_and_the_attach_detach_stage_lose_no_record(tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""},
                                "items": [_node(n) for n in NODES]}))
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_node_stage, args=(str(path), node)) for node in NODES]
    procs.append(ctx.Process(target=_attach_detach_stage, args=(str(path),)))
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    data = FileStore(str(path)).load()
    nodes = dict((o["metadata"]["name"], o) for o in data["items"] if o["kind"] == "Node")
    vas = dict((o["metadata"]["name"], o) for o in data["items"] if o["kind"] == "VolumeAttachment")
    for node in NODES:
        status = nodes[node]["status"]
        assert sorted(status.get("volumesInUse") or ()) == sorted(unique("%s-v%d" % (node, i)) for i in range(WRITES))
        attached = set(v["name"] for v in status.get("volumesAttached") or ())
        for i in range(WRITES):
            pv = "ad-%s-%d" % (node, i)
            assert unique(pv) in attached
            assert vas[volume_attachment_name(pv + ".img", DRIVER, node)]["status"]["attached"] is True
