#!/usr/bin/env python
"""Edit a cluster state file the way a user or a controller would change the cluster.

Used by the demo, molecule and the end-to-end tests to stand in for the API
server's other clients (the scheduler moving a pod, a user growing a claim).
Each edit is idempotent and prints `changed` or `unchanged`.

  cluster_edit.py FILE move-pod NAMESPACE/NAME NODE   # a new pod (new uid) on NODE, as a controller would
  cluster_edit.py FILE resize-claim NAMESPACE/NAME SIZE
  cluster_edit.py FILE delete-pod NAMESPACE/NAME
  cluster_edit.py FILE get-pod-uid NAMESPACE/NAME
"""
import argparse
import os
import sys
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".build", "collections"))  # the checkout as a collection
try:
    from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores.file import FileStore
except ImportError as err:
    sys.exit("cannot import kubevol.volumes from %s/.build/collections (%s): run scripts/bootstrap.sh first"
             % (ROOT, err))


def find(cluster, kind, ref):
    namespace, _sep, name = ref.partition("/")
    for obj in cluster.get("items", []):
        meta = obj.get("metadata", {})
        if obj.get("kind") == kind and meta.get("name") == name and meta.get("namespace", "") == namespace:
            return obj
    sys.exit("no %s %s in the cluster state" % (kind, ref))


def move_pod(cluster, ref, node):
    pod = find(cluster, "Pod", ref)
    if pod["spec"].get("nodeName") == node:
        return False
    # A rescheduled pod is a new pod: new uid, new node, not yet running.
    pod["metadata"]["uid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, "%s/%s" % (pod["metadata"]["uid"], node)))
    pod["spec"]["nodeName"] = node
    pod.setdefault("status", {})["phase"] = "Pending"
    return True


def resize_claim(cluster, ref, size):
    pvc = find(cluster, "PersistentVolumeClaim", ref)
    requests = pvc["spec"].setdefault("resources", {}).setdefault("requests", {})
    if requests.get("storage") == size:
        return False
    requests["storage"] = size
    return True


def delete_pod(cluster, ref):
    pod = find(cluster, "Pod", ref)
    cluster["items"].remove(pod)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("move-pod")
    p.add_argument("pod")
    p.add_argument("node")
    p = sub.add_parser("resize-claim")
    p.add_argument("pvc")
    p.add_argument("size")
    sub.add_parser("delete-pod").add_argument("pod")
    sub.add_parser("get-pod-uid").add_argument("pod")
    args = parser.parse_args(argv)
    # The store's reader and its locked, atomic writer: an edit never races a reconcile's records.
    store = FileStore(args.file)
    try:
        if args.command == "get-pod-uid":
            print(find(store.load(), "Pod", args.pod)["metadata"]["uid"])
            return 0
        if args.command == "move-pod":
            changed = store.update(lambda cluster: move_pod(cluster, args.pod, args.node))
        elif args.command == "resize-claim":
            changed = store.update(lambda cluster: resize_claim(cluster, args.pvc, args.size))
        else:
            changed = store.update(lambda cluster: delete_pod(cluster, args.pod))
    except KubevolError as err:
        sys.exit(err.msg)
    print("changed" if changed else "unchanged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
