#!/usr/bin/env python
"""The kubevol demo: three SSH nodes, the example cluster, a pod move and a claim growth.

Run through scripts/demo.sh (which installs what is needed first). Steps:
  1. start 3 local SSH nodes (scripts/testnodes.py) sharing one pool directory;
  2. reconcile examples/cluster.yaml (images provisioned in the pool, attach, format, mount);
  3. write data into the db volume on node1, as postgres' uid 999 (the pod's fsGroup gave it the volume);
     and into log-writer's inline ephemeral volume on node3 (an image created for that pod alone);
  4. move pod shop/db-0 to node2 and grow its claim shop/db-data (the scheduler and a user);
  5. reconcile again: detach from node1, attach on node2, mount, grow the backing image and the xfs;
  6. read the data back on node2;
  7. delete the pod tools/log-writer and reconcile: its volumes are unpublished and its inline volume's
     image deleted; print each node's mounts and sizes;
  8. stop the nodes unless --keep.
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, ".build")
TESTNODES = os.path.join(ROOT, "scripts", "testnodes.py")
CLUSTER_EDIT = os.path.join(ROOT, "scripts", "cluster_edit.py")
KUBELET = "/var/lib/kubelet"
DB_POD, DB_CLAIM, DB_PV = "shop/db-0", "shop/db-data", "pv-db-data"
INLINE_POD, INLINE_VOLUME = "tools/log-writer", "spool"


def banner(text):
    print("\n" + "=" * 78 + "\n== " + text + "\n" + "=" * 78, flush=True)


def run(argv, **kwargs):
    print("$ " + " ".join(argv), flush=True)
    return subprocess.run(argv, check=True, **kwargs)


def node_sh(state_dir, node, script):
    """Run a small script on a node over real SSH; return its stdout."""
    out = subprocess.run([sys.executable, TESTNODES, "ssh", "--state-dir", state_dir, node, script],
                         check=True, stdout=subprocess.PIPE, universal_newlines=True)
    return out.stdout


def ansible_env(state_dir):
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": os.path.join(BUILD, "collections"),
        "ANSIBLE_HOME": os.path.join(state_dir, "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": os.path.join(state_dir, "ansible-tmp"),
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_FORKS": "10",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_DISPLAY_SKIPPED_HOSTS": "False",
        "ANSIBLE_INVENTORY_HOST_PATTERN_MISMATCH": "error",
    })
    return env


def reconcile(state_dir, cluster, extra=()):
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
            "-i", os.path.join(state_dir, "inventory", "hosts.yml"),
            os.path.join(ROOT, "playbooks", "reconcile.yml"),
            "-e", "kubevol_cluster_state=" + cluster, "-e", "kubevol_provision=true"] + list(extra)
    run(argv, env=ansible_env(state_dir))


def pod_mount(cluster, pod):
    uid = subprocess.run([sys.executable, CLUSTER_EDIT, cluster, "get-pod-uid", pod], check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
    return "%s/pods/%s/volumes/kubernetes.io~csi/%s/mount" % (KUBELET, uid, DB_PV)


def inline_volume(state_dir, cluster):
    """(mount path on the node, image path in the shared pool) of log-writer's inline volume: the handle is
    csi_mounter.go makeVolumeHandle, csi-<sha256(pod uid + volume name)>."""
    uid = subprocess.run([sys.executable, CLUSTER_EDIT, cluster, "get-pod-uid", INLINE_POD], check=True,
                         stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
    handle = "csi-" + hashlib.sha256((uid + INLINE_VOLUME).encode()).hexdigest()
    return ("%s/pods/%s/volumes/kubernetes.io~csi/%s/mount" % (KUBELET, uid, INLINE_VOLUME),
            os.path.join(state_dir, "pool", handle))


def show_nodes(state_dir, nodes):
    for node in nodes:
        print("\n--- %s: mounts under %s" % (node, KUBELET))
        print(node_sh(state_dir, node,
                      "findmnt -rn -o TARGET,SOURCE,FSTYPE,OPTIONS | grep ' ' | grep %s || true; "
                      "echo; df -B1 --output=target,size,used | grep %s || true" % (KUBELET, KUBELET)).rstrip())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", action="store_true", help="leave the nodes running at the end")
    parser.add_argument("--state-dir", default=os.path.join(BUILD, "demo"))
    args = parser.parse_args()
    state_dir = os.path.abspath(args.state_dir)
    nodes = ["node1", "node2", "node3"]
    cluster = os.path.join(state_dir, "cluster.yaml")
    ok = False
    try:
        banner("1. Start 3 SSH nodes on 127.0.0.1")
        run([sys.executable, TESTNODES, "down", "--state-dir", state_dir, "--purge"])
        run([sys.executable, TESTNODES, "up", "3", "--state-dir", state_dir])
        shutil.copyfile(os.path.join(ROOT, "examples", "cluster.yaml"), cluster)

        banner("2. Reconcile the example cluster (provision, attach, format, mount)")
        reconcile(state_dir, cluster)

        banner("3. Write data into %s on node1 as uid 999 (the pod's fsGroup 999 owns the volume)" % DB_CLAIM)
        path = pod_mount(cluster, DB_POD)
        print(node_sh(state_dir, "node1", "stat -c 'volume root: group %%g, mode %%a' %s" % path).rstrip())
        # A container sees the volume at its mount path; here a non-root process reaches it through the
        # kubelet directory, so it keeps search permission (CAP_DAC_READ_SEARCH) and nothing else.
        written = node_sh(state_dir, "node1",
                          "setpriv --reuid=999 --regid=999 --clear-groups --inh-caps=+dac_read_search "
                          "--ambient-caps=+dac_read_search sh -c 'head -c 4M /dev/urandom > %s/table.dat' && sync && "
                          "stat -c 'table.dat: uid %%u, group %%g' %s/table.dat && sha256sum %s/table.dat"
                          % (path, path, path))
        print(written.splitlines()[0])
        checksum = written.splitlines()[-1].split()[0]
        spool, image = inline_volume(state_dir, cluster)
        print("\n%s's inline volume %s: %s" % (INLINE_POD, INLINE_VOLUME, spool))
        print(node_sh(state_dir, "node3", "echo queued > %s/job.txt && findmnt -n -o SOURCE,FSTYPE,SIZE %s && "
                                          "ls -l %s/job.txt" % (spool, spool, spool)).rstrip())
        print("its image in the pool, created for that pod alone: %s (%d bytes)" % (image, os.path.getsize(image)))
        print("sha256 on node1: " + checksum)

        banner("4. Move %s to node2 and grow %s to 768Mi" % (DB_POD, DB_CLAIM))
        run([sys.executable, CLUSTER_EDIT, cluster, "move-pod", DB_POD, "node2"])
        run([sys.executable, CLUSTER_EDIT, cluster, "resize-claim", DB_CLAIM, "768Mi"])

        banner("5. Reconcile again (detach from node1, attach on node2, mount, expand)")
        reconcile(state_dir, cluster)

        banner("6. Read the data back on node2")
        path = pod_mount(cluster, DB_POD)
        read = node_sh(state_dir, "node2", "sha256sum %s/table.dat" % path).split()[0]
        print("sha256 on node2: " + read)
        if read != checksum:
            raise SystemExit("DATA MISMATCH: %s != %s" % (read, checksum))
        print("data intact after the move")

        banner("7. Delete the pod %s and reconcile (its inline volume goes with it)" % INLINE_POD)
        run([sys.executable, CLUSTER_EDIT, cluster, "delete-pod", INLINE_POD])
        reconcile(state_dir, cluster)
        if os.path.exists(image) or spool in node_sh(state_dir, "node3", "findmnt -rn -o TARGET"):
            raise SystemExit("the inline volume of the deleted pod %s is still there: %s" % (INLINE_POD, image))
        print("%s deleted: its inline volume was unpublished and its image deleted" % INLINE_POD)
        show_nodes(state_dir, nodes)
        with open(cluster) as f:
            text = f.read()
        print("\n--- cluster state: %s (VolumeAttachments, node status and claim capacity were recorded)" % cluster)
        print("VolumeAttachments: %d" % text.count("kind: VolumeAttachment"))
        ok = True
    finally:
        if args.keep:
            print("\nnodes kept running; stop them with: %s %s down --state-dir %s"
                  % (sys.executable, TESTNODES, state_dir))
        else:
            banner("8. Stop the nodes")
            subprocess.run([sys.executable, TESTNODES, "down", "--state-dir", state_dir], check=False)
    print("\ndemo %s" % ("succeeded" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
