"""The test CSI plugin's harness for the end-to-end tests of external CSI drivers: the plugin (tests/csiplugin/plugin.py)
started in one node's mount namespace (NodePlugin), the loop devices backed under its pool, the cluster objects of
a volume of its driver (a PV with a nodeStageSecretRef to a Secret, the claim, a pod), and the run's output searched
for the secret. Every e2e file that drives the plugin imports it from here (test_csi_external.py, test_csi_handles.py,
provision_lib.py, snapshot_lib.py ...)."""
import base64
import json
import os
import signal
import subprocess
import sys

from e2e_lib import COLLECTIONS, KUBELET

DRIVER = "csi.kubevol.test"
SECRET = "Sup3r-s3cret-e2e-value"
PLUGIN = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "csiplugin", "plugin.py")
MUTATING = {"ControllerPublishVolume", "ControllerUnpublishVolume", "NodeStageVolume", "NodeUnstageVolume",
            "NodePublishVolume", "NodeUnpublishVolume", "ControllerExpandVolume", "NodeExpandVolume"}


def _python():
    if subprocess.run(["/usr/bin/python3", "-c", "import grpc, google.protobuf"], stderr=subprocess.DEVNULL,
                      check=False).returncode == 0:
        return "/usr/bin/python3"
    return sys.executable


def _loops_backed_under(root):
    inodes = set()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            st = os.lstat(os.path.join(dirpath, name))
            inodes.add(("%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)), st.st_ino))
    out = subprocess.run(["losetup", "-J", "--list", "-O", "NAME,BACK-INO,BACK-MAJ:MIN"], stdout=subprocess.PIPE,
                         universal_newlines=True, check=True).stdout
    devices = json.loads(out)["loopdevices"] if out.strip() else []
    return [d["name"] for d in devices
            if (str(d.get("back-maj:min") or "").strip(), int(d.get("back-ino") or -1)) in inodes]


class NodePlugin:
    """The test plugin in one node's mount namespace."""

    def __init__(self, cluster, node, pool):
        self.cluster, self.node, self.pool = cluster, node, pool
        self.pid = cluster.node_sshd_pid(node)
        self.dir = os.path.join(cluster.dir, "csi-" + node)
        os.makedirs(self.dir, exist_ok=True)
        self.socket = "%s/plugins/%s/csi.sock" % (KUBELET, DRIVER)
        self.config = os.path.join(self.dir, "config.json")
        self.log = os.path.join(self.dir, "calls.jsonl")
        self.out = os.path.join(self.dir, "plugin.out")
        self.proc = None

    def nsenter(self, *argv):
        return ["nsenter", "-t", str(self.pid), "-m", "--"] + list(argv)

    def start(self, **config):
        conf = {"controller_caps": ["CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME", "EXPAND_VOLUME"],
                "expected_secrets": {"password": SECRET}}
        conf.update(config)
        self.configure(**conf)
        subprocess.run(self.nsenter("mkdir", "-p", os.path.dirname(self.socket)), check=True)
        argv = [_python(), PLUGIN, "--socket", self.socket, "--state-dir", os.path.join(self.dir, "state"),
                "--config", self.config, "--log", self.log, "--pool", self.pool]
        with open(self.out, "a") as out:
            self.proc = subprocess.Popen(self.nsenter(*argv), stdout=out, stderr=subprocess.STDOUT)
        for _attempt in range(400):
            with open(self.out) as handle:
                if "serving on" in handle.read():
                    return self
            assert self.proc.poll() is None, open(self.out).read()
            subprocess.run(["sleep", "0.05"], check=True)
        raise AssertionError("the test plugin did not start on %s: %s" % (self.node, open(self.out).read()))

    def configure(self, **config):
        """Change the plugin's config (read again at every call)."""
        conf = {}
        if os.path.exists(self.config):
            with open(self.config) as handle:
                conf = json.load(handle)
        conf.update(config)
        with open(self.config + ".tmp", "w") as handle:
            json.dump(conf, handle)
        os.replace(self.config + ".tmp", self.config)

    def create(self, handle, size):
        code = ("import sys; sys.path.insert(0, %r); "
                "from ansible_collections.kubevol.volumes.plugins.module_utils.csi.client import CsiClient; "
                "c = CsiClient(%r, timeout=30); c.open(); "
                "c.call('CreateVolume', {'name': %r, 'capacity_range': {'required_bytes': %d}}); c.close()"
                % (COLLECTIONS, self.socket, handle, size))
        subprocess.run(self.nsenter(_python(), "-c", code), check=True)

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as handle:
            return [json.loads(line) for line in handle]

    def methods(self, since=0):
        return [c["method"] for c in self.calls()[since:]]

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def unmount_all(self):
        out = subprocess.run(self.nsenter("findmnt", "-J", "-l", "-o", "TARGET"), stdout=subprocess.PIPE,
                             universal_newlines=True, check=False).stdout
        targets = [m["target"] for m in json.loads(out)["filesystems"]] if out.strip() else []
        for target in sorted((t for t in targets if t.startswith(KUBELET + "/")), key=lambda t: -t.count("/")):
            subprocess.run(self.nsenter("umount", "-l", target), check=False)


def csi_volume(pv, claim, handle, size="64Mi", fs_type="ext4", mode="Filesystem"):
    namespace, name = claim.split("/")
    uid = "uid-claim-%s-%s" % (namespace, name)
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
             "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "volumeMode": mode,
                      "claimRef": {"namespace": namespace, "name": name, "uid": uid},
                      "csi": {"driver": DRIVER, "volumeHandle": handle, "fsType": fs_type,
                              "nodeStageSecretRef": {"namespace": namespace, "name": "stage-secret"}}},
             "status": {"phase": "Bound"}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"namespace": namespace, "name": name, "uid": uid},
             "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": pv, "volumeMode": mode,
                      "resources": {"requests": {"storage": size}}},
             "status": {"phase": "Bound", "capacity": {"storage": size}}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": namespace, "name": "stage-secret"},
             "data": {"password": base64.b64encode(SECRET.encode()).decode()}}]


def without_duplicates(objects):
    seen, out = set(), []
    for obj in objects:
        key = (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
        if key not in seen:
            seen.add(key)
            out.append(obj)
    return out


def pod(name, uid, node, claim):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": claim.split("/")[0], "name": name, "uid": uid},
            "spec": {"nodeName": node, "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName":
                                                                                           claim.split("/")[1]}}],
                     "containers": [{"name": "c", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}]},
            "status": {"phase": "Running"}}


def target(uid, pv):
    return "%s/pods/%s/volumes/kubernetes.io~csi/%s/mount" % (KUBELET, uid, pv)


def _syslog(cluster, node):
    """The node's syslog, when it has one (test nodes usually have none: then the run's output is what is
    searched)."""
    return cluster.ssh(node, "cat /var/log/syslog /var/log/messages 2>/dev/null || true")


def _output(run):
    text = run.stdout
    for name in (run.log,):
        with open(name) as handle:
            text += handle.read()
    return text + json.dumps(run.tasks)
