"""Integration tests for scripts/testnodes.py (local SSH test nodes).

Needs root, util-linux and openssh-server; real sshd processes, real ssh,
real loop devices. Every test that starts nodes runs `down` in a finalizer.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(REPO, "scripts", "testnodes.py")

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="test nodes need root"),
    pytest.mark.skipif(not os.path.exists("/usr/sbin/sshd"), reason="openssh-server missing"),
]


def tn(*args, check=True, timeout=120):
    res = subprocess.run([sys.executable, SCRIPT] + list(args), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, timeout=timeout, check=False)
    if check and res.returncode != 0:
        raise AssertionError("testnodes %s failed (rc=%d)\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(args), res.returncode, res.stdout, res.stderr))
    return res


def ssh(state, node, command, check=True):
    res = subprocess.run(["ssh", "-F", os.path.join(state, "ssh_config"), node, command],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=60, check=False)
    if check and res.returncode != 0:
        raise AssertionError("ssh %s %r failed (rc=%d): %s" % (node, command, res.returncode,
                                                               res.stderr))
    return res


def nodes_json(state):
    with open(os.path.join(state, "nodes.json")) as fh:
        return {n["name"]: n for n in json.load(fh)["nodes"]}


def ns_of(pid):
    try:
        st = os.stat("/proc/%d/ns/mnt" % pid)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def live_pids_in(namespaces):
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if ns_of(pid) in namespaces:
            try:
                with open("/proc/%d/stat" % pid) as fh:
                    state = fh.read().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state not in ("Z", "X"):
                found.append(pid)
    return found


def loops_backed_by(directory):
    """Loop devices whose backing file is a file under directory (by dev/inode)."""
    ids = set()
    for dirpath, _dirs, files in os.walk(directory):
        for f in files:
            st = os.lstat(os.path.join(dirpath, f))
            ids.add((st.st_dev, st.st_ino))
    out = subprocess.run(["losetup", "-J", "--list", "-O", "NAME,BACK-INO,BACK-MAJ:MIN"],
                         stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    found = []
    for dev in (json.loads(out)["loopdevices"] if out.strip() else []):
        major, minor = (int(x) for x in str(dev["back-maj:min"]).split(":"))
        if (os.makedev(major, minor), int(dev["back-ino"])) in ids:
            found.append(dev["name"])
    return found


def host_mount_targets():
    with open("/proc/self/mountinfo") as fh:
        return [line.split()[4] for line in fh]


def node_namespaces(state):
    return {(n["ns_dev"], n["mnt_ns"]) for n in nodes_json(state).values()}


def ansible_env(tmp):
    env = dict(os.environ)
    for var, sub in (("ANSIBLE_HOME", "ansible_home"), ("XDG_CACHE_HOME", "cache"),
                     ("ANSIBLE_LOCAL_TEMP", "ansible_tmp")):
        path = os.path.join(tmp, sub)
        os.makedirs(path, exist_ok=True)
        env[var] = path
    env["ANSIBLE_NOCOLOR"] = "1"
    return env


def ansible_bin():
    for cand in (os.path.join(os.path.dirname(sys.executable), "ansible"),
                 shutil.which("ansible") or ""):
        if cand and os.access(cand, os.X_OK):
            return cand
    pytest.fail("ansible not found beside %s or on PATH: run scripts/bootstrap.sh" % sys.executable)


def make_loop_mount(state, node, image):
    """Inside node: create a pool image, attach it (no autoclear), format it
    and mount it under /var/lib/kubelet; return the loop device name."""
    out = ssh(state, node, (
        "set -e; img=/var/lib/kubevol/pool/{img}; truncate -s 32M $img; "
        "dev=$(losetup -f --show $img); mkfs.ext4 -q $dev; "
        "mkdir -p /var/lib/kubelet/mnt-{img}; mount $dev /var/lib/kubelet/mnt-{img}; "
        "echo $dev").format(img=image)).stdout
    return out.strip().splitlines()[-1]


def short_tmp(tmp_path_factory, name):
    # ControlPath sockets must stay short: keep the state dir path small.
    return str(tmp_path_factory.mktemp(name))


@pytest.fixture(scope="module")
def nodes(tmp_path_factory):
    state = short_tmp(tmp_path_factory, "tn")
    try:
        tn("up", "2", "--state-dir", state)
        yield state
    finally:
        tn("down", "--state-dir", state, "--purge", check=False)


@pytest.fixture
def fresh_state(tmp_path_factory):
    state = short_tmp(tmp_path_factory, "tnd")
    yield state
    tn("down", "--state-dir", state, "--purge", check=False)


def test_each_node_answers_over_ssh_with_its_name(nodes):
    for name in ("node1", "node2"):
        assert ssh(nodes, name, "hostname").stdout.strip() == name


def test_inventory_and_known_hosts(nodes):
    with open(os.path.join(nodes, "inventory", "hosts.yml")) as fh:
        inv = fh.read()
    info = nodes_json(nodes)
    for name, node in info.items():
        assert "%s:" % name in inv
        assert "ansible_port: %d" % node["port"] in inv
    assert "StrictHostKeyChecking=yes" in inv
    assert "ansible_python_interpreter: /usr/bin/python3" in inv
    with open(os.path.join(nodes, "known_hosts")) as fh:
        assert len(fh.read().splitlines()) == 2
    # host key checking stays on: a wrong known_hosts entry must be refused
    bad = os.path.join(nodes, "known_hosts.bad")
    port = info["node1"]["port"]
    with open(os.path.join(nodes, "nodes", "node2", "host_key.pub")) as fh:
        other = " ".join(fh.read().split()[:2])
    with open(bad, "w") as fh:
        fh.write("[127.0.0.1]:%d %s\n" % (port, other))
    res = subprocess.run(["ssh", "-F", "/dev/null", "-o", "BatchMode=yes",
                          "-o", "UserKnownHostsFile=" + bad, "-o", "StrictHostKeyChecking=yes",
                          "-o", "GlobalKnownHostsFile=/dev/null",
                          "-i", os.path.join(nodes, "client_key"), "-p", str(port),
                          "root@127.0.0.1", "true"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, check=False)
    assert res.returncode != 0


def test_kubelet_dir_is_private_per_node(nodes):
    marker = "kv-private-%d" % os.getpid()
    ssh(nodes, "node1", "touch /var/lib/kubelet/%s" % marker)
    assert ssh(nodes, "node1", "ls /var/lib/kubelet").stdout.split().count(marker) == 1
    assert marker not in ssh(nodes, "node2", "ls -A /var/lib/kubelet").stdout
    assert not os.path.exists("/var/lib/kubelet/" + marker)
    # and node2's kubelet dir started empty
    assert ssh(nodes, "node2", "ls -A /var/lib/kubelet").stdout.strip() == ""


def test_pool_is_shared(nodes):
    name = "shared-%d" % os.getpid()
    ssh(nodes, "node1", "echo hello > /var/lib/kubevol/pool/%s" % name)
    assert ssh(nodes, "node2", "cat /var/lib/kubevol/pool/%s" % name).stdout.strip() == "hello"
    assert os.path.exists(os.path.join(nodes, "pool", name))


def test_mount_inside_node_is_invisible_to_host(nodes):
    ssh(nodes, "node1", "mkdir -p /var/lib/kubelet/tmpfs-test && "
                        "mount -t tmpfs kvtest /var/lib/kubelet/tmpfs-test && "
                        "touch /var/lib/kubelet/tmpfs-test/inside")
    assert "/var/lib/kubelet/tmpfs-test" in ssh(nodes, "node1", "cat /proc/self/mounts").stdout
    assert "/var/lib/kubelet/tmpfs-test" not in ssh(nodes, "node2", "cat /proc/self/mounts").stdout
    targets = host_mount_targets()
    assert not [t for t in targets if t.startswith("/var/lib") or t.startswith(nodes)]
    # the file lives on the node's tmpfs, not in the node's kubelet dir on disk
    assert not os.path.exists(os.path.join(nodes, "nodes", "node1", "kubelet", "tmpfs-test",
                                           "inside"))
    ssh(nodes, "node1", "umount /var/lib/kubelet/tmpfs-test")


def test_ansible_ping(nodes, tmp_path):
    res = subprocess.run([ansible_bin(), "nodes", "-i",
                          os.path.join(nodes, "inventory", "hosts.yml"),
                          "-m", "ansible.builtin.ping"],
                         env=ansible_env(str(tmp_path)), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, universal_newlines=True, timeout=120, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("SUCCESS") == 2


def test_status_output(nodes):
    out = tn("status", "--state-dir", nodes).stdout
    lines = out.splitlines()
    assert lines[0].split() == ["NODE", "PORT", "PID", "ALIVE", "SSH", "PROCS", "MOUNTS"]
    info = nodes_json(nodes)
    for name in ("node1", "node2"):
        row = next(line.split() for line in lines if line.startswith(name + " "))
        assert row[1] == str(info[name]["port"])
        assert row[2] == str(info[name]["pid"])
        assert row[3:5] == ["yes", "yes"]
        assert int(row[6]) >= 4  # /run, /var/lib, kubelet, pool (+ /root)
    assert "loop devices backed by the pool: none" in out


def test_up_is_idempotent_and_grows(nodes):
    before = nodes_json(nodes)
    out = tn("up", "2", "--state-dir", nodes).stdout
    assert "kept 2 running node(s)" in out
    assert nodes_json(nodes) == before
    try:
        tn("up", "3", "--state-dir", nodes)
        after = nodes_json(nodes)
        assert {k: after[k]["pid"] for k in before} == {k: v["pid"] for k, v in before.items()}
        assert ssh(nodes, "node3", "hostname").stdout.strip() == "node3"
        assert len({n["port"] for n in after.values()}) == 3
    finally:
        tn("down", "--state-dir", nodes)
        tn("up", "2", "--state-dir", nodes)


def test_env_prints_exports(nodes):
    out = tn("env", "--state-dir", nodes).stdout
    assert "export KUBEVOL_INVENTORY=%s" % os.path.join(nodes, "inventory", "hosts.yml") in out


def test_down_leaves_nothing(fresh_state, tmp_path):
    state = fresh_state
    tn("up", "2", "--state-dir", state)
    namespaces = node_namespaces(state)
    dev = make_loop_mount(state, "node1", "a.img")
    assert dev.startswith("/dev/loop")
    assert loops_backed_by(os.path.join(state, "pool")) == [dev]
    # ControlPersist: ansible leaves a ControlMaster and an sshd child per node
    res = subprocess.run([ansible_bin(), "nodes", "-i", os.path.join(state, "inventory", "hosts.yml"),
                          "-m", "ansible.builtin.ping"], env=ansible_env(str(tmp_path)),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, check=False)
    assert res.returncode == 0, res.stdout
    assert len(os.listdir(os.path.join(state, "cp"))) == 2
    assert len(live_pids_in(namespaces)) >= 4

    t0 = time.monotonic()
    out = tn("down", "--state-dir", state).stdout
    print(out, "down took %.2fs" % (time.monotonic() - t0))
    assert live_pids_in(namespaces) == []
    assert loops_backed_by(os.path.join(state, "pool")) == []
    assert not [t for t in host_mount_targets() if t.startswith(state)]
    assert os.listdir(os.path.join(state, "cp")) == []
    assert os.path.exists(os.path.join(state, "pool", "a.img"))  # kept without --purge
    # idempotent
    again = tn("down", "--state-dir", state)
    assert again.returncode == 0
    st = tn("status", "--state-dir", state).stdout
    assert "no nodes recorded" in st and "loop devices backed by the pool: none" in st


def test_down_after_kill9_of_node_init(fresh_state):
    state = fresh_state
    tn("up", "2", "--state-dir", state)
    namespaces = node_namespaces(state)
    info = nodes_json(state)
    make_loop_mount(state, "node1", "k.img")
    # a process that outlives the node's sshd and keeps its namespace alive
    ssh(state, "node1", "setsid -f sleep 1000 </dev/null >/dev/null 2>&1")
    make_loop_mount(state, "node2", "k2.img")
    for name in ("node1", "node2"):
        os.kill(info[name]["pid"], signal.SIGKILL)
    time.sleep(0.2)
    status = tn("status", "--state-dir", state).stdout
    assert "NO" in status
    assert len(loops_backed_by(os.path.join(state, "pool"))) == 2
    # node1's namespace lives on (sleep), node2's died with its loop still attached
    tn("down", "--state-dir", state)
    assert live_pids_in(namespaces) == []
    assert loops_backed_by(os.path.join(state, "pool")) == []
    assert not [t for t in host_mount_targets() if t.startswith(state)]


def test_down_without_state_dir_is_noop(tmp_path):
    res = tn("down", "--state-dir", str(tmp_path / "never-created"))
    assert res.returncode == 0 and "nothing to do" in res.stdout


def test_down_finds_nodes_missing_from_nodes_json(fresh_state):
    state = fresh_state
    tn("up", "1", "--state-dir", state)
    namespaces = node_namespaces(state)
    ssh(state, "node1", "mkdir -p /var/lib/kubelet/t && mount -t tmpfs t /var/lib/kubelet/t")
    os.unlink(os.path.join(state, "nodes.json"))  # e.g. `up` interrupted before saving
    assert "not in nodes.json" in tn("status", "--state-dir", state).stdout
    tn("down", "--state-dir", state)
    assert live_pids_in(namespaces) == []
