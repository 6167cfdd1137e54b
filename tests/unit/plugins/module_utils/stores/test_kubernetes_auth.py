# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubernetesStore against a fake API server (tests/fakeapi) through the real kubernetes client: how it connects and
authenticates (kubeconfig and context, host and credentials, the environment, in-cluster, TLS), the client
generations, a missing library and the store's options."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shutil

import pytest

pytest.importorskip("kubernetes")

from fakeapi import FakeApiServer, make_certs, write_kubeconfig  # noqa: E402  (tests/ is on sys.path)

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import k8s_auth  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import k8s_client  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import get_store, store_options  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import CLUSTER_STORE_ARGSPEC  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import MissingLibrary  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import (  # noqa: E402
    ApiException,
    KubernetesApiError,
    KubernetesStore,
    send,
)
from kubestore_lib import NO_ENV, TOKEN, cluster_objects  # noqa: E402


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
