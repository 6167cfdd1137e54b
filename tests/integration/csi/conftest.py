"""The CSI client against the test CSI plugin (tests/csiplugin) over a real unix socket, as root.

Each test gets a private mount namespace (``unshare --mount --propagation private sleep infinity``), a short
work dir under /tmp (a unix socket path has at most 107 bytes) and a plugin started in that namespace with
``nsenter -t PID -m``, as a test will later start it in an SSH test node's namespace. The plugin runs under
/usr/bin/python3 when Debian's python3-grpcio is there (the nodes' packages; the client in the venv then speaks
to another grpc release), else under this interpreter. The finalizer stops the plugin, unmounts everything
under the work dir in the namespace, detaches every loop device whose backing file (by inode) is under it and
removes the dir, also when the test failed.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PLUGIN = os.path.join(REPO, "tests", "csiplugin", "plugin.py")
MiB = 1024 * 1024

if os.geteuid() != 0:
    pytest.skip("CSI integration tests need root (loop devices, mount)", allow_module_level=True)

try:
    import grpc  # noqa: F401  pylint: disable=unused-import
    import google.protobuf  # noqa: F401  pylint: disable=unused-import
except ImportError as exc:  # a failure, not a skip: requirements/*.txt pin both
    raise RuntimeError("the CSI tests need grpcio and protobuf in this venv (requirements/controller.txt, "
                       "py311.txt; run scripts/bootstrap.sh): %s" % exc)


def _plugin_python():
    wanted = os.environ.get("KUBEVOL_CSI_PLUGIN_PYTHON")
    if wanted:
        return wanted
    if os.path.exists("/usr/bin/python3") and subprocess.run(
            ["/usr/bin/python3", "-c", "import grpc, google.protobuf"], check=False, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL).returncode == 0:
        return "/usr/bin/python3"
    return sys.executable


PLUGIN_PYTHON = _plugin_python()


def loops_backed_under(root):
    """Loop devices whose backing file is a file under ``root``, matched by (st_dev, st_ino)."""
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


class Driver(object):
    """The test plugin in this test's namespace, its work dir and its files."""

    def __init__(self, ns_pid, work, name="csi", pool=None):
        self.ns_pid = ns_pid
        self.work = work
        self.name = name
        self.socket = os.path.join(work, name + ".sock")
        self.state_dir = os.path.join(work, name + "-state")
        self.pool = pool
        self.config_file = os.path.join(work, name + "-config.json")
        self.log = os.path.join(work, name + "-calls.jsonl")
        self.out = os.path.join(work, name + ".out")
        self.proc = None
        self.config = {}
        self.others = []

    def another(self, name, pool):
        """A second plugin in the same namespace and work dir (stopped with this one)."""
        other = Driver(self.ns_pid, self.work, name, pool)
        self.others.append(other)
        return other

    def argv(self, *argv):
        return ["nsenter", "-t", str(self.ns_pid), "-m", "--"] + list(argv)

    def run(self, *argv, check=True):
        return subprocess.run(self.argv(*argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, check=check)

    def configure(self, **config):
        self.config.update(config)
        with open(self.config_file + ".tmp", "w") as handle:
            json.dump(self.config, handle)
        os.replace(self.config_file + ".tmp", self.config_file)

    def start(self, **config):
        self.configure(**config)
        argv = [PLUGIN_PYTHON, PLUGIN, "--socket", self.socket, "--state-dir", self.state_dir,
                "--config", self.config_file, "--log", self.log] + (["--pool", self.pool] if self.pool else [])
        with open(self.out, "a") as out:
            self.proc = subprocess.Popen(self.argv(*argv), stdout=out, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("the test plugin exited (rc %s): %s" % (self.proc.returncode, self.output()))
            with open(self.out) as handle:
                if "serving on" in handle.read():
                    return self
            time.sleep(0.05)
        raise AssertionError("the test plugin did not start within 20 s: %s" % self.output())

    def output(self):
        with open(self.out) as handle:
            return handle.read()

    def stop(self):
        for other in self.others:
            other.stop()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as handle:
            return [json.loads(line) for line in handle]

    def path(self, *parts):
        return os.path.join(self.work, *parts)

    def mounts(self):
        out = self.run("findmnt", "-J", "-l", "-o", "TARGET,SOURCE,FSTYPE,OPTIONS").stdout
        return json.loads(out)["filesystems"] if out.strip() else []

    def mount_of(self, target):
        found = [m for m in self.mounts() if m["target"] == target]
        return found[-1] if found else None

    def mounts_under_work(self):
        return sorted(m["target"] for m in self.mounts() if m["target"].startswith(self.work + "/"))

    def write(self, path, text):
        self.run(PLUGIN_PYTHON, "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])", path, text)

    def read(self, path):
        return self.run("cat", path).stdout

    def fs_size(self, path):
        out = self.run("df", "-B1", "--output=size", path).stdout.split()
        return int(out[-1])

    def loops(self):
        return loops_backed_under(self.pool or self.state_dir)


def _teardown(driver, holder):
    try:
        driver.stop()
        for target in sorted(driver.mounts_under_work(), key=lambda t: t.count("/"), reverse=True):
            if driver.run("umount", target, check=False).returncode != 0:
                driver.run("umount", "-l", target, check=False)
    finally:
        holder.kill()
        holder.wait()
        for dev in loops_backed_under(driver.work):
            subprocess.run(["losetup", "-d", dev], check=False)
        left = loops_backed_under(driver.work)
        shutil.rmtree(driver.work, ignore_errors=True)
    assert not left, "loop devices left behind: %s" % left


def _start_namespace():
    proc = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sleep", "infinity"])
    own = os.readlink("/proc/self/ns/mnt")
    for _attempt in range(200):
        try:
            if os.readlink("/proc/%d/ns/mnt" % proc.pid) != own:
                return proc
        except OSError:
            pass
        time.sleep(0.01)
    proc.kill()
    raise RuntimeError("unshare did not enter a new mount namespace")


@pytest.fixture
def driver():
    """The test plugin's ``Driver`` (not started: call ``driver.start(**config)``)."""
    holder = _start_namespace()
    work = tempfile.mkdtemp(prefix="kvcsi-", dir="/tmp")
    drv = Driver(holder.pid, work)
    try:
        yield drv
    finally:
        _teardown(drv, holder)
