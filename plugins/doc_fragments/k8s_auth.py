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
      - Path of a kubeconfig file, or the kubeconfig as a dict. Used with O(cluster_source=kubernetes).
      - When neither this, O(context) nor O(host) is given, the in-cluster configuration is used if
        E(KUBERNETES_SERVICE_HOST) is set, else E(KUBECONFIG) or C(~/.kube/config).
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
notes:
  - The authentication options follow kubernetes.core's names, aliases and C(K8S_AUTH_*) environment
    variables. They apply to O(cluster_source=kubernetes) only and must not be set for the file store.
requirements:
  - kubernetes (the Python client)
"""
