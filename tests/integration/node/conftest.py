"""Run the node modules for real, as root, on loop devices, each test in its own mount namespace.

Every test gets a private mount namespace (``unshare --mount --propagation private sleep infinity``)
and its own tmp kubelet dir, pool and run dir. Modules run as Ansible runs them on a node:
``/usr/bin/python3 -m ansible_collections.kubevol.volumes.plugins.modules.<name> args.json`` entered
into that namespace with ``nsenter -t PID -m``. The finalizer unmounts everything under the test's
tmp dir and detaches every loop device whose backing file (by inode) is under it, even on failure.
"""
import json
import os
import subprocess
import sys
import time

import ansible
import pytest

COLLECTIONS = os.environ["ANSIBLE_COLLECTIONS_PATH"]  # set by tests/conftest.py
ANSIBLE_SITE = os.path.dirname(os.path.dirname(ansible.__file__))
NODE_PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
DRIVER = "loop.kubevol.io"
INTERNAL_MODULES = ("node_volume_setup", "csi_controller_calls", "volume_provision_calls")
MiB = 1024 * 1024

if os.geteuid() != 0:
    pytest.skip("node integration tests need root (loop devices, mount)", allow_module_level=True)


def loop_devices():
    out = subprocess.run(["losetup", "-J", "--list", "-O", "NAME,BACK-INO,BACK-MAJ:MIN"],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    return json.loads(out)["loopdevices"] if out.strip() else []


def loops_backed_under(root):
    """Loop devices whose backing file is a file under ``root``, matched by (st_dev, st_ino)."""
    inodes = set()
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            inodes.add(("%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)), st.st_ino))
    return [d["name"] for d in loop_devices()
            if (str(d.get("back-maj:min") or "").strip(), int(d.get("back-ino") or -1)) in inodes]


class Node:
    def __init__(self, pid, tmp, name="node1"):
        self.pid = pid
        self.tmp = str(tmp)
        self.name = name
        self.kubelet_dir = os.path.join(self.tmp, "kubelet")
        self.pool = os.path.join(self.tmp, "pool")
        self.run_dir = os.path.join(self.tmp, "run")
        os.makedirs(self.pool)
        self._n = 0

    # -- running things in the namespace --------------------------------------------------------
    def argv(self, *argv):
        return ["nsenter", "-t", str(self.pid), "-m", "--"] + list(argv)

    def run(self, *argv, check=True, env=None, input=None):
        return subprocess.run(self.argv(*argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, input=input,
                              universal_newlines=True, check=check, env=env)

    def module_cmd(self, name, args, check_mode=False, diff=True):
        args = dict(args)
        args.setdefault("kubelet_dir", self.kubelet_dir)
        args.setdefault("node_name", self.name)
        if name != "node_volume_info":
            args.setdefault("run_dir", self.run_dir)
            if "loop_pools" not in args:  # a test giving the deprecated loop_pools proves the alias still works
                # this test node's pool, as an operator configures it
                args.setdefault("driver_options", {"loop.kubevol.io": {"pools": [self.pool]}})
        args["_ansible_check_mode"] = check_mode
        args["_ansible_diff"] = diff
        self._n += 1
        path = os.path.join(self.tmp, "args-%d-%s.json" % (self._n, name))
        with open(path, "w") as handle:
            json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
        # the reconcile role's internal node modules live in plugins/modules/__internal/ (out of ansible-doc -l)
        module = ("__internal." + name) if name in INTERNAL_MODULES else name
        return self.argv(NODE_PYTHON, "-m", "ansible_collections.kubevol.volumes.plugins.modules." + module, path)

    def module_env(self, extra_path=None):
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([COLLECTIONS, ANSIBLE_SITE]))
        if extra_path:
            env["PATH"] = extra_path + os.pathsep + env.get("PATH", "")
        return env

    def module(self, name, check_mode=False, diff=True, extra_path=None, **args):
        proc = subprocess.run(self.module_cmd(name, args, check_mode, diff), stdout=subprocess.PIPE, check=False,
                              stderr=subprocess.PIPE, universal_newlines=True, env=self.module_env(extra_path))
        return parse_module_output(proc)

    def start_module(self, name, **args):
        return subprocess.Popen(self.module_cmd(name, args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True, env=self.module_env())

    # -- helpers --------------------------------------------------------------------------------
    def vol(self, pv, handle=None, size=64 * MiB, **kw):
        item = dict(pv_name=pv, driver=DRIVER, volume_handle=handle or (pv + ".img"),
                    volume_attributes={"pool": self.pool}, capacity_bytes=size)
        item.update(kw)
        return item

    def image(self, vol):
        return os.path.join(self.pool, vol["volume_handle"])

    def mounts(self):
        out = self.run("findmnt", "-J", "-l", "-o", "TARGET,SOURCE,FSTYPE,OPTIONS").stdout
        return json.loads(out)["filesystems"] if out.strip() else []

    def mounts_under(self, root=None):
        root = root or self.tmp
        return sorted(m["target"] for m in self.mounts() if m["target"].startswith(root + "/"))

    def loops(self):
        return loops_backed_under(self.tmp)

    def sha256(self, path):
        return self.run("sha256sum", path).stdout.split()[0]

    def write_random(self, path, mib=4):
        self.run("dd", "if=/dev/urandom", "of=" + path, "bs=1M", "count=%d" % mib, "conv=fsync", "status=none")


def parse_module_output(proc):
    out = proc.stdout.strip()
    start = out.find("{")
    try:
        result = json.loads(out[start:])
    except ValueError:
        raise AssertionError("module printed no JSON (rc %s):\nstdout: %s\nstderr: %s"
                             % (proc.returncode, proc.stdout, proc.stderr))
    result["_rc"] = proc.returncode
    return result


def warnings_of(result):
    """The warning texts of a module result (ansible-core >= 2.19 returns structured warning summaries)."""
    texts = []
    for warning in result.get("warnings") or ():
        if isinstance(warning, dict):
            warning = (warning.get("event") or {}).get("msg") or warning.get("msg") or json.dumps(warning)
        texts.append(warning)
    return texts


def _teardown(node, proc):
    try:
        for target in sorted(node.mounts_under(), key=lambda t: t.count("/"), reverse=True):
            if node.run("umount", target, check=False).returncode != 0:
                node.run("umount", "-l", target, check=False)
    finally:
        proc.kill()
        proc.wait()
        for dev in loops_backed_under(node.tmp):
            subprocess.run(["losetup", "-d", dev], check=False)


def start_namespace():
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
def node(tmp_path):
    proc = start_namespace()
    n = Node(proc.pid, tmp_path)
    try:
        yield n
    finally:
        _teardown(n, proc)


@pytest.fixture
def node2(tmp_path):
    """A second node sharing the kernel (and, here, a pool) with ``node``."""
    proc = start_namespace()
    n = Node(proc.pid, tmp_path / "n2", name="node2")
    try:
        yield n
    finally:
        _teardown(n, proc)
