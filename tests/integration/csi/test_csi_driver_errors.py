"""How ExternalCsiDriver fails a volume (final, uncertain, unreachable, refused), keeps secrets to the driver and
finds the driver's socket, against the test plugin (and a test registrar) over real unix sockets."""
import logging
import os
import subprocess
import time

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.driver import external_driver_class
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.errors import (
    CsiDriverRefused, CsiDriverUnreachable, CsiVolumeFailed, CsiVolumeUncertain)
from csi_driver_helpers import (  # noqa: E402  (beside this file)
    ATTACH, NAME, PLUGIN_PYTHON, REGISTRAR, SECRET, create, dirs, external, item, methods, pod)


def test_final_error_fails_the_volume_with_the_drivers_code(plugin):
    plugin.start(fail={"NodeStageVolume": {"code": "INVALID_ARGUMENT", "message": "fs_type bogus unsupported"}})
    create(plugin, "v5")
    staging, = dirs(plugin, "v5")
    with pytest.raises(CsiVolumeFailed) as info:
        external(plugin).node_stage(item("v5"), staging, {})
    err = info.value
    assert not err.uncertain and err.kwargs["grpc_code"] == "INVALID_ARGUMENT"
    assert err.to_result()["code"] == "KV-CSI-CALL" and str(err).endswith("[KV-CSI-CALL]")
    assert str(err).count("[KV-") == 1
    for part in ("pv-v5", "node1", NAME, "NodeStageVolume", "fs_type bogus unsupported", plugin.socket):
        assert part in str(err), part
    assert plugin.mount_of(staging) is None and plugin.loops() == []


@pytest.mark.parametrize("code", ["ABORTED", "UNAVAILABLE", "RESOURCE_EXHAUSTED"])
def test_non_final_error_leaves_the_volume_uncertain(plugin, code):
    plugin.start(fail={"NodePublishVolume": {"code": code, "message": "operation pending"}})
    create(plugin, "v6")
    staging, target = dirs(plugin, "v6", "pod-a")
    drv = external(plugin)
    drv.node_stage(item("v6"), staging, {})
    with pytest.raises(CsiVolumeUncertain) as info:
        drv.node_publish(item("v6"), target, staging, {}, pod())
    assert info.value.uncertain and info.value.kwargs["uncertain"] is True and info.value.kwargs["grpc_code"] == code
    assert "uncertain" in str(info.value) and "pv-v6" in str(info.value)
    assert info.value.to_result()["code"] == "KV-CSI-CALL" and str(info.value).endswith("[KV-CSI-CALL]")


def test_identity_failures_fail_the_volume_and_send_nothing(plugin):
    # csi-driver-host-path built without a version answers GetPluginInfo so
    plugin.start(fail={"GetPluginInfo": {"code": "UNAVAILABLE", "message": "Driver is missing version"}})
    create(plugin, "vi")
    staging, = dirs(plugin, "vi")
    drv = external(plugin)
    with pytest.raises(CsiVolumeFailed) as info:
        drv.node_stage(item("vi"), staging, {})
    assert not info.value.uncertain and "nothing was done" in str(info.value)
    plugin.configure(fail={}, ready=False)
    with pytest.raises(CsiDriverRefused, match="not ready"):
        drv.node_stage(item("vi"), staging, {})
    assert "NodeStageVolume" not in methods(plugin) and plugin.mount_of(staging) is None


def test_timeout_is_uncertain(plugin):
    plugin.start(sleep={"NodeStageVolume": 4})
    create(plugin, "v7")
    staging, = dirs(plugin, "v7")
    started = time.time()
    with pytest.raises(CsiVolumeUncertain) as info:
        external(plugin, timeout=1).node_stage(item("v7"), staging, {})
    assert time.time() - started < 3.5
    assert info.value.kwargs["grpc_code"] == "DEADLINE_EXCEEDED" and "no answer within 1s" in str(info.value)
    time.sleep(3.5)  # the plugin finishes the stage it was doing: the teardown unmounts it


def test_plugin_that_disappears_between_two_calls(plugin):
    plugin.start(exit_after=["NodeStageVolume"])
    create(plugin, "v8")
    staging, target = dirs(plugin, "v8", "pod-a")
    drv = external(plugin)
    drv.node_stage(item("v8"), staging, {})
    plugin.proc.wait(10)
    with pytest.raises(CsiDriverUnreachable) as info:
        drv.node_publish(item("v8"), target, staging, {}, pod())
    text = str(info.value)
    assert plugin.socket in text and "has exited" in text and "pv-v8" in text and not info.value.uncertain
    assert text.endswith("[KV-CSI-UNREACHABLE]") and text.count("[KV-") == 1
    assert info.value.to_result()["code"] == "KV-CSI-UNREACHABLE" and info.value.to_result()["grpc_code"] is None


def test_secrets_reach_the_driver_and_nothing_else(plugin, caplog):
    caplog.set_level(logging.DEBUG)
    secrets = {"password": SECRET}
    plugin.start(expected_secrets=secrets, controller_caps=ATTACH,
                 fail={"NodePublishVolume": {"code": "PERMISSION_DENIED", "message": "bad password " + SECRET}})
    create(plugin, "vs")
    staging, target = dirs(plugin, "vs", "pod-a")
    drv = external(plugin, controller="node")
    vol = item("vs", secrets={"controller_publish": secrets, "node_stage": secrets, "node_publish": secrets})
    results = [drv.controller_publish(vol)]
    results.append(drv.node_stage(vol, staging, results[0].publish_context))
    with pytest.raises(CsiVolumeFailed) as info:
        drv.node_publish(vol, target, staging, results[0].publish_context, pod())
    assert "bad password <redacted>" in str(info.value)
    texts = [repr(r) for r in results] + [str(info.value), repr(info.value), repr(info.value.to_result()),
                                          caplog.text, plugin.output()]
    assert all(SECRET not in text for text in texts)
    with open(plugin.log) as handle:
        assert SECRET not in handle.read()
    assert {c["method"]: c["secrets"] for c in plugin.calls() if c["secrets"] != "none"} == {
        "ControllerPublishVolume": "expected", "NodeStageVolume": "expected", "NodePublishVolume": "expected"}
    drv.node_unstage(vol, staging)
    drv.controller_unpublish(vol)
    assert plugin.loops() == []


def test_wrong_driver_at_the_socket_is_refused(plugin):
    plugin.start(name="other.csi.example")
    with pytest.raises(CsiDriverRefused) as info:
        external(plugin).node_unpublish(item("v1"), plugin.path("t"))
    assert "'other.csi.example', not 'csi.kubevol.test'" in str(info.value)
    assert str(info.value).endswith("[KV-CSI-REFUSED]") and info.value.to_result()["code"] == "KV-CSI-REFUSED"
    assert methods(plugin) == ["GetPluginInfo"]


def test_socket_found_by_registration_or_by_convention(plugin):
    conventional = plugin.path("plugins", NAME, "csi.sock")
    os.makedirs(os.path.dirname(conventional))
    os.makedirs(plugin.path("plugins_registry"))
    plugin.socket = conventional
    plugin.start()
    drv = external_driver_class(NAME)(None, plugin.work, "node1", {})
    assert drv.node_socket() == conventional
    assert drv.node_unpublish(item("v1"), plugin.path("t")).called
    # the registrar's GetInfo names the endpoint, wherever it is
    elsewhere = plugin.path("elsewhere.sock")
    os.rename(conventional, elsewhere)
    reg = plugin.path("plugins_registry", NAME + "-reg.sock")
    registrar = _registrar(plugin, reg, NAME, elsewhere)
    try:
        drv = external_driver_class(NAME)(None, plugin.work, "node1", {})
        assert drv.node_socket() == elsewhere and drv.calls == ["GetInfo"]
        assert drv.node_unpublish(item("v1"), plugin.path("t")).called
    finally:
        _stop(registrar)
    # a registrar for another driver is refused; a dead one is named
    registrar = _registrar(plugin, reg, "someone.else", elsewhere)
    try:
        with pytest.raises(CsiDriverRefused, match="registers driver 'someone.else'"):
            external_driver_class(NAME)(None, plugin.work, "node1", {}).node_socket(item("v1"))
    finally:
        _stop(registrar)
    with pytest.raises(CsiDriverUnreachable) as info:
        external_driver_class(NAME)(None, plugin.work, "node1", {}).node_socket(item("v1"))
    assert reg in str(info.value)
    if os.path.lexists(reg):
        os.unlink(reg)
    with pytest.raises(CsiDriverUnreachable) as info:
        external_driver_class(NAME)(None, plugin.work, "node1", {}).node_socket(item("v1"))
    assert reg in str(info.value) and conventional in str(info.value) and "driver_options" in str(info.value)


def _registrar(plugin, reg, name, endpoint):
    output = plugin.path("registrar-%s.out" % name)
    with open(output, "w") as out:
        proc = subprocess.Popen([PLUGIN_PYTHON, REGISTRAR, "--socket", reg, "--name", name, "--endpoint", endpoint],
                                stdout=out, stderr=subprocess.STDOUT)
    deadline = time.time() + 20
    while time.time() < deadline:
        with open(output) as handle:
            text = handle.read()
        if proc.poll() is not None:
            raise AssertionError("the registrar exited: %s" % text)
        if "serving on" in text:
            return proc
        time.sleep(0.05)
    _stop(proc)
    raise AssertionError("the registrar did not start")


def _stop(proc):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def plugin(driver):
    """conftest's ``driver`` fixture (the test plugin in a private mount namespace), named for what it is here."""
    return driver
