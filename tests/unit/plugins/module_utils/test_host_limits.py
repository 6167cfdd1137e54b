"""common/host_limits.py: the CPUs and memory a process may use are bounded by the limits of its own cgroup and of each
cgroup above it. The nested case is a real one: a process moved into a leaf cgroup under a parent that has the limit,
as a systemd slice or a runner's job holds a process, with no cgroup namespace (the kernel enforces the parent's)."""
import json
import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import host_limits

V1 = "5:memory:/process_api/abc\n3:cpu,cpuacct:/kubepods/pod1/c1\n1:name=systemd:/\n0::/\n"
V2 = "0::/system.slice/awx-job.scope\n"


def test_own_cgroups_are_read_per_controller_for_v1_and_v2():
    assert host_limits.own_cgroups(V1) == {
        "memory": "/process_api/abc", "cpu": "/kubepods/pod1/c1", "cpuacct": "/kubepods/pod1/c1",
        "name=systemd": "/", "": "/"}
    assert host_limits.own_cgroups(V2) == {"": "/system.slice/awx-job.scope"}
    assert host_limits.own_cgroups("") == {}


def test_levels_run_from_the_own_cgroup_up_to_the_root_those_that_exist(tmp_path):
    mount = tmp_path / "cpu"
    (mount / "kubepods" / "pod1" / "c1").mkdir(parents=True)
    found = host_limits.levels(str(mount), "/kubepods/pod1/c1")
    assert found == [str(mount / "kubepods" / "pod1" / "c1"), str(mount / "kubepods" / "pod1"),
                     str(mount / "kubepods"), str(mount)]
    # the host's path seen from inside a container without a cgroup namespace: only its own root is there
    assert host_limits.levels(str(mount), "/docker/0123abcd") == [str(mount)]
    assert host_limits.levels(str(mount), "/") == [str(mount)]
    assert host_limits.levels(str(tmp_path / "none"), "/a") == []


def _hierarchy(controller):
    """(version, mount) of the hierarchy that holds ``controller`` on this machine (v1 first, as kubevol reads)."""
    v1 = os.path.join(host_limits.CGROUP_MOUNT, controller)
    if os.path.isfile(os.path.join(v1, "cgroup.procs")):
        return "v1", v1
    for mount in host_limits.V2_MOUNTS:
        try:
            with open(os.path.join(mount, "cgroup.controllers")) as handle:
                if controller in handle.read().split():
                    with open(os.path.join(mount, "cgroup.subtree_control"), "w") as enable:
                        enable.write("+%s" % controller)
                    return "v2", mount
        except (IOError, OSError):
            continue
    raise AssertionError("this test needs a cgroup hierarchy with the %s controller that root may write" % controller)


def _write(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def _in_leaf(leaf, ask):
    """What ``ask()`` returns in a forked process moved into cgroup ``leaf``."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            _write(os.path.join(leaf, "cgroup.procs"), str(os.getpid()))
            os.write(write_end, json.dumps(ask()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as stream:
            answer = stream.read().decode()
    finally:
        os.waitpid(pid, 0)
    assert answer, "the process in the cgroup gave no answer"
    return json.loads(answer)


def _parent_and_leaf(mount):
    parent = os.path.join(mount, "kubevol-test-limits-%d" % os.getpid())
    leaf = os.path.join(parent, "leaf")
    os.makedirs(leaf)
    return parent, leaf


def _remove(parent):
    for here in (os.path.join(parent, "leaf"), parent):
        if os.path.isdir(here):
            os.rmdir(here)  # (an empty cgroup; its files go with it)


def test_a_cpu_quota_of_a_parent_cgroup_bounds_a_process_in_a_leaf_below_it():
    version, mount = _hierarchy("cpu")
    parent, leaf = _parent_and_leaf(mount)
    try:
        if version == "v1":
            _write(os.path.join(parent, "cpu.cfs_period_us"), "100000")
            _write(os.path.join(parent, "cpu.cfs_quota_us"), "150000")
        else:
            _write(os.path.join(parent, "cpu.max"), "150000 100000")
        quotas, cpus = _in_leaf(leaf, lambda: (host_limits.cpu_quotas(), host_limits.usable_cpus()))
        assert 1.5 in quotas, quotas
        assert cpus == 1  # one and a half CPUs: a second busy process would be throttled, not given a CPU
        _write(os.path.join(parent, "cpu.cfs_quota_us" if version == "v1" else "cpu.max"),
               "-1" if version == "v1" else "max")
        quotas, cpus = _in_leaf(leaf, lambda: (host_limits.cpu_quotas(), host_limits.usable_cpus()))
        assert 1.5 not in quotas and cpus == len(os.sched_getaffinity(0))
    finally:
        _remove(parent)
    assert not os.path.exists(parent)


def test_a_memory_limit_of_a_parent_cgroup_bounds_what_a_process_in_a_leaf_may_take():
    version, mount = _hierarchy("memory")
    parent, leaf = _parent_and_leaf(mount)
    limit = 256 * 1024 * 1024
    try:
        _write(os.path.join(parent, "memory.limit_in_bytes" if version == "v1" else "memory.max"), str(limit))
        left, usable = _in_leaf(leaf, lambda: (host_limits.memory_left(), host_limits.usable_memory()))
        assert any(0 < found <= limit for found in left), left
        assert 0 < usable <= limit
    finally:
        _remove(parent)
    assert not os.path.exists(parent)
