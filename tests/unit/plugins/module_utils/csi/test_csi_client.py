"""The CSI client's pieces that need no driver: requests from dicts, error texts, redaction, the guarded imports.
(The calls themselves: tests/integration/csi/, against the test plugin over a real socket.)"""
import sys

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.csi import client as csi_client
from ansible_collections.kubevol.volumes.plugins.module_utils.csi import messages as csi_messages
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import (
    NON_FINAL_CODES, CsiDependencyError, CsiError, CsiFinalError, CsiSocketError, CsiUncertainError, redact)

SECRET = "hunter2-very-secret"


def test_non_final_codes_are_the_kubelets_and_grpc_names():
    import grpc
    # kubelet pkg/volume/csi/csi_client.go isFinalError: Canceled, DeadlineExceeded, Unavailable,
    # ResourceExhausted, Aborted are not final
    assert sorted(NON_FINAL_CODES) == ["ABORTED", "CANCELLED", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED",
                                       "UNAVAILABLE"]
    assert all(hasattr(grpc.StatusCode, code) for code in NON_FINAL_CODES)


def test_error_classes():
    assert CsiFinalError.final and CsiSocketError.final and not CsiUncertainError.final
    assert issubclass(CsiSocketError, CsiFinalError) and not issubclass(CsiUncertainError, CsiFinalError)
    err = CsiUncertainError("NodeStageVolume", "/run/csi.sock", "no answer", code="DEADLINE_EXCEEDED",
                            volume_id="pv-1", hint="Retry", driver="d.example.com", node="n1")
    assert str(err) == ("CSI NodeStageVolume of volume pv-1 by driver d.example.com on node n1 (socket "
                        "/run/csi.sock) failed: DEADLINE_EXCEEDED: no answer; Retry [KV-CSI-CALL]")
    assert repr(err) == "CsiUncertainError(%r)" % str(err)
    assert isinstance(err, CsiError)


def test_redact_replaces_every_secret_longest_first():
    assert redact("user admin-%s pw %s" % (SECRET, SECRET), {SECRET, "admin-" + SECRET, ""}) == \
        "user <redacted> pw <redacted>"
    assert redact("nothing", set()) == "nothing"


def test_build_from_dict_and_method_checks():
    csi = csi_client.CsiClient("/nonexistent.sock")
    req = csi.build("NodeStageVolume", {
        "volume_id": "v", "staging_target_path": "/s", "secrets": {"a": SECRET},
        "volume_capability": {"mount": {"fs_type": "xfs", "mount_flags": ["noatime"], "volume_mount_group": "5"},
                              "access_mode": {"mode": "SINGLE_NODE_MULTI_WRITER"}}})
    assert req.volume_capability.access_mode.mode == 7 and list(req.volume_capability.mount.mount_flags) == [
        "noatime"]
    assert csi.build("NodeStageVolume", req) is req
    assert type(csi.build("Probe")).__name__ == "ProbeRequest"
    with pytest.raises(ValueError, match="no CSI method"):
        csi.build("NodeFormatEverything", {})
    with pytest.raises(TypeError, match="must be a NodeStageVolumeRequest or a dict"):
        csi.build("NodeStageVolume", [1])
    for bad in ({"volume_id": "v9", "secrets": {"a": SECRET, "b": 1}, SECRET: SECRET},
                {"volume_id": "v9", "secrets": {"a": SECRET}, "readonly": SECRET},
                {"volume_id": "v9", "secrets": {"a": SECRET}, "volume_capability": {"access_mode": {"mode": SECRET}}}):
        with pytest.raises(CsiFinalError) as info:
            csi.build("NodeStageVolume", bad)
        assert "does not fit NodeStageVolumeRequest" in str(info.value)
        for text in (str(info.value), repr(info.value), str(info.value.__context__), str(info.value.__cause__)):
            assert SECRET not in text
    assert "volume v9" in str(info.value)
    assert SECRET not in repr(csi)


def test_to_dict_gives_ints_and_spec_names():
    csi = csi_client.CsiClient("/nonexistent.sock")
    resp = csi.messages.ControllerExpandVolumeResponse(capacity_bytes=2 ** 40, node_expansion_required=True)
    assert csi.to_dict(resp) == {"capacity_bytes": 2 ** 40, "node_expansion_required": True}
    vol = csi.messages.CreateVolumeResponse()
    vol.volume.capacity_bytes = 5
    vol.volume.volume_context["a"] = "b"
    assert csi.to_dict(vol) == {"volume": {"capacity_bytes": 5, "volume_context": {"a": "b"}}}


@pytest.mark.parametrize("missing", ["grpc", "google.protobuf"])
def test_missing_packages_name_what_to_install(monkeypatch, missing):
    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(CsiDependencyError) as info:
        csi_client.CsiClient("/run/x.sock").call("Probe")
    text = str(info.value)
    assert "grpcio and protobuf" in text
    assert "apt-get install python3-grpcio python3-protobuf" in text and "pip install grpcio protobuf" in text


def test_missing_protobuf_when_messages_are_first_built(monkeypatch):
    monkeypatch.setattr(csi_messages, "_LOADED", [])
    monkeypatch.setitem(sys.modules, "google.protobuf", None)
    with pytest.raises(CsiDependencyError, match="python3-protobuf"):
        csi_client.load_modules()


def test_missing_socket_without_a_driver(tmp_path):
    with pytest.raises(CsiSocketError) as info:
        csi_client.CsiClient(str(tmp_path / "csi.sock"), driver="d", node="n").call("NodeGetInfo")
    assert str(tmp_path / "csi.sock") in str(info.value) and "check that the CSI driver runs" in str(info.value)
