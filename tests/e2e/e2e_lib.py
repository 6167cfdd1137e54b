"""End-to-end helpers: real SSH nodes (scripts/testnodes.py), real ansible-playbook runs.

Each test module starts its own nodes once (module scope) in its own state dir
``/tmp/kubevol-e2e-<module>-XXXX`` (under ``/tmp/kubevol-`` so that scripts/test.sh's leftover
check sees anything left behind) and tears them down with ``down --purge`` in a finalizer, also when
a test failed. Runs go through playbooks/reconcile.yml with the default stdout callback (its text
is kept in the state dir) plus tests/e2e/callback_plugins/kubevol_e2e_json.py, which dumps every
task result per host and the recap to a JSON file: the tests read exact changed counts and which
node modules ran where from it.

Interpreters: the controller is the Python running pytest (its ansible-playbook beside it). The
compat run (ansible-core 2.19, Python 3.11, paramiko) uses KUBEVOL_PYTHON_COMPAT, else
<checkout>/.venv-compat/bin/python; when it is missing the test skips, or fails when CI=true.
"""
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
TESTNODES = os.path.join(REPO, "scripts", "testnodes.py")
CLUSTER_EDIT = os.path.join(REPO, "scripts", "cluster_edit.py")
PLAYBOOK = os.path.join(REPO, "playbooks", "reconcile.yml")
EXAMPLE = os.path.join(REPO, "examples", "cluster.yaml")
COLLECTIONS = os.environ["ANSIBLE_COLLECTIONS_PATH"]  # set by tests/conftest.py
KUBELET = "/var/lib/kubelet"
DRIVER = "loop.kubevol.io"
MiB = 1024 * 1024

NODE_MODULES = ("kubevol.volumes.volume_detach", "kubevol.volumes.k8s_volume_attach",
                "kubevol.volumes.node_volume_mount", "kubevol.volumes.fs_expand")
# what the role's node_phases runs for each phase (plugins/action/node_phases.py)
PHASE_ORDER = ["teardown", "attach", "mount", "expand_controller", "expand_node"]
PHASE_MODULES = {"teardown": "volume_detach", "attach": "k8s_volume_attach", "mount": "node_volume_mount",
                 "expand_controller": "fs_expand", "expand_node": "fs_expand"}

if os.geteuid() != 0:
    pytest.skip("end-to-end tests need root (sshd in namespaces, loop devices, mounts)", allow_module_level=True)


# -- names as Kubernetes computes them (independent of the collection's names.py) ----------------

def _process_stat(pid):
    """The fields of /proc/<pid>/stat after the command name (state, ppid, ...), or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _process_state(pid):
    """The one-letter state of a process ("T": stopped, "Z": zombie), or None when it is gone."""
    fields = _process_stat(pid)
    return fields[0] if fields else None


def _process_tree(root):
    """``root`` and every process below it, from /proc's parent links."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _process_stat(int(entry))
            if fields and len(fields) > 1:
                children.setdefault(int(fields[1]), []).append(int(entry))
    tree, todo = set(), [root]
    while todo:
        pid = todo.pop()
        tree.add(pid)
        todo.extend(children.get(pid, ()))
    return tree


def _in_vfork(pid):
    """The process waits, uninterruptibly, for the child it vforked to exec or exit (Python's subprocess vforks).
    It cannot stop, but it cannot run either: when that child was stopped before its exec, it never will until
    the child is killed. The child is in the tree, and is frozen and killed with it."""
    try:
        with open("/proc/%d/wchan" % pid) as handle:
            return handle.read().strip() == "kernel_clone"
    except (IOError, OSError):
        return False


def _frozen(pid):
    state = _process_state(pid)
    return state in (None, "T", "t", "Z", "X") or (state == "D" and _in_vfork(pid))


def _wait_stopped(pids, timeout=10):
    """Wait until every process of ``pids`` has stopped (or is gone, or is a vfork parent: _in_vfork). kill(SIGSTOP)
    returns before the process has stopped: until then it may still fork."""
    deadline = time.time() + timeout
    waiting = set(pids)
    while waiting:
        waiting = set(pid for pid in waiting if not _frozen(pid))
        if waiting and time.time() > deadline:
            raise AssertionError("processes %s of the run do not stop" % sorted(waiting))
        if waiting:
            time.sleep(0.001)


def kill_run(proc):
    """SIGKILL a run: ansible-playbook and every process under it. Ansible's workers start their own session
    (WorkerProcess calls os.setsid), so killing the run's process group leaves a worker that is mid-task running
    on, and a record it was about to write lands after the "kill". ansible-playbook is frozen first, so that it
    forks no worker after the tree is read (a task's banner is printed before its worker is forked); then its tree
    is frozen until no new process shows up, and killed. A process counts as frozen once it has stopped, not when
    SIGSTOP is sent: in between it can still fork a worker that a tree read too early would miss."""
    frozen = set()
    tree = {proc.pid}
    while tree - frozen:
        for pid in tree - frozen:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        _wait_stopped(tree - frozen)
        frozen |= tree
        tree = _process_tree(proc.pid)
    for pid in frozen:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    proc.wait()


@contextlib.contextmanager
def store_write_held(state_path):
    """Hold the cluster state file's lock (the flock FileStore writes under): a record write waits on it."""
    fd = os.open(state_path + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def unique_name(handle):
    return "kubernetes.io/csi/%s^%s" % (DRIVER, handle)


def va_name(handle, node):
    """pkg/volume/csi/csi_attacher.go getAttachmentName: csi-<sha256(handle + driver + node)>."""
    return "csi-" + hashlib.sha256((handle + DRIVER + node).encode()).hexdigest()


def pod_mount_path(uid, pv):
    return "%s/pods/%s/volumes/kubernetes.io~csi/%s/mount" % (KUBELET, uid, pv)


def pod_device_path(uid, pv):
    return "%s/pods/%s/volumeDevices/kubernetes.io~csi/%s" % (KUBELET, uid, pv)


def global_mount_path(handle):
    return "%s/plugins/kubernetes.io/csi/%s/%s/globalmount" % (
        KUBELET, DRIVER, hashlib.sha256(handle.encode()).hexdigest())


# -- interpreters ---------------------------------------------------------------------------------

def compat_python():
    """The ansible-core 2.19 / Python 3.11 interpreter, or None."""
    for cand in (os.environ.get("KUBEVOL_PYTHON_COMPAT"), os.path.join(REPO, ".venv-compat", "bin", "python")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def require_compat_python():
    py = compat_python()
    if py is None:
        msg = ("no compat venv (ansible-core 2.19 on Python 3.11 with paramiko): set KUBEVOL_PYTHON_COMPAT "
               "or run scripts/bootstrap.sh to build .venv-compat")
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg)
        pytest.skip(msg)
    return py


# -- results of one ansible-playbook run ------------------------------------------------------------

class Run:
    def __init__(self, argv, rc, stdout, results, log):
        self.argv, self.rc, self.stdout, self.log = argv, rc, stdout, log
        self.tasks = results.get("tasks", [])
        self.stats = results.get("stats", {})
        self.complete = results.get("complete", False)

    def __repr__(self):
        return "<Run rc=%s log=%s>" % (self.rc, self.log)

    def describe(self):
        return "ansible-playbook rc=%s (full output: %s)\n%s" % (self.rc, self.log, self.stdout[-6000:])

    def changed(self, host):
        return self.stats.get(host, {}).get("changed")

    def executions(self, action=None, name=None):
        """[(task name, host, status, result)] for every host a task ran on (not skipped)."""
        out = []
        for task in self.tasks:
            if action and task["action"] != action and task["action"] != action.rsplit(".", 1)[-1]:
                continue
            if name and name not in task["name"]:
                continue
            for host, items in task["hosts"].items():
                for item in items:
                    if item["status"] != "skipped":
                        out.append((task["name"], host, item["status"], item["result"]))
        return out

    def node_module_runs(self):
        """{host: [module name, ...]} of the node modules that ran (the phases' work): those the role's
        node_phases tasks ran over each host's connection, and node modules run as tasks of their own."""
        runs = {}
        for task in self.tasks:
            action = task["action"].rsplit(".", 1)[-1]
            for host, items in task["hosts"].items():
                for item in items:
                    if item["status"] == "skipped":
                        continue
                    if action == "node_phases":
                        # the phases that ran (phase_status; the results themselves are kept for the record step)
                        ran = item["result"].get("phase_status") or item["result"].get("phase_results") or {}
                        for phase in sorted(ran, key=PHASE_ORDER.index):
                            runs.setdefault(host, []).append(PHASE_MODULES[phase])
                    elif any(action == m.rsplit(".", 1)[-1] for m in NODE_MODULES):
                        runs.setdefault(host, []).append(action)
        return runs

    def result(self, name, host=None):
        """The (first) non-skipped result of the task whose name contains `name`."""
        for task_name, h, _status, result in self.executions(name=name):
            if host is None or h == host:
                return result
        return None

    def plan_lines(self):
        """The plan's table as the run printed it (text lines, reconcile_report's ``lines``)."""
        result = self.result("Show the plan") or {}
        lines = result.get("lines") or result.get("msg") or []
        return lines if isinstance(lines, list) else str(lines).splitlines()

    def plan(self):
        return (self.result("Plan the operations") or {}).get("plan") or []

    def summaries(self):
        """Each reconcile's end-of-run summary, in order: the summary of its last reconcile_run step
        ({lines, nodes, blocked, errors})."""
        return [result["summary"] for _name, _host, _status, result in self.executions(action="kubevol.volumes.reconcile_run")
                if "summary" in result]

    def summary(self):
        """The role's end-of-run summary (the last reconcile_run's): {lines, nodes, blocked, errors}, or {}."""
        summaries = self.summaries()
        return summaries[-1] if summaries else {}

    def report(self):
        """The run's {blocked, errors} (every blocked item once, with its action), or {} when it had neither."""
        summary = self.summary()
        if not summary.get("blocked") and not summary.get("errors"):
            return {}
        return {"blocked": summary.get("blocked") or [], "errors": summary.get("errors") or []}

    def summary_lines(self):
        """The end-of-run report's lines as printed (reconcile_report's ``lines``)."""
        return (self.result("Report the run") or {}).get("lines") or []

    def kubevol_report(self):
        """The role's kubevol_report (the Report the run task's result), or {}."""
        return self.result("Report the run") or {}

    def verdicts(self):
        """{host: (status, msg)} of the role's last step on each host it ran on (failed, unreachable or ok)."""
        return dict((host, (status, result.get("msg"))) for _task, host, status, result
                    in self.executions(name="Fail each host whose node failed"))


# -- the nodes and the cluster file -----------------------------------------------------------------

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


# -- cluster objects as kubectl prints them ---------------------------------------------------------

def node_object(name):
    """A Ready Node the attach/detach controller manages."""
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name,
                         "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
            "spec": {}, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def bound_volume(pv, namespace, claim, size="64Mi", modes=("ReadWriteOnce",), fs_type="ext4"):
    """A loop.kubevol.io PV (handle <pv>.img in the default pool) and the claim bound to it: [pv, pvc]."""
    claim_uid = "uid-claim-%s-%s" % (namespace, claim)
    return [{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
             "spec": {"capacity": {"storage": size}, "accessModes": list(modes), "volumeMode": "Filesystem",
                      "claimRef": {"namespace": namespace, "name": claim, "uid": claim_uid},
                      "csi": {"driver": DRIVER, "volumeHandle": pv + ".img", "fsType": fs_type}},
             "status": {"phase": "Bound"}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"namespace": namespace, "name": claim, "uid": claim_uid},
             "spec": {"accessModes": list(modes), "volumeName": pv, "resources": {"requests": {"storage": size}}},
             "status": {"phase": "Bound", "capacity": {"storage": size}}}]


def running_pod(namespace, name, uid, node, claim, labels=None):
    """A running pod on ``node`` whose one container mounts ``claim`` at /d."""
    meta = {"namespace": namespace, "name": name, "uid": uid}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": claim}}],
                     "containers": [{"name": "c", "volumeMounts": [{"name": "d", "mountPath": "/d"}]}]},
            "status": {"phase": "Running"}}


def write_list(path, objects):
    """A List file as kubectl writes it (keys sorted: apiVersion, items, kind, metadata)."""
    with open(path, "w") as handle:
        yaml.safe_dump({"apiVersion": "v1", "items": list(objects), "kind": "List",
                        "metadata": {"resourceVersion": ""}}, handle)


def taint_out_of_service(data, node):
    """``node`` is shut down: the out-of-service taint and a Ready condition that is no longer True."""
    obj = get(data, "Node", node)
    obj.setdefault("spec", {})["taints"] = [{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown",
                                             "effect": "NoExecute"}]
    for cond in obj["status"].get("conditions") or []:
        if cond["type"] == "Ready":
            cond["status"] = "Unknown"


# -- cluster file queries ---------------------------------------------------------------------------

def items(cluster, kind):
    return [o for o in cluster["items"] if o.get("kind") == kind]


def get(cluster, kind, name, namespace=None):
    for obj in items(cluster, kind):
        meta = obj.get("metadata", {})
        if meta.get("name") == name and (namespace is None or meta.get("namespace") == namespace):
            return obj
    return None


def vas(cluster):
    """{VolumeAttachment name: (pv name, node, attached)}."""
    return dict((va["metadata"]["name"], (va["spec"]["source"].get("persistentVolumeName"), va["spec"]["nodeName"],
                                          (va.get("status") or {}).get("attached")))
                for va in items(cluster, "VolumeAttachment"))


def node_status(cluster, node):
    status = get(cluster, "Node", node).get("status") or {}
    attached = sorted(e["name"] for e in status.get("volumesAttached") or [])
    return attached, sorted(status.get("volumesInUse") or [])


def pod_uid(cluster, ref):
    namespace, name = ref.split("/")
    return get(cluster, "Pod", name, namespace)["metadata"]["uid"]
