# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes API authentication options, named as kubernetes.core names them (k8s_auth_options)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  kubeconfig:
    description:
      - Path of a kubeconfig file, a list of paths, or the kubeconfig as a dict. Used with
        O(cluster_source=kubernetes).
      - Several files (a list, or one string of paths separated by V(:) as in E(KUBECONFIG)) are merged as
        kubectl merges them; the first file that names a context, cluster or user wins, the first
        C(current-context) wins, and files that do not exist are skipped. The context may be in any of them.
      - When neither this, O(context) nor O(host) is given, the in-cluster configuration is used if
        E(KUBERNETES_SERVICE_HOST) is set, else E(KUBECONFIG) (also a V(:)-separated list) or C(~/.kube/config).
      - Can also be given with E(K8S_AUTH_KUBECONFIG).
    type: raw
  context:
    description:
      - The kubeconfig context to use; the kubeconfig's current context when not given.
      - Can also be given with E(K8S_AUTH_CONTEXT).
    type: str
  host:
    description:
      - The API server URL, for example C(https://10.0.0.1:6443).
      - With O(api_key), or O(username) and O(password), or O(client_cert) and O(client_key), no kubeconfig is read.
      - Can also be given with E(K8S_AUTH_HOST).
    type: str
  api_key:
    description:
      - A bearer token for the API server.
      - Can also be given with E(K8S_AUTH_API_KEY).
    type: str
  username:
    description:
      - User name for HTTP basic authentication, with O(password).
      - Can also be given with E(K8S_AUTH_USERNAME).
    type: str
  password:
    description:
      - Password for HTTP basic authentication, with O(username).
      - Can also be given with E(K8S_AUTH_PASSWORD).
    type: str
  validate_certs:
    description:
      - Whether to verify the API server's TLS certificate.
      - Can also be given with E(K8S_AUTH_VERIFY_SSL).
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path of the CA certificate that signed the API server's certificate.
      - Can also be given with E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path of a client certificate for TLS client authentication.
      - Can also be given with E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path of the key of O(client_cert).
      - Can also be given with E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  proxy:
    description:
      - An HTTP proxy URL for the API server connection.
      - Can also be given with E(K8S_AUTH_PROXY).
    type: str
  no_proxy:
    description:
      - Comma-separated hosts, domains, IP addresses or CIDR ranges reached without O(proxy), for example
        V(localhost,.local,127.0.0.1,10.0.0.0/8).
      - Can also be given with E(K8S_AUTH_NO_PROXY).
    type: str
  proxy_headers:
    description:
      - Headers sent to O(proxy), built with urllib3's C(make_headers).
    type: dict
    suboptions:
      proxy_basic_auth:
        description:
          - V(username:password) for the proxy's basic authentication (a C(Proxy-Authorization) header).
          - Can also be given with E(K8S_AUTH_PROXY_HEADERS_PROXY_BASIC_AUTH).
        type: str
      basic_auth:
        description:
          - V(username:password) for a basic C(Authorization) header.
          - Can also be given with E(K8S_AUTH_PROXY_HEADERS_BASIC_AUTH).
        type: str
      user_agent:
        description:
          - The C(User-Agent) sent to the proxy, for example V(kubevol/1.0).
          - Can also be given with E(K8S_AUTH_PROXY_HEADERS_USER_AGENT).
        type: str
  persist_config:
    description:
      - Whether to save refreshed credentials back to the kubeconfig file they came from.
      - With a user whose token the client refreshes (an C(oidc) auth-provider with a refresh token, or
        C(gcp)), the client uses the new token for this run; with V(true) it also writes it (and the new
        refresh token) into that kubeconfig file, so the next run does not use the old, possibly expired, one.
      - Has no effect when O(kubeconfig) is a dict, or for credentials from an C(exec) plugin.
      - Defaults to V(false). Can also be given with E(K8S_AUTH_PERSIST_CONFIG).
    type: bool
  impersonate_user:
    description:
      - The user to act as (a C(Impersonate-User) header); the authenticated user needs the RBAC verb
        C(impersonate) on it.
      - Can also be given with E(K8S_AUTH_IMPERSONATE_USER).
    type: str
  impersonate_groups:
    description:
      - Groups to act as, with O(impersonate_user) (one C(Impersonate-Group) header each).
      - Can also be given with E(K8S_AUTH_IMPERSONATE_GROUPS), comma-separated, for example V(group1,group2).
    type: list
    elements: str
notes:
  - The authentication options follow kubernetes.core's names, aliases and C(K8S_AUTH_*) environment
    variables. They apply to O(cluster_source=kubernetes) only and must not be set for the file store.
  - Works with the kubernetes Python client 24.2.0 and newer.
requirements:
  - kubernetes >= 24.2.0 (the Python client)
"""
