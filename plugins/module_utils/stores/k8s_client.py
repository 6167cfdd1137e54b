# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubernetes client's Configuration and ApiClient, built from the auth settings k8s_auth.resolve_auth resolved,
in kubernetes.core's order: explicit credentials with a host; else the kubeconfig (a dict, or files merged as
kubectl merges them) and context; else the in-cluster configuration; explicit options then override the
kubeconfig's. Never the client's global default configuration.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.stores.k8s_auth import (
    CONFIG_ATTRIBUTE, DEFAULT_KUBECONFIG, KubernetesAuthError, check_client_version, kubeconfig_paths,
    require_client)


def _has(auth, *names):
    return all(auth.get(name) for name in names)


def build_configuration(auth, environ=None):
    """A kubernetes.client.Configuration for the resolved auth settings; never the global default.

    Returns (configuration, source): source says where the settings came from, for messages.
    """
    require_client()
    from kubernetes.client import Configuration
    from kubernetes.config import ConfigException
    from kubernetes.config.incluster_config import SERVICE_CERT_FILENAME, SERVICE_TOKEN_FILENAME, InClusterConfigLoader
    import urllib3
    check_client_version()
    environ = os.environ if environ is None else environ
    configuration = Configuration()
    source = "options"
    if (_has(auth, "host", "username", "password") or _has(auth, "host", "api_key")
            or _has(auth, "host", "client_cert", "client_key")):
        pass  # enough to authenticate: no kubeconfig, as kubernetes.core does
    elif auth.get("kubeconfig") is not None or auth.get("context"):
        source = _load_kubeconfig(auth, configuration, environ)
    elif environ.get("KUBERNETES_SERVICE_HOST") and not auth.get("host"):
        source = "in-cluster configuration"
        try:
            InClusterConfigLoader(token_filename=SERVICE_TOKEN_FILENAME, cert_filename=SERVICE_CERT_FILENAME,
                                  environ=environ).load_and_set(configuration)
        except ConfigException as err:
            raise KubernetesAuthError(reason="in-cluster configuration failed (KUBERNETES_SERVICE_HOST is set): %s; "
                                             "check the pod's service account token, or give kubeconfig or host" % err)
    elif not auth.get("host"):
        source = _load_kubeconfig(auth, configuration, environ)

    # Explicit options override what the kubeconfig said. The token goes under "authorization": the
    # key every client generation reads (kubernetes >= 37 also reads "BearerToken", older ones only this).
    if auth.get("host"):
        configuration.host = auth["host"]
    if auth.get("api_key"):
        configuration.api_key = {"authorization": "Bearer %s" % auth["api_key"]}
        configuration.refresh_api_key_hook = None  # a kubeconfig token must not come back
    elif auth.get("username") and auth.get("password"):
        configuration.username = auth["username"]
        configuration.password = auth["password"]
        configuration.api_key = {"authorization": configuration.get_basic_auth_token()}
        configuration.refresh_api_key_hook = None
    if auth.get("validate_certs") is not None:
        configuration.verify_ssl = bool(auth["validate_certs"])
    for option in ("ca_cert", "client_cert", "client_key", "proxy", "no_proxy"):
        if auth.get(option):
            setattr(configuration, CONFIG_ATTRIBUTE[option], auth[option])
    if auth.get("proxy_headers"):
        # As kubernetes.core: urllib3.util.make_headers(proxy_basic_auth=..., basic_auth=..., user_agent=...)
        configuration.proxy_headers = urllib3.util.make_headers(**auth["proxy_headers"])
    for option in ("ca_cert", "client_cert", "client_key"):
        path = auth.get(option)
        if path and not os.path.isfile(path):
            raise KubernetesAuthError(reason="%s %s is not a readable file" % (option, path))
    if not configuration.host or configuration.host == "http://localhost":
        if not auth.get("host") and source == "options":
            raise KubernetesAuthError(reason="no API server: give host, a kubeconfig, or run in a pod")
    return configuration, source


class _HeaderName(str):
    """A header name that is a distinct dict key even when spelled the same: the client keeps default
    headers in a dict, and impersonating several groups takes one Impersonate-Group header per group
    (kube-apiserver reads every value; one comma-joined value would name a single group). kubernetes.core
    sends them the same way."""

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


def impersonation_headers(auth):
    """[(header, value)] for impersonate_user and impersonate_groups (one Impersonate-Group per group)."""
    headers = []
    if auth.get("impersonate_user"):
        headers.append(("Impersonate-User", auth["impersonate_user"]))
    for group in auth.get("impersonate_groups") or ():
        headers.append(("Impersonate-Group", group))
    return headers


def new_api_client(configuration, auth):
    """A kubernetes.client.ApiClient for ``configuration`` that also sends the impersonation headers."""
    if auth.get("impersonate_groups") and not auth.get("impersonate_user"):
        raise KubernetesAuthError(reason="impersonate_groups needs impersonate_user (the API server refuses "
                                         "to impersonate groups without a user)")
    require_client()
    from kubernetes.client import ApiClient
    client = ApiClient(configuration)
    for name, value in impersonation_headers(auth):
        client.set_default_header(_HeaderName(name), value)
    return client


def _load_kubeconfig(auth, configuration, environ):
    """Load the kubeconfig (dict, or the merged files) into ``configuration``; returns its description."""
    from kubernetes.config import ConfigException
    from kubernetes.config.kube_config import load_kube_config, load_kube_config_from_dict
    kubeconfig = auth.get("kubeconfig")
    context = auth.get("context")
    persist = bool(auth.get("persist_config"))
    in_context = " context %s" % context if context else ""
    if isinstance(kubeconfig, dict):
        described = "kubeconfig <dict>"
        try:
            # persist_config has no file to write to here (kubernetes.core passes it on all the same).
            load_kube_config_from_dict(kubeconfig, context=context, client_configuration=configuration,
                                       persist_config=persist)
        except ConfigException as err:
            raise KubernetesAuthError(reason="cannot use %s%s: %s; check the dict and the context name"
                                             % (described, in_context, err))
        except Exception as err:  # pylint: disable=broad-except  # malformed dicts
            raise KubernetesAuthError(reason="cannot read %s: %s; check that it is a whole kubeconfig (clusters, "
                                             "contexts, users)" % (described, err))
        return described + in_context
    if kubeconfig is not None:
        given, origin = kubeconfig, "kubeconfig"
    elif environ.get("KUBECONFIG"):
        given, origin = environ["KUBECONFIG"], "KUBECONFIG"
    else:
        given, origin = DEFAULT_KUBECONFIG, "the default kubeconfig"
    paths = kubeconfig_paths(given)
    existing = [path for path in paths if os.path.exists(path)]
    described = "kubeconfig %s" % os.pathsep.join(paths)
    if not existing:
        raise KubernetesAuthError(reason="%s (%s) does not exist; give kubeconfig (or K8S_AUTH_KUBECONFIG), or host "
                                         "with api_key or username/password" % (described, origin))
    if not context and len(existing) > 1:
        # kubectl's rule: the first file that sets current-context wins. Clients before 37 do the same,
        # 37's merger lets the last one win: decide it here so every client version agrees with kubectl.
        context = _first_current_context(existing)
    try:
        # The client's KubeConfigMerger merges the files (the first one naming an entry wins, as kubectl)
        # and, with persist_config, writes a refreshed token back into the file the user came from.
        load_kube_config(config_file=os.pathsep.join(existing), context=context, client_configuration=configuration,
                         persist_config=persist)
    except ConfigException as err:
        raise KubernetesAuthError(reason="cannot use %s%s: %s; check the file%s and the context name"
                                         % (described, " (context %s)" % context if context else "", err,
                                            "s" if len(paths) > 1 else ""))
    except Exception as err:  # pylint: disable=broad-except  # yaml errors, IO errors
        raise KubernetesAuthError(reason="cannot read %s: %s" % (described, err))
    return described + in_context


def _first_current_context(paths):
    """The current-context of the first file that sets one (kubectl's merge rule), or None."""
    import yaml  # a dependency of the kubernetes client
    for path in paths:
        try:
            with open(path) as handle:
                config = yaml.safe_load(handle)
        except (OSError, yaml.YAMLError):
            continue  # the client's own read reports it
        if isinstance(config, dict) and config.get("current-context"):
            return str(config["current-context"])
    return None
