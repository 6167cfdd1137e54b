"""How CSI calls fail, classified as the kubelet does (pkg/volume/csi/csi_client.go isFinalError), and that
no secret of a request ever shows in an error, a repr or a log line."""
import logging
import os
import signal
import threading
import time

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.csi.client import CsiClient
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import (
    CsiError, CsiFinalError, CsiSocketError, CsiUncertainError)

MiB = 1024 * 1024
SECRET = "s3cr3t-Pa55-do-not-print"
SECRETS = {"password": SECRET, "user": "admin-" + SECRET}
CAP = {"mount": {"fs_type": "ext4"}, "access_mode": {"mode": "SINGLE_NODE_WRITER"}}


def _error(csi, method, request=None, timeout=None):
    try:
        csi.call(method, request, timeout=timeout)
    except CsiError as exc:
        return exc
    raise AssertionError("%s did not fail" % method)


def test_final_error_carries_the_drivers_code_and_message(driver):
    driver.start(fail={"NodeStageVolume": {"code": "INVALID_ARGUMENT", "message": "fs_type bogus unsupported"}})
    with CsiClient(driver.socket, timeout=10, driver="csi.kubevol.test", node="node1") as csi:
        err = _error(csi, "NodeStageVolume", {"volume_id": "v1", "staging_target_path": driver.path("s"),
                                              "volume_capability": CAP})
    assert isinstance(err, CsiFinalError) and not isinstance(err, CsiSocketError)
    assert err.final is True and err.code == "INVALID_ARGUMENT"
    text = str(err)
    for part in ("NodeStageVolume", "volume v1", "csi.kubevol.test", "node node1", driver.socket,
                 "INVALID_ARGUMENT", "fs_type bogus unsupported", "nothing was done"):
        assert part in text, (part, text)


@pytest.mark.parametrize("code", ["ABORTED", "UNAVAILABLE", "RESOURCE_EXHAUSTED", "CANCELLED",
                                  "DEADLINE_EXCEEDED"])
def test_non_final_status_is_uncertain(driver, code):
    driver.start(fail={"NodePublishVolume": {"code": code, "message": "operation pending for v1"}})
    with CsiClient(driver.socket, timeout=10) as csi:
        err = _error(csi, "NodePublishVolume", {"volume_id": "v1", "target_path": driver.path("t"),
                                                "volume_capability": CAP})
        assert isinstance(err, CsiUncertainError) and not isinstance(err, CsiFinalError)
        assert err.final is False and err.code == code
        assert "uncertain" in str(err) and "operation pending for v1" in str(err)
        # the channel still serves the next call of the sequence
        assert csi.call("Probe").ready.value is True


def test_timeout_is_uncertain(driver):
    driver.start(sleep={"NodeStageVolume": 3})
    with CsiClient(driver.socket, timeout=1) as csi:
        started = time.time()
        err = _error(csi, "NodeStageVolume", {"volume_id": "v1", "staging_target_path": driver.path("s"),
                                              "volume_capability": CAP})
        assert time.time() - started < 2.5
        assert isinstance(err, CsiUncertainError) and err.code == "DEADLINE_EXCEEDED"
        assert "no answer within 1s" in str(err) and "may still be doing it" in str(err)
        # a per-call timeout overrides the client's
        assert csi.call("Probe", timeout=5).ready.value is True


def test_missing_socket_names_the_path_and_what_to_check(tmp_path):
    path = str(tmp_path / "no-such-driver.sock")
    with pytest.raises(CsiSocketError) as info:
        CsiClient(path, node="node3").open()
    text = str(info.value)
    assert path in text and "no socket" in text and "check that the CSI driver runs" in text and "[KV-CSI-CALL]" in text
    assert "node node3" in text and info.value.final is True
    (tmp_path / "plain").write_text("")
    with pytest.raises(CsiSocketError, match="is not a unix socket"):
        CsiClient(str(tmp_path / "plain")).call("Probe")


def test_driver_gone_between_calls(driver):
    driver.start(exit_after=["NodeGetInfo"])
    with CsiClient(driver.socket, timeout=10) as csi:
        assert csi.call("NodeGetInfo").node_id
        driver.proc.wait(10)
        err = _error(csi, "Probe")
    assert isinstance(err, CsiSocketError) and err.final is True
    assert "connection refused" in str(err) and driver.socket in str(err) and "has exited" in str(err)
    assert [c["method"] for c in driver.calls()] == ["NodeGetInfo"]  # the Probe never reached a driver


def test_driver_dying_during_a_call_is_uncertain(driver):
    """A real UNAVAILABLE (not an injected one): the driver got the call and died before answering."""
    driver.start(sleep={"NodeStageVolume": 5})
    with CsiClient(driver.socket, timeout=20) as csi:
        killer = threading.Timer(1.0, driver.proc.kill)
        killer.start()
        try:
            err = _error(csi, "NodeStageVolume", {"volume_id": "v1", "staging_target_path": driver.path("s"),
                                                  "volume_capability": CAP})
        finally:
            killer.cancel()
    assert isinstance(err, CsiUncertainError) and err.code == "UNAVAILABLE", err
    assert "went away during the call" in str(err) and driver.socket in str(err)


def test_stopped_driver_does_not_answer(driver):
    driver.start()
    os.kill(driver.proc.pid, signal.SIGSTOP)
    try:
        with pytest.raises(CsiSocketError) as info:
            CsiClient(driver.socket, timeout=2, connect_timeout=1).open()
    finally:
        os.kill(driver.proc.pid, signal.SIGCONT)
    assert driver.socket in str(info.value) and "not stopped or hung" in str(info.value)


def test_secrets_never_leave_the_request(driver, caplog):
    """Every request with a secrets map carries SECRETS; the driver gets them, nothing prints them."""
    caplog.set_level(logging.DEBUG)
    driver.start(expected_secrets=SECRETS,
                 controller_caps=["CREATE_DELETE_VOLUME", "PUBLISH_UNPUBLISH_VOLUME", "EXPAND_VOLUME"])
    staging = driver.path("staging")
    target = driver.path("target")
    driver.run("mkdir", "-p", staging)
    errors = []
    with CsiClient(driver.socket, timeout=30) as csi:
        csi.call("CreateVolume", {"name": "sv", "capacity_range": {"required_bytes": 32 * MiB}, "secrets": SECRETS})
        ctx = dict(csi.call("ControllerPublishVolume", {"volume_id": "sv", "node_id": "n", "secrets": SECRETS,
                                                        "volume_capability": CAP}).publish_context)
        csi.call("NodeStageVolume", {"volume_id": "sv", "staging_target_path": staging, "volume_capability": CAP,
                                     "publish_context": ctx, "secrets": SECRETS})
        csi.call("NodePublishVolume", {"volume_id": "sv", "staging_target_path": staging, "target_path": target,
                                       "volume_capability": CAP, "publish_context": ctx, "secrets": SECRETS})
        csi.call("ControllerExpandVolume", {"volume_id": "sv", "capacity_range": {"required_bytes": 48 * MiB},
                                            "secrets": SECRETS})
        # a driver that echoes the secret in its error: final, non-final, and a request the client refuses
        for code in ("PERMISSION_DENIED", "ABORTED"):
            driver.configure(fail={"NodeExpandVolume": {"code": code, "message": "login %s/%s refused" % (
                SECRETS["user"], SECRET)}})
            errors.append(_error(csi, "NodeExpandVolume", {"volume_id": "sv", "volume_path": target,
                                                           "secrets": SECRETS}))
        driver.configure(fail={}, sleep={"ControllerUnpublishVolume": 2})
        errors.append(_error(csi, "ControllerUnpublishVolume", {"volume_id": "sv", "node_id": "n",
                                                                "secrets": SECRETS}, timeout=0.5))
        errors.append(_error(csi, "NodeStageVolume", {"volume_id": "sv", "secrets": {"k": SECRET, "n": 5},
                                                      "no_such_field": SECRET}))
        driver.configure(sleep={})
        csi.call("NodeUnpublishVolume", {"volume_id": "sv", "target_path": target})
        csi.call("NodeUnstageVolume", {"volume_id": "sv", "staging_target_path": staging})
        csi.call("ControllerUnpublishVolume", {"volume_id": "sv", "node_id": "n", "secrets": SECRETS})
        csi.call("DeleteVolume", {"volume_id": "sv", "secrets": SECRETS})
        shown = [repr(csi)]
    assert [type(e).__name__ for e in errors] == ["CsiFinalError", "CsiUncertainError", "CsiUncertainError",
                                                  "CsiFinalError"]
    assert "login <redacted>/<redacted> refused" in str(errors[0])
    for err in errors:
        shown += [str(err), repr(err), str(err.args), str(err.details), str(err.__cause__), str(err.__context__)]
    shown.append(caplog.text)
    with open(driver.log) as handle:
        shown.append(handle.read())
    shown.append(driver.output())
    for text in shown:
        assert SECRET not in text
    assert "NodeExpandVolume" in caplog.text  # the client did log its calls
    calls = driver.calls()
    with_secrets = [c["method"] for c in calls if c["secrets"] != "none"]
    assert set(with_secrets) == {"CreateVolume", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume",
                                 "ControllerExpandVolume", "NodeExpandVolume", "ControllerUnpublishVolume",
                                 "DeleteVolume"}
    assert all(c["secrets"] == "expected" for c in calls if c["secrets"] != "none")
    assert [c for c in calls if c["method"] == "NodeStageVolume"][0]["request"]["secrets"] == {
        "password": "<redacted>", "user": "<redacted>"}
