"""The nodes and the cluster file: local SSH test nodes (scripts/testnodes.py) and a cluster state file in one state
dir, the runs of playbooks/reconcile.yml against them, and what each node has."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

from e2e_lib.environment import CLUSTER_EDIT, COLLECTIONS, EXAMPLE, HERE, KUBELET, PLAYBOOK, REPO, TESTNODES
from e2e_lib.processes import _process_state, kill_run
from e2e_lib.run import Run


class Cluster:
    """Local SSH nodes plus a cluster state file, in one state dir."""

    def __init__(self, label, count):
        self.count = count
        self.dir = tempfile.mkdtemp(prefix="kubevol-e2e-%s-" % label, dir="/tmp")
        self.state = os.path.join(self.dir, "cluster.yaml")
        self.inventory = os.path.join(self.dir, "inventory", "hosts.yml")
        self.nodes = ["node%d" % i for i in range(1, count + 1)]
        self._runs = 0
        self.children = []  # Popen objects of runs we started in the background

    # -- lifecycle ------------------------------------------------------------------------------
    def testnodes(self, *args, check=True):
        proc = subprocess.run([sys.executable, TESTNODES] + list(args) + ["--state-dir", self.dir],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        if check and proc.returncode != 0:
            raise AssertionError("testnodes.py %s failed (%d):\n%s" % (" ".join(args), proc.returncode, proc.stdout))
        return proc

    def up(self):
        self.testnodes("up", str(self.count))

    def teardown(self):
        for child in self.children:
            if child.poll() is None:
                kill_run(child)
        self.save_logs()
        proc = self.testnodes("down", "--purge", check=False)
        leftover = []
        if os.path.exists(self.dir):
            leftover.append("state dir %s still exists" % self.dir)
        loops = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], stdout=subprocess.PIPE,
                               universal_newlines=True, check=False).stdout
        leftover += [line for line in loops.splitlines() if self.dir in line]
        mounts = subprocess.run(["findmnt", "-rn", "-o", "TARGET"], stdout=subprocess.PIPE,
                                universal_newlines=True, check=False).stdout
        leftover += [line for line in mounts.splitlines() if line.startswith(self.dir)]
        if proc.returncode != 0 or leftover:
            raise AssertionError("teardown of %s left things behind (rc %d):\n%s\n%s"
                                 % (self.dir, proc.returncode, proc.stdout, "\n".join(leftover)))

    def save_logs(self):
        """Keep the runs' output, results and the state file (the state dir is purged) for a post-mortem:
        $KUBEVOL_REPORTS/e2e/<state dir name>/ (scripts/test.sh sets it), else .build/reports/."""
        dest = os.path.join(os.environ.get("KUBEVOL_REPORTS") or os.path.join(REPO, ".build", "reports"), "e2e",
                            os.path.basename(self.dir))
        shutil.rmtree(dest, ignore_errors=True)
        os.makedirs(dest)
        for name in sorted(os.listdir(self.dir)):
            path = os.path.join(self.dir, name)
            if os.path.isdir(path) and name.startswith("workflow-"):  # scripts/workflow.py's logs, one per stage
                shutil.copytree(path, os.path.join(dest, name))
            elif name.startswith(("run-", "workflow-", "killed-")) or name.endswith((".yaml", ".yml", ".json")):
                if os.path.isfile(path):
                    shutil.copy2(path, dest)

    def nodes_json(self):
        with open(os.path.join(self.dir, "nodes.json")) as handle:
            return json.load(handle)

    def node_pids(self, node):
        """The live processes of ``node``'s mount namespace: its sshd and the per-connection sshd children that
        ssh ControlPersist keeps alive (zombies left out)."""
        info = [n for n in self.nodes_json()["nodes"] if n["name"] == node][0]
        ns = "mnt:[%d]" % info["mnt_ns"]
        pids = []
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            try:
                if os.readlink("/proc/%d/ns/mnt" % pid) != ns:
                    continue
            except OSError:
                continue
            if _process_state(pid) not in (None, "Z"):
                pids.append(pid)
        return pids

    def node_sshd_pid(self, node):
        """The pid of ``node``'s own sshd (it lives as long as the node; a per-connection child of node_pids may
        exit at any time, when ssh's ControlPersist ends)."""
        info = [n for n in self.nodes_json()["nodes"] if n["name"] == node][0]
        assert info["pid"] in self.node_pids(node), "the sshd of %s (pid %s) is not running" % (node, info["pid"])
        return info["pid"]

    def signal_node(self, node, sig):
        """Send ``sig`` to every process of ``node`` (SIGSTOP: the node freezes behind its open ControlMaster)."""
        pids = self.node_pids(node)
        assert pids, "no process of %s" % node
        for pid in pids:
            try:
                os.kill(pid, sig)
            except OSError:
                pass

    def kill_node(self, node):
        """The node crashes: SIGKILL every process of its mount namespace (its sshd, and the
        per-connection sshd children that ssh ControlPersist keeps alive), so it is unreachable."""
        deadline = time.time() + 10
        while True:
            alive = self.node_pids(node)
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if not alive:
                return
            if time.time() > deadline:
                raise AssertionError("%s: processes %s do not die" % (node, alive))
            time.sleep(0.05)

    def power_off_devices(self, node):
        """``node`` lost its kernel state (powered off, rebooted): detach, from the host, the loop devices backing the
        images the pool's holder records say only ``node`` holds. On these test nodes a node's devices outlive it
        in the shared kernel, and kubevol never adopts a device the pool does not give to the attaching node.
        Returns the handles of those images."""
        holders_dir = os.path.join(self.dir, "pool", ".kubevol-holders")
        handles = []
        for name in sorted(os.listdir(holders_dir)):
            if name.endswith(".json"):
                with open(os.path.join(holders_dir, name)) as handle:
                    record = json.load(handle)
                if list(record.get("nodes") or {}) == [node]:
                    handles.append(record["volume_handle"])
        for handle in handles:
            st = os.stat(os.path.join(self.dir, "pool", handle))
            for name, ino, _ro in self.loops():
                if int(ino) == st.st_ino:
                    subprocess.run(["losetup", "-d", name], check=True)
        return handles

    # -- the cluster file -----------------------------------------------------------------------
    def load_example(self):
        shutil.copyfile(EXAMPLE, self.state)

    def state_bytes(self):
        with open(self.state, "rb") as handle:
            return handle.read()

    def cluster(self):
        with open(self.state) as handle:
            data = yaml.safe_load(handle)
        assert isinstance(data, dict) and data.get("kind") == "List" and isinstance(data.get("items"), list), \
            "the state file is not a Kubernetes List"
        return data

    def edit(self, *args):
        proc = subprocess.run([sys.executable, CLUSTER_EDIT, self.state] + list(args), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        assert proc.returncode == 0, proc.stdout
        return proc.stdout.strip()

    # -- running things -------------------------------------------------------------------------
    def write_data(self, node, path, name, size="4M"):
        """Write `size` of random data to path/name on node (synced); return its sha256."""
        out = self.ssh(node, "head -c %s /dev/urandom > %s/%s && sync && sha256sum %s/%s" % (size, path, name, path, name))
        return out.split()[0]

    def read_sum(self, node, path, name):
        return self.ssh(node, "sha256sum %s/%s" % (path, name)).split()[0]

    def ssh(self, node, script, check=True):
        proc = subprocess.run([sys.executable, TESTNODES, "ssh", "--state-dir", self.dir, node, script],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
        if check and proc.returncode != 0:
            raise AssertionError("on %s: %s\nrc %d\n%s%s" % (node, script, proc.returncode, proc.stdout, proc.stderr))
        return proc.stdout

    def env(self, python=None):
        env = dict(os.environ)
        # a killed run leaves its multiprocessing directory (pymp-*) in TMPDIR: keep it in the cluster's directory
        tmp = os.path.join(self.dir, "tmp")
        os.makedirs(tmp, exist_ok=True)
        for var in ("ANSIBLE_CONFIG", "ANSIBLE_STDOUT_CALLBACK", "ANSIBLE_CALLBACKS_ENABLED"):
            env.pop(var, None)
        env.update({
            "ANSIBLE_COLLECTIONS_PATH": COLLECTIONS,
            "ANSIBLE_HOME": os.path.join(self.dir, "ansible-home"),
            "ANSIBLE_LOCAL_TEMP": os.path.join(self.dir, "ansible-tmp"),
            "XDG_CACHE_HOME": os.path.join(self.dir, "cache"),
            "TMPDIR": tmp,
            "ANSIBLE_PIPELINING": "True",
            "ANSIBLE_FORKS": "10",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_INVENTORY_HOST_PATTERN_MISMATCH": "error",
            "ANSIBLE_CALLBACK_PLUGINS": os.path.join(HERE, "callback_plugins"),
            "ANSIBLE_CALLBACKS_ENABLED": "kubevol_e2e_json",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
        })
        return env

    def playbook_argv(self, extra=(), check=False, python=None, inventory=None, playbook=None):
        python = python or sys.executable
        argv = [os.path.join(os.path.dirname(python), "ansible-playbook"), "-i", inventory or self.inventory,
                playbook or PLAYBOOK, "-e", "kubevol_cluster_state=" + self.state, "-e", "kubevol_provision=true"]
        if check:
            argv.append("--check")
        return argv + list(extra)

    def _next_files(self):
        self._runs += 1
        return (os.path.join(self.dir, "run-%02d.json" % self._runs),
                os.path.join(self.dir, "run-%02d.log" % self._runs))

    def reconcile(self, extra=(), check=False, python=None, inventory=None, env=None, expect_rc=0, playbook=None):
        results, log = self._next_files()
        argv = self.playbook_argv(extra, check, python, inventory, playbook)
        run_env = self.env()
        run_env["KUBEVOL_E2E_RESULTS"] = results
        run_env.update(env or {})
        proc = subprocess.run(argv, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=600, cwd=self.dir, check=False)
        with open(log, "w") as handle:
            handle.write(proc.stdout)
        data = {}
        if os.path.exists(results):
            with open(results) as handle:
                data = json.load(handle)
        run = Run(argv, proc.returncode, proc.stdout, data, log)
        if expect_rc is not None:
            ok = run.rc == expect_rc if expect_rc != "nonzero" else run.rc != 0
            assert ok, "expected rc %s: %s" % (expect_rc, run.describe())
            assert run.complete, "the results callback did not see the end of the play: " + run.describe()
        return run

    def start_reconcile(self, extra=()):
        """Start a run in the background (own process group); returns (Popen, log path)."""
        results, log = self._next_files()
        run_env = self.env()
        run_env["KUBEVOL_E2E_RESULTS"] = results
        handle = open(log, "w")
        proc = subprocess.Popen(self.playbook_argv(extra), env=run_env, stdout=handle, stderr=subprocess.STDOUT,
                                start_new_session=True, cwd=self.dir)
        handle.close()
        self.children.append(proc)
        return proc, log

    # -- what a node has ------------------------------------------------------------------------
    def mounts(self, node):
        """{target: {source, fstype, options}} of every mount under the kubelet dir (not the dir itself)."""
        out = self.ssh(node, "findmnt -J -l -o TARGET,SOURCE,FSTYPE,OPTIONS")
        found = {}
        for m in json.loads(out)["filesystems"]:
            if m["target"].startswith(KUBELET + "/"):
                found[m["target"]] = {"source": m["source"], "fstype": m["fstype"],
                                      "options": m["options"].split(",")}
        return found

    def snapshot(self):
        """What every node has, for before/after comparisons: mounts, kubelet tree, pool, loop devices."""
        snap = {}
        for node in self.nodes:
            snap[node] = {
                "mounts": self.mounts(node),
                "tree": self.ssh(node, "cd %s && find . -printf '%%y %%m %%s %%T@ %%p\\n' | sort" % KUBELET),
            }
        # the pool by name and size (not mtime: a mounted filesystem's own log writes reach the image)
        pool = os.path.join(self.dir, "pool")
        snap["pool"] = sorted((name, os.stat(os.path.join(pool, name)).st_size) for name in os.listdir(pool))
        snap["loops"] = self.loops()
        return snap

    def loops(self):
        """Loop devices backed by this cluster's pool images, matched by inode: [(name, size, ro)]."""
        pool = os.path.join(self.dir, "pool")
        inodes = set()
        for name in os.listdir(pool):
            st = os.stat(os.path.join(pool, name))
            inodes.add(("%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)), st.st_ino))
        out = subprocess.run(["losetup", "-J", "--list", "-O", "NAME,SIZELIMIT,RO,BACK-INO,BACK-MAJ:MIN"],
                             stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
        found = []
        for dev in (json.loads(out)["loopdevices"] if out.strip() else []):
            if (str(dev.get("back-maj:min") or "").strip(), int(dev.get("back-ino") or -1)) in inodes:
                found.append((dev["name"], dev.get("back-ino"), dev.get("ro")))
        return sorted(found)

    def node_facts(self, python=None, fs_sizes=False):
        """node_volume_info of every node, gathered with an ad-hoc ansible run: {node: facts}. fs_sizes=False
        as the reconcile role gathers them."""
        python = python or sys.executable
        argv = [os.path.join(os.path.dirname(python), "ansible"), "nodes", "-i", self.inventory, "-o",
                "-m", "kubevol.volumes.node_volume_info",
                "-a", "node_name={{ inventory_hostname }} fs_sizes=%s" % ("true" if fs_sizes else "false")]
        env = self.env()
        env.pop("ANSIBLE_CALLBACKS_ENABLED")
        env["ANSIBLE_LOAD_CALLBACK_PLUGINS"] = "True"
        env["ANSIBLE_STDOUT_CALLBACK"] = "oneline"
        proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, cwd=self.dir, check=False)
        assert proc.returncode == 0, proc.stdout
        facts = {}
        for line in proc.stdout.splitlines():
            if " | SUCCESS => " in line:
                host, _sep, rest = line.partition(" | SUCCESS => ")
                facts[host.strip()] = json.loads(rest)["node_facts"]
        assert sorted(facts) == self.nodes, proc.stdout
        return facts
