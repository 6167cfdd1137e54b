# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_auth: option and environment handling, merged kubeconfig lists, and what each option sets on the
client's Configuration and ApiClient (no server; the fake API server tests are in
tests/integration/kubeapi/test_auth.py and tests/unit/plugins/module_utils/stores/test_kubernetes_auth.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import os

import pytest
import yaml

pytest.importorskip("kubernetes")

from ansible_collections.kubevol.volumes.plugins.doc_fragments.k8s_auth import ModuleDocFragment  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import k8s_auth  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores import k8s_client  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput  # noqa: E402

NO_ENV = {}


def kubeconfig(path, contexts, current=None):
    """contexts: {name: server}; each context has its own cluster and a token user of the same name."""
    config = {"apiVersion": "v1", "kind": "Config", "preferences": {},
              "clusters": [{"name": n, "cluster": {"server": s}} for n, s in contexts.items()],
              "users": [{"name": n, "user": {"token": "token-" + n}} for n in contexts],
              "contexts": [{"name": n, "context": {"cluster": n, "user": n}} for n in contexts]}
    if current:
        config["current-context"] = current
    with open(str(path), "w") as fh:
        yaml.safe_dump(config, fh)
    return str(path)


def bearer(configuration):
    return configuration.auth_settings()["BearerToken"]["value"]


# -- resolve_auth -------------------------------------------------------------------------------------
def test_kubeconfig_lists_become_one_joined_string(monkeypatch):
    monkeypatch.setenv("HOME", "/home/kv")
    joined = os.pathsep.join(["/a.yaml", "/home/kv/b.yaml"])
    assert k8s_auth.resolve_auth({"kubeconfig": ["/a.yaml", "~/b.yaml"]}, NO_ENV)["kubeconfig"] == joined
    assert k8s_auth.resolve_auth({"kubeconfig": "/a.yaml:~/b.yaml:"}, NO_ENV)["kubeconfig"] == joined
    assert k8s_auth.resolve_auth({}, {"K8S_AUTH_KUBECONFIG": "/a.yaml:~/b.yaml"})["kubeconfig"] == joined
    assert k8s_auth.kubeconfig_paths(joined) == ["/a.yaml", "/home/kv/b.yaml"]
    as_dict = {"apiVersion": "v1", "clusters": []}
    assert k8s_auth.resolve_auth({"kubeconfig": as_dict}, NO_ENV)["kubeconfig"] is as_dict
    for bad in ([], ":", 42, ["/a.yaml", 3]):
        with pytest.raises(InvalidInput, match="kubeconfig"):
            k8s_auth.resolve_auth({"kubeconfig": bad}, NO_ENV)


def test_new_options_from_the_environment():
    env = {"K8S_AUTH_NO_PROXY": "localhost,.local", "K8S_AUTH_PERSIST_CONFIG": "yes",
           "K8S_AUTH_IMPERSONATE_USER": "jane", "K8S_AUTH_IMPERSONATE_GROUPS": "g1,,g2 ",
           "K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH": "u:p", "K8S_AUTH_PROXY_HEADERS_USER_AGENT": "kv/1"}
    auth = k8s_auth.resolve_auth({}, env)
    assert auth["no_proxy"] == "localhost,.local" and auth["persist_config"] is True
    assert auth["impersonate_user"] == "jane" and auth["impersonate_groups"] == ["g1", "g2"]
    assert auth["proxy_headers"] == {"proxy_basic_auth": "u:p", "user_agent": "kv/1"}
    # options win; a proxy_headers option (as AnsibleModule passes it, unset suboptions None) replaces the
    # environment's headers whole, as kubernetes.core does
    auth = k8s_auth.resolve_auth({"persist_config": False, "impersonate_groups": ["x"],
                                  "proxy_headers": {"basic_auth": "a:b", "proxy_basic_auth": None, "user_agent": None}}, env)
    assert auth["persist_config"] is False and auth["impersonate_groups"] == ["x"]
    assert auth["proxy_headers"] == {"basic_auth": "a:b"}
    with pytest.raises(InvalidInput, match="K8S_AUTH_PERSIST_CONFIG"):
        k8s_auth.resolve_auth({}, {"K8S_AUTH_PERSIST_CONFIG": "maybe"})
    with pytest.raises(InvalidInput, match="proxy_headers"):
        k8s_auth.resolve_auth({"proxy_headers": {"proxy_auth": "u:p"}}, NO_ENV)
    with pytest.raises(InvalidInput, match="not a Kubernetes auth option"):
        k8s_auth.resolve_auth({"impersonate": "jane"}, NO_ENV)
    assert k8s_auth.resolve_auth({}, NO_ENV) == {}


def test_env_names_match_kubernetes_core():
    assert k8s_auth.env_names("no_proxy") == ["K8S_AUTH_NO_PROXY"]
    assert k8s_auth.env_names("persist_config") == ["K8S_AUTH_PERSIST_CONFIG"]
    assert k8s_auth.env_names("impersonate_user") == ["K8S_AUTH_IMPERSONATE_USER"]
    assert k8s_auth.env_names("impersonate_groups") == ["K8S_AUTH_IMPERSONATE_GROUPS"]
    assert k8s_auth.env_names("validate_certs") == ["K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"]
    assert k8s_auth.proxy_headers_env_names() == {
        "proxy_basic_auth": "K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH",
        "basic_auth": "K8S_AUTH_PROXY_HEADERS_BASIC_AUTH",
        "user_agent": "K8S_AUTH_PROXY_HEADERS_USER_AGENT"}


def test_describe_auth_hides_secrets():
    text = k8s_auth.describe_auth({"host": "https://h", "api_key": "s3cret", "impersonate_user": "jane",
                                   "impersonate_groups": ["g1", "g2"],
                                   "proxy_headers": {"proxy_basic_auth": "u:pw", "user_agent": "kv"}})
    assert "s3cret" not in text and "pw" not in text
    assert "impersonate_groups=g1,g2" in text and "proxy_headers=<proxy_basic_auth,user_agent>" in text


def test_clients_older_than_24_2_are_refused_clearly():
    for ok in ("24.2.0", "24.2.0b1", "37.0.2", "100.0.0", "unknown"):
        k8s_auth.check_client_version(ok)
    for old in ("24.1.9", "23.6.0", "12.0.1"):
        with pytest.raises(k8s_auth.KubernetesClientTooOld) as err:
            k8s_auth.check_client_version(old)
        assert old in err.value.msg and "24.2.0 or newer" in err.value.msg
    k8s_auth.check_client_version()  # the installed one


# -- merged kubeconfig lists --------------------------------------------------------------------------
def test_merged_kubeconfig_with_the_context_in_the_second_file(tmp_path):
    a = kubeconfig(tmp_path / "a.yaml", {"a": "https://a.example:6443"}, current="a")
    b = kubeconfig(tmp_path / "b.yaml", {"b": "https://b.example:6443"}, current="b")
    missing = str(tmp_path / "missing.yaml")
    for auth, environ in (({"kubeconfig": [a, missing, b], "context": "b"}, NO_ENV),
                          ({"context": "b"}, {"KUBECONFIG": os.pathsep.join([a, b])}),
                          ({"context": "b"}, {"K8S_AUTH_KUBECONFIG": os.pathsep.join([a, b])})):
        configuration, source = k8s_client.build_configuration(k8s_auth.resolve_auth(auth, environ), environ)
        assert configuration.host == "https://b.example:6443" and bearer(configuration) == "Bearer token-b"
        assert source.endswith(" context b") and b in source
    # no context: the first file that sets current-context wins (kubectl), whatever the client version
    configuration, _source = k8s_client.build_configuration({}, {"KUBECONFIG": os.pathsep.join([a, b])})
    assert configuration.host == "https://a.example:6443"
    c = kubeconfig(tmp_path / "c.yaml", {"c": "https://c.example:6443"})
    configuration, _source = k8s_client.build_configuration({}, {"KUBECONFIG": os.pathsep.join([c, b])})
    assert configuration.host == "https://b.example:6443"
    # a context in neither file names both files (and no "<dict>")
    with pytest.raises(k8s_auth.KubernetesAuthError) as err:
        k8s_client.build_configuration({"context": "z"}, {"KUBECONFIG": os.pathsep.join([a, b])})
    assert a in err.value.msg and b in err.value.msg and "<dict>" not in err.value.msg
    with pytest.raises(k8s_auth.KubernetesAuthError, match="does not exist"):
        k8s_client.build_configuration(k8s_auth.resolve_auth({"kubeconfig": [missing]}, NO_ENV), NO_ENV)


def test_persist_config_reaches_the_client_loader(tmp_path, monkeypatch):
    a = kubeconfig(tmp_path / "a.yaml", {"a": "https://a.example:6443"}, current="a")
    seen = []
    from kubernetes.config import kube_config  # k8s_client imports load_kube_config from here when it needs it
    real = kube_config.load_kube_config

    def spy(**kwargs):
        seen.append(kwargs["persist_config"])
        return real(**kwargs)

    monkeypatch.setattr(kube_config, "load_kube_config", spy)
    k8s_client.build_configuration({"kubeconfig": a}, NO_ENV)
    k8s_client.build_configuration({"kubeconfig": a, "persist_config": True}, NO_ENV)
    assert seen == [False, True]
    # a dict has no file to write to: accepted, nothing written (as with kubernetes.core)
    with open(a) as fh:
        as_dict = yaml.safe_load(fh)
    configuration, source = k8s_client.build_configuration({"kubeconfig": as_dict, "persist_config": True}, NO_ENV)
    assert configuration.host == "https://a.example:6443" and source == "kubeconfig <dict>"


# -- what the options set -----------------------------------------------------------------------------
def test_proxy_options_set_the_configuration():
    configuration, source = k8s_client.build_configuration({
        "host": "https://h:6443", "api_key": "t", "proxy": "http://proxy:3128", "no_proxy": "10.0.0.0/8,.local",
        "proxy_headers": {"proxy_basic_auth": "u:p", "basic_auth": "a:b", "user_agent": "kv/1"}}, NO_ENV)
    assert source == "options"
    assert configuration.proxy == "http://proxy:3128" and configuration.no_proxy == "10.0.0.0/8,.local"
    assert configuration.proxy_headers == {
        "proxy-authorization": "Basic " + base64.b64encode(b"u:p").decode(),
        "authorization": "Basic " + base64.b64encode(b"a:b").decode(),
        "user-agent": "kv/1"}


def test_impersonation_headers_on_the_api_client():
    auth = {"host": "https://h:6443", "api_key": "t", "impersonate_user": "jane", "impersonate_groups": ["g1", "g2"]}
    configuration, _source = k8s_client.build_configuration(auth, NO_ENV)
    client = k8s_client.new_api_client(configuration, auth)
    try:
        headers = [(str(k), v) for k, v in client.default_headers.items() if str(k).startswith("Impersonate")]
        assert headers == [("Impersonate-User", "jane"), ("Impersonate-Group", "g1"), ("Impersonate-Group", "g2")]
    finally:
        client.close()
    with pytest.raises(k8s_auth.KubernetesAuthError, match="impersonate_user"):
        k8s_client.new_api_client(configuration, {"impersonate_groups": ["g1"]})


def test_doc_fragment_matches_the_argspec():
    options = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert sorted(options) == sorted(k8s_auth.K8S_AUTH_ARGSPEC)
    for name, spec in k8s_auth.K8S_AUTH_ARGSPEC.items():
        doc = options[name]
        assert doc["type"] == spec["type"], name
        assert doc.get("aliases", []) == spec.get("aliases", []), name
        assert doc.get("elements") == spec.get("elements"), name
        if "options" in spec:
            assert sorted(doc["suboptions"]) == sorted(spec["options"]), name
        for env in (k8s_auth.env_names(name) if name != "proxy_headers" else []):
            if env == k8s_auth.env_names(name)[-1]:
                assert "E(%s)" % env in " ".join(doc["description"]), (name, env)
    for key, env in k8s_auth.proxy_headers_env_names().items():
        assert "E(%s)" % env in " ".join(options["proxy_headers"]["suboptions"][key]["description"])


def test_a_run_against_a_cluster_file_never_imports_the_client():
    """Importing the kubernetes client takes about 0.3 s: the controller-side code of a file-store run (the plan,
    the lock, the records, the role's filters) must not pay it; only the kubernetes store imports it."""
    import subprocess
    import sys
    code = ("import sys\n"
            "import ansible_collections.kubevol.volumes.plugins.module_utils.%s\n"
            "import ansible_collections.kubevol.volumes.plugins.filter.reconcile\n"
            "from ansible_collections.kubevol.volumes.plugins.module_utils.stores import get_store\n"
            "assert 'kubernetes' not in sys.modules, 'imported'\n"
            "get_store('kubernetes', host='http://127.0.0.1:1', api_key='t')\n"
            "assert 'kubernetes' in sys.modules\n")
    for module in ("run.plan_task", "run.record_task", "run.run_lock_task", "run.executor"):
        res = subprocess.run([sys.executable, "-c", code % module], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             universal_newlines=True, check=False)
        assert res.returncode == 0, (module, res.stderr[-2000:])
