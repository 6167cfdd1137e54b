"""node_volume_setup: attach, format and mount (and grow) in one execution, on real loop devices."""
import os

from conftest import DRIVER, MiB

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names


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


POD1 = "33333333-3333-4333-8333-333333333333"
POD2 = "44444444-4444-4444-8444-444444444444"


def test_attach_and_mount_in_one_execution_and_a_failed_attach_stops_only_its_volume(node):
    good = node.vol("pv-good", fs_type="ext4", pods=[{"uid": POD1, "name": "default/a"}])
    # no image and no provisioning: its attach fails, so it must not be mounted
    missing = node.vol("pv-missing", fs_type="ext4", pods=[{"uid": POD2, "name": "default/b"}])
    node.run("truncate", "-s", str(64 * MiB), node.image(good))
    res = node.module("node_volume_setup", attach={"volumes": [good, missing]}, mount={"volumes": [good, missing]})
    assert res["_rc"] == 0, res
    attach, mount = res["phase_results"]["attach"], res["phase_results"]["mount"]
    assert attach["failed"] and "pv-missing" in attach["msg"], attach
    assert [v["pv_name"] for v in attach["volumes"]] == ["pv-good"]
    assert [v["pv_name"] for v in mount["volumes"]] == ["pv-good"] and not mount.get("failed")
    gpath = names.device_mount_path(node.kubelet_dir, DRIVER, "pv-good.img")
    ppath = names.pod_mount_path(node.kubelet_dir, POD1, "pv-good")
    assert node.mounts_under() == sorted([gpath, ppath])
    assert not os.path.exists(names.pod_mount_path(node.kubelet_dir, POD2, "pv-missing"))
    data = os.path.join(ppath, "data")
    node.write_random(data)
    digest = node.sha256(data)

    # the same call again changes nothing for the good volume (and the missing one still fails alone)
    again = node.module("node_volume_setup", attach={"volumes": [good]}, mount={"volumes": [good]})
    assert again["_rc"] == 0 and again["changed"] is False, again
    assert node.sha256(data) == digest


def test_setup_grows_the_backing_image_and_the_filesystem(node):
    vol = node.vol("pv-grow", size=320 * MiB, fs_type="xfs", pods=[{"uid": POD1, "name": "default/a"}])
    first = node.module("node_volume_setup", attach={"volumes": [vol], "provision": True}, mount={"volumes": [vol]})
    assert first["_rc"] == 0 and first["changed"], first
    ppath = names.pod_mount_path(node.kubelet_dir, POD1, "pv-grow")
    data = os.path.join(ppath, "data")
    node.write_random(data)
    digest = node.sha256(data)
    bigger = dict(vol, capacity_bytes=400 * MiB)
    grown = node.module("node_volume_setup", expand_controller={"volumes": [bigger]}, expand_node={"volumes": [bigger]})
    assert grown["_rc"] == 0, grown
    assert grown["phase_results"]["expand_controller"]["volumes"][0]["backing_size_bytes"]["new"] == 400 * MiB
    fs = grown["phase_results"]["expand_node"]["volumes"][0]["fs_size_bytes"]
    assert fs["new"] > fs["old"] and fs["new"] > 380 * MiB, fs
    assert node.sha256(data) == digest


def test_check_mode_changes_nothing(node):
    vol = node.vol("pv-check", fs_type="ext4", pods=[{"uid": POD1, "name": "default/a"}])
    res = node.module("node_volume_setup", check_mode=True, attach={"volumes": [vol], "provision": True},
                      mount={"volumes": [vol]})
    assert res["_rc"] == 0 and res["changed"], res
    assert node.mounts_under() == [] and node.loops() == []
    assert not os.path.exists(node.image(vol))


def test_a_command_past_its_limit_fails_its_volume_alone_naming_it_and_the_time(node, tmp_path):
    """Bounded node commands (node/runner.py): a hung mkfs.xfs (a wrapper that sleeps, first on PATH, with a child of
    its own as mkfs has) is killed at long_command_timeout with every process it started; that volume fails naming the
    command line and the time waited, and the ext4 volume of the same call is formatted and mounted."""
    slow = tmp_path / "bin"
    slow.mkdir()
    wrapper = slow / "mkfs.xfs"
    marker = "60.%d" % (os.getpid() * 1000 + 417)  # the child's sleep time: a marker in its command line
    wrapper.write_text("#!/bin/sh\nsleep %s &\nexec sleep 60\n" % marker)
    wrapper.chmod(0o755)
    fast = node.vol("pv-fast", fs_type="ext4", pods=[{"uid": POD1, "name": "default/a"}])
    hung = node.vol("pv-hung", size=320 * MiB, fs_type="xfs", pods=[{"uid": POD2, "name": "default/b"}])
    res = node.module("node_volume_setup", extra_path=str(slow), long_command_timeout=2,
                      attach={"volumes": [fast, hung], "provision": True}, mount={"volumes": [fast, hung]})
    mount = res["phase_results"]["mount"]
    assert mount["failed"] and [v["pv_name"] for v in mount["volumes"]] == ["pv-fast"], mount
    [failure] = mount["failures"]
    assert failure["volume"] == "pv-hung" and failure["node"] == "node1"
    assert "mkfs.xfs" in failure["cmd"] and "timed out after 2s" in failure["msg"], failure
    assert "was killed with every process it started" in failure["msg"], failure
    assert not _running_with(marker)  # the wrapper's child died with it
    assert names.pod_mount_path(node.kubelet_dir, POD1, "pv-fast") in node.mounts_under()
    assert node.run("blkid", "-p", node.image(hung), check=False).returncode == 2  # nothing was written to it
