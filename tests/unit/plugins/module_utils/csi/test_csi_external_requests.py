"""The external CSI driver's pure parts: the requests as the kubelet and the sidecars build them, the options, the
error classes, the registration messages. (The calls: tests/integration/csi/test_csi_driver.py.)"""
from types import SimpleNamespace

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.csi import client as csi_client
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import (
    CsiDependencyError, CsiFinalError, CsiSocketError, CsiUncertainError)
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external import registration
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external import requests as req
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.driver import (
    OPTIONS, configured_drivers, driver_settings, external_driver_class)
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.errors import (
    CsiDriverRefused, CsiDriverUnreachable, CsiVolumeFailed, CsiVolumeUncertain, from_csi)
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item

SECRET = "pa55-w0rd-never-printed"


def item(**kw):
    fields = dict(pv_name="pv1", driver="d.example.com", volume_handle="h1", volume_attributes=(("a", "1"),),
                  mode="Filesystem", fs_type="xfs", mount_options=("noatime", "discard"), read_only=False,
                  ephemeral=False, multi_attach=False)
    fields.update(kw)
    return SimpleNamespace(**fields)


@pytest.mark.parametrize("modes, plain, snmw", [
    (("ReadWriteOnce",), "SINGLE_NODE_WRITER", "SINGLE_NODE_MULTI_WRITER"),
    (("ReadOnlyMany",), "MULTI_NODE_READER_ONLY", "MULTI_NODE_READER_ONLY"),
    (("ReadWriteMany",), "MULTI_NODE_MULTI_WRITER", "MULTI_NODE_MULTI_WRITER"),
    (("ReadWriteOncePod",), "SINGLE_NODE_WRITER", "SINGLE_NODE_SINGLE_WRITER"),
    # the kubelet takes the PV's first mode only
    (("ReadOnlyMany", "ReadWriteOnce"), "MULTI_NODE_READER_ONLY", "MULTI_NODE_READER_ONLY"),
    ((), "SINGLE_NODE_WRITER", "SINGLE_NODE_MULTI_WRITER"),
])
def test_node_access_mode_is_the_kubelets(modes, plain, snmw):
    # csi_client.go asCSIAccessModeV1 / asSingleNodeMultiWriterCapableCSIAccessModeV1
    assert req.node_access_mode(modes, False) == plain
    assert req.node_access_mode(modes, True) == snmw


@pytest.mark.parametrize("modes, plain, snmw", [
    (("ReadWriteOnce",), "SINGLE_NODE_WRITER", "SINGLE_NODE_MULTI_WRITER"),
    (("ReadWriteOncePod",), "SINGLE_NODE_WRITER", "SINGLE_NODE_SINGLE_WRITER"),
    (("ReadOnlyMany",), "MULTI_NODE_READER_ONLY", "MULTI_NODE_READER_ONLY"),
    (("ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany"), "MULTI_NODE_MULTI_WRITER", "MULTI_NODE_MULTI_WRITER"),
])
def test_controller_access_mode_is_csi_lib_utils(modes, plain, snmw):
    assert req.controller_access_mode(modes, False) == plain
    assert req.controller_access_mode(modes, True) == snmw


@pytest.mark.parametrize("modes, reason", [
    (("ReadWriteOncePod", "ReadWriteOnce"), "ReadWriteOncePod with other access modes"),
    (("ReadOnlyMany", "ReadWriteOnce"), "ReadOnlyMany and ReadWriteOnce"),
    ((), "unsupported AccessMode combination"),
    (("WriteSometimes",), "not a Kubernetes access mode"),
])
def test_controller_access_mode_refusals(modes, reason):
    with pytest.raises(req.RequestRefused, match=reason):
        req.controller_access_mode(modes, False)


def test_unknown_node_access_mode_is_refused_before_the_call():
    with pytest.raises(req.RequestRefused, match="not a Kubernetes access mode"):
        req.node_access_mode(("ReadWriteSometimes",), False)


def test_access_modes_of_an_item():
    assert req.access_modes(item(access_modes=("ReadOnlyMany",))) == ("ReadOnlyMany",)
    assert req.access_modes(item()) == ("ReadWriteOnce",)
    assert req.access_modes(item(multi_attach=True)) == ("ReadWriteMany",)


def test_volume_capability():
    assert req.volume_capability(item(), "SINGLE_NODE_WRITER") == {
        "mount": {"fs_type": "xfs", "mount_flags": ["noatime", "discard"]}, "access_mode": {"mode": "SINGLE_NODE_WRITER"}}
    assert req.volume_capability(item(mount_options=()), "X", fs_group=4242)["mount"] == {
        "fs_type": "xfs", "volume_mount_group": "4242"}
    # Block: no filesystem, no flags, no group
    assert req.volume_capability(item(mode="Block"), "X", fs_group=5) == {"block": {}, "access_mode": {"mode": "X"}}


def test_volume_context_with_pod_info_on_mount():
    pod = SimpleNamespace(uid="u1", name="team-a/web-0", read_only=False, fs_group=None, service_account="builder")
    assert req.volume_context(item(), pod, pod_info_on_mount=False) == {"a": "1"}
    assert req.volume_context(item(volume_attributes=(("a", "1"), (req.POD_NAME, "spoofed"))), pod, True) == {
        "a": "1", "csi.storage.k8s.io/pod.name": "web-0", "csi.storage.k8s.io/pod.namespace": "team-a",
        "csi.storage.k8s.io/pod.uid": "u1", "csi.storage.k8s.io/serviceAccount.name": "builder",
        "csi.storage.k8s.io/ephemeral": "false"}
    inline = SimpleNamespace(uid="u2", name="x", namespace="ns", service_account="")
    context = req.volume_context(item(ephemeral=True), inline, True)
    assert context[req.POD_NAMESPACE] == "ns" and context[req.POD_NAME] == "x" and context[req.POD_EPHEMERAL] == "true"


def test_secrets_by_kind_and_never_a_value_in_a_refusal():
    vol = item(secrets={"node_stage": {"user": "u", "password": SECRET}})
    assert req.secrets(vol, "node_stage") == {"user": "u", "password": SECRET}
    assert req.secrets(vol, "node_publish") == {} and req.secrets(item(), "controller_expand") == {}
    with pytest.raises(req.RequestRefused) as info:
        req.secrets(item(secrets={"node_publish": {"password": [SECRET]}}), "node_publish")
    assert "password" in str(info.value) and SECRET not in str(info.value)
    with pytest.raises(ValueError):
        req.secrets(vol, "node_everything")


def test_requests_fit_the_messages_and_leave_unset_fields_out():
    csi = csi_client.CsiClient("/nonexistent.sock")
    vol = item()
    cap = req.volume_capability(vol, "SINGLE_NODE_WRITER")
    secret = {"password": SECRET}
    built = {
        "ControllerPublishVolume": req.controller_publish(vol, "n1", cap, secret),
        "ControllerUnpublishVolume": req.controller_unpublish(vol, "n1", secret),
        "NodeStageVolume": req.node_stage(vol, "/stage", {"devicePath": "/dev/x"}, cap, secret),
        "NodeUnstageVolume": req.node_unstage(vol, "/stage"),
        "NodePublishVolume": req.node_publish(vol, "/t/mount", "/stage", {}, cap, True, {}, {"a": "1"}),
        "NodeUnpublishVolume": req.node_unpublish(vol, "/t/mount"),
        "ControllerExpandVolume": req.controller_expand(vol, 2 ** 40, cap, {}),
        "NodeExpandVolume": req.node_expand(vol, "/t/mount", "", 2 ** 40, cap, secret),
    }
    for method, request in built.items():
        message = csi.build(method, request)
        assert message.volume_id == "h1", method
    assert built["ControllerPublishVolume"]["volume_context"] == {"a": "1"}
    assert built["ControllerPublishVolume"]["readonly"] is False
    assert "publish_context" not in built["NodePublishVolume"] and "secrets" not in built["NodePublishVolume"]
    assert built["NodePublishVolume"]["staging_target_path"] == "/stage" and built["NodePublishVolume"]["readonly"]
    assert "staging_target_path" not in built["NodeExpandVolume"]
    assert csi.build("ControllerExpandVolume", built["ControllerExpandVolume"]).capacity_range.required_bytes == 2 ** 40
    # staging gets the PV's attributes only
    assert built["NodeStageVolume"]["volume_context"] == {"a": "1"}


def test_capability_answers():
    # an UNKNOWN (0) type is left out of the dict by MessageToDict
    assert req.rpc_capabilities({"capabilities": [{"rpc": {"type": "STAGE_UNSTAGE_VOLUME"}}, {"rpc": {}}]}) == \
        frozenset(["STAGE_UNSTAGE_VOLUME", "UNKNOWN"])
    assert req.rpc_capabilities({"capabilities": [{"rpc": {"type": "EXPAND_VOLUME"}}]}) == frozenset(["EXPAND_VOLUME"])
    assert req.rpc_capabilities({}) == frozenset()
    assert req.plugin_capabilities({"capabilities": [{"service": {"type": "CONTROLLER_SERVICE"}},
                                                     {"volume_expansion": {"type": "ONLINE"}}]}) == (
        frozenset(["CONTROLLER_SERVICE"]), frozenset(["ONLINE"]))


def test_driver_settings():
    assert driver_settings("d", None) == {"socket": None, "controller": None, "remote": None, "timeout": 120.0}
    # the whole driver_options mapping, or this driver's own entry; other drivers' entries are not ours
    assert driver_settings("d", {"d": {"controller": "node", "timeout": 5}, "loop.kubevol.io": {"pools": []}}) == {
        "socket": None, "controller": "node", "remote": None, "timeout": 5.0}
    # a controller plugin on a host of the inventory, with its socket there
    assert driver_settings("d", {"d": {"controller": "ctrl1", "controller_socket": "/run/c.sock"}})["remote"] == {
        "host": "ctrl1", "socket": "/run/c.sock"}
    assert driver_settings("d", {"socket": "/run/d.sock"})["socket"] == "/run/d.sock"
    assert driver_settings("d", {"loop_pools": None, "force_release_holders": ()})["socket"] is None
    for bad, field in (({"d": {"sockets": "/x"}}, "driver_options[d]"), ({"d": {"socket": "run/x"}}, ".socket"),
                       ({"d": {"controller": "host1"}}, ".controller_socket"),
                       ({"d": {"controller": "node", "controller_socket": "/c.sock"}}, ".controller_socket"),
                       ({"d": {"controller": "h", "controller_socket": "c.sock"}}, ".controller_socket"),
                       ({"d": {"controller": ""}}, ".controller"), ({"d": {"timeout": 0}}, ".timeout"),
                       ({"d": {"timeout": True}}, ".timeout")):
        with pytest.raises(InvalidInput) as info:
            driver_settings("d", bad)
        assert field in str(info.value)
    assert sorted(OPTIONS) == ["controller", "controller_socket", "socket", "timeout"]


def test_one_class_per_driver_name():
    cls = external_driver_class("hostpath.csi.k8s.io")
    assert cls is external_driver_class("hostpath.csi.k8s.io") and cls.NAME == "hostpath.csi.k8s.io"
    assert external_driver_class("other.example.com").NAME == "other.example.com"
    for bad in ("", "a/b", "-x", "x" * 64, None):
        with pytest.raises(InvalidInput):
            external_driver_class(bad)
    drv = cls(None, "/var/lib/kubelet", "node1", {"hostpath.csi.k8s.io": {"controller": "node"}})
    assert drv.settings["controller"] == "node" and drv.can("stage_unstage") and not drv.can("ephemeral")
    with pytest.raises(NotImplementedError, match="CSI's verbs"):
        drv.attach(item())
    assert configured_drivers({"hostpath.csi.k8s.io": {"controller": "node"}, "x": {"socket": "/s"},
                               "loop.kubevol.io": {"pools": []}, "kubernetes.io/host-path": {"paths": []}}) == [
        "hostpath.csi.k8s.io", "x"]
    assert configured_drivers({"loop.kubevol.io": {"socket": "/s"}, "y": {"controller": "node"}},
                              builtin=("loop.kubevol.io",)) == ["y"]


@pytest.mark.parametrize("exc, cls, uncertain, code", [
    (CsiFinalError("NodeStageVolume", "/s.sock", "bad fs", code="INVALID_ARGUMENT"), CsiVolumeFailed, False,
     "KV-CSI-CALL"),
    (CsiUncertainError("NodeStageVolume", "/s.sock", "slow", code="DEADLINE_EXCEEDED"), CsiVolumeUncertain, True,
     "KV-CSI-CALL"),
    (CsiSocketError("(connect)", "/s.sock", "no socket at /s.sock", hint="Check"), CsiDriverUnreachable, False,
     "KV-CSI-UNREACHABLE"),
    (CsiDependencyError("No module named 'grpc'"), CsiDriverRefused, False, "KV-CSI-REFUSED"),
])
def test_errors_are_classified_as_the_kubelet_does(exc, cls, uncertain, code):
    err = from_csi(exc, "pv9", "node4", "d.example.com")
    assert err.__class__ is cls and isinstance(err, KubevolError) and err.code == code
    assert err.uncertain is uncertain and err.kwargs["uncertain"] is uncertain
    assert str(err).startswith("volume pv9 on node node4: ")
    assert err.kwargs["volume"] == "pv9" and err.kwargs["node"] == "node4" and err.kwargs["driver"] == "d.example.com"
    # the kubevol code last, once (the CSI client's own is not kept); the gRPC status in its own field
    assert err.msg.endswith(" [%s]" % code) and err.msg.count("[KV-") == 1, err.msg
    result = err.to_result()
    assert result["code"] == code and result["grpc_code"] == exc.code and result["uncertain"] is uncertain


def _driver(tmp_path, options=None):
    return external_driver_class("d.example.com")(None, str(tmp_path), "node4", options or {})


@pytest.mark.parametrize("grpc_code, cls, uncertain", [
    ("FAILED_PRECONDITION", CsiVolumeFailed, False),
    ("UNAVAILABLE", CsiVolumeUncertain, True),
])
def test_a_drivers_answer_gives_kv_csi_call_and_its_grpc_code(grpc_code, cls, uncertain):
    # as csi/client.py raises them for a status the driver answered
    exc = (CsiFinalError if cls is CsiVolumeFailed else CsiUncertainError)(
        "NodePublishVolume", "/s.sock", "volume busy", code=grpc_code, volume_id="h1", driver="d.example.com",
        node="node4", hint="run again")
    err = from_csi(exc, "pv9", "node4", "d.example.com")
    assert err.__class__ is cls and err.uncertain is uncertain
    assert err.msg.endswith("; run again [KV-CSI-CALL]") and "%s: volume busy" % grpc_code in err.msg, err.msg
    assert err.to_result()["code"] == "KV-CSI-CALL" and err.to_result()["grpc_code"] == grpc_code


def test_a_missing_socket_gives_kv_csi_unreachable(tmp_path):
    # the client's own check of a path where no socket is: no call sent, no gRPC status
    client = csi_client.CsiClient(str(tmp_path / "csi.sock"), driver="d.example.com", node="node4")
    with pytest.raises(CsiSocketError) as raised:
        client.check_socket("NodeStageVolume", "h1")
    err = from_csi(raised.value, "pv9", "node4", "d.example.com")
    assert err.__class__ is CsiDriverUnreachable and not err.uncertain
    assert err.msg.endswith(" [KV-CSI-UNREACHABLE]") and err.msg.count("[KV-") == 1, err.msg
    assert str(tmp_path / "csi.sock") in err.msg
    assert err.to_result()["code"] == "KV-CSI-UNREACHABLE" and err.to_result()["grpc_code"] is None
    # a driver with no socket anywhere kubevol looks (registration, convention, driver_options) is the same
    with pytest.raises(CsiDriverUnreachable) as info:
        _driver(tmp_path).node_socket(item(pv_name="pv9"))
    result = info.value.to_result()
    assert result["code"] == "KV-CSI-UNREACHABLE" and result["grpc_code"] is None and result["uncertain"] is False
    assert info.value.msg.endswith("[KV-CSI-UNREACHABLE]") and info.value.msg.count("[KV-") == 1, info.value.msg


def test_a_refusal_of_kubevols_gives_kv_csi_refused(tmp_path):
    # a controller call of a driver whose Controller service runs on another host: refused before any call
    drv = _driver(tmp_path, {"d.example.com": {"controller": "ctl", "controller_socket": "/c.sock"}})
    vol = volume_item({"pv_name": "pv9", "driver": "d.example.com", "volume_handle": "h9", "volume_attributes": {},
                       "capacity_bytes": 1 << 30, "mode": "Filesystem", "fs_type": "xfs", "mount_options": [],
                       "read_only": False, "pods": [], "secret_refs": {}})
    with pytest.raises(CsiDriverRefused) as info:
        drv.controller_publish(vol, "id-node4")
    err = info.value
    assert not err.uncertain and err.code == "KV-CSI-REFUSED"
    assert err.msg.endswith(" [KV-CSI-REFUSED]") and err.msg.count("[KV-") == 1, err.msg
    result = err.to_result()
    assert result["code"] == "KV-CSI-REFUSED" and result["grpc_code"] is None and result["uncertain"] is False


def test_a_read_only_call_that_fails_leaves_nothing_uncertain():
    # csi-driver-host-path built without a version answers GetPluginInfo with UNAVAILABLE
    exc = CsiUncertainError("GetPluginInfo", "/s.sock", "Driver is missing version", code="UNAVAILABLE",
                            hint="The driver went away during the call: the outcome is uncertain")
    err = from_csi(exc, "pv9", "node4", "hostpath.csi.k8s.io")
    assert err.__class__ is CsiVolumeFailed and not err.uncertain
    assert "Driver is missing version" in str(err) and "nothing was done" in str(err) and "uncertain" not in str(err)


def test_registration_messages_and_rules():
    msgs = registration.load()
    info = msgs["PluginInfo"](type="CSIPlugin", name="d", endpoint="/e", supported_versions=["1.0.0", "v1.5.0"])
    # field numbers of pluginregistration/v1/api.proto: type 1, name 2, endpoint 3, supported_versions 4
    assert info.SerializeToString() == (b"\x0a\x09CSIPlugin" + b"\x12\x01d" + b"\x1a\x02/e" +
                                        b"\x22\x051.0.0" + b"\x22\x06v1.5.0")
    assert registration.supported_version(["0.3.0", "v1.2.0"]) and not registration.supported_version(["0.3.0"])
    assert not registration.supported_version([])
    assert registration.endpoint_path("unix:///var/lib/kubelet/plugins/d/csi.sock", "/r") == \
        "/var/lib/kubelet/plugins/d/csi.sock"
    assert registration.endpoint_path("", "/var/lib/kubelet/plugins_registry/d-reg.sock") == \
        "/var/lib/kubelet/plugins_registry/d-reg.sock"


def test_item_secrets_from_the_pvs_secret_refs():
    import base64
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.secrets import (
        SecretUnavailable, item_secrets)

    b64 = base64.b64encode(SECRET.encode()).decode()
    secrets = {("ns1", "stage"): {"data": {"password": b64}},
               ("ns1", "pub"): {"data": {"user": base64.b64encode(b"u").decode()}, "stringData": {"token": "t"}},
               ("ns1", "broken"): {"data": {"password": "%%" + SECRET}}}
    spec = {"driver": "d", "volumeHandle": "h", "nodeStageSecretRef": {"name": "stage", "namespace": "ns1"},
            "nodePublishSecretRef": {"name": "pub", "namespace": "ns1"}}
    found = item_secrets("pv1", spec, lambda ns, name: secrets.get((ns, name)))
    assert found == {"node_stage": {"password": SECRET}, "node_publish": {"user": "u", "token": "t"}}
    assert req.secrets(item(secrets=found), "node_stage") == {"password": SECRET}
    assert item_secrets("pv1", {"driver": "d"}, lambda ns, name: None) == {}
    for ref, reason in (({"name": "gone", "namespace": "ns1"}, "does not exist"),
                        ({"name": "broken", "namespace": "ns1"}, "is not base64"),
                        ({"name": "x"}, "is not a {name, namespace} reference")):
        with pytest.raises(SecretUnavailable) as info:
            item_secrets("pv1", {"controllerExpandSecretRef": ref}, lambda ns, name: secrets.get((ns, name)))
        text = str(info.value)
        assert reason in text and "pv1" in text and "controllerExpandSecretRef" in text and SECRET not in text
