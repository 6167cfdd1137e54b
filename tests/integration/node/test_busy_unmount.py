"""An unmount refused because a process still uses the mount names that process (node/holders.py, mount.unmount).

Real mounts on a real loop device, in the test's own mount namespace; the processes holding the mount are real
(a shell whose working directory is in it, a Python process with a file there open and mapped)."""
import os
import subprocess

import pytest
from conftest import loops_backed_under, start_namespace

if os.geteuid() != 0:
    pytest.skip("needs root (loop devices, mount)", allow_module_level=True)

SCRIPT = r"""
import json, mmap, os, sys
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import CommandFailed
from ansible_collections.kubevol.volumes.plugins.module_utils.node import mount
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import Runner, process_runner
try:
    mount.unmount(Runner(process_runner(), node="node1", volume="pv-busy"), sys.argv[1])
    print(json.dumps({"unmounted": True}))
except CommandFailed as err:
    print(json.dumps({"msg": err.msg, "holders": err.kwargs.get("holders")}))
"""


@pytest.fixture
def mounted(tmp_path):
    """A private mount namespace with an ext4 loop device mounted at tmp/mnt; everything undone afterwards."""
    image, target = tmp_path / "img", tmp_path / "mnt"
    target.mkdir()
    with open(image, "wb") as handle:
        handle.truncate(16 * 1024 * 1024)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    ns = start_namespace()
    procs = []

    def run(*argv, check=False, env=None):
        return subprocess.run(["nsenter", "-t", str(ns.pid), "-m", "--"] + list(argv), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, check=check, env=env)

    def spawn(*argv):
        proc = subprocess.Popen(["nsenter", "-t", str(ns.pid), "-m", "--"] + list(argv), stdout=subprocess.PIPE,
                                universal_newlines=True)
        procs.append(proc)
        assert proc.stdout.readline().strip() == "ready"
        return proc

    try:
        run("mount", "-o", "loop", str(image), str(target), check=True)
        yield target, run, spawn
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        run("umount", "-l", str(target))
        ns.kill()
        ns.wait()
        for device in loops_backed_under(str(tmp_path)):  # by the image's inode, never by path text
            subprocess.run(["losetup", "-d", device], check=False)


def _unmount(run, target):
    import json
    env = dict(os.environ)
    out = run("/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3", "-c", SCRIPT, str(target),
              env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_a_busy_unmount_names_the_process_and_what_it_holds(mounted):
    target, run, spawn = mounted
    run("sh", "-c", "head -c 8192 /dev/zero > %s/data" % target, check=True)
    shell = spawn("sh", "-c", "cd %s && echo ready && exec sleep 60" % target)
    mapper = spawn("/usr/bin/python3", "-c",
                   "import mmap, sys, time\nf = open(%r, 'r+b')\nm = mmap.mmap(f.fileno(), 8192)\n"
                   "print('ready', flush=True)\ntime.sleep(60)" % str(target / "data"))
    result = _unmount(run, target)
    assert "unmounted" not in result
    msg = result["msg"]
    assert "node node1" in msg and "pv-busy" in msg and "unmount of %s" % target in msg
    assert "pid %d (sleep): working directory %s" % (shell.pid, target) in msg
    assert "pid %d (python3)" % mapper.pid in msg and "open file %s/data" % target in msg
    assert "mapped file %s/data" % target in msg
    assert "stop those processes" in msg and msg.endswith("[KV-MOUNT-BUSY]")
    pids = set(h["pid"] for h in result["holders"])
    assert {shell.pid, mapper.pid} <= pids
    assert run("findmnt", str(target)).returncode == 0  # still mounted
    for proc in (shell, mapper):
        proc.kill()
        proc.wait()
    assert _unmount(run, target) == {"unmounted": True}
