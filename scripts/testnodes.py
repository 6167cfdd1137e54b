#!/usr/bin/env python
"""Local SSH test nodes for kubevol: N sshd "nodes" on 127.0.0.1.

Each node is an sshd running in its own mount and UTS namespace
(``unshare --mount --uts --propagation private`` in a new session) with:

* its hostname set to the node name (node1..nodeN);
* a private tmpfs on /run (Debian's sshd needs /run/sshd);
* a private overlay of /var/lib (upper/work dirs in the node's state dir), so
  nothing a node writes under /var/lib reaches the host;
* its own real, empty /var/lib/kubelet: a bind of DIR/nodes/NODE/kubelet;
* the shared pool DIR/pool bind-mounted on /var/lib/kubevol/pool (all nodes
  see the same pool, like a shared storage backend);
* a clean, empty root home (/root is a bind of DIR/nodes/NODE/home), so the
  host's ~/.bashrc does not run on every ssh command.

The host never sees any of the nodes' mounts.

Usage::

    testnodes.py up N --state-dir DIR [--base-port P]
    testnodes.py status --state-dir DIR
    testnodes.py down --state-dir DIR [--purge]
    testnodes.py env --state-dir DIR          # shell exports for callers
    testnodes.py ssh --state-dir DIR NODE [COMMAND...]

``up`` writes DIR/inventory/hosts.yml (group ``nodes``), DIR/known_hosts,
DIR/ssh_config (``ssh -F DIR/ssh_config node1``) and DIR/nodes.json.

Stdlib only; needs root, util-linux (unshare, nsenter, losetup, mount) and
openssh (sshd, ssh, ssh-keygen).
"""

import argparse
import concurrent.futures
import contextlib
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

SSHD = "/usr/sbin/sshd"
NODE_PYTHON = "/usr/bin/python3"
KUBELET_IN_NODE = "/var/lib/kubelet"
POOL_IN_NODE = "/var/lib/kubevol/pool"
HOME_IN_NODE = "/root"
NODE_SUBDIRS = ("kubelet", "upper", "work", "home")
DEFAULT_BASE_PORT = 22200
PORT_SCAN = 2000
READY_TIMEOUT = 30.0
STATE_VERSION = 1
SOCKET_PATH_MAX = 100  # sun_path is 108 bytes; ssh wants some slack


class TestNodesError(Exception):
    """A failure with a message that says what to do."""


def log(msg):
    print(msg, flush=True)


def warn(msg):
    print("testnodes: warning: " + msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- paths


class Layout:
    """Paths inside a state directory."""

    def __init__(self, state_dir):
        self.root = os.path.abspath(state_dir)
        self.pool = os.path.join(self.root, "pool")
        self.nodes_dir = os.path.join(self.root, "nodes")
        self.client_key = os.path.join(self.root, "client_key")
        self.known_hosts = os.path.join(self.root, "known_hosts")
        self.ssh_config = os.path.join(self.root, "ssh_config")
        self.inventory_dir = os.path.join(self.root, "inventory")
        self.inventory = os.path.join(self.inventory_dir, "hosts.yml")
        self.nodes_json = os.path.join(self.root, "nodes.json")
        self.lock = os.path.join(self.root, ".lock")
        default_cp = os.path.join(self.root, "cp")
        if len(default_cp) + 1 + 40 <= SOCKET_PATH_MAX:  # %C is 40 hex chars
            self.cp = default_cp
        else:  # ControlPath would exceed the unix socket path limit
            digest = hashlib.sha1(self.root.encode()).hexdigest()[:12]
            self.cp = "/tmp/kvtn-cp-" + digest

    def node_dir(self, name):
        return os.path.join(self.nodes_dir, name)

    def ssh_common_args(self):
        return (
            "-o UserKnownHostsFile={kh} -o StrictHostKeyChecking=yes "
            "-o IdentitiesOnly=yes -o ControlMaster=auto -o ControlPersist=60s "
            "-o ControlPath={cp}/%C".format(kh=self.known_hosts, cp=self.cp)
        )


@contextlib.contextmanager
def locked(layout):
    os.makedirs(layout.root, exist_ok=True)
    with open(layout.lock, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def load_state(layout):
    try:
        with open(layout.nodes_json) as fh:
            state = json.load(fh)
    except FileNotFoundError:
        return {"version": STATE_VERSION, "state_dir": layout.root, "nodes": []}
    except ValueError as exc:
        raise TestNodesError(
            "{}: unreadable ({}); run `down --state-dir {}` to clean up".format(
                layout.nodes_json, exc, layout.root))
    state.setdefault("nodes", [])
    return state


def save_state(layout, state):
    state["version"] = STATE_VERSION
    state["state_dir"] = layout.root
    state["cp_dir"] = layout.cp
    state["nodes"].sort(key=lambda n: node_index(n["name"]))
    write_file(layout.nodes_json, json.dumps(state, indent=2, sort_keys=True) + "\n")


def node_index(name):
    return int(name[4:]) if name.startswith("node") and name[4:].isdigit() else 10 ** 6


def write_file(path, text, mode=0o644):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


# ----------------------------------------------------------- processes


def proc_state(pid):
    """The one-letter state of a process, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as fh:
            data = fh.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    except OSError:
        return None
    return data.rsplit(")", 1)[1].split()[0]


def is_running(pid):
    """True for a live process: zombies (killed, not yet reaped) count as gone."""
    return proc_state(pid) not in (None, "Z", "X", "x")


def ns_id(pid):
    try:
        st = os.stat("/proc/%d/ns/mnt" % pid)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def own_ns():
    return ns_id(os.getpid())


def all_pids():
    for name in os.listdir("/proc"):
        if name.isdigit():
            yield int(name)


def pids_in_ns(ns):
    """Live pids whose mount namespace is ns ((dev, ino))."""
    return sorted(pid for pid in all_pids() if ns_id(pid) == ns and is_running(pid))


def node_ns(node):
    if not node.get("mnt_ns"):
        return None
    return (node["ns_dev"], node["mnt_ns"])


def node_alive(node):
    """The node's init (sshd) runs, in the namespace recorded for it."""
    pid = node.get("pid")
    return bool(pid) and is_running(pid) and ns_id(pid) == node_ns(node)


def signal_if(pid, sig, check):
    """Send sig to pid only if check(pid) still holds (guards pid reuse)."""
    if not check(pid):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def terminate(pids, check, grace=2.0):
    """TERM, wait, then KILL; return the pids still running afterwards."""
    pids = [p for p in pids if check(p) and is_running(p)]
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        if not pids:
            break
        for pid in pids:
            signal_if(pid, sig, check)
        deadline = time.monotonic() + wait
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if is_running(p) and check(p)]
            if pids:
                time.sleep(0.02)
    return pids


def run(cmd, check=True, timeout=60, **kw):
    try:
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
                             universal_newlines=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        raise TestNodesError("timed out after %ss: %s" % (timeout, " ".join(cmd)))
    if check and res.returncode != 0:
        raise TestNodesError("command failed (rc=%d): %s\n%s" % (
            res.returncode, " ".join(shlex.quote(c) for c in cmd), res.stderr.strip()))
    return res


# -------------------------------------------------------------- mounts


def _unescape(text):
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and text[i + 1:i + 4].isdigit():
            out.append(chr(int(text[i + 1:i + 4], 8)))
            i += 4
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def read_mountinfo(pid="self"):
    """List of dicts (in kernel order) for /proc/PID/mountinfo; [] if unreadable."""
    try:
        with open("/proc/%s/mountinfo" % pid) as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    mounts = []
    for line in lines:
        fields = line.split(" ")
        try:
            sep = fields.index("-", 6)
        except ValueError:
            continue
        mounts.append({
            "majmin": fields[2],
            "root": _unescape(fields[3]),
            "target": _unescape(fields[4]),
            "fstype": fields[sep + 1],
            "source": _unescape(fields[sep + 2]) if len(fields) > sep + 2 else "",
        })
    return mounts


def _mount_key(m):
    return (m["target"], m["majmin"], m["root"], m["fstype"])


def own_mounts(pid, host=None):
    """Mounts in pid's namespace that the host (our namespace) does not have."""
    if host is None:
        host = {_mount_key(m) for m in read_mountinfo()}
    return [m for m in read_mountinfo(pid) if _mount_key(m) not in host]


def deepest_first(mounts):
    indexed = list(enumerate(mounts))
    indexed.sort(key=lambda im: (im[1]["target"].rstrip("/").count("/"), im[0]), reverse=True)
    return [m for _index, m in indexed]


def unmount_in_ns(pid, mounts, label):
    """Unmount mounts (deepest first) inside pid's mount namespace."""
    if not mounts:
        return
    ordered = deepest_first(mounts)
    in_own = ns_id(pid) == own_ns()
    prefix = [] if in_own else ["nsenter", "-t", str(pid), "-m", "--"]
    targets = [m["target"] for m in ordered]
    run(prefix + ["umount"] + targets, check=False)
    keys = {_mount_key(m) for m in ordered}
    left = [m for m in read_mountinfo(pid) if _mount_key(m) in keys]
    if left and ns_id(pid) is not None:
        # Still busy: detach lazily (the namespace dies right after anyway).
        run(prefix + ["umount", "-l"] + [m["target"] for m in deepest_first(left)],
            check=False)
        left = [m for m in read_mountinfo(pid) if _mount_key(m) in keys]
        if left:
            warn("%s: could not unmount %s" % (label, ", ".join(m["target"] for m in left)))


# -------------------------------------------------------- loop devices


def list_loops():
    """Attached loop devices: name, majmin, back (st_dev, st_ino)."""
    res = run(["losetup", "-J", "--list", "-O", "NAME,MAJ:MIN,BACK-INO,BACK-MAJ:MIN,BACK-FILE"],
              check=False)
    if res.returncode != 0 or not res.stdout.strip():
        return []
    loops = []
    for dev in json.loads(res.stdout).get("loopdevices", []):
        try:
            bmaj, bmin = (int(x) for x in str(dev["back-maj:min"]).split(":"))
            ino = int(dev["back-ino"])
        except (KeyError, TypeError, ValueError):
            continue
        loops.append({
            "name": dev["name"],
            "majmin": str(dev.get("maj:min", "")).strip(),
            "back": (os.makedev(bmaj, bmin), ino),
            "back_dev": os.makedev(bmaj, bmin),
            "back_file": dev.get("back-file"),
        })
    return loops


def state_file_ids(layout):
    """(st_dev, st_ino) of every regular file in the state dir (pool, node dirs)."""
    ids = set()
    for top in (layout.pool, layout.nodes_dir):
        for dirpath, _dirs, files in os.walk(top):
            for name in files:
                with contextlib.suppress(OSError):
                    st = os.lstat(os.path.join(dirpath, name))
                    ids.add((st.st_dev, st.st_ino))
    return ids


def our_loops(layout, state):
    """Loop devices backed by a file of this state dir (by device and inode,
    never by path text), or by a file on a node-private filesystem."""
    ids = state_file_ids(layout)
    private = {d for n in state["nodes"] for d in n.get("private_devs", [])}
    return [lp for lp in list_loops() if lp["back"] in ids or lp["back_dev"] in private]


def namespaces_representatives():
    """One live pid per mount namespace on the machine."""
    reps = {}
    for pid in all_pids():
        ns = ns_id(pid)
        if ns is not None and ns not in reps and is_running(pid):
            reps[ns] = pid
    return reps


def detach_loops(layout, state):
    """Unmount (in any namespace) and detach the loop devices of this state dir."""
    loops = our_loops(layout, state)
    if not loops:
        return []
    majmins = {lp["majmin"] for lp in loops}
    for ns, pid in namespaces_representatives().items():
        users = [m for m in read_mountinfo(pid) if m["majmin"] in majmins]
        if users:
            where = "host" if ns == own_ns() else "namespace of pid %d" % pid
            log("  unmounting %d loop mount(s) in %s" % (len(users), where))
            unmount_in_ns(pid, users, where)
    detached = []
    deadline = time.monotonic() + 5.0
    pending = loops
    while pending:
        for lp in pending:
            run(["losetup", "-d", lp["name"]], check=False)
        current = {lp["name"]: lp for lp in list_loops()}
        # Still attached with the same backing file: retry (the kernel may
        # still be releasing the last mount of a dead namespace).
        still = [lp for lp in pending
                 if lp["name"] in current and current[lp["name"]]["back"] == lp["back"]]
        detached.extend(lp["name"] for lp in pending if lp not in still)
        pending = still
        if pending:
            if time.monotonic() > deadline:
                warn("could not detach %s (still in use?)" % ", ".join(lp["name"] for lp in pending))
                break
            time.sleep(0.1)
    return detached


# ------------------------------------------------------ control masters


def cp_master_pids(layout):
    """ssh processes (ControlMaster) whose command line names our ControlPath dir.
    A mux master rewrites its title to "ssh: PATH [mux]", so match the whole
    command line and check the executable."""
    needle = layout.cp.encode() + b"/"
    pids = []
    for pid in all_pids():
        if pid == os.getpid():
            continue
        try:
            exe = os.readlink("/proc/%d/exe" % pid)
            with open("/proc/%d/cmdline" % pid, "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if os.path.basename(exe) == "ssh" and needle in cmdline and is_running(pid):
            pids.append(pid)
    return pids


def stop_control_masters(layout):
    stopped = 0
    if os.path.isdir(layout.cp):
        for name in os.listdir(layout.cp):
            sock = os.path.join(layout.cp, name)
            res = run(["ssh", "-o", "ControlPath=" + sock, "-O", "exit", "testnode"],
                      check=False, timeout=10)
            stopped += res.returncode == 0
    left = cp_master_pids(layout)
    if left:
        terminate(left, is_running, grace=1.0)
        stopped += len(left)
    if os.path.isdir(layout.cp):
        for name in os.listdir(layout.cp):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(layout.cp, name))
    return stopped


# --------------------------------------------------------------- nodes


def free_port(start, taken):
    for port in range(start, min(start + PORT_SCAN, 65536)):
        if port in taken:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as sshd does
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise TestNodesError("no free port in %d-%d; pass another --base-port" % (
        start, start + PORT_SCAN - 1))


def ensure_keys(layout):
    if not os.path.exists(layout.client_key):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "kubevol-testnodes",
             "-f", layout.client_key])


def host_pubkey(layout, name):
    with open(os.path.join(layout.node_dir(name), "host_key.pub")) as fh:
        return " ".join(fh.read().split()[:2])


def sshd_config(layout, name, port):
    ndir = layout.node_dir(name)
    return "\n".join([
        "# kubevol test node %s (generated by scripts/testnodes.py)" % name,
        "ListenAddress 127.0.0.1:%d" % port,
        "HostKey %s" % os.path.join(ndir, "host_key"),
        "AuthorizedKeysFile %s" % (layout.client_key + ".pub"),
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "PidFile none",
        "UseDNS no",
        "PrintMotd no",
        "PrintLastLog no",
        "X11Forwarding no",
        "AllowTcpForwarding no",
        "MaxStartups 100:30:200",
        "MaxSessions 50",
        "LogLevel INFO",
        "Subsystem sftp internal-sftp",
        "",
    ])


def reset_node_dir(layout, name):
    """Give a (re)starting node fresh, empty kubelet/upper/work dirs."""
    ndir = layout.node_dir(name)
    for sub in NODE_SUBDIRS:
        path = os.path.join(ndir, sub)
        if os.path.lexists(path):
            safe_rmtree(path)
        os.makedirs(path, mode=0o700 if sub == "home" else 0o755)
    key = os.path.join(ndir, "host_key")
    if not os.path.exists(key):
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key])


def safe_rmtree(path):
    """rmtree, refusing to descend into anything mounted in our namespace."""
    path = os.path.abspath(path)
    for m in read_mountinfo():
        if m["target"] == path or m["target"].startswith(path + "/"):
            raise TestNodesError("%s is mounted on the host; unmount it and retry" % m["target"])
    shutil.rmtree(path)


def spawn_node(layout, name, port):
    ndir = layout.node_dir(name)
    write_file(os.path.join(ndir, "sshd_config"), sshd_config(layout, name, port))
    logf = open(os.path.join(ndir, "sshd.log"), "ab")
    try:
        proc = subprocess.Popen(
            ["unshare", "--mount", "--uts", "--propagation", "private", "--",
             sys.executable, os.path.abspath(__file__), "_init",
             "--name", name, "--node-dir", ndir, "--pool", layout.pool],
            stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
            start_new_session=True, close_fds=True)
    finally:
        logf.close()
    # unshare() happens before the init's exec: wait for the new namespace.
    mine = own_ns()
    deadline = time.monotonic() + 5.0
    ns = None
    while time.monotonic() < deadline:
        ns = ns_id(proc.pid)
        if proc.poll() is not None or (ns is not None and ns != mine):
            break
        time.sleep(0.002)
    return proc, ns


def log_tail(layout, name, lines=5):
    try:
        with open(os.path.join(layout.node_dir(name), "sshd.log")) as fh:
            return "".join(fh.readlines()[-lines:]).strip()
    except OSError:
        return ""


def ssh_base(layout, port, timeout=5):
    return ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes",
            "-o", "UserKnownHostsFile=" + layout.known_hosts,
            "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes",
            "-o", "ConnectTimeout=%d" % timeout, "-o", "LogLevel=ERROR",
            "-i", layout.client_key, "-p", str(port), "root@127.0.0.1"]


def ssh_ok(layout, port, timeout=5):
    try:
        res = subprocess.run(ssh_base(layout, port, timeout) + ["true"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, timeout=timeout + 5, check=False)
    except subprocess.TimeoutExpired:
        return False, "ssh timed out"
    return res.returncode == 0, res.stderr.decode(errors="replace").strip()


def listens_on(pid, port):
    """True if process pid holds a socket listening on 127.0.0.1:port."""
    inodes = set()
    local = "0100007F:%04X" % port
    try:
        with open("/proc/%d/net/tcp" % pid) as fh:
            for line in fh.readlines()[1:]:
                f = line.split()
                if f[1] == local and f[3] == "0A":  # TCP_LISTEN
                    inodes.add("socket:[%s]" % f[9])
        if not inodes:
            return False
        for fd in os.listdir("/proc/%d/fd" % pid):
            with contextlib.suppress(OSError):
                if os.readlink("/proc/%d/fd/%s" % (pid, fd)) in inodes:
                    return True
    except OSError:
        pass
    return False


def wait_ready(layout, node, proc, timeout=READY_TIMEOUT):
    """Wait until sshd accepts an ssh login; (ok, reason)."""
    deadline = time.monotonic() + timeout
    reason = "no answer"
    listening = False
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False, "exited (rc=%s)" % proc.returncode
        if proc is None and not node_alive(node):
            return False, "init process is gone"
        if not listening:
            # Our sshd itself must hold the listening socket: a plain connect
            # could reach whoever else won a race for the port.
            listening = listens_on(node["pid"], node["port"])
            if not listening:
                time.sleep(0.01)
                continue
        ok, reason = ssh_ok(layout, node["port"])
        if ok:
            return True, ""
        time.sleep(0.1)
    return False, "no ssh login within %.0fs (%s)" % (timeout, reason)


def write_client_files(layout, state):
    nodes = state["nodes"]
    write_file(layout.known_hosts, "".join(
        "[127.0.0.1]:%d %s\n" % (n["port"], host_pubkey(layout, n["name"])) for n in nodes))
    cfg = []
    for n in nodes:
        cfg += ["Host %s" % n["name"],
                "  HostName 127.0.0.1",
                "  Port %d" % n["port"],
                "  User root",
                "  IdentityFile %s" % layout.client_key,
                "  IdentitiesOnly yes",
                "  UserKnownHostsFile %s" % layout.known_hosts,
                "  GlobalKnownHostsFile /dev/null",
                "  StrictHostKeyChecking yes",
                "  BatchMode yes",
                "  LogLevel ERROR",
                ""]
    write_file(layout.ssh_config, "\n".join(cfg))
    q = json.dumps  # a JSON string is a valid YAML double-quoted scalar
    inv = ["# kubevol local test nodes (generated by scripts/testnodes.py; do not edit)",
           "all:", "  children:", "    nodes:", "      hosts:"]
    for n in nodes:
        inv += ["        %s:" % n["name"],
                "          ansible_host: 127.0.0.1",
                "          ansible_port: %d" % n["port"]]
    if not nodes:
        inv[-1] += " {}"
    inv += ["      vars:",
            "        ansible_user: root",
            "        ansible_ssh_private_key_file: %s" % q(layout.client_key),
            "        ansible_ssh_common_args: %s" % q(layout.ssh_common_args()),
            "        ansible_python_interpreter: /usr/bin/python3",
            ""]
    os.makedirs(layout.inventory_dir, exist_ok=True)
    write_file(layout.inventory, "\n".join(inv))


def record_private_devs(node):
    """Remember the node's own filesystems (overlay, /run tmpfs) so loop devices
    backed by files on them can be found even after the node died."""
    devs = []
    for m in own_mounts(node["pid"]):
        if m["fstype"] in ("overlay", "tmpfs"):
            major, minor = (int(x) for x in m["majmin"].split(":"))
            devs.append(os.makedev(major, minor))
    node["private_devs"] = sorted(set(devs))


def check_state_dir(layout):
    root = layout.root
    if any(c.isspace() for c in root) or "%" in root:
        raise TestNodesError("state dir %r must not contain whitespace or '%%'" % root)
    if root == "/var/lib" or root.startswith("/var/lib/"):
        raise TestNodesError("state dir %s must not be under /var/lib (nodes overlay it)" % root)
    if os.geteuid() != 0:
        raise TestNodesError("must run as root (mount namespaces, loop devices)")
    for tool in (SSHD, NODE_PYTHON):
        if not os.path.exists(tool):
            raise TestNodesError("%s not found (install openssh-server / python3)" % tool)


def cmd_up(args):
    layout = Layout(args.state_dir)
    check_state_dir(layout)
    t0 = time.monotonic()
    with locked(layout):
        for d in (layout.pool, layout.nodes_dir, layout.inventory_dir):
            os.makedirs(d, exist_ok=True)
        os.makedirs(layout.cp, mode=0o700, exist_ok=True)
        ensure_keys(layout)
        state = load_state(layout)
        by_name = {n["name"]: n for n in state["nodes"]}
        wanted = ["node%d" % i for i in range(1, args.count + 1)]
        kept = [name for name in wanted if name in by_name and node_alive(by_name[name])]
        to_start = [name for name in wanted if name not in kept]
        for name in to_start:
            if name in by_name:  # recorded but dead: clean its remains first
                log("%s: not running; cleaning up before restart" % name)
                cleanup_node(by_name[name])
        taken = {n["port"] for n in state["nodes"] if n["name"] in kept}
        for name in to_start:
            reset_node_dir(layout, name)
        procs = {}
        failures = {}
        for attempt in range(3):
            batch = [name for name in to_start if name not in procs or procs[name] is None]
            if not batch:
                break
            for name in batch:
                old = by_name.get(name, {}).get("port") if attempt == 0 else None
                start = old if old and old not in taken else (args.base_port or DEFAULT_BASE_PORT)
                port = free_port(start, taken)
                taken.add(port)
                node = {"name": name, "port": port}
                by_name[name] = node
                # known_hosts must hold the host key before the first login
                state["nodes"] = [by_name[n] for n in by_name]
                proc, ns = spawn_node(layout, name, port)
                node.update(pid=proc.pid, mnt_ns=ns[1] if ns else None,
                            ns_dev=ns[0] if ns else None, started=time.time())
                procs[name] = proc
            save_state(layout, state)
            write_client_files(layout, state)
            with concurrent.futures.ThreadPoolExecutor(max_workers=min(16, len(batch))) as ex:
                results = dict(zip(batch, ex.map(
                    lambda nm: wait_ready(layout, by_name[nm], procs[nm]), batch)))
            for name in batch:
                ok, reason = results[name]
                if ok:
                    failures.pop(name, None)
                    continue
                tail = log_tail(layout, name)
                failures[name] = "%s\n    %s" % (reason, tail.replace("\n", "\n    "))
                cleanup_node(by_name[name], quiet=True)
                procs[name] = None
                if "Address already in use" in tail or "Cannot bind" in tail:
                    continue  # lost a port race: retry on another port
                to_start.remove(name)  # real error: do not retry
        for name, proc in procs.items():
            if proc is not None:
                record_private_devs(by_name[name])
                # The init outlives us; forget it without a ResourceWarning.
                proc.returncode = 0
        failed = sorted(failures, key=node_index)
        state["nodes"] = [n for n in by_name.values() if n["name"] not in failed]
        save_state(layout, state)
        write_client_files(layout, state)
        for name in sorted(procs, key=node_index):
            if procs[name] is not None:
                n = by_name[name]
                log("%s: started on 127.0.0.1:%d (pid %d)" % (name, n["port"], n["pid"]))
        if kept:
            log("kept %d running node(s): %s" % (len(kept), ", ".join(kept)))
        if failed:
            for name in failed:
                print("%s: failed to start: %s\n    log: %s" % (
                    name, failures[name], os.path.join(layout.node_dir(name), "sshd.log")),
                    file=sys.stderr)
            raise TestNodesError("%d node(s) failed; fix the cause above, then run "
                                 "`up` again (or `down --state-dir %s`)" % (len(failed), layout.root))
        log("up: %d node(s) ready in %.2fs; inventory %s" % (
            len(state["nodes"]), time.monotonic() - t0, layout.inventory))
    return 0


def orphan_nodes(layout, state):
    """Namespaces running one of our node configs but missing from nodes.json
    (e.g. `up` was interrupted before it saved): treat them as nodes too."""
    known = {node_ns(n) for n in state["nodes"]}
    needle = (layout.nodes_dir + "/").encode()
    found = {}
    for pid in all_pids():
        ns = ns_id(pid)
        if ns is None or ns in known or ns == own_ns() or ns in found:
            continue
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as fh:
                cmdline = fh.read()
        except OSError:
            continue
        if needle in cmdline and is_running(pid):
            found[ns] = {"name": "orphan-%d" % pid, "pid": pid, "ns_dev": ns[0],
                         "mnt_ns": ns[1], "port": 0}
    return list(found.values())


def unmount_node(node):
    """End a node's sessions and unmount, inside its namespace, everything the
    host does not have (deepest first). Keeps one process alive as the way
    into the namespace. Returns (processes, mounts) found."""
    ns = node_ns(node)
    if ns is None:
        return 0, 0

    def in_ns(p):
        return ns_id(p) == ns

    pids = pids_in_ns(ns)
    if not pids:  # killed and nothing kept the namespace: its mounts are gone
        return 0, 0
    target = node["pid"] if node["pid"] in pids else pids[0]
    # Sessions (ControlPersist sshd children, leftovers) may keep mounts busy.
    terminate([p for p in pids if p != target], in_ns, grace=1.0)
    mounts = []
    if in_ns(target) and is_running(target):
        mounts = own_mounts(target)
        unmount_in_ns(target, mounts, node["name"])
    return len(pids), len(mounts)


def kill_node(node):
    """TERM then KILL every process in the node's namespace (or its init, if
    it died before unsharing); returns how many there were."""
    ns = node_ns(node)
    if ns is None:
        pid = node.get("pid")
        if pid and is_running(pid):
            terminate([pid], is_running)
            return 1
        return 0

    def in_ns(p):
        return ns_id(p) == ns

    seen = set()
    for _attempt in range(5):  # processes may fork while we work: repeat until empty
        pids = pids_in_ns(ns)
        if not pids:
            break
        seen.update(pids)
        left = terminate(pids, in_ns)
        if left:
            warn("%s: processes %s survived SIGKILL" % (node["name"], left))
    return len(seen)


def cleanup_node(node, quiet=False):
    """Remove a node's mounts and processes (alive or killed). Loop devices
    are left to `down`: the pool is shared, so a loop device cannot be
    attributed to one node."""
    n_procs, n_mounts = unmount_node(node)
    n_procs = max(n_procs, kill_node(node))
    if not quiet:
        log("%s: stopped (%d process(es), %d mount(s))" % (node["name"], n_procs, n_mounts))


def cmd_down(args):
    layout = Layout(args.state_dir)
    t0 = time.monotonic()
    if not os.path.isdir(layout.root):
        log("down: nothing to do (%s does not exist)" % layout.root)
        return 0
    if os.geteuid() != 0:
        raise TestNodesError("must run as root")
    with locked(layout):
        state = load_state(layout)
        masters = stop_control_masters(layout)
        if masters:
            log("stopped %d ssh ControlMaster(s)" % masters)
        # 1. unmount inside every live namespace, 2. detach loop devices (after
        # unmounting their users anywhere), 3. kill every process.
        nodes = state["nodes"] + orphan_nodes(layout, state)
        workers = max(1, min(16, len(nodes)))
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
            found = list(ex.map(unmount_node, nodes))
            detached = detach_loops(layout, state)
            killed = list(ex.map(kill_node, nodes))
        problems = []
        for node, (n_procs, n_mounts), n_killed in zip(nodes, found, killed):
            n_procs = max(n_procs, n_killed)
            log("%s: stopped (%d process(es), %d mount(s))" % (node["name"], n_procs, n_mounts))
            if node_ns(node) and pids_in_ns(node_ns(node)):
                problems.append("%s: processes still in its namespace" % node["name"])
        detached += detach_loops(layout, state)  # autoclear races, late users
        if detached:
            log("detached %d loop device(s): %s" % (len(detached), ", ".join(detached)))
        left = our_loops(layout, state)
        if left:
            problems.append("loop devices still attached: %s" % ", ".join(
                lp["name"] for lp in left))
        if problems:
            for p in problems:
                print("down: " + p, file=sys.stderr)
            raise TestNodesError("down incomplete; run `down --state-dir %s` again, or "
                                 "inspect with `status`" % layout.root)
        for name in os.listdir(layout.nodes_dir) if os.path.isdir(layout.nodes_dir) else []:
            ndir = layout.node_dir(name)
            for sub in NODE_SUBDIRS:
                if os.path.lexists(os.path.join(ndir, sub)):
                    safe_rmtree(os.path.join(ndir, sub))
        for path in (layout.nodes_json, layout.inventory, layout.known_hosts, layout.ssh_config):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        if layout.cp != os.path.join(layout.root, "cp"):
            with contextlib.suppress(OSError):
                shutil.rmtree(layout.cp)
        n = len(nodes)
    if args.purge:
        safe_rmtree(layout.root)
        log("purged %s" % layout.root)
    log("down: %d node(s) stopped in %.2fs" % (n, time.monotonic() - t0))
    return 0


def cmd_status(args):
    layout = Layout(args.state_dir)
    state = load_state(layout)
    nodes = state["nodes"]
    if not nodes:
        log("no nodes recorded in %s" % layout.root)
    host = {_mount_key(m) for m in read_mountinfo()}
    loops = our_loops(layout, state) if os.path.isdir(layout.root) else []

    def probe(node):
        alive = node_alive(node)
        pids = pids_in_ns(node_ns(node)) if node_ns(node) else []
        mounts = len(own_mounts(pids[0], host)) if pids else 0
        reach = ssh_ok(layout, node["port"], timeout=3)[0] if alive else False
        return alive, len(pids), mounts, reach

    rows = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(16, len(nodes)))) as ex:
        for node, (alive, nproc, mounts, reach) in zip(nodes, ex.map(probe, nodes)):
            rows.append((node["name"], str(node["port"]), str(node.get("pid")),
                         "yes" if alive else "NO", "yes" if reach else "no",
                         str(nproc), str(mounts)))
    if rows:
        head = ("NODE", "PORT", "PID", "ALIVE", "SSH", "PROCS", "MOUNTS")
        widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
        for r in [head] + rows:
            log("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    log("loop devices backed by the pool: %s" % (
        ", ".join("%s (%s)" % (lp["name"], lp["back_file"]) for lp in loops) if loops else "none"))
    orphans = orphan_nodes(layout, state)
    if orphans:
        log("running but not in nodes.json (`down` stops them): pid %s" % ", ".join(
            str(o["pid"]) for o in orphans))
    if nodes:
        log("inventory: %s" % layout.inventory)
    return 0


def cmd_env(args):
    layout = Layout(args.state_dir)
    for key, value in (("KUBEVOL_TESTNODES_DIR", layout.root),
                       ("KUBEVOL_INVENTORY", layout.inventory),
                       ("KUBEVOL_SSH_CONFIG", layout.ssh_config),
                       ("KUBEVOL_SSH_KEY", layout.client_key),
                       ("KUBEVOL_KNOWN_HOSTS", layout.known_hosts),
                       ("KUBEVOL_POOL_DIR", layout.pool)):
        print("export %s=%s" % (key, shlex.quote(value)))
    return 0


def cmd_ssh(args):
    layout = Layout(args.state_dir)
    if not os.path.exists(layout.ssh_config):
        raise TestNodesError("no nodes running in %s; run `up` first" % layout.root)
    cmd = ["ssh", "-F", layout.ssh_config, args.node] + args.command
    os.execvp(cmd[0], cmd)


# ---------------------------------------------------------------- init


def cmd_init(args):
    """Runs inside the fresh namespaces (as the node's pid): set up, exec sshd."""
    def mount(*argv):
        subprocess.run(["mount"] + list(argv), check=True)

    socket.sethostname(args.name)
    mount("-t", "tmpfs", "-o", "mode=0755,nosuid,nodev,size=64m", "tmpfs", "/run")
    os.makedirs("/run/sshd", mode=0o755)
    nd = args.node_dir
    mount("-t", "overlay", "-o", "lowerdir=/var/lib,upperdir=%s/upper,workdir=%s/work" % (nd, nd),
          "overlay", "/var/lib")
    os.makedirs(KUBELET_IN_NODE, exist_ok=True)
    os.makedirs(POOL_IN_NODE, exist_ok=True)
    mount("--bind", os.path.join(nd, "kubelet"), KUBELET_IN_NODE)
    mount("--bind", args.pool, POOL_IN_NODE)
    # A clean root home: the host's ~/.bashrc (pyenv init, ~0.1 s per ssh
    # command) is not run, and ~/.ansible/tmp stays inside the node.
    mount("--bind", os.path.join(nd, "home"), HOME_IN_NODE)
    sys.stdout.flush()
    os.execv(SSHD, [SSHD, "-D", "-e", "-f", os.path.join(nd, "sshd_config")])


# ---------------------------------------------------------------- main


def main(argv=None):
    p = argparse.ArgumentParser(prog="testnodes.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = p.add_subparsers(dest="cmd")
    sub.required = True

    def with_dir(sp):
        sp.add_argument("--state-dir", required=True, help="directory for keys, pool, inventory")
        return sp

    up = with_dir(sub.add_parser("up", help="start (or add) nodes node1..nodeN"))
    up.add_argument("count", type=int, metavar="N")
    up.add_argument("--base-port", type=int, default=None,
                    help="first port to try (default %d)" % DEFAULT_BASE_PORT)
    down = with_dir(sub.add_parser("down", help="stop all nodes and clean up"))
    down.add_argument("--purge", action="store_true", help="also delete the state dir (pool images)")
    with_dir(sub.add_parser("status", help="show what runs"))
    with_dir(sub.add_parser("env", help="print shell exports for callers"))
    sp = with_dir(sub.add_parser("ssh", help="ssh to a node"))
    sp.add_argument("node")
    sp.add_argument("command", nargs=argparse.REMAINDER)
    init = sub.add_parser("_init")  # internal: the node's init
    init.add_argument("--name", required=True)
    init.add_argument("--node-dir", required=True)
    init.add_argument("--pool", required=True)
    args = p.parse_args(argv)
    if args.cmd == "up" and not 1 <= args.count <= 500:
        p.error("N must be between 1 and 500")
    handlers = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "env": cmd_env,
                "ssh": cmd_ssh, "_init": cmd_init}
    try:
        return handlers[args.cmd](args)
    except TestNodesError as exc:
        print("testnodes: error: %s" % exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
