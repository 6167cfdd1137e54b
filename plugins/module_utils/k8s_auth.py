# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes API authentication, resolved the way kubernetes.core resolves it.

Same option names and aliases as kubernetes.core's ``k8s_auth_options`` (kept to kubeconfig, context,
host, api_key, username, password, validate_certs, ca_cert, client_cert, client_key, proxy), the same
``K8S_AUTH_*`` environment fallbacks, and the same order:

1. ``host`` with ``api_key``, or ``username`` + ``password``, or ``client_cert`` + ``client_key``:
   enough to authenticate, no kubeconfig is read;
2. otherwise ``kubeconfig`` or ``context`` given: that kubeconfig (default ``~/.kube/config``, or
   ``$KUBECONFIG``) and context;
3. otherwise in-cluster configuration when ``KUBERNETES_SERVICE_HOST`` is set, else the default
   kubeconfig.

Explicit options then override what the kubeconfig said. Nothing here touches the kubernetes
client's global default configuration. This file imports ``kubernetes`` lazily (guarded), so node-side
code never needs it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import traceback

from ansible_collections.kubevol.volumes.plugins.module_utils.errors import InvalidInput, KubevolError

KUBERNETES_IMPORT_ERROR = None
try:
    import kubernetes  # noqa: F401  pylint: disable=unused-import
    from kubernetes.client import Configuration
    from kubernetes.config import ConfigException
    from kubernetes.config.incluster_config import SERVICE_CERT_FILENAME, SERVICE_TOKEN_FILENAME, InClusterConfigLoader
    from kubernetes.config.kube_config import KUBE_CONFIG_DEFAULT_LOCATION, load_kube_config, load_kube_config_from_dict
    HAS_KUBERNETES = True
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()

# The module options (doc fragment kubevol.volumes.k8s_auth). No argspec defaults and no argspec
# env fallbacks: the environment is read at run time (resolve_auth), as kubernetes.core does, so the
# options stay None for the file store.
K8S_AUTH_ARGSPEC = dict(
    kubeconfig=dict(type="raw"),
    context=dict(type="str"),
    host=dict(type="str"),
    api_key=dict(type="str", no_log=True),
    username=dict(type="str"),
    password=dict(type="str", no_log=True),
    validate_certs=dict(type="bool", aliases=["verify_ssl"]),
    ca_cert=dict(type="path", aliases=["ssl_ca_cert"]),
    client_cert=dict(type="path", aliases=["cert_file"]),
    client_key=dict(type="path", aliases=["key_file"], no_log=False),
    proxy=dict(type="str"),
)

# option -> the client Configuration attribute (kubernetes.core's AUTH_ARG_MAP, reversed).
CONFIG_ATTRIBUTE = {
    "kubeconfig": "kubeconfig",
    "context": "context",
    "host": "host",
    "api_key": "api_key",
    "username": "username",
    "password": "password",
    "validate_certs": "verify_ssl",
    "ca_cert": "ssl_ca_cert",
    "client_cert": "cert_file",
    "client_key": "key_file",
    "proxy": "proxy",
}
SECRET_OPTIONS = ("api_key", "password")


def env_names(option):
    """The environment variables read for an option, in order: K8S_AUTH_<OPTION>, K8S_AUTH_<ATTRIBUTE>."""
    names = ["K8S_AUTH_%s" % option.upper()]
    attribute = "K8S_AUTH_%s" % CONFIG_ATTRIBUTE[option].upper()
    if attribute not in names:
        names.append(attribute)
    return names


class KubernetesAuthError(KubevolError):
    message = "Kubernetes API authentication: {reason}"


def missing_kubernetes():
    """The MissingLibrary error for an absent kubernetes client (Ansible's missing_required_lib text)."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import MissingLibrary
    return MissingLibrary("kubernetes", "for cluster_source=kubernetes (pip install kubernetes)", KUBERNETES_IMPORT_ERROR)


def _env_bool(name, value):
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on", "y", "t"):
        return True
    if text in ("0", "false", "no", "off", "n", "f", ""):
        return False
    raise InvalidInput(field=name, value=value, reason="must be a boolean (true/false)")


def resolve_auth(options, environ=None):
    """The effective auth settings: module options, else the K8S_AUTH_* environment variables.

    Returns {option: value} for the options that are set (values None are left out).
    """
    environ = os.environ if environ is None else environ
    auth = {}
    for option in K8S_AUTH_ARGSPEC:
        value = options.get(option)
        if value is None:
            for name in env_names(option):
                if environ.get(name) not in (None, ""):
                    value = environ[name]
                    if K8S_AUTH_ARGSPEC[option].get("type") == "bool":
                        value = _env_bool(name, value)
                    elif K8S_AUTH_ARGSPEC[option].get("type") == "path":
                        value = os.path.expanduser(value)
                    break
        if value is not None:
            auth[option] = value
    kubeconfig = auth.get("kubeconfig")
    if kubeconfig is not None and not isinstance(kubeconfig, (str, dict)):
        raise InvalidInput(field="kubeconfig", value=kubeconfig, reason="must be a path or a kubeconfig dict")
    if isinstance(kubeconfig, str):
        auth["kubeconfig"] = os.path.expanduser(kubeconfig)
    if auth.get("host"):
        auth["host"] = auth["host"].rstrip("/")
    return auth


def describe_auth(auth):
    """What the auth settings say, without secrets, for messages."""
    parts = []
    for option in ("host", "kubeconfig", "context", "username", "ca_cert", "client_cert", "validate_certs", "proxy"):
        value = auth.get(option)
        if value is None:
            continue
        if option == "kubeconfig" and isinstance(value, dict):
            value = "<dict>"
        parts.append("%s=%s" % (option, value))
    for option in SECRET_OPTIONS:
        if auth.get(option):
            parts.append("%s=<set>" % option)
    return ", ".join(parts) or "defaults (in-cluster or ~/.kube/config)"


def _has(auth, *names):
    return all(auth.get(name) for name in names)


def build_configuration(auth, environ=None):
    """A kubernetes.client.Configuration for the resolved auth settings; never the global default."""
    if not HAS_KUBERNETES:
        raise missing_kubernetes()
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

    # Explicit options override what the kubeconfig said.
    if auth.get("host"):
        configuration.host = auth["host"]
    if auth.get("api_key"):
        configuration.api_key = {"BearerToken": "Bearer %s" % auth["api_key"]}
        configuration.refresh_api_key_hook = None  # a kubeconfig token must not come back
    elif auth.get("username") and auth.get("password"):
        configuration.username = auth["username"]
        configuration.password = auth["password"]
        configuration.api_key = {"BearerToken": configuration.get_basic_auth_token()}
        configuration.refresh_api_key_hook = None
    if auth.get("validate_certs") is not None:
        configuration.verify_ssl = bool(auth["validate_certs"])
    for option in ("ca_cert", "client_cert", "client_key", "proxy"):
        if auth.get(option):
            setattr(configuration, CONFIG_ATTRIBUTE[option], auth[option])
    for option in ("ca_cert", "client_cert", "client_key"):
        path = auth.get(option)
        if path and not os.path.isfile(path):
            raise KubernetesAuthError(reason="%s %s is not a readable file" % (option, path))
    if not configuration.host or configuration.host == "http://localhost":
        if not auth.get("host") and source == "options":
            raise KubernetesAuthError(reason="no API server: give host, a kubeconfig, or run in a pod")
    return configuration, source


def _load_kubeconfig(auth, configuration, environ):
    kubeconfig = auth.get("kubeconfig")
    context = auth.get("context")
    try:
        if isinstance(kubeconfig, dict):
            load_kube_config_from_dict(kubeconfig, context=context, client_configuration=configuration,
                                       persist_config=False)
            return "kubeconfig <dict>%s" % (" context %s" % context if context else "")
        path = kubeconfig or environ.get("KUBECONFIG") or os.path.expanduser(KUBE_CONFIG_DEFAULT_LOCATION)
        path = path.split(os.pathsep)[0] if not kubeconfig else path
        if not os.path.exists(os.path.expanduser(path)):
            raise KubernetesAuthError(reason="kubeconfig %s does not exist; give kubeconfig (or K8S_AUTH_KUBECONFIG), "
                                             "or host with api_key or username/password" % path)
        load_kube_config(config_file=os.path.expanduser(path), context=context, client_configuration=configuration,
                         persist_config=False)
        return "kubeconfig %s%s" % (path, " context %s" % context if context else "")
    except KubernetesAuthError:
        raise
    except ConfigException as err:
        raise KubernetesAuthError(reason="cannot use kubeconfig %s%s: %s; check the file and the context name"
                                         % (kubeconfig if isinstance(kubeconfig, str) else "<dict>",
                                            " (context %s)" % context if context else "", err))
    except Exception as err:  # pylint: disable=broad-except  # yaml errors, IO errors
        raise KubernetesAuthError(reason="cannot read kubeconfig %s: %s" % (kubeconfig or "(default)", err))
