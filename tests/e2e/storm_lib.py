"""The storm's model and checks, shared by the single-controller storm (test_storm.py) and the sliced one
(test_storm_sliced.py): the pods of ReadWriteOnce and ReadWriteMany claims on 6 SSH test nodes, the edits of a
round, and the invariants checked after every round (no RWO volume attached or mounted on two nodes, no data lost,
the records match the nodes)."""
import json
import os
import signal
import time

from e2e_lib import (_process_tree, _wait_stopped, bound_volume, get, items, kill_run, node_object,  # noqa: F401
                     pod_mount_path, running_pod, unique_name, write_list)

NODES = 6
RWO = ["rwo-%d" % i for i in range(6)]
RWX = ["rwx-0"]
NAMESPACE = "storm"
ROUNDS = 6
KILL_ROUND = 3
SEED = int(os.environ.get("KUBEVOL_STORM_SEED", "2611"))
# a storm moves most pods at once: the guard against a cut cluster file (max_teardown_fraction) would stop it
EXTRA = ("-e", "kubevol_allow_mass_teardown=true")


class Storm:
    """The cluster file's objects as the test's own model: volumes and the pods that use them."""

    def __init__(self, kv, rng):
        self.kv, self.rng = kv, rng
        self.pods = {}  # pod name -> {"claim", "node", "uid"}
        self.serial = 0
        self.written = {}  # pv -> {file name: sha256}
        self.last_node = {}  # pv -> the node its data was last checked on
        self.followed = 0  # data checks on another node than the previous one: the data moved with the volume
        self.doubled = 0  # rounds x RWO claims with a second pod elsewhere
        self.volumes = []
        for pv in RWO:
            self.volumes += bound_volume(pv, NAMESPACE, "c-" + pv, size="32Mi")
        for pv in RWX:
            self.volumes += bound_volume(pv, NAMESPACE, "c-" + pv, size="32Mi", modes=("ReadWriteMany",))

    def new_pod(self, claim_pv, node):
        self.serial += 1
        name = "p-%s-%d" % (claim_pv, self.serial)
        self.pods[name] = {"claim": "c-" + claim_pv, "pv": claim_pv, "node": node, "uid": "uid-storm-%04d" % self.serial}
        return name

    def write(self):
        objects = [node_object(n) for n in self.kv.nodes] + self.volumes
        for name, pod in sorted(self.pods.items()):
            objects.append(running_pod(NAMESPACE, name, pod["uid"], pod["node"], pod["claim"]))
        # what the run recorded (VolumeAttachments, node status) stays: the storm edits only pods
        recorded = self.kv.cluster()
        keep = [o for o in recorded["items"] if o.get("kind") == "VolumeAttachment"]
        statuses = dict((o["metadata"]["name"], o.get("status") or {}) for o in items(recorded, "Node"))
        for obj in objects:
            if obj["kind"] == "Node" and obj["metadata"]["name"] in statuses:
                obj["status"] = dict(statuses[obj["metadata"]["name"]], conditions=obj["status"]["conditions"])
            if obj["kind"] in ("PersistentVolume", "PersistentVolumeClaim"):
                old = get(recorded, obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
                if old is not None:
                    obj["status"] = old.get("status") or obj["status"]
        write_list(self.kv.state, objects + keep)

    def shuffle(self):
        """One round's edits: each RWO volume's pod moved, deleted, re-created or doubled; RWX pods moved."""
        nodes = self.kv.nodes
        for pv in RWO:
            mine = [n for n, p in self.pods.items() if p["pv"] == pv]
            action = self.rng.choice(["move", "move", "delete", "double", "stay"])
            if not mine:
                self.new_pod(pv, self.rng.choice(nodes))
            elif action == "move":
                old = self.pods.pop(mine[0])
                self.new_pod(pv, self.rng.choice([n for n in nodes if n != old["node"]]))
            elif action == "delete":
                for name in mine:
                    del self.pods[name]
            elif action == "double":  # a second pod of the RWO claim elsewhere: must be blocked, never mounted
                other = self.rng.choice([n for n in nodes if n != self.pods[mine[0]]["node"]])
                self.new_pod(pv, other)
        for pv in RWX:
            mine = [n for n, p in self.pods.items() if p["pv"] == pv]
            for name in mine:
                if self.rng.random() < 0.5:
                    del self.pods[name]
            while len([p for p in self.pods.values() if p["pv"] == pv]) < 2:
                self.new_pod(pv, self.rng.choice(nodes))

    def move_off(self, node, state):
        """Move the pod of one RWO volume mounted on ``node`` to another node (that node's next node stage then
        has a teardown to run); False when ``node`` has none mounted."""
        for pv in RWO:
            if pv not in state[node]["mounted"]:
                continue
            mine = [n for n, p in self.pods.items() if p["pv"] == pv and p["node"] == node]
            for name in mine:
                del self.pods[name]
            if mine:
                self.new_pod(pv, self.rng.choice([n for n in self.kv.nodes if n != node]))
                return True
        return False

    def settle_doubles(self):
        """Drop the second pod of each doubled RWO claim (as the user would, after the Multi-Attach error)."""
        for pv in RWO:
            mine = sorted(n for n, p in self.pods.items() if p["pv"] == pv)
            for name in mine[1:]:
                del self.pods[name]


def node_state(kv):
    """{node: {"devices": {pv}, "mounted": {pv: [pod uid or "global"]}}} from every node's facts."""
    facts = kv.node_facts()
    state = {}
    by_handle = dict(("%s.img" % pv, pv) for pv in RWO + RWX)
    for node, f in facts.items():
        devices = set(by_handle[d["volume_handle"]] for d in f.get("devices") or () if d["volume_handle"] in by_handle)
        mounted = {}
        for g in f.get("global_mounts") or ():
            if g.get("mounted") and g.get("volume_handle") in by_handle:
                mounted.setdefault(by_handle[g["volume_handle"]], []).append("global")
        for m in f.get("pod_mounts") or ():
            if m.get("mounted") and m.get("pv_name") in by_handle.values():
                mounted.setdefault(m["pv_name"], []).append(m["pod_uid"])
        state[node] = {"devices": devices, "mounted": mounted}
    return state


def check_invariants(kv, storm, where, records=True):
    state = node_state(kv)
    for pv in RWO:
        attached = sorted(n for n, s in state.items() if pv in s["devices"])
        mounted = sorted(n for n, s in state.items() if pv in s["mounted"])
        assert len(attached) <= 1, "%s: RWO %s attached on %s" % (where, pv, attached)
        assert len(mounted) <= 1, "%s: RWO %s mounted on %s" % (where, pv, mounted)
        assert set(mounted) <= set(attached), "%s: RWO %s mounted on %s without its device" % (where, pv, mounted)
    if records:
        data = kv.cluster()
        for va in items(data, "VolumeAttachment"):
            pv, node = va["spec"]["source"]["persistentVolumeName"], va["spec"]["nodeName"]
            if pv not in RWO + RWX:
                continue
            on_node = pv in state[node]["devices"]
            assert bool((va.get("status") or {}).get("attached")) == on_node, \
                "%s: VolumeAttachment %s says attached=%s, node %s has the device: %s" % (
                    where, va["metadata"]["name"], (va.get("status") or {}).get("attached"), node, on_node)
        for node in kv.nodes:
            status = get(data, "Node", node).get("status") or {}
            listed = set(e["name"] for e in status.get("volumesAttached") or ())
            want = set(unique_name("%s.img" % pv) for pv in state[node]["devices"])
            assert listed == want, "%s: node %s status.volumesAttached %s, the node has %s" % (
                where, node, sorted(listed), sorted(want))
    return state


def check_data(kv, storm, state, round_no):
    """Every pod mount the node has: every file written before is there with its checksum; write this round's."""
    for name, pod in sorted(storm.pods.items()):
        pv = pod["pv"]
        if pod["uid"] not in state[pod["node"]]["mounted"].get(pv, ()):
            continue
        path = pod_mount_path(pod["uid"], pv)
        files = storm.written.setdefault(pv, {})
        if files:
            out = kv.ssh(pod["node"], "cd %s && sha256sum %s" % (path, " ".join(sorted(files))))
            found = dict((line.split()[1], line.split()[0]) for line in out.splitlines())
            lost = sorted(set(files.items()) - set(found.items()))
            assert found == files, "round %d: %s on %s (pod %s) lost data: %s" % (round_no, pv, pod["node"], name, lost)
            if storm.last_node.get(pv) not in (None, pod["node"]):
                storm.followed += 1
        storm.last_node[pv] = pod["node"]
        fname = "r%02d-%s" % (round_no, name)
        if pv in RWX and fname in files:
            continue
        files[fname] = kv.write_data(pod["node"], path, fname, size="256K")


def seed_pods(storm, kv):
    """The storm's first pods: each RWO claim on its own node, the RWX claim on two nodes at once (a blank image set
    up by two nodes together)."""
    write_list(kv.state, [])
    for i, pv in enumerate(RWO):
        storm.new_pod(pv, kv.nodes[i % NODES])
    for pv in RWX:
        storm.new_pod(pv, kv.nodes[0])
        storm.new_pod(pv, kv.nodes[3])
    storm.write()


def kill_once_a_node_task_runs(proc, log):
    """SIGKILL a run (its process group) once its log shows a node task's title; its return code (-9 if killed)."""
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        with open(log) as handle:
            text = handle.read()
        if "Teardown - unmount" in text or "Set up - attach" in text:
            time.sleep(0.3)
            break
        time.sleep(0.05)
    if proc.poll() is None:
        kill_run(proc)
    return proc.returncode


NODE_TASK_TITLES = ("Teardown - unmount", "Set up - attach")


def kill_tree(root):
    """SIGKILL ``root`` and every process below it, frozen first (as e2e_lib.kill_run, for a process that is not
    this one's child: an ansible-runner worker on an execution node)."""
    frozen, tree = set(), {root}
    while tree - frozen:
        for pid in tree - frozen:
            try:
                os.kill(pid, signal.SIGSTOP)
            except OSError:
                pass
        _wait_stopped(tree - frozen)
        frozen |= tree
        tree = _process_tree(root)
    for pid in frozen:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def worker_pids(kv, node):
    """The ``ansible-runner worker`` processes running on test node ``node`` (in its mount namespace)."""
    found = []
    for pid in kv.node_pids(node):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if any(arg.endswith(b"ansible-runner") for arg in argv) and b"worker" in argv:
            found.append(pid)
    return found


def job_event_tasks(artifact_dir):
    """The task names of a job's playbook_on_task_start events so far (its events as ansible-runner writes them)."""
    folder = os.path.join(artifact_dir, "job_events")
    names = []
    for name in os.listdir(folder) if os.path.isdir(folder) else ():
        try:
            with open(os.path.join(folder, name)) as handle:
                event = json.load(handle)
        except (OSError, ValueError):
            continue
        if event.get("event") == "playbook_on_task_start":
            names.append((event.get("event_data") or {}).get("task") or "")
    return names


def kill_worker_once_a_node_task_runs(kv, node, artifact_dir, proc, titles=NODE_TASK_TITLES, timeout=300):
    """Once the job whose artifacts are ``artifact_dir`` (running on execution node ``node``) shows a node task's
    title (one of ``titles``) in its events, SIGKILL its ``ansible-runner worker`` there with everything under it (the execution node's
    job dies mid-run). True when a worker was killed mid-run; ``proc``: the workflow, which must still be running."""
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if any(title in task for task in job_event_tasks(artifact_dir) for title in titles):
            time.sleep(0.3)
            workers = worker_pids(kv, node)
            for pid in workers:
                kill_tree(pid)
            return bool(workers)
        time.sleep(0.05)
    return False
