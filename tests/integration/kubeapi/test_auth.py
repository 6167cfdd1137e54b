"""Authentication options of the Kubernetes API store against the fake API server, through the real
kubernetes client (any generation from 24.2 on), as kubernetes.core's k8s_auth_options have them:
merged kubeconfig lists, impersonation, proxy / no_proxy / proxy_headers, persist_config."""
import base64
import os
import time

import pytest
import yaml

from fakeapi import FakeApiServer, make_certs, write_kubeconfig
from fakeapi.oidc import OidcIssuer, make_jwt
from fakeapi.proxy import ForwardProxy
from test_modules import OBJECTS, run_module

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import k8s_auth
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import KubernetesApiError, KubernetesStore

TOKEN = "kubevol-test-token"  # as in conftest.py
NO_ENV = {}


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """A CA with a server certificate for 127.0.0.1 (openssl keygen is slow: once per module)."""
    return make_certs(str(tmp_path_factory.mktemp("pki")))


def load(auth, environ=None):
    store = KubernetesStore(auth, environ=NO_ENV if environ is None else environ)
    try:
        return store.load()
    finally:
        store.close()


@pytest.fixture
def split_kubeconfig(api, tmp_path):
    """a.yaml: its own context (current, wrong token) and the good user; b.yaml: the context
    kind-kubevol, which names a.yaml's user and b's cluster. Only the merged pair works."""
    a = write_kubeconfig(str(tmp_path / "a.yaml"), {"a-ctx": {"server": api.url, "token": "nope"}})
    with open(a) as fh:
        config = yaml.safe_load(fh)
    config["users"].append({"name": "good-user", "user": {"token": TOKEN}})
    with open(a, "w") as fh:
        yaml.safe_dump(config, fh)
    b = str(tmp_path / "b.yaml")
    with open(b, "w") as fh:
        yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "preferences": {},
                        "clusters": [{"name": "b-cluster", "cluster": {"server": api.url}}],
                        "users": [],
                        "contexts": [{"name": "kind-kubevol", "context": {"cluster": "b-cluster", "user": "good-user"}}],
                        "current-context": "kind-kubevol"}, fh)
    return a, b


# -- merged kubeconfig lists -------------------------------------------------------------------------
def test_kubeconfig_list_with_the_context_in_the_second_file(api, split_kubeconfig, tmp_path):
    a, b = split_kubeconfig
    api.load(OBJECTS)
    joined = os.pathsep.join([a, b])
    args = {"cluster_source": "kubernetes", "context": "kind-kubevol",
            "query": "items[?kind=='PersistentVolume'].metadata.name"}
    # KUBECONFIG=a:b, as kubectl reads it
    out, _raw = run_module(tmp_path, "cluster_volume_info", args, env={"KUBECONFIG": joined})
    assert not out.get("failed"), out
    assert out["query_result"] == ["pv-a"]
    # the option as a list, through the module's argspec (a missing file is skipped, as kubectl does)
    out, _raw = run_module(tmp_path, "cluster_volume_info", dict(args, kubeconfig=[a, str(tmp_path / "missing"), b]))
    assert not out.get("failed"), out
    assert out["query_result"] == ["pv-a"]
    # K8S_AUTH_KUBECONFIG=a:b and the option as a:b
    for auth, environ in (({"context": "kind-kubevol"}, {"K8S_AUTH_KUBECONFIG": joined}),
                          ({"context": "kind-kubevol", "kubeconfig": joined}, NO_ENV)):
        assert len(load(auth, environ)["items"]) == 3
        assert api.log[-1]["status"] == 200 and api.log[-1]["user"] == "token"
    # without a context, the first file's current-context wins (kubectl's rule): its token is refused
    with pytest.raises(KubernetesApiError, match="HTTP 401"):
        load({"kubeconfig": [a, b]})
    # the files are not changed (persist_config is off by default)
    assert yaml.safe_load(open(b))["users"] == []


def test_kubeconfig_list_errors_name_the_files(split_kubeconfig, tmp_path):
    a, b = split_kubeconfig
    with pytest.raises(k8s_auth.KubernetesAuthError) as err:
        KubernetesStore({"kubeconfig": [a, b], "context": "nope"}, environ=NO_ENV)
    assert a in err.value.msg and b in err.value.msg and "nope" in err.value.msg
    assert "<dict>" not in err.value.msg
    with pytest.raises(k8s_auth.KubernetesAuthError) as err:
        KubernetesStore({"context": "kind-kubevol"},
                        environ={"KUBECONFIG": os.pathsep.join([str(tmp_path / "x"), str(tmp_path / "y")])})
    assert "does not exist" in err.value.msg and "KUBECONFIG" in err.value.msg


# -- impersonation -----------------------------------------------------------------------------------
def test_impersonation_headers_reach_the_server(api, kubeconfig, tmp_path):
    api.load(OBJECTS)
    out, _raw = run_module(tmp_path, "cluster_volume_info", {
        "cluster_source": "kubernetes", "kubeconfig": kubeconfig, "context": "kind-kubevol",
        "impersonate_user": "system:serviceaccount:kube-system:kubevol",
        "impersonate_groups": ["system:serviceaccounts", "kubevol-operators"]})
    assert not out.get("failed"), out
    assert api.log and all(e["impersonate_user"] == "system:serviceaccount:kube-system:kubevol" for e in api.log)
    assert all(e["impersonate_groups"] == ["system:serviceaccounts", "kubevol-operators"] for e in api.log)
    # from the environment (groups comma-separated, as kubernetes.core reads them), on writes too
    del api.log[:]
    out, _raw = run_module(tmp_path, "cluster_volume_record", {
        "cluster_source": "kubernetes", "kubeconfig": kubeconfig, "context": "kind-kubevol",
        "records": [{"type": "in_use", "node": "node1", "unique_volume_names": [], "in_use": True}]},
        env={"K8S_AUTH_IMPERSONATE_USER": "jane", "K8S_AUTH_IMPERSONATE_GROUPS": "g1,g2"})
    assert not out.get("failed"), out
    assert api.log and all(e["impersonate_user"] == "jane" and e["impersonate_groups"] == ["g1", "g2"]
                           for e in api.log)
    # without the options, no impersonation
    del api.log[:]
    load({"host": api.url, "api_key": TOKEN})
    assert api.log and not any(e["impersonate_user"] or e["impersonate_groups"] for e in api.log)


def test_impersonate_groups_without_a_user_is_refused(api):
    with pytest.raises(k8s_auth.KubernetesAuthError, match="impersonate_user"):
        KubernetesStore({"host": api.url, "api_key": TOKEN, "impersonate_groups": ["g"]}, environ=NO_ENV)


# -- proxy, no_proxy, proxy_headers ----------------------------------------------------------------
def test_http_proxy_with_proxy_headers_and_no_proxy(api, tmp_path):
    api.load(OBJECTS)
    with ForwardProxy() as proxy:
        cluster = load({"host": api.url, "api_key": TOKEN, "proxy": proxy.url,
                        "proxy_headers": {"proxy_basic_auth": "proxyuser:proxypass", "user_agent": "kv-test/1.0"}})
        assert len(cluster["items"]) == 3
        assert proxy.log and all(e["target"].startswith(api.url + "/api") for e in proxy.log)
        basic = "Basic " + base64.b64encode(b"proxyuser:proxypass").decode()
        assert all(e["headers"]["proxy-authorization"] == [basic] for e in proxy.log)
        assert all("kv-test/1.0" in e["headers"]["user-agent"] for e in proxy.log)
        # the API server saw the requests (through the proxy), authenticated by the token
        assert len(api.requests("GET")) == len(proxy.log) and {e["user"] for e in api.log} == {"token"}
        # no_proxy: straight to the API server
        seen = len(proxy.log)
        load({"host": api.url, "api_key": TOKEN, "proxy": proxy.url, "no_proxy": "localhost,127.0.0.0/8"})
        assert len(proxy.log) == seen and len(api.requests("GET")) == 2 * seen
        # the module, with everything from the environment
        out, _raw = run_module(tmp_path, "cluster_volume_info", {"cluster_source": "kubernetes"}, env={
            "K8S_AUTH_HOST": api.url, "K8S_AUTH_API_KEY": TOKEN, "K8S_AUTH_PROXY": proxy.url,
            "K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH": "envuser:envpass"})
        assert not out.get("failed"), out
        assert len(proxy.log) > seen
        env_basic = "Basic " + base64.b64encode(b"envuser:envpass").decode()
        assert all(e["headers"]["proxy-authorization"] == [env_basic] for e in proxy.log[seen:])
        assert "envpass" not in _raw
        seen = len(proxy.log)
        load({}, {"K8S_AUTH_HOST": api.url, "K8S_AUTH_API_KEY": TOKEN, "K8S_AUTH_PROXY": proxy.url,
                  "K8S_AUTH_NO_PROXY": "127.0.0.1"})
        assert len(proxy.log) == seen


def test_https_api_through_a_connect_proxy(certs):
    tls = {"cert": certs["server.crt"], "key": certs["server.key"]}
    with FakeApiServer(tokens=[TOKEN], tls=tls) as api, ForwardProxy() as proxy:
        api.load(OBJECTS)
        cluster = load({"host": api.url, "api_key": TOKEN, "ca_cert": certs["ca.crt"], "proxy": proxy.url,
                        "proxy_headers": {"proxy_basic_auth": "u:p"}})
        assert len(cluster["items"]) == 3
        port = api.url.rsplit(":", 1)[1]
        assert proxy.log and {e["method"] for e in proxy.log} == {"CONNECT"}
        assert {e["target"] for e in proxy.log} == {"127.0.0.1:" + port}
        assert proxy.log[0]["headers"]["proxy-authorization"] == ["Basic " + base64.b64encode(b"u:p").decode()]
        assert api.log and {e["user"] for e in api.log} == {"token"}


def test_unreachable_proxy_is_named(api):
    with pytest.raises(KubernetesApiError) as err:
        load({"host": api.url, "api_key": TOKEN, "proxy": "http://127.0.0.1:9"})
    assert "cannot reach the API server" in err.value.msg and "proxy" in err.value.msg


# -- persist_config: a refreshed OIDC token written back to the kubeconfig it came from -------------
@pytest.fixture
def oidc(tmp_path, certs):
    api = FakeApiServer(tokens=[TOKEN]).start()
    issuer = OidcIssuer(certs["server.crt"], certs["server.key"], "kubevol", "client-secret", "refresh-0",
                        on_issue=api.tokens.add).start()
    with open(certs["ca.crt"], "rb") as fh:
        ca_data = base64.b64encode(fh.read()).decode()
    expired = make_jwt({"iss": issuer.url, "sub": "oidc-user", "exp": int(time.time()) - 600})
    a = write_kubeconfig(str(tmp_path / "a.yaml"), {"other": {"server": "http://127.0.0.1:9", "token": "x"}})
    b = str(tmp_path / "b.yaml")
    with open(b, "w") as fh:
        yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "preferences": {}, "current-context": "oidc",
                        "clusters": [{"name": "oidc", "cluster": {"server": api.url}}],
                        "contexts": [{"name": "oidc", "context": {"cluster": "oidc", "user": "oidc-user"}}],
                        "users": [{"name": "oidc-user", "user": {"auth-provider": {"name": "oidc", "config": {
                            "client-id": "kubevol", "client-secret": "client-secret", "id-token": expired,
                            "idp-issuer-url": issuer.url, "idp-certificate-authority-data": ca_data,
                            "refresh-token": "refresh-0"}}}}]}, fh)
    api.load(OBJECTS)
    yield {"api": api, "issuer": issuer, "a": a, "b": b, "expired": expired}
    issuer.stop()
    api.stop()


def _oidc_config(path):
    with open(path) as fh:
        return yaml.safe_load(fh)["users"][0]["user"]["auth-provider"]["config"]


def test_persist_config_writes_the_refreshed_token_back(oidc, tmp_path):
    api, issuer, a, b = oidc["api"], oidc["issuer"], oidc["a"], oidc["b"]
    a_before = open(a).read()
    joined = os.pathsep.join([a, b])
    # Without persist_config the refreshed token is used for this run only; the file keeps the expired one.
    assert len(load({"kubeconfig": joined, "context": "oidc"})["items"]) == 3
    assert len(issuer.issued) == 1 and api.log[-1]["status"] == 200
    assert _oidc_config(b)["id-token"] == oidc["expired"]
    # With it (the module, from the environment), the new id-token and refresh-token land in b.yaml,
    # the file the user came from; a.yaml is untouched.
    out, _raw = run_module(tmp_path, "cluster_volume_info", {"cluster_source": "kubernetes", "context": "oidc"},
                           env={"KUBECONFIG": joined, "K8S_AUTH_PERSIST_CONFIG": "true"})
    assert not out.get("failed"), out
    assert len(issuer.issued) == 2
    saved = _oidc_config(b)
    assert (saved["id-token"], saved["refresh-token"]) == issuer.issued[-1]
    assert open(a).read() == a_before
    # The next run uses the saved token: no refresh, and the API accepts it.
    del api.log[:]
    assert len(load({"kubeconfig": joined, "context": "oidc", "persist_config": True})["items"]) == 3
    assert len(issuer.issued) == 2 and api.log and all(e["status"] == 200 for e in api.log)
