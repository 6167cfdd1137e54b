"""Processes of a run and of the test nodes, read from /proc: freeze and kill a run's whole tree, and hold the state
file's lock as a concurrent writer would."""
import contextlib
import fcntl
import os
import signal
import time


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
