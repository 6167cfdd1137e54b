# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes API authentication, resolved the way kubernetes.core resolves it.

Same option names, aliases and ``K8S_AUTH_*`` environment fallbacks as kubernetes.core's
``k8s_auth_options`` (kubeconfig, context, host, api_key, username, password, validate_certs, ca_cert,
client_cert, client_key, proxy, no_proxy, proxy_headers, persist_config, impersonate_user,
impersonate_groups), and the same order:

1. ``host`` with ``api_key``, or ``username`` + ``password``, or ``client_cert`` + ``client_key``:
   enough to authenticate, no kubeconfig is read;
2. otherwise ``kubeconfig`` or ``context`` given: that kubeconfig (default ``$KUBECONFIG`` or
   ``~/.kube/config``) and context;
3. otherwise in-cluster configuration when ``KUBERNETES_SERVICE_HOST`` is set, else the default
   kubeconfig.

A kubeconfig is a dict, one path, or a list of paths (a list, or one string joined with ``:`` as in
``KUBECONFIG=a:b``): the files are merged as kubectl merges them (the first file naming a context,
cluster or user wins; the first ``current-context`` wins; missing files are skipped), by the client's
own ``KubeConfigMerger``, which is also what writes refreshed tokens back with ``persist_config``.

Explicit options then override what the kubeconfig said (the client configuration and ApiClient are built from
these settings in stores/k8s_client.py). Nothing touches the kubernetes client's global default configuration.
The ``kubernetes`` client is imported on first use
(``require_client``): it is a heavy import (docs/performance.md has its cost), and node-side
code and a run against a cluster file never need it. It works with every client generation from 24.2 on (api_key
is stored under ``authorization``, the key both the old and the new generated Configuration read).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import traceback

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import MissingLibrary

HAS_KUBERNETES = None  # not known until require_client() first runs
KUBERNETES_IMPORT_ERROR = None

DEFAULT_KUBECONFIG = "~/.kube/config"  # when neither kubeconfig nor KUBECONFIG is set
MIN_KUBERNETES_VERSION = (24, 2, 0)     # kubernetes.core's minimum; tested (scripts/test.d/10-k8s-oldest.sh)

# proxy_headers suboptions: the keyword arguments of urllib3.util.make_headers, as kubernetes.core has them.
PROXY_HEADERS_ARGSPEC = dict(
    proxy_basic_auth=dict(type="str", no_log=True),
    basic_auth=dict(type="str", no_log=True),
    user_agent=dict(type="str"),
)

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
    no_proxy=dict(type="str"),
    proxy_headers=dict(type="dict", options=PROXY_HEADERS_ARGSPEC),
    persist_config=dict(type="bool"),
    impersonate_user=dict(type="str"),
    impersonate_groups=dict(type="list", elements="str"),
)

# option -> the client Configuration attribute (kubernetes.core's AUTH_ARG_MAP, reversed); the
# impersonation options are request headers, not Configuration attributes.
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
    "no_proxy": "no_proxy",
    "proxy_headers": "proxy_headers",
    "persist_config": "persist_config",
    "impersonate_user": "impersonate_user",
    "impersonate_groups": "impersonate_groups",
}
SECRET_OPTIONS = ("api_key", "password")


def env_names(option):
    """The environment variables read for an option, in order: K8S_AUTH_<OPTION>, K8S_AUTH_<ATTRIBUTE>.

    proxy_headers is read per suboption instead (proxy_headers_env_names)."""
    names = ["K8S_AUTH_%s" % option.upper()]
    attribute = "K8S_AUTH_%s" % CONFIG_ATTRIBUTE[option].upper()
    if attribute not in names:
        names.append(attribute)
    return names


def proxy_headers_env_names():
    """{suboption: K8S_AUTH_PROXY_HEADERS_<SUBOPTION>}, the variables kubernetes.core reads for proxy_headers."""
    return dict((key, "K8S_AUTH_PROXY_HEADERS_%s" % key.upper()) for key in PROXY_HEADERS_ARGSPEC)


class KubernetesAuthError(KubevolError):
    message = "Kubernetes API authentication: {reason}"


class KubernetesClientTooOld(KubevolError):
    message = ("the kubernetes Python client {version} is too old: kubevol needs {minimum} or newer "
               "(pip install 'kubernetes>={minimum}' on the controller)")


def require_client():
    """Import the kubernetes client (once); raise MissingLibrary when it is not installed."""
    global HAS_KUBERNETES, KUBERNETES_IMPORT_ERROR  # pylint: disable=global-statement
    if HAS_KUBERNETES is None:
        try:
            import kubernetes.client  # noqa: F401  pylint: disable=unused-import
            import kubernetes.config  # noqa: F401  pylint: disable=unused-import
            HAS_KUBERNETES = True
        except ImportError:
            HAS_KUBERNETES = False
            KUBERNETES_IMPORT_ERROR = traceback.format_exc()
    if not HAS_KUBERNETES:
        raise missing_kubernetes()


def check_client_version(version=None):
    """Raise KubernetesClientTooOld when the installed client is older than MIN_KUBERNETES_VERSION.
    A version string that does not parse (a development build) is let through."""
    if version is None:
        require_client()
        import kubernetes
        version = kubernetes.__version__
    match = re.match(r"(\d+)\.(\d+)\.(\d+)", str(version))
    if match and tuple(int(part) for part in match.groups()) < MIN_KUBERNETES_VERSION:
        raise KubernetesClientTooOld(version=version, minimum=".".join(str(p) for p in MIN_KUBERNETES_VERSION))


def missing_kubernetes():
    """The MissingLibrary error for an absent kubernetes client (Ansible's missing_required_lib text)."""
    return MissingLibrary("kubernetes", "for cluster_source=kubernetes (pip install kubernetes)", KUBERNETES_IMPORT_ERROR)


def _env_bool(name, value):
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on", "y", "t"):
        return True
    if text in ("0", "false", "no", "off", "n", "f", ""):
        return False
    raise InvalidInput(field=name, value=value, reason="must be a boolean (true/false)")


def kubeconfig_paths(kubeconfig):
    """The kubeconfig files a path option names: a list, or one string of paths joined with ':'
    (``os.pathsep``) as in KUBECONFIG; each expanded (``~``), empty entries dropped."""
    if isinstance(kubeconfig, str):
        kubeconfig = kubeconfig.split(os.pathsep)
    return [os.path.expanduser(str(path)) for path in kubeconfig if str(path)]


def _from_environ(option, environ):
    for name in env_names(option):
        value = environ.get(name)
        if value in (None, ""):
            continue
        kind = K8S_AUTH_ARGSPEC[option].get("type")
        if kind == "bool":
            return _env_bool(name, value)
        if kind == "path":
            return os.path.expanduser(value)
        return value  # impersonate_groups stays a string here: split on commas in resolve_auth
    return None


def _proxy_headers(value, environ):
    """proxy_headers without unset suboptions: the option, else the K8S_AUTH_PROXY_HEADERS_* variables."""
    if value is None:
        value = dict((key, environ[name]) for key, name in proxy_headers_env_names().items()
                     if environ.get(name) not in (None, ""))
    if not isinstance(value, dict):
        raise InvalidInput(field="proxy_headers", value=value,
                           reason="must be a dict with proxy_basic_auth, basic_auth or user_agent")
    unknown = sorted(set(value) - set(PROXY_HEADERS_ARGSPEC))
    if unknown:
        raise InvalidInput(field="proxy_headers", value=sorted(value),
                           reason="unknown key %s; known: %s" % (unknown[0], ", ".join(sorted(PROXY_HEADERS_ARGSPEC))))
    return dict((key, str(v)) for key, v in value.items() if v is not None) or None


def _groups(value):
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)):
        raise InvalidInput(field="impersonate_groups", value=value, reason="must be a list of group names")
    return [str(group).strip() for group in value if str(group).strip()] or None


def resolve_auth(options, environ=None):
    """The effective auth settings: module options, else the K8S_AUTH_* environment variables.

    Returns {option: value} for the options that are set (values None are left out). A kubeconfig path
    or list of paths becomes one string joined with ``os.pathsep`` (what the client's merger reads);
    impersonate_groups becomes a list (the environment variable is comma-separated).
    """
    environ = os.environ if environ is None else environ
    unknown = sorted(k for k in options if k not in K8S_AUTH_ARGSPEC and options[k] is not None)
    if unknown:
        raise InvalidInput(field=unknown[0], value=options[unknown[0]],
                           reason="is not a Kubernetes auth option; the options are %s"
                           % ", ".join(sorted(K8S_AUTH_ARGSPEC)))
    auth = {}
    for option in K8S_AUTH_ARGSPEC:
        value = options.get(option)
        if option == "proxy_headers":
            value = _proxy_headers(value, environ)
        elif value is None:
            value = _from_environ(option, environ)
        if value is not None:
            auth[option] = value
    kubeconfig = auth.get("kubeconfig")
    if kubeconfig is not None:
        if isinstance(kubeconfig, (list, tuple)) and all(isinstance(p, str) for p in kubeconfig):
            kubeconfig = os.pathsep.join(kubeconfig)
        if isinstance(kubeconfig, str):
            paths = kubeconfig_paths(kubeconfig)
            if not paths:
                raise InvalidInput(field="kubeconfig", value=kubeconfig,
                                   reason="names no existing file; create it, point kubeconfig (or KUBECONFIG) at an "
                                          "existing file, or give a kubeconfig dict")
            auth["kubeconfig"] = os.pathsep.join(paths)
        elif not isinstance(kubeconfig, dict):
            raise InvalidInput(field="kubeconfig", value=kubeconfig,
                               reason="must be a path, a list of paths, or a kubeconfig dict")
    if auth.get("host"):
        auth["host"] = auth["host"].rstrip("/")
    if "impersonate_groups" in auth:
        groups = _groups(auth.pop("impersonate_groups"))
        if groups:
            auth["impersonate_groups"] = groups
    return auth


def describe_auth(auth):
    """What the auth settings say, without secrets, for messages."""
    parts = []
    for option in ("host", "kubeconfig", "context", "username", "ca_cert", "client_cert", "validate_certs", "proxy",
                   "no_proxy", "impersonate_user", "impersonate_groups"):
        value = auth.get(option)
        if value is None:
            continue
        if option == "kubeconfig" and isinstance(value, dict):
            value = "<dict>"
        elif option == "impersonate_groups":
            value = ",".join(value)
        parts.append("%s=%s" % (option, value))
    for option in SECRET_OPTIONS:
        if auth.get(option):
            parts.append("%s=<set>" % option)
    if auth.get("proxy_headers"):
        parts.append("proxy_headers=<%s>" % ",".join(sorted(auth["proxy_headers"])))
    return ", ".join(parts) or "defaults (in-cluster or ~/.kube/config)"
