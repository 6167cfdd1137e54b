# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CPUs and memory this process may use: what the kernel says, bounded by the limits of the process's own cgroup
and of every cgroup above it, as the kernel enforces each level (a container's limit, a systemd slice's, an AWX
execution node's job). The process's cgroup is read from /proc/self/cgroup, so a process whose cgroup is nested
below the hierarchy's root (no cgroup namespace: a systemd service, a job under a runner) is bounded by the limits it
really has, not by the root's. Standard library only."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

CGROUP_MOUNT = "/sys/fs/cgroup"
# the hierarchies to look in: cgroup v2's unified one (at the mount, or beside v1's in a hybrid layout), then v1's
# cpu and memory controllers under their usual mount names; a limit found in any of them is enforced
V2_MOUNTS = (CGROUP_MOUNT, os.path.join(CGROUP_MOUNT, "unified"))
V1_CPU_MOUNTS = ("cpu", "cpu,cpuacct", "cpuacct,cpu")
V1_MEMORY_MOUNTS = ("memory",)


def own_cgroups(text):
    """{controller: path} of a /proc/self/cgroup text; "" is cgroup v2's unified hierarchy."""
    found = {}
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3:
            for name in parts[1].split(",") if parts[1] else [""]:
                found[name] = parts[2]
    return found


def levels(mount, path):
    """The cgroup directories from the process's own (``path`` below ``mount``) up to the mount's root, those that
    exist: in a container without a cgroup namespace the path names the host's view, and the container sees its own
    cgroup at the mount's root."""
    found = []
    rest = (path or "").strip("/")
    while rest:
        here = os.path.join(mount, rest)
        if os.path.isdir(here):
            found.append(here)
        rest = os.path.dirname(rest)
    if os.path.isdir(mount):
        found.append(mount)
    return found


def _words(path):
    try:
        with open(path) as handle:
            return handle.read().split()
    except (IOError, OSError):
        return None


def _cgroups():
    try:
        with open("/proc/self/cgroup") as handle:
            return own_cgroups(handle.read())
    except (IOError, OSError):
        return {}


def _v2_dirs(own):
    return [here for mount in V2_MOUNTS if os.path.isfile(os.path.join(mount, "cgroup.controllers"))
            for here in levels(mount, own.get(""))]


def _v1_dirs(own, mounts, controller):
    return [here for name in mounts for here in levels(os.path.join(CGROUP_MOUNT, name), own.get(controller))]


def _v1_quota(here):
    """[quota, period] of a v1 cpu cgroup, "-1" for no quota."""
    return (_words(os.path.join(here, "cpu.cfs_quota_us")) or []) + (
        _words(os.path.join(here, "cpu.cfs_period_us")) or [])


def cpu_quotas(own=None):
    """The CPU quota of each cgroup level, in CPUs (quota over period; levels with no quota left out)."""
    own = _cgroups() if own is None else own
    pairs = [(_words(os.path.join(here, "cpu.max")) or [])[:2] for here in _v2_dirs(own)]
    pairs += [_v1_quota(here) for here in _v1_dirs(own, V1_CPU_MOUNTS, "cpu")]
    quotas = []
    for pair in pairs:
        if len(pair) == 2 and pair[0] not in ("max", "-1"):
            try:
                quotas.append(float(pair[0]) / float(pair[1]))
            except (ValueError, ZeroDivisionError):
                continue
    return quotas


def usable_cpus():
    """Whole CPUs this process may run on: its affinity, bounded by the smallest CPU quota of its cgroup levels,
    rounded down (a 1.5-CPU quota lets a second busy process have half a CPU: it is throttled, not a second CPU), and
    at least one."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    for quota in cpu_quotas():
        cpus = min(cpus, int(quota))
    return max(1, cpus)


def memory_left(own=None):
    """What each cgroup level's memory limit leaves, in bytes (its limit less its use; levels with no limit left
    out)."""
    own = _cgroups() if own is None else own
    files = [(os.path.join(here, "memory.max"), os.path.join(here, "memory.current")) for here in _v2_dirs(own)]
    files += [(os.path.join(here, "memory.limit_in_bytes"), os.path.join(here, "memory.usage_in_bytes"))
              for here in _v1_dirs(own, V1_MEMORY_MOUNTS, "memory")]
    left = []
    for limit_path, usage_path in files:
        limit, usage = _words(limit_path), _words(usage_path)
        if limit and usage and limit[0].isdigit() and usage[0].isdigit():
            left.append(int(limit[0]) - int(usage[0]))
    return left


def usable_memory():
    """Bytes this process may still take: the kernel's MemAvailable, bounded by what the memory limit of each of its
    cgroup levels leaves; None when the kernel says neither."""
    found = None
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    found = int(line.split()[1]) * 1024
                    break
    except (IOError, OSError, ValueError, IndexError):
        pass
    for left in memory_left():
        found = left if found is None else min(found, left)
    return found
