"""The node's settings reach every node entry whole: a non-default command_timeout bounds a hung command in the facts,
the audit, the setup and the volume phases, each run as Ansible runs the module on a node (conftest.py), in its own
mount namespace. The hung command is a stand-in first on PATH that sleeps (its child too, as a real tool's would);
the runner kills its whole process group at the limit given, far below the 300 s default."""
import json
import os
import subprocess
import time

from conftest import MiB, parse_module_output

LIMIT = 2
POD = "55555555-5555-4555-8555-555555555555"


def _running_with(marker):
    """pids of live (not zombie) processes whose command line holds ``marker``."""
    found = []
    for pid in (name for name in os.listdir("/proc") if name.isdigit()):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                cmdline = handle.read().split(b"\0")
            with open("/proc/%s/stat" % pid, "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state != b"Z":
            found.append(int(pid))
    return found


def hung_tool(tmp_path, name, serial):
    """A directory holding ``name``: it starts a child and sleeps, both for a minute; returns (dir, marker)."""
    bindir = tmp_path / ("hung-" + name)
    bindir.mkdir()
    marker = "60.%d" % (os.getpid() * 1000 + serial)  # the child's sleep time: a marker in its command line
    tool = bindir / name
    tool.write_text("#!/bin/sh\nsleep %s &\nexec sleep 60\n" % marker)
    tool.chmod(0o755)
    return str(bindir), marker


def assert_bounded(result, name, marker, started):
    """The call failed at the limit given, naming the command and the setting, and left nothing running."""
    text = json.dumps(result)
    assert result.get("failed"), result
    assert "timed out after %ds" % LIMIT in text and name in text, result
    assert "command_timeout" in text, result  # the remedy names the setting
    assert_quick(marker, started)


def assert_quick(marker, started):
    assert time.monotonic() - started < 40, "the limit given was not the one applied (the default is 300 s)"
    assert not _running_with(marker)  # killed with the child it started


def test_the_facts_run_is_bounded_by_the_command_timeout_given(node, tmp_path):
    """A mounted ext4 volume's size is read with dumpe2fs (fs_sizes): it hangs, is killed at the limit given, and
    the facts report the size as unknown (null), as for any failed size read."""
    vol = node.vol("pv-facts", size=64 * MiB, fs_type="ext4", pods=[{"uid": POD, "name": "default/a"}])
    res = node.module("node_volume_setup", attach={"volumes": [vol], "provision": True}, mount={"volumes": [vol]})
    assert res["_rc"] == 0 and not any(r.get("failed") for r in res["phase_results"].values()), res
    bindir, marker = hung_tool(tmp_path, "dumpe2fs", 501)
    started = time.monotonic()
    res = node.module("node_volume_info", extra_path=bindir, command_timeout=LIMIT, fs_sizes=True)
    assert res["_rc"] == 0, res
    mounted = [m for m in res["node_facts"]["global_mounts"] if "pv-facts" in json.dumps(m)]
    assert mounted and all(m.get("fs_size_bytes") is None for m in mounted), res["node_facts"]["global_mounts"]
    assert_quick(marker, started)
    again = node.module("node_volume_info", fs_sizes=True)  # the real dumpe2fs answers
    assert any(m.get("fs_size_bytes") for m in again["node_facts"]["global_mounts"] if "pv-facts" in json.dumps(m))


def test_the_audit_is_bounded_by_the_command_timeout_given(node, tmp_path):
    """The audit probes each pool image with blkid -p: it hangs, is killed at the limit given, and the image is
    reported as unknown with the time waited."""
    os.makedirs(node.kubelet_dir)
    subprocess.run(["truncate", "-s", str(16 * MiB), os.path.join(node.pool, "orphan.img")], check=True)
    bindir, marker = hung_tool(tmp_path, "blkid", 502)
    started = time.monotonic()
    res = node.module("node_volume_audit", extra_path=bindir, command_timeout=LIMIT)
    assert res["_rc"] == 0, res
    [image] = [i for i in res["pool_images"] if i["path"].endswith("orphan.img")]
    assert "timed out after %ds" % LIMIT in json.dumps(image), image
    assert_quick(marker, started)


def test_the_setup_is_bounded_by_the_command_timeout_given(node, tmp_path):
    """node_volume_setup: the attach's losetup hangs; the volume fails there, named, at the limit given."""
    vol = node.vol("pv-slow", size=64 * MiB, fs_type="ext4")
    bindir, marker = hung_tool(tmp_path, "losetup", 503)
    started = time.monotonic()
    res = node.module("node_volume_setup", extra_path=bindir, command_timeout=LIMIT,
                      attach={"volumes": [vol], "provision": True}, mount={"volumes": [vol]})
    attach = res["phase_results"]["attach"]
    assert_bounded(attach, "losetup", marker, started)
    assert "pv-slow" in attach["msg"] and "mount" not in res["phase_results"], res
    assert not node.loops()


def test_a_volume_phase_is_bounded_by_the_command_timeout_given(node, tmp_path):
    """k8s_volume_attach alone: the same, as the phase's own module."""
    vol = node.vol("pv-slow", size=64 * MiB, fs_type="ext4")
    bindir, marker = hung_tool(tmp_path, "losetup", 504)
    started = time.monotonic()
    res = node.module("k8s_volume_attach", extra_path=bindir, command_timeout=LIMIT, provision=True, volumes=[vol])
    assert_bounded(res, "losetup", marker, started)
    assert not node.loops()


def test_the_provisioning_calls_take_the_group(node, tmp_path):
    """volume_provision_calls takes the node's settings as the node modules do (a relative kubelet_dir is refused as
    the node's context refuses it): the group is one spec on every entry."""
    args = {"host": "node1", "operations": [], "kubelet_dir": "relative/kubelet", "command_timeout": LIMIT,
            "driver_options": {"loop.kubevol.io": {"pools": [node.pool]}}}
    path = tmp_path / "provision-args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    proc = subprocess.run(node.argv(*node.module_cmd("volume_provision_calls", {}, False, False)[len(node.argv()):-1],
                                    str(path)),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False,
                          env=node.module_env())
    res = parse_module_output(proc)
    assert res.get("failed") and "kubelet_dir" in res["msg"] and "absolute" in res["msg"], res
