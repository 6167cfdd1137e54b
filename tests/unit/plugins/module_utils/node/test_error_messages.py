# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node side's error messages, built as the node code builds them: each is one sentence (what failed, where, what
to do), ends with its class's code once when it has one, names no Kubernetes source file (the why is in
docs/errors.md under that code), and says every setting it names in the reader's words."""

import re

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import errors, words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.csi import errors as csi_errors
from ansible_collections.kubevol.volumes.plugins.module_utils.node import holders, runner
from ansible_collections.kubevol.volumes.plugins.module_utils.node.paths import PathNotAllowed
from ansible_collections.kubevol.volumes.plugins.module_utils.node.tools import ToolMissing
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item

WHERE = dict(node="node1", volume="pv-a")
TIMED_OUT = runner._timed_out(["losetup", "-f"], 3, b"", True)

# each error class the node raises, with the arguments its callers give it
CASES = [
    errors.StalePathRefused(field="stale_paths", value="/var/lib/kubelet/pods/x", node="node1",
                            reason="/var/lib/kubelet/pods/x is a symlink"),
    errors.UnsafePath(path="/var/lib/kubelet/pods/u/volumes", reason="it is a symlink where a directory belongs",
                      kubelet_dir="/var/lib/kubelet", **WHERE),
    errors.ForeignMount(what="pod mount of volume pv-a", target="/var/lib/kubelet/pods/u/volumes/x/mount",
                        source="/dev/loop3", expected="its device /dev/loop5", **WHERE),
    errors.DeviceChanged(path="/var/lib/kubelet/plugins/g/globalmount", kind="volume", source="/dev/loop3",
                         device="/dev/loop5", **WHERE),
    errors.VolumeInUse(image="/var/lib/kubevol/pool/pv-a.img", holders="node node2 (since 2026-01-01T00:00:00Z)",
                       release=setting("force_release_holders", ["node2"]), **WHERE),
    errors.NoBackend(driver="ebs.csi.aws.com", known="loop.kubevol.io", **WHERE),
    errors.CommandFailed(step="mount device", cmd="mount /dev/loop3 /g", rc=32, stderr="wrong fs type",
                         hint="check the mount options and the kernel log (dmesg)", **WHERE),
    errors.CommandTimedOut(step="attach", cmd="losetup -f", rc=runner.TIMED_OUT_RC, stderr=TIMED_OUT, **WHERE),
    errors.MountBusy(step="unmount", cmd="umount /m", rc=32, stderr="target is busy", target="/m",
                     held=holders.describe([{"pid": 7, "command": "sleep", "holds": ["working directory /m"]}]),
                     **WHERE),
    errors.UnsafeToFormat(device="/dev/loop3", reason="it holds a dos partition table, which kubevol cannot mount; "
                                                      "check what the device holds", **WHERE),
    errors.FilesystemMismatch(expected="ext4", found="xfs", device="/dev/loop3", **WHERE),
    errors.StillMounted(step="detach", paths="/var/lib/kubelet/pods/u/volumes/x/mount", **WHERE),
    errors.StillMounted(step="detach", paths="/mnt/x",
                        remedy="those mounts are not kubevol's: check what they are and unmount them by hand", **WHERE),
    errors.LockTimeout(lock="/run/kubevol/locks/pv-a", timeout=60, **WHERE),
    errors.DeviceNotFound(step="mount", reason="it is not attached to this node after waiting 30s; attach it first",
                          **WHERE),
    PathNotAllowed(kind="local", path="/etc", reason="is outside the allowed directories", plugin="local",
                   roots="/mnt/disks", setting=setting("driver_options", key="kubernetes.io/local-volume"), **WHERE),
    ToolMissing(needs="formatting it as xfs needs mkfs.xfs", tool="mkfs.xfs", package="xfsprogs", **WHERE),
]

SOURCE_FILE = re.compile(r"\b[\w/]+\.go\b|\bpkg/")
SECOND_SENTENCE = re.compile(r"[a-z)\]]\. +[A-Z]")


def _said(err):
    return [words.say(err.msg, reader) for reader in words.WORDS]


@pytest.mark.parametrize("err", CASES, ids=lambda err: type(err).__name__)
def test_a_node_error_is_one_sentence_ending_with_its_code(err):
    msg = err.msg
    assert "node1" in msg, msg
    assert not SECOND_SENTENCE.search(msg), msg
    assert not SOURCE_FILE.search(msg), msg
    assert msg.lower().count("nothing was") <= 1, msg
    assert not msg.endswith("."), msg
    if err.code:
        assert msg.endswith(" [%s]" % err.code) and msg.count("[KV-") == 1, msg
        assert err.to_result()["code"] == err.code
    for said in _said(err):
        assert "@{" not in said, said


def test_the_families_an_operator_meets_again_have_codes():
    assert {type(e).__name__: e.code for e in CASES if e.code} == {
        "StalePathRefused": "KV-UNSAFE-PATH", "UnsafePath": "KV-UNSAFE-PATH", "ForeignMount": "KV-FOREIGN-MOUNT",
        "DeviceChanged": "KV-DEVICE-CHANGED", "VolumeInUse": "KV-MULTI-ATTACH", "CommandTimedOut": "KV-COMMAND-TIMEOUT",
        "MountBusy": "KV-MOUNT-BUSY", "UnsafeToFormat": "KV-UNSAFE-FORMAT", "FilesystemMismatch": "KV-FS-MISMATCH",
        "StillMounted": "KV-STILL-MOUNTED", "PathNotAllowed": "KV-PATH-NOT-ALLOWED", "ToolMissing": "KV-TOOL-MISSING"}


def test_a_remedy_names_the_setting_as_its_reader_sets_it():
    timed_out = errors.CommandTimedOut(step="attach", cmd="losetup -f", rc=124, stderr=TIMED_OUT, **WHERE)
    assert "raise command_timeout for losetup" in words.say(timed_out.msg, words.MODULE)
    assert "raise kubevol_command_timeout for losetup" in words.say(timed_out.msg, words.ROLE)
    held = CASES[4]
    assert 'set kubevol_force_release_holders=["node2"]' in words.say(held.msg, words.ROLE), held.msg
    locked = errors.LockTimeout(lock="/l", timeout=60, **WHERE)
    assert "raise kubevol_lock_timeout" in words.say(locked.msg, words.ROLE), locked.msg


def test_a_timed_out_command_is_its_own_error_and_others_keep_their_hint():
    run = runner.Runner(lambda argv, data=None: (runner.TIMED_OUT_RC, "", TIMED_OUT), **WHERE)
    with pytest.raises(errors.CommandTimedOut) as timed_out:
        run.check(["losetup", "-f"], step="attach", hint="check the pool")
    assert "check the pool" not in timed_out.value.msg and "`losetup -f` timed out after 3s" in timed_out.value.msg
    # exit 124 of a command itself (not killed by kubevol) is a plain failure with the caller's hint
    plain = runner.Runner(lambda argv, data=None: (124, "", "no such thing"), **WHERE)
    with pytest.raises(errors.CommandFailed) as failed:
        plain.check(["tool"], step="attach", hint="check the pool")
    assert not isinstance(failed.value, errors.CommandTimedOut) and failed.value.msg.endswith("; check the pool")


@pytest.mark.parametrize("err", [
    csi_errors.CsiFinalError("NodeStageVolume", "/csi.sock", "fs_type bogus", code="INVALID_ARGUMENT",
                             volume_id="v1", hint="the driver refused or failed the call, so nothing was done: fix "
                                                  "the cause it names (its log has more), then run again",
                             driver="d.example.com", node="node1"),
    csi_errors.CsiUncertainError("NodePublishVolume", "/csi.sock", "no answer within 2s", code="DEADLINE_EXCEEDED",
                                 volume_id="v1", hint="the outcome is uncertain: run again (the same call is retried)",
                                 driver="d.example.com", node="node1"),
    csi_errors.CsiDependencyError("No module named 'grpc'"),
], ids=lambda err: type(err).__name__)
def test_a_failed_csi_call_is_one_sentence_ending_with_its_code(err):
    text = str(err)
    assert text.endswith(" [%s]" % csi_errors.CODE) and text.count("[KV-") == 1, text
    assert not SECOND_SENTENCE.search(text) and not SOURCE_FILE.search(text), text


# ---- a node call's failure as a module returns it: the first failure's message is the body, its code last ------------

LOOP = "loop.kubevol.io"


class FakeModule:
    def __init__(self, run_dir, *names):
        self.params = dict(node_name="node1", kubelet_dir="/k", run_dir=run_dir, lock_timeout=1,
                           volumes=[{"pv_name": name, "driver": LOOP, "volume_handle": name} for name in names])
        self.check_mode, self._diff = False, False

    def warn(self, text):
        pass


def _failed(tmp_path, phase, finish=None, names=("pv-a", "pv-b", "pv-c")):
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.module import volumes_result
    module = FakeModule(str(tmp_path), *names)
    failed, out, _warnings = volumes_result(module, module.params, module.params["volumes"], phase, finish=finish)
    assert failed, out
    return out


def _phase(fail):
    def phase(ctx, item):
        if item.pv_name in fail:
            raise fail[item.pv_name](item)
        return {"pv_name": item.pv_name, "changed": True, "actions": []}
    return phase


def _mounted(item):
    return errors.StillMounted(step="detach", paths="/p/%s" % item.pv_name, node="node1", volume=item.pv_name)


def _foreign(item):
    return errors.ForeignMount(what="pod mount", target="/t", source="/dev/loop3", expected="/dev/loop5",
                               node="node1", volume=item.pv_name)


def test_the_volumes_that_failed_are_said_in_one_message_ending_with_the_first_ones_code(tmp_path):
    out = _failed(tmp_path, _phase({"pv-a": _mounted, "pv-c": _foreign}))
    msg = out["msg"]
    assert msg.startswith("2 of 3 volume(s) failed on node node1: refusing to detach volume pv-a"), msg
    assert msg.endswith("(volumes completed: pv-b) [KV-STILL-MOUNTED]") and msg.count("[KV-STILL-MOUNTED]") == 1, msg
    assert "/dev/loop5; check what is mounted there and unmount it by hand [KV-FOREIGN-MOUNT];" not in msg
    assert "unmount it by hand [KV-FOREIGN-MOUNT] (volumes completed" in msg, msg  # the other's, quoted whole
    assert out["code"] == "KV-STILL-MOUNTED" and out["completed"] == ["pv-b"]
    # each volume's own entry: its message, ending with its own code
    assert [f["msg"].rsplit(" ", 1)[1] for f in out["failures"]] == ["[KV-STILL-MOUNTED]", "[KV-FOREIGN-MOUNT]"]


def test_failures_of_one_code_say_it_once_at_the_end(tmp_path):
    msg = _failed(tmp_path, _phase({"pv-a": _mounted, "pv-b": _mounted}))["msg"]
    assert msg.count("[KV-") == 1 and msg.endswith("(volumes completed: pv-c) [KV-STILL-MOUNTED]"), msg
    assert "it is still mounted at /p/pv-a; stop the pods that use it there first; refusing to detach volume pv-b" \
        in msg, msg


def test_a_message_without_the_volume_gets_it_first(tmp_path):
    msg = _failed(tmp_path, _phase({"pv-a": lambda item: errors.KubevolError("the lock went away")}),
                  names=("pv-a",))["msg"]
    assert msg == "1 of 1 volume(s) failed on node node1: volume pv-a: the lock went away (volumes completed: none)"


def test_a_failure_after_the_volumes_is_added_after_them_the_first_code_still_last(tmp_path):
    def finish(ctx):
        raise errors.LockTimeout(lock="/run/kubevol/record", timeout=5, node="node1", volume="all")
    msg = _failed(tmp_path, _phase({"pv-a": _mounted}), finish=finish)["msg"]
    assert "(volumes completed: pv-b, pv-c); then: volume all on node node1 is locked" in msg, msg
    assert msg.endswith("or raise @{lock_timeout} [KV-STILL-MOUNTED]") and msg.count("[KV-") == 1, msg

    def finish_mounted(ctx):
        raise _mounted(volume_item({"pv_name": "pv-b", "driver": LOOP, "volume_handle": "pv-b"}))
    msg = _failed(tmp_path, _phase({"pv-a": _mounted}), finish=finish_mounted)["msg"]
    assert msg.count("[KV-STILL-MOUNTED]") == 1 and msg.endswith("there first [KV-STILL-MOUNTED]"), msg
