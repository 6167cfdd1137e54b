"""The README's walk, as a new user runs it: its code blocks, taken from README.md, run in order in one shell's
working directory against two SSH test nodes, each step checked on the nodes and in the cluster file.

A step is a fenced block after an HTML comment ``<!-- walk: NAME -->`` (``<!-- walk: NAME PATH -->`` before a YAML
block: the file the user saves it as). The walk's directory, ``/tmp/kvtry`` in the README, is this test's node state
dir; the collection is installed from the tarball the walk builds, into a collections path of its own, and every
later step runs that installed copy. pip runs with PIP_NO_INDEX: what the walk installs is already in the test's
Python, and a test never reaches a package index.
"""
import os
import re
import subprocess
import sys

import yaml

from e2e_lib import REPO, get, items, pod_mount_path

README = os.path.join(REPO, "README.md")
WALK_DIR = "/tmp/kvtry"
STEPS = ["install", "nodes", "cluster-file", "plan", "check", "run", "write", "wait", "move", "grow", "audit",
         "written-back"]
BLOCK = re.compile(r"<!-- walk: (?P<name>[\w-]+)(?: (?P<path>\S+))? -->\n```(?P<lang>\w+)\n(?P<text>.*?)^```$",
                   re.S | re.M)
UID1 = "0a4f7b52-0000-4000-8000-0000000a0001"
UID2 = "0a4f7b52-0000-4000-8000-0000000a0002"
PV = "pv-data"
UNIQUE = "kubernetes.io/csi/loop.kubevol.io^pv-data.img"
GiB = 1024 ** 3


def walk_blocks():
    with open(README) as handle:
        text = handle.read()
    return [match.groupdict() for match in BLOCK.finditer(text)]


class Walk:
    """One shell session's working directory and environment, carried from block to block."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.cwd = REPO
        self.collections = os.path.join(cluster.dir, "collections")
        env = cluster.env()
        for var in ("ANSIBLE_CALLBACK_PLUGINS", "ANSIBLE_CALLBACKS_ENABLED", "KUBEVOL_E2E_RESULTS"):
            env.pop(var, None)
        env.update({"ANSIBLE_COLLECTIONS_PATH": self.collections, "PIP_NO_INDEX": "1",
                    "PATH": os.path.dirname(sys.executable) + os.pathsep + env["PATH"]})
        self.env = env
        self.log = []

    def here(self, text):
        return text.replace(WALK_DIR, self.cluster.dir)

    def run(self, block):
        if block["lang"] == "yaml":
            with open(self.here(block["path"]), "w") as handle:
                handle.write(block["text"])
            return ""
        cwd_file = os.path.join(self.cluster.dir, ".walk-cwd")
        script = "set -e -o pipefail\ncd %s\n%s\npwd > %s\n" % (self.cwd, self.here(block["text"]), cwd_file)
        proc = subprocess.run(["bash", "-c", script], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=900, check=False)
        self.log.append("== %s (rc %d)\n%s" % (block["name"], proc.returncode, proc.stdout))
        with open(os.path.join(self.cluster.dir, "run-walk-%s.log" % block["name"]), "w") as handle:
            handle.write(proc.stdout)
        assert proc.returncode == 0, "walk step %s failed (rc %d):\n%s" % (block["name"], proc.returncode, proc.stdout)
        with open(cwd_file) as handle:
            self.cwd = handle.read().strip()
        return proc.stdout


def recap_changed(output):
    return {host: int(changed) for host, changed in re.findall(r"^(\S+)\s+: ok=\d+\s+changed=(\d+)", output, re.M)}


def fs_size(cluster, node, path):
    return int(cluster.ssh(node, "df -B1 --output=size %s | tail -1" % path).strip())


def test_readme_walk_works_as_written(make_cluster):
    blocks = walk_blocks()
    assert [block["name"] for block in blocks] == STEPS, [block["name"] for block in blocks]
    cluster = make_cluster("walk", 2)
    walk = Walk(cluster)
    step = dict((block["name"], block) for block in blocks)
    pod1, pod2 = pod_mount_path(UID1, PV), pod_mount_path(UID2, PV)
    image = os.path.join(cluster.dir, "pool", "pv-data.img")

    # install: the tarball the walk built, installed as files (not the checkout's link) where the steps find it
    walk.run(step["install"])
    installed = os.path.join(walk.collections, "ansible_collections", "kubevol", "volumes")
    assert os.path.isfile(os.path.join(installed, "MANIFEST.json")) and not os.path.islink(installed)

    # nodes: the fixture's two nodes, kept by `up` (idempotent), reachable over SSH
    walk.run(step["nodes"])
    assert [cluster.ssh(node, "hostname").strip() for node in cluster.nodes] == ["node1", "node2"]

    # the cluster file, saved where the walk says
    walk.run(step["cluster-file"])
    pod = get(cluster.cluster(), "Pod", "app", "demo")
    assert pod["spec"]["containers"][0]["volumeMounts"] and pod["spec"]["nodeName"] == "node1"
    written = cluster.state_bytes()

    # plan: the steps, from the file alone; nothing reached, nothing written
    out = walk.run(step["plan"])
    assert re.search(r"^\+\s+attach/device\s+node1\s+pv-data", out, re.M), out
    assert re.search(r"^\+\s+mount/pod\s+node1\s+pv-data\s+demo/app", out, re.M), out
    assert walk.cwd == cluster.dir and cluster.state_bytes() == written
    assert all(cluster.mounts(node) == {} for node in cluster.nodes) and not os.path.exists(image)

    # check: the same steps with the nodes' facts, nothing changed anywhere
    out = walk.run(step["check"])
    assert "node1: 3 would run, 0 would fail, 0 blocked" in out, out
    assert all(cluster.mounts(node) == {} for node in cluster.nodes) and not os.path.exists(image)
    assert cluster.state_bytes() == written and cluster.loops() == []

    # run: attached, formatted xfs, mounted globally and into the pod on node1
    walk.run(step["run"])
    mounts = cluster.mounts("node1")
    assert mounts[pod1]["fstype"] == "xfs", mounts
    assert len(mounts) == 2 and cluster.mounts("node2") == {} and len(cluster.loops()) == 1, mounts

    # write, then run again: the data is there, and the second run changes nothing
    out = walk.run(step["write"])
    assert cluster.ssh("node1", "cat %s/hello.txt" % pod1).strip() == "written on node1"
    assert set(recap_changed(out).values()) == {0}, out
    assert cluster.mounts("node1") == mounts

    # wait: ready, and the node's facts agree
    out = walk.run(step["wait"])
    assert '"state": "ready"' in out and '"ready": true' in out, out
    facts = cluster.node_facts()["node1"]
    assert UID1 in str(facts) and PV in str(facts)

    # move: gone from node1 (unmounted, detached), mounted on node2 under the new pod's uid, the data with it
    out = walk.run(step["move"])
    assert cluster.mounts("node1") == {}, cluster.mounts("node1")
    assert cluster.mounts("node2")[pod2]["fstype"] == "xfs"
    assert out.rstrip().splitlines()[-1] == "written on node1"
    assert cluster.ssh("node2", "cat %s/hello.txt" % pod2).strip() == "written on node1"
    assert len(cluster.loops()) == 1

    # grow: the image, the mounted filesystem and the records at 1Gi
    before = fs_size(cluster, "node2", pod2)
    walk.run(step["grow"])
    assert os.stat(image).st_size == GiB
    after = fs_size(cluster, "node2", pod2)
    assert after > before and after > 0.9 * GiB, (before, after)
    data = cluster.cluster()
    assert get(data, "PersistentVolume", PV)["spec"]["capacity"]["storage"] == "1Gi"
    assert get(data, "PersistentVolumeClaim", "data", "demo")["status"]["capacity"]["storage"] == "1Gi"

    # audit: finds node1's empty directory of the pod that moved away; the clean removes it and nothing else
    node2_mounts = cluster.mounts("node2")
    out = walk.run(step["audit"])
    assert "orphan_pod_dir /var/lib/kubelet/pods/%s" % UID1 in out, out
    assert cluster.ssh("node1", "test -e /var/lib/kubelet/pods/%s && echo there || echo gone" % UID1).strip() == "gone"
    assert cluster.mounts("node2") == node2_mounts
    assert cluster.ssh("node2", "cat %s/hello.txt" % pod2).strip() == "written on node1"

    # what was written back: what the README says, in the file and beside it
    out = walk.run(step["written-back"])
    for name in ("cluster.yaml.lock", "cluster.yaml.plans"):
        assert os.path.exists(os.path.join(cluster.dir, name)) and name in out, out
    assert os.listdir(os.path.join(cluster.dir, "cluster.yaml.plans"))
    data = cluster.cluster()
    vas = items(data, "VolumeAttachment")
    assert [(va["spec"]["nodeName"], va["status"]["attached"]) for va in vas] == [("node2", True)], vas
    status = dict((node["metadata"]["name"], node.get("status", {})) for node in items(data, "Node"))
    assert [entry["name"] for entry in status["node2"]["volumesAttached"]] == [UNIQUE]
    assert status["node2"]["volumesInUse"] == [UNIQUE]
    assert not status["node1"].get("volumesAttached") and not status["node1"].get("volumesInUse")
    # the file is kubevol's now: rewritten in kubectl's order, still one List
    with open(cluster.state) as handle:
        assert yaml.safe_load(handle)["kind"] == "List"
