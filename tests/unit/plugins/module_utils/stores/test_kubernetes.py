# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubernetesStore against a fake API server (tests/fakeapi) through the real kubernetes client."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import shutil

import pytest

pytest.importorskip("kubernetes")

from fakeapi import FakeApiServer, make_certs, write_kubeconfig  # noqa: E402  (tests/ is on sys.path)

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import k8s_auth  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import k8s_client  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import (  # noqa: E402
    DETACH_REQUESTED_AT_ANNOTATION,
    NODE_EXPANSION_PENDING_ANNOTATION,
    unique_volume_name,
    volume_attachment_name,
)
from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import ObjectNotFound, RecordApplier  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import get_store, store_options  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import CLUSTER_STORE_ARGSPEC  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import MissingLibrary, StoreError  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import (  # noqa: E402
    ApiException,
    KubernetesApiError,
    KubernetesStore,
    send,
)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.k8s_writes import merge_patch  # noqa: E402

DRIVER = "loop.kubevol.io"
UVN_A = unique_volume_name(DRIVER, "pv-a.img")
VA_A = volume_attachment_name("pv-a.img", DRIVER, "node1")
TOKEN = "test-token"
NO_ENV = {}


def cluster_objects():
    return [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}, "spec": {},
         "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node2"}, "status": {}},
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-a"},
         "spec": {"capacity": {"storage": "1Gi"}, "csi": {"driver": DRIVER, "volumeHandle": "pv-a.img"},
                  "claimRef": {"namespace": "prod", "name": "data-a"}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data-a", "namespace": "prod"},
         "spec": {"resources": {"requests": {"storage": "2Gi"}}, "volumeName": "pv-a"},
         "status": {"phase": "Bound", "capacity": {"storage": "1Gi"},
                    "allocatedResourceStatuses": {"storage": "NodeResizePending"},
                    "conditions": [{"type": "FileSystemResizePending", "status": "True"},
                                   {"type": "Custom", "status": "True"}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "prod", "uid": "u-1"},
         "spec": {"nodeName": "node1"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending-0", "namespace": "prod", "uid": "u-2"},
         "spec": {}},
        {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": DRIVER},
         "spec": {"attachRequired": True}},
    ]


def attached_record(node="node1", device_path="/dev/loop3"):
    return {"type": "attached", "node": node, "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img",
            "device_path": device_path}


@pytest.fixture
def api():
    server = FakeApiServer(tokens=[TOKEN], users={"admin": "s3cret"}).start()
    server.load(cluster_objects())
    yield server
    server.stop()


@pytest.fixture
def kubeconfig(api, tmp_path):
    return write_kubeconfig(str(tmp_path / "kubeconfig"), {
        "good": {"server": api.url, "token": TOKEN},
        "bad": {"server": api.url, "token": "wrong"},
    }, current="good")


@pytest.fixture
def store(kubeconfig):
    made = []

    def make(**options):
        options.setdefault("kubeconfig", kubeconfig)
        page_size = options.pop("page_size", None)
        environ = options.pop("environ", NO_ENV)
        made.append(KubernetesStore(options, page_size=page_size, environ=environ, sleep=lambda s: None))
        return made[-1]

    yield make
    for one in made:
        one.close()


# -- auth ------------------------------------------------------------------------------------------
def test_kubeconfig_and_context(store, api):
    cluster = store().load()
    assert {o["kind"] for o in cluster["items"]} == {"Node", "Pod", "PersistentVolume", "PersistentVolumeClaim",
                                                     "CSIDriver"}
    with pytest.raises(KubernetesApiError) as err:
        store(context="bad").load()
    assert "HTTP 401" in err.value.msg and "credentials" in err.value.msg and "nodes (list)" in err.value.msg


def test_unknown_context_is_clear(store):
    with pytest.raises(k8s_auth.KubernetesAuthError) as err:
        store(context="nope")
    assert "nope" in err.value.msg


def test_host_and_api_key(api):
    s = KubernetesStore({"host": api.url + "/", "api_key": TOKEN}, environ=NO_ENV)
    assert s.describe() == "kubernetes " + api.url
    assert len(s.load()["items"]) == 6
    assert api.log[-1]["user"] == "token"


def test_host_username_password(api):
    s = KubernetesStore({"host": api.url, "username": "admin", "password": "s3cret"}, environ=NO_ENV)
    s.load()
    assert api.log[-1]["user"] == "admin"
    with pytest.raises(KubernetesApiError) as err:
        KubernetesStore({"host": api.url, "username": "admin", "password": "wrong"}, environ=NO_ENV).load()
    assert "HTTP 401" in err.value.msg and "s3cret" not in err.value.msg and "password=<set>" in err.value.msg


def test_api_key_overrides_the_kubeconfig_token(store, api):
    store(context="bad", api_key=TOKEN).load()
    assert api.log[-1]["status"] == 200


def test_env_fallbacks(api, kubeconfig, monkeypatch):
    env = {"K8S_AUTH_HOST": api.url, "K8S_AUTH_API_KEY": TOKEN}
    assert len(KubernetesStore({}, environ=env).load()["items"]) == 6
    env = {"K8S_AUTH_KUBECONFIG": kubeconfig, "K8S_AUTH_CONTEXT": "bad"}
    with pytest.raises(KubernetesApiError, match="HTTP 401"):
        KubernetesStore({}, environ=env).load()
    # options win over the environment
    assert KubernetesStore({"context": "good"}, environ=env).load()
    # the real process environment, through the module options path (get_store)
    for name, value in (("K8S_AUTH_HOST", api.url), ("K8S_AUTH_USERNAME", "admin"), ("K8S_AUTH_PASSWORD", "s3cret"),
                        ("K8S_AUTH_VERIFY_SSL", "no")):
        monkeypatch.setenv(name, value)
    s = get_store("kubernetes", **store_options({"cluster_source": "kubernetes", "page_size": 500}))
    assert s.auth["validate_certs"] is False and s.configuration.verify_ssl is False
    s.load()
    assert api.log[-1]["user"] == "admin"


def test_in_cluster_configuration(api, tmp_path, monkeypatch):
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text(TOKEN)
    ca.write_text("not used over http\n")
    # where the client's in-cluster loader looks (k8s_client imports the names when it builds a configuration)
    from kubernetes.config import incluster_config
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    host, port = api.url.split("//")[1].split(":")
    configuration, source = k8s_client.build_configuration({}, {"KUBERNETES_SERVICE_HOST": host,
                                                                "KUBERNETES_SERVICE_PORT": port})
    assert source == "in-cluster configuration"
    assert configuration.host == "https://%s:%s" % (host, port)
    # the key differs between client generations (BearerToken from 37 on, authorization before)
    assert configuration.auth_settings()["BearerToken"]["value"] == "bearer " + TOKEN


def test_missing_kubeconfig_is_clear(tmp_path):
    with pytest.raises(k8s_auth.KubernetesAuthError) as err:
        KubernetesStore({"kubeconfig": str(tmp_path / "none")}, environ=NO_ENV)
    assert "does not exist" in err.value.msg


class _OldGenerationClient:
    """The call_api shape of kubernetes 24.2-36 (no param_serialize): raises ApiException on non-2xx."""

    def __init__(self, status, body):
        self.status, self.body, self.calls = status, body, []

    def call_api(self, resource_path, method, **kwargs):
        self.calls.append((resource_path, method, kwargs))
        if self.status is None:
            raise ApiException(status=0, reason="SSLError: certificate verify failed")
        if not 200 <= self.status <= 299:
            err = ApiException(status=self.status, reason="x")
            err.body = self.body
            raise err
        client = self

        class Response:
            status = client.status
            data = client.body
            released = False

            def release_conn(self):
                Response.released = True

        self.response = Response
        return Response()


def test_send_with_the_old_client_generation():
    """send() in the shape of clients before 37, whatever client runs this test (the oldest one is also
    exercised for real by scripts/test.d/10-k8s-oldest.sh)."""
    client = _OldGenerationClient(200, b'{"items": []}')
    assert send(client, "GET", "/api/v1/nodes", [("limit", 5)], {"Accept": "application/json"}, None, (1, 2)) == \
        (200, b'{"items": []}')
    path, method, kwargs = client.calls[0]
    assert (path, method) == ("/api/v1/nodes", "GET") and kwargs["query_params"] == [("limit", 5)]
    assert kwargs["auth_settings"] == ["BearerToken"] and kwargs["_preload_content"] is False
    assert kwargs["_return_http_data_only"] is True and kwargs["_request_timeout"] == (1, 2)
    assert client.response.released
    # a non-2xx answer is a status, not an exception
    assert send(_OldGenerationClient(409, b'{"reason": "Conflict"}'), "PATCH", "/x", [], {}, {}, 1) == \
        (409, b'{"reason": "Conflict"}')
    # a connection-level failure (status 0) still raises
    with pytest.raises(ApiException):
        send(_OldGenerationClient(None, None), "GET", "/x", [], {}, None, 1)


def test_missing_library(monkeypatch):
    monkeypatch.setattr(k8s_auth, "HAS_KUBERNETES", False)
    with pytest.raises(MissingLibrary) as err:
        KubernetesStore({"host": "http://x", "api_key": "t"})
    assert "kubernetes" in err.value.msg


def test_options_of_the_other_store_are_refused(tmp_path):
    with pytest.raises(InvalidInput, match="kubeconfig"):
        get_store("file", cluster_state=str(tmp_path / "c.yaml"), kubeconfig="/x")
    with pytest.raises(InvalidInput, match="cluster_state"):
        get_store("kubernetes", cluster_state="/x", host="http://127.0.0.1:1", api_key="t")
    # the page size default does not count as "set" for the file store
    opts = store_options(dict((k, v.get("default")) for k, v in CLUSTER_STORE_ARGSPEC.items()))
    assert opts["page_size"] is None


def test_secrets_are_no_log():
    assert CLUSTER_STORE_ARGSPEC["api_key"]["no_log"] is True
    assert CLUSTER_STORE_ARGSPEC["password"]["no_log"] is True
    assert CLUSTER_STORE_ARGSPEC["validate_certs"]["aliases"] == ["verify_ssl"]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    # scripts/bootstrap.sh installs openssl; a missing one is a broken setup, not a reason to skip
    assert shutil.which("openssl"), "openssl is needed to make test certificates (apt-get install openssl)"
    return make_certs(str(tmp_path_factory.mktemp("certs")))


def test_tls_ca_cert_and_client_cert(certs, tmp_path):
    server = FakeApiServer(tokens=[TOKEN], tls={"cert": certs["server.crt"], "key": certs["server.key"],
                                                "client_ca": certs["ca.crt"]}).start()
    try:
        server.load(cluster_objects())
        # verified with the CA
        s = KubernetesStore({"host": server.url, "api_key": TOKEN, "ca_cert": certs["ca.crt"],
                             "validate_certs": True}, environ=NO_ENV)
        assert len(s.load()["items"]) == 6
        # without the CA the certificate is refused, and the message says what to check
        with pytest.raises(KubernetesApiError) as err:
            KubernetesStore({"host": server.url, "api_key": TOKEN, "validate_certs": True}, environ=NO_ENV).load()
        assert "ca_cert" in err.value.msg
        # validate_certs=false skips verification
        KubernetesStore({"host": server.url, "api_key": TOKEN, "validate_certs": False}, environ=NO_ENV).load()
        # client certificate authentication (no token)
        KubernetesStore({"host": server.url, "client_cert": certs["client.crt"], "client_key": certs["client.key"],
                         "ca_cert": certs["ca.crt"]}, environ=NO_ENV).load()
        assert server.log[-1]["user"] == "kubevol-admin"
        # the same through a kubeconfig with the CA and the client cert in it, aliases via env
        path = write_kubeconfig(str(tmp_path / "kc"), {"tls": {
            "server": server.url, "certificate-authority": certs["ca.crt"],
            "client-certificate": certs["client.crt"], "client-key": certs["client.key"]}})
        KubernetesStore({}, environ={"K8S_AUTH_KUBECONFIG": path}).load()
        assert server.log[-1]["user"] == "kubevol-admin"
    finally:
        server.stop()


# -- reads -----------------------------------------------------------------------------------------
def test_load_shape_matches_the_file_store(store):
    cluster = store().load()
    assert cluster["kind"] == "List" and cluster["apiVersion"] == "v1"
    by_name = dict((o["metadata"]["name"], o) for o in cluster["items"])
    assert "pending-0" not in by_name  # unscheduled pods are not listed
    assert by_name["web-0"]["kind"] == "Pod" and by_name["web-0"]["apiVersion"] == "v1"
    assert by_name[DRIVER]["apiVersion"] == "storage.k8s.io/v1"
    assert all(o["metadata"]["resourceVersion"] for o in cluster["items"])


def test_paging_1200_pods(store, api):
    api.load([{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p-%04d" % i, "namespace": "bulk"},
               "spec": {"nodeName": "node%d" % (1 + i % 2)}} for i in range(1200)])
    del api.log[:]
    cluster = store().load()
    pods = [o for o in cluster["items"] if o["kind"] == "Pod"]
    assert len(pods) == 1201
    assert len({(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods}) == 1201
    pod_requests = api.requests("GET", "/api/v1/pods")
    assert len(pod_requests) == 3
    assert all(r["query"]["limit"] == "500" and r["query"]["fieldSelector"] == "spec.nodeName!=" for r in pod_requests)
    assert "continue" not in pod_requests[0]["query"] and pod_requests[1]["query"]["continue"]
    del api.log[:]
    store(page_size=1000).load()
    assert len(api.requests("GET", "/api/v1/pods")) == 2


def test_page_size_must_be_positive(kubeconfig):
    with pytest.raises(InvalidInput, match="page_size"):
        KubernetesStore({"kubeconfig": kubeconfig}, page_size=0, environ=NO_ENV)


# -- writes ----------------------------------------------------------------------------------------
def same_as_file_store(api, records):
    """What record.py computes on the whole List before the apply: the API must end up the same."""
    cluster = {"apiVersion": "v1", "kind": "List", "items": [copy.deepcopy(o) for k in
                                                             ("Node", "PersistentVolume", "PersistentVolumeClaim",
                                                              "VolumeAttachment") for o in api.list(k)]}
    RecordApplier(cluster).apply_all(records)
    return cluster


def strip(obj):
    obj = copy.deepcopy(obj)
    for key in ("resourceVersion", "uid", "creationTimestamp"):
        obj["metadata"].pop(key, None)
    return obj


def assert_api_matches(api, expected):
    for obj in expected["items"]:
        got = api.get(obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace"))
        assert got is not None, obj["metadata"]["name"]
        assert strip(got) == strip(obj)
    vas = {o["metadata"]["name"] for o in api.list("VolumeAttachment")}
    assert vas == {o["metadata"]["name"] for o in expected["items"] if o["kind"] == "VolumeAttachment"}


def test_attached_creates_the_va_and_sets_status_and_node_status(store, api):
    records = [attached_record(), {"type": "in_use", "node": "node1", "unique_volume_names": [UVN_A], "in_use": True}]
    expected = same_as_file_store(api, records)
    del api.log[:]
    result = store().apply(records)
    assert result["changed"] is True and [c["type"] for c in result["changes"]] == ["attached", "in_use"]
    assert_api_matches(api, expected)
    va = api.get("VolumeAttachment", VA_A)
    assert va["status"] == {"attached": True, "attachmentMetadata": {"devicePath": "/dev/loop3"}}
    assert va["spec"] == {"attacher": DRIVER, "nodeName": "node1", "source": {"persistentVolumeName": "pv-a"}}
    node = api.get("Node", "node1")
    assert node["status"]["volumesAttached"] == [{"devicePath": "/dev/loop3", "name": UVN_A}]
    assert node["status"]["volumesInUse"] == [UVN_A]
    assert node["status"]["conditions"] == [{"type": "Ready", "status": "True"}]  # untouched
    writes = [(r["method"], r["path"]) for r in api.writes()]
    assert writes == [("POST", "/apis/storage.k8s.io/v1/volumeattachments"),
                      ("PATCH", "/apis/storage.k8s.io/v1/volumeattachments/%s/status" % VA_A),
                      ("PATCH", "/api/v1/nodes/node1/status")]
    assert "VolumeAttachment/" + VA_A in result["diff"]["after"] and "VolumeAttachment/" + VA_A not in result["diff"]["before"]
    # idempotent: nothing to write the second time
    del api.log[:]
    again = store().apply(records)
    assert again["changed"] is False and again["changes"] == [] and api.writes() == []


def test_detached_deletes_the_va_with_a_precondition_and_cleans_the_node(store, api):
    store().apply([attached_record(), {"type": "in_use", "node": "node1", "unique_volume_names": [UVN_A], "in_use": True}])
    records = [{"type": "detached", "node": "node1", "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img"}]
    expected = same_as_file_store(api, records)
    del api.log[:]
    result = store().apply(records)
    assert result["changed"]
    assert api.get("VolumeAttachment", VA_A) is None
    assert "volumesAttached" not in api.get("Node", "node1")["status"]
    assert "volumesInUse" not in api.get("Node", "node1")["status"]
    assert_api_matches(api, expected)
    writes = [(r["method"], r["path"]) for r in api.writes()]
    assert writes == [("PATCH", "/api/v1/nodes/node1/status"),
                      ("DELETE", "/apis/storage.k8s.io/v1/volumeattachments/" + VA_A)]
    assert "VolumeAttachment/" + VA_A in result["diff"]["before"]
    assert store().apply(records)["changed"] is False


def test_controller_and_node_expanded(store, api):
    records = [{"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi"},
               {"type": "node_expanded", "pvc": "prod/data-a", "capacity": 2 * 1024 ** 3}]
    expected = same_as_file_store(api, records)
    del api.log[:]
    result = store().apply(records)
    assert result["changed"]
    assert_api_matches(api, expected)
    assert api.get("PersistentVolume", "pv-a")["spec"]["capacity"] == {"storage": "2Gi"}
    pvc = api.get("PersistentVolumeClaim", "data-a", "prod")
    assert pvc["status"]["capacity"] == {"storage": "2Gi"}
    assert "allocatedResourceStatuses" not in pvc["status"]
    assert pvc["status"]["conditions"] == [{"type": "Custom", "status": "True"}]
    assert pvc["spec"]["resources"]["requests"]["storage"] == "2Gi"
    writes = [(r["method"], r["path"]) for r in api.writes()]
    assert writes == [("PATCH", "/api/v1/persistentvolumes/pv-a"),
                      ("PATCH", "/api/v1/namespaces/prod/persistentvolumeclaims/data-a/status")]
    # 2Gi == 2048Mi: no write
    del api.log[:]
    assert not store().apply([{"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2048Mi"}])["changed"]
    assert api.writes() == []


def test_node_expansion_pending_then_finished(store, api):
    """A pending node-side grow: the claim's status (NodeResizeError beside FileSystemResizePending) and its
    kubevol.io/node-expansion-pending annotation, written as the file store writes them; MarkFSResizeFinished
    clears both."""
    pending = [{"type": "node_expansion_pending", "pvc": "prod/data-a", "capacity": 2 * 1024 ** 3,
                "node_name": "node1", "reason": "OnlineExpansionFailed", "message": "resize2fs exited 1",
                "pods": ["u-1"], "offline": True, "at": "2026-11-30T11:00:00Z"}]
    expected = same_as_file_store(api, pending)
    del api.log[:]
    assert store().apply(pending)["changed"]
    assert_api_matches(api, expected)
    pvc = api.get("PersistentVolumeClaim", "data-a", "prod")
    assert NODE_EXPANSION_PENDING_ANNOTATION in pvc["metadata"]["annotations"]
    assert [c["type"] for c in pvc["status"]["conditions"]] == ["FileSystemResizePending", "Custom", "NodeResizeError"]
    assert pvc["status"]["allocatedResourceStatuses"] == {"storage": "NodeResizeInProgress"}
    assert sorted((r["method"], r["path"]) for r in api.writes()) == [
        ("PATCH", "/api/v1/namespaces/prod/persistentvolumeclaims/data-a"),
        ("PATCH", "/api/v1/namespaces/prod/persistentvolumeclaims/data-a/status")]
    assert store().apply(pending)["changed"] is False
    finished = [{"type": "node_expanded", "pvc": "prod/data-a", "capacity": 2 * 1024 ** 3}]
    expected = same_as_file_store(api, finished)
    assert store().apply(finished)["changed"]
    assert_api_matches(api, expected)
    pvc = api.get("PersistentVolumeClaim", "data-a", "prod")
    assert NODE_EXPANSION_PENDING_ANNOTATION not in (pvc["metadata"].get("annotations") or {})
    assert pvc["status"]["conditions"] == [{"type": "Custom", "status": "True"}]


def test_detach_request_annotations(store, api):
    store().apply([attached_record()])
    requested = {"type": "detach_requested", "name": VA_A, "node": "node1", "volume": "pv-a",
                 "requested_at": "2024-05-01T10:00:00Z"}
    del api.log[:]
    assert store().apply([requested])["changed"]
    va = api.get("VolumeAttachment", VA_A)
    assert va["metadata"]["annotations"] == {DETACH_REQUESTED_AT_ANNOTATION: "2024-05-01T10:00:00Z"}
    assert [(r["method"], r["path"]) for r in api.writes()] == [
        ("PATCH", "/apis/storage.k8s.io/v1/volumeattachments/" + VA_A)]
    # the first request time is kept
    later = dict(requested, requested_at="2024-05-01T11:00:00Z")
    assert not store().apply([later])["changed"]
    assert store().apply([{"type": "detach_request_cleared", "name": VA_A, "node": "node1"}])["changed"]
    assert "annotations" not in api.get("VolumeAttachment", VA_A)["metadata"]


def test_missing_object_fails_before_any_write(store, api):
    del api.log[:]
    with pytest.raises(ObjectNotFound) as err:
        store().apply([attached_record(), {"type": "controller_expanded", "pv_name": "pv-nope", "capacity": "1Gi"}])
    assert "pv-nope" in err.value.msg
    assert api.writes() == []


def test_check_mode_writes_nothing(store, api):
    del api.log[:]
    result = store().apply([attached_record()], check_mode=True)
    assert result["changed"] and result["diff"]["after"]
    assert api.writes() == [] and api.get("VolumeAttachment", VA_A) is None


# -- conflicts -------------------------------------------------------------------------------------
def test_conflict_from_a_concurrent_writer_loses_neither_change(store, api):
    store().apply([attached_record()])

    def concurrent_writer(server, request):
        if request["plural"] == "nodes" and request["method"] == "PATCH":
            # another controller (the kubelet) reports a volume in use between our read and our write
            server.mutate("Node", "node1", lambda n: n["status"].update(volumesInUse=["kubernetes.io/csi/other^x"]))
            return True  # once
        return False

    api.hooks.append(concurrent_writer)
    del api.log[:]
    result = store().apply([{"type": "in_use", "node": "node1", "unique_volume_names": [UVN_A], "in_use": True}])
    assert result["changed"]
    node = api.get("Node", "node1")
    assert node["status"]["volumesInUse"] == sorted(["kubernetes.io/csi/other^x", UVN_A])  # both changes kept
    assert node["status"]["volumesAttached"] == [{"devicePath": "/dev/loop3", "name": UVN_A}]
    statuses = [r["status"] for r in api.requests("PATCH", "/api/v1/nodes/node1/status")]
    assert statuses == [409, 200]
    assert len(api.requests("GET", "/api/v1/nodes/node1")) == 2  # re-read before the retry


def test_conflict_on_delete_and_on_create_is_retried(store, api):
    store().apply([attached_record()])

    def annotate(server, request):
        if request["method"] == "DELETE":
            server.mutate("VolumeAttachment", VA_A, lambda v: v["metadata"].setdefault("labels", {}).update(x="y"))
            return True
        return False

    api.hooks.append(annotate)
    store().apply([{"type": "detached", "node": "node1", "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img"}])
    assert api.get("VolumeAttachment", VA_A) is None
    assert [r["status"] for r in api.requests("DELETE")] == [409, 200]

    def create_first(server, request):
        if request["method"] == "POST":
            server.put({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": VA_A},
                        "spec": {"attacher": DRIVER, "nodeName": "node1", "source": {"persistentVolumeName": "pv-a"}}})
            return True
        return False

    api.hooks.append(create_first)
    del api.log[:]
    assert store().apply([attached_record()])["changed"]
    va = api.get("VolumeAttachment", VA_A)
    assert va["status"]["attached"] is True
    assert [r["status"] for r in api.writes()][0] == 409


def test_endless_conflicts_give_up_clearly(store, api):
    def always(server, request):
        server.mutate("Node", "node1", lambda n: n["metadata"].setdefault("labels", {}).update(bump=str(server.rv)))
        return False

    api.hooks.append(always)
    with pytest.raises(KubernetesApiError) as err:
        store().apply([{"type": "in_use", "node": "node1", "unique_volume_names": [UVN_A], "in_use": True}])
    assert "conflict" in err.value.msg and "Node/node1" in err.value.msg and "retry" in err.value.msg
    assert len(api.requests("PATCH")) == 6


# -- errors ----------------------------------------------------------------------------------------
def test_forbidden_names_the_verb_and_resource(store, api):
    api.deny.add(("patch", "nodes/status"))
    with pytest.raises(KubernetesApiError) as err:
        store().apply([attached_record()])
    msg = err.value.msg
    assert "HTTP 403" in msg and "'patch'" in msg and "nodes/status" in msg and "RBAC" in msg and "Node/node1" in msg
    api.deny = {("list", "volumeattachments")}
    with pytest.raises(KubernetesApiError) as err:
        store().load()
    assert "'list'" in err.value.msg and "volumeattachments (storage.k8s.io)" in err.value.msg


def test_not_found_api(store, api):
    from fakeapi import RESOURCES
    saved = RESOURCES.pop("csidrivers")
    try:
        with pytest.raises(KubernetesApiError) as err:
            store().load()
        assert "HTTP 404" in err.value.msg and "csidrivers" in err.value.msg
    finally:
        RESOURCES["csidrivers"] = saved


def test_unreachable_api_says_so(store, api):
    api.stop()
    with pytest.raises(KubernetesApiError) as err:
        store().load()
    assert "cannot reach the API server at %s" % api.url in err.value.msg
    assert "running and reachable" in err.value.msg


def test_invalid_is_reported(store, api):
    # a VolumeAttachment whose spec differs cannot be changed (spec is immutable): 422 names it
    api.put({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": VA_A},
             "spec": {"attacher": DRIVER, "nodeName": "node1", "source": {"persistentVolumeName": "pv-other"}}})
    with pytest.raises(KubernetesApiError) as err:
        store().apply([attached_record()])
    assert "HTTP 422" in err.value.msg and "VolumeAttachment/" + VA_A in err.value.msg


def test_merge_patch():
    assert merge_patch({"a": 1, "b": {"c": 1, "d": 2}, "l": [1]}, {"a": 1, "b": {"c": 2}, "l": [1, 2], "n": 3}) == \
        {"b": {"c": 2, "d": None}, "l": [1, 2], "n": 3}
    assert merge_patch({"a": 1}, {"a": 1}) == {}


def test_store_error_family():
    assert issubclass(KubernetesApiError, StoreError)


def test_node_side_modules_do_not_import_kubernetes():
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "plugins")
    for sub in ("modules", os.path.join("modules", "__internal"), os.path.join("module_utils", "node"),
                os.path.join("module_utils", "drivers")):
        for name in os.listdir(os.path.join(root, sub)):
            if name.endswith(".py") and not name.startswith("cluster_") and \
                    name not in ("volume_reconcile_plan.py", "reconcile_run.py", "pod_volumes_wait.py",
                                 "volume_audit.py"):  # controller-side
                with open(os.path.join(root, sub, name)) as fh:
                    text = fh.read()
                assert "stores" not in text and "k8s_auth" not in text and "import kubernetes" not in text, name


# -- the run lock: a coordination.k8s.io/v1 Lease -------------------------------------------------------
def test_run_lock_is_a_lease_taken_renewed_and_released(store, api):
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
    first, second = store(), store()
    alive = {"host": "controller-a", "pid": None, "pid_start": None}
    taken = first.acquire_run_lock("run-a", 60, 0, who=alive)
    assert taken["location"] == "Lease kube-system/kubevol-reconcile" and taken["took_over"] is None
    lease = api.get("Lease", "kubevol-reconcile", "kube-system")
    assert lease["spec"]["holderIdentity"] == "run-a" and lease["spec"]["leaseDurationSeconds"] == 60
    assert lease["metadata"]["annotations"]["kubevol.io/run-host"] == "controller-a"
    with pytest.raises(run_lock.RunLocked) as err:
        second.acquire_run_lock("run-b", 60, 0, who=alive)
    assert "holder run-a" in err.value.msg and "host controller-a" in err.value.msg
    first.renew_run_lock("run-a", 60)
    with pytest.raises(run_lock.RunLockLost):
        second.renew_run_lock("run-b", 60)
    assert second.release_run_lock("run-b") is False  # not its lock: left alone
    assert first.release_run_lock("run-a") is True
    assert not api.get("Lease", "kubevol-reconcile", "kube-system")["spec"].get("holderIdentity")
    assert second.acquire_run_lock("run-b", 60, 0, who=alive)["took_over"] is None


def test_an_expired_lease_is_taken_over(store, api):
    import datetime
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock
    who = {"host": "elsewhere", "pid": None, "pid_start": None}

    def long_ago():
        return datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    store().acquire_run_lock("dead-run", 60, 0, who=who, now=long_ago)
    taken = store().acquire_run_lock("new-run", 60, 0, who=who)
    assert taken["took_over"]["holder"] == "dead-run" and "expired" in taken["took_over"]["reason"]
    lease = api.get("Lease", "kubevol-reconcile", "kube-system")
    assert lease["spec"]["holderIdentity"] == "new-run" and lease["spec"]["leaseTransitions"] == 1


def test_attach_intent_creates_an_unattached_va_once(store, api):
    """The intent before the attach: a VolumeAttachment with attached: false, left alone when one exists."""
    intent = {"type": "attach_intent", "node": "node1", "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img"}
    out = store().apply([intent])
    assert out["changed"]
    name = volume_attachment_name("pv-a.img", DRIVER, "node1")
    va = api.get("VolumeAttachment", name)
    assert va["status"] == {"attached": False} and va["spec"]["nodeName"] == "node1"
    assert store().apply([intent])["changed"] is False
    store().apply([attached_record()])
    assert api.get("VolumeAttachment", name)["status"]["attached"] is True
    assert store().apply([intent])["changed"] is False  # an attached VA is never set back
    assert api.get("VolumeAttachment", name)["status"]["attached"] is True
