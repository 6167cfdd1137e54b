"""Concurrent runs, killed runs and a node lost after an unrecorded attach, on 3 real SSH nodes.

Chained on one converged example cluster. The RWO volume pv-db-data (xfs) carries a checksummed file
from the start; every case checks it afterwards, and that the volume never had two attachments:
the loop devices backing its image (polled every few milliseconds while runs are in flight), its
VolumeAttachments and the nodes' volumesAttached.
"""
import contextlib
import hashlib
import os
import signal
import threading
import time

import pytest
import yaml

from e2e_lib import get, kill_run, node_status, pod_mount_path, pod_uid, store_write_held, vas

DB_POD, DB_PV, DB_HANDLE = "shop/db-0", "pv-db-data", "pv-db-data.img"
DB_UNIQUE = "kubernetes.io/csi/loop.kubevol.io^" + DB_HANDLE


@pytest.fixture(scope="module")
def kv(make_cluster):
    cluster = make_cluster("concurrency", 3)
    cluster.load_example()
    cluster.reconcile()
    data = cluster.cluster()
    node = get(data, "Pod", "db-0", "shop")["spec"]["nodeName"]
    cluster.shared = {"sum": cluster.write_data(node, db_path(cluster), "table.dat")}
    return cluster


def db_path(kv):
    """The db pod's mount of the volume (a moved pod is a new pod: a new uid, a new path)."""
    return pod_mount_path(pod_uid(kv.cluster(), DB_POD), DB_PV)


def db_node(kv):
    return get(kv.cluster(), "Pod", "db-0", "shop")["spec"]["nodeName"]


def db_loops(kv):
    image = os.stat(os.path.join(kv.dir, "pool", DB_HANDLE))
    return [name for name, ino, _ro in kv.loops() if int(ino) == image.st_ino]


class AttachWatch:
    """Polls, while runs are in flight, the loop devices backing the db image and the recorded attachments."""

    def __init__(self, kv):
        self.kv = kv
        self.worst = []   # the largest set of simultaneous attachments seen, with what saw it
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            loops = db_loops(self.kv)
            try:
                with open(self.kv.state) as handle:
                    data = yaml.safe_load(handle)
                recorded = sorted(node for pv, node, _attached in vas(data).values() if pv == DB_PV)
                holders = sorted(n["metadata"]["name"] for n in data["items"] if n.get("kind") == "Node"
                                 and DB_UNIQUE in [e["name"] for e in (n.get("status") or {}).get("volumesAttached")
                                                   or []])
            except (OSError, yaml.YAMLError, KeyError, TypeError):
                recorded = holders = []
            self.samples += 1
            for what, seen in (("loop devices", loops), ("VolumeAttachments", recorded), ("volumesAttached", holders)):
                if len(seen) > len(self.worst):
                    self.worst = [what] + list(seen)
            time.sleep(0.01)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def wait_for(predicate, timeout=120, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def wait_for_task(proc, log, task):
    """Until the run's log shows the banner of the role's task ``task`` (a prefix of its name), or the run ended."""
    def seen():
        with open(log) as handle:
            return ("TASK [kubevol.volumes.reconcile : %s" % task) in handle.read()
    wait_for(lambda: seen() or proc.poll() is not None, what="task %r" % task)


def hold_volume_lock(kv, node, seconds):
    """Hold the db volume's node lock on ``node`` for ``seconds`` (a background flock on the node): a run that sets
    the volume up there waits for it (up to kubevol_lock_timeout), so it holds its run lock that long."""
    busy = "/run/kubevol/locks/%s.lock" % hashlib.sha256(DB_UNIQUE.encode("utf-8")).hexdigest()
    kv.ssh(node, "mkdir -p /run/kubevol/locks && (setsid flock %s sleep %d </dev/null >/dev/null 2>&1 &)" % (
        busy, seconds))
    return busy


def release_volume_lock(kv, node, busy):
    """End hold_volume_lock's holder on ``node`` before its time: its flock and the sleep that inherited the locked
    file, the whole process group setsid gave them ([f]: not this shell, whose own command line holds the pattern)."""
    kv.ssh(node, "for leader in $(pgrep -f '[f]lock %s sleep'); do kill -- -$leader; done; true" % busy)


def finish(proc, timeout=300):
    proc.wait(timeout=timeout)
    return proc.returncode


def test_two_concurrent_reconciles_never_double_attach(kv):
    """The issue's race: the pod moves, a run starts; the pod moves again while it runs, a second run starts.
    The second waits for the first's run lock, then plans on what the first recorded."""
    first_node = db_node(kv)
    second, third = [n for n in kv.nodes if n != first_node][:2]
    with AttachWatch(kv) as watch:
        assert kv.edit("move-pod", DB_POD, second) == "changed"
        run_a, log_a = kv.start_reconcile()
        wait_for(lambda: os.path.exists(kv.state + ".run-lock"), what="the first run's lock")
        assert kv.edit("move-pod", DB_POD, third) == "changed"
        run_b, log_b = kv.start_reconcile()
        assert finish(run_a) == 0, open(log_a).read()[-4000:]
        assert finish(run_b) == 0, open(log_b).read()[-4000:]
    assert watch.samples > 50
    assert len(watch.worst) <= 2, "two attachments at once: %s" % watch.worst
    assert db_node(kv) == third and db_loops(kv) and len(db_loops(kv)) == 1
    assert [node for pv, node, attached in vas(kv.cluster()).values() if pv == DB_PV] == [third]
    assert kv.read_sum(third, db_path(kv), "table.dat") == kv.shared["sum"]
    assert not os.path.exists(kv.state + ".run-lock"), "the lock was not released"
    # the second run waited for the first, it did not interleave with it
    assert "Take the cluster's run lock" in open(log_b).read()
    assert kv.reconcile().changed(third) == 0


def test_a_second_run_that_may_not_wait_fails_naming_the_first(kv):
    # a pod move, so that the first run has work; its setup waits for the volume's node lock, so it still holds the
    # run lock when the second run asks for it (a run of this size can otherwise end before a second one starts)
    target = [n for n in kv.nodes if n != db_node(kv)][0]
    assert kv.edit("move-pod", DB_POD, target) == "changed"
    hold_volume_lock(kv, target, 20)
    run_a, log_a = kv.start_reconcile(["-e", "kubevol_run_lock_timeout=60", "-e", "kubevol_lock_timeout=120"])
    wait_for(lambda: os.path.exists(kv.state + ".run-lock"), what="the first run's lock")
    run_b = kv.reconcile(["-e", "kubevol_run_lock_timeout=0"], expect_rc="nonzero")
    text = run_b.stdout
    assert "another kubevol run holds the lock on cluster store file %s" % kv.state in text, run_b.describe()
    assert "pid %d" % run_a.pid in text and "host " in text and "since " in text
    assert finish(run_a) == 0, open(log_a).read()[-4000:]
    assert not os.path.exists(kv.state + ".run-lock")


def test_a_node_task_longer_than_the_run_lock_keeps_it(kv):
    """A setup task outlasting kubevol_run_lock_duration (the target node's volume lock is held for 35 s, so the
    node module waits for it): the run renews its lock while the node modules run, so a second run started after
    the lock's own 10 s is refused, never let in to plan beside it."""
    source = db_node(kv)
    target = [n for n in kv.nodes if n != source][0]
    assert kv.edit("move-pod", DB_POD, target) == "changed"
    hold_volume_lock(kv, target, 35)
    run_a, log_a = kv.start_reconcile(["-e", "kubevol_run_lock_duration=10", "-e", "kubevol_lock_timeout=120"])
    wait_for(lambda: os.path.exists(kv.state + ".run-lock"), what="the first run's lock")
    time.sleep(20)  # the first run's last store write was seconds after it took the lock: only renewals keep it now
    assert run_a.poll() is None, open(log_a).read()[-4000:]
    run_b = kv.reconcile(["-e", "kubevol_run_lock_timeout=0"], expect_rc="nonzero")
    assert "another kubevol run holds the lock on cluster store file %s" % kv.state in run_b.stdout, run_b.describe()
    assert finish(run_a) == 0, open(log_a).read()[-4000:]
    assert "could not be renewed" not in open(log_a).read()
    assert db_node(kv) == target and len(db_loops(kv)) == 1
    assert kv.read_sum(target, db_path(kv), "table.dat") == kv.shared["sum"]
    assert not os.path.exists(kv.state + ".run-lock")


@pytest.mark.parametrize("boundary, store_held_from", [
    pytest.param("Gather each node's actual state", None, id="Gather each node's actual state"),
    pytest.param("Teardown - unmount and detach on the nodes that lose volumes", None,
                 id="Teardown - unmount and detach on the nodes that lose volumes"),
    # the detach's record and the setup's intents, one write
    pytest.param("Record the outcome of teardown", None, id="Record the outcome of teardown"),
    pytest.param("Set up - attach, format if blank and mount", None, id="Set up - attach, format if blank and mount"),
    # the run's last record, then the end of the run: held back by the store's lock, taken while the setup runs, so
    # that the kill lands before them however slow this test is to see the banner
    pytest.param("Record the outcome of attach, mount", "Set up", id="Record the outcome of attach, mount"),
])
def test_a_run_killed_at_a_phase_boundary_converges_on_the_next_run(kv, boundary, store_held_from):
    """SIGKILL of ansible-playbook (and its workers) as a task starts; the next run takes over the dead run's lock
    at once (same host, its process is gone), converges, and leaves consistent records."""
    source = db_node(kv)
    target = [n for n in kv.nodes if n != source][0]
    assert kv.edit("move-pod", DB_POD, target) == "changed"
    with AttachWatch(kv) as watch:
        proc, log = kv.start_reconcile()
        if store_held_from:
            wait_for_task(proc, log, store_held_from)
        with store_write_held(kv.state) if store_held_from else contextlib.nullcontext():
            wait_for_task(proc, log, boundary)
            kill_run(proc)
        assert os.path.exists(kv.state + ".run-lock"), "the killed run's lock should be left behind"
        run = kv.reconcile()
    assert len(watch.worst) <= 2, "two attachments at once: %s" % watch.worst
    data = kv.cluster()
    assert [node for pv, node, attached in vas(data).values() if pv == DB_PV] == [target]
    assert all(attached for pv, node, attached in vas(data).values()), vas(data)
    for node in kv.nodes:
        status = (get(data, "Node", node).get("status") or {})
        attached = [e["name"] for e in status.get("volumesAttached") or []]
        assert (DB_UNIQUE in attached) == (node == target), (node, attached)
        assert (DB_UNIQUE in (status.get("volumesInUse") or [])) == (node == target), (node, status)
    assert len(db_loops(kv)) == 1
    assert kv.read_sum(target, db_path(kv), "table.dat") == kv.shared["sum"]
    assert not os.path.exists(kv.state + ".run-lock")
    assert all(kv.reconcile().changed(n) == 0 for n in kv.nodes)


def node_python(kv, node):
    """{pid: command line} of the Python processes (node modules) running in ``node``'s mount namespace."""
    info = [n for n in kv.nodes_json()["nodes"] if n["name"] == node][0]
    ns = "mnt:[%d]" % info["mnt_ns"]
    found = {}
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            if os.readlink("/proc/%d/ns/mnt" % pid) != ns:
                continue
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if argv and b"python" in os.path.basename(argv[0]):
            found[pid] = b" ".join(argv).decode("utf-8", "replace").strip()
    return found


SETUP_BANNER = "TASK [kubevol.volumes.reconcile : Set up"


def _setup_done(text, node):
    """Whether the run's log ``text`` shows ``node``'s result of the setup task."""
    setup = text.split(SETUP_BANNER)[-1]
    return any(("%s: [%s]" % (word, node)) in setup for word in ("ok", "changed", "fatal", "failed"))


def test_a_killed_node_module_is_reported_with_its_volumes_and_the_next_run_converges(kv):
    """SIGKILL of the node module on the node while it sets the volume up: the run fails naming the node and the
    volume, and the next run converges with the data intact. The volume's node lock is held on the target, so the
    module is still at work there (waiting for it) whenever the kill lands, never already done."""
    source = db_node(kv)
    target = [n for n in kv.nodes if n != source][0]
    assert kv.edit("move-pod", DB_POD, target) == "changed"
    # a Python process an earlier test left in the node (still finishing there) is not this run's module
    before = node_python(kv, target)
    busy = hold_volume_lock(kv, target, 120)
    try:
        proc, log = kv.start_reconcile(["-e", "kubevol_lock_timeout=120"])
        killed = {}
        deadline = time.time() + 120
        # every Python process that starts in the node during its setup task is killed, until the task has the
        # node's result: the module waits there for the held lock, so it is among them whatever else runs there
        while time.time() < deadline and proc.poll() is None:
            with open(log) as handle:
                text = handle.read()
            if SETUP_BANNER in text:
                if _setup_done(text, target):
                    break
                for pid, line in node_python(kv, target).items():
                    if before.get(pid) == line:
                        continue
                    try:
                        os.kill(pid, signal.SIGKILL)
                        killed[pid] = line
                    except OSError:
                        pass
            time.sleep(0.005)
        assert killed, "the node module never ran on %s; log: %s" % (target, log)
        assert finish(proc) != 0, "killed %r, left %r" % (killed, before)
    finally:
        release_volume_lock(kv, target, busy)
    text = open(log).read()
    # the node's setup task failed there, naming the volume, because its module died (not on the held lock's
    # timeout); the last step fails that host
    setup = text.split(SETUP_BANNER)[-1].split("TASK [")[0]
    assert "fatal: [%s]" % target in setup and "volumes not done: pv-db-data" in setup, text
    assert "locked by another kubevol run" not in setup, text
    assert "fatal: [%s -> localhost]" % target in text.split("Fail each host whose node failed")[-1], text
    run = kv.reconcile()
    assert [node for pv, node, attached in vas(kv.cluster()).values() if pv == DB_PV] == [target]
    assert len(db_loops(kv)) == 1
    assert kv.read_sum(target, db_path(kv), "table.dat") == kv.shared["sum"]
    assert all(kv.reconcile().changed(n) == 0 for n in kv.nodes), run.describe()


def test_a_node_lost_after_an_unrecorded_attach_blocks_the_volume_elsewhere(kv):
    """A run killed after node B attached and mounted, before its record; then B becomes unreachable and the pod
    moves on. The intent (a VolumeAttachment, attached: false) says B may hold the volume: nobody else attaches
    it, and the blocked reason says why."""
    source = db_node(kv)
    lost, last = [n for n in kv.nodes if n != source][:2]
    assert kv.edit("move-pod", DB_POD, lost) == "changed"
    proc, log = kv.start_reconcile()
    wait_for_task(proc, log, "Set up")
    # the setup's record then waits on the store's lock, and the run dies before it can write
    with store_write_held(kv.state):
        wait_for_task(proc, log, "Record the outcome of attach")
        kill_run(proc)
    data = kv.cluster()
    recorded = [(node, attached) for pv, node, attached in vas(data).values() if pv == DB_PV]
    assert recorded == [(lost, False)], recorded  # only the intent: the attach itself was never recorded
    assert len(db_loops(kv)) == 1  # but the node did attach it
    kv.kill_node(lost)
    assert kv.edit("move-pod", DB_POD, last) == "changed"
    before = kv.cluster()
    run = kv.reconcile(expect_rc="nonzero")  # the lost node is a failed node
    blocked = "\n".join(run.stdout.splitlines())
    assert "Multi-Attach error" in blocked and "node %s may hold it" % lost in blocked, (
        "before this run: %s's status %s, the VolumeAttachments %s; the killed run's log ends:\n%s\nthis run: %s" % (
            lost, node_status(before, lost), vas(before), open(log).read()[-3000:], run.describe()))
    assert len(db_loops(kv)) == 1, "attached a second time"
    assert [node for pv, node, attached in vas(kv.cluster()).values() if pv == DB_PV] == [lost]
