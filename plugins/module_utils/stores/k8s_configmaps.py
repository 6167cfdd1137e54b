# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ConfigMap requests of the Kubernetes API store, for the run's plan record (run/plan_record_k8s.py): create,
get, list by label, delete one, delete a collection by label. Each in one namespace (the run lock's), through the
store's own request path (kubernetes.py ``_request``: its auth, TLS, timeouts) and its messages (k8s_errors.py: a
403 names the verb, the resource, the namespace and what to grant).

The limit they live within: kube-apiserver refuses a ConfigMap whose ``data`` and ``binaryData`` hold more than
1 MiB (k8s.io/kubernetes pkg/apis/core/validation ValidateConfigMap: ``core.MaxSecretSize``, 1048576 bytes; the
``binaryData`` values counted decoded), and etcd a request over 1.5 MiB (its --max-request-bytes default).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.stores.k8s_api import CONFIGMAP
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.k8s_errors import KubernetesApiError

MAX_DATA_BYTES = 1048576  # ValidateConfigMap's limit (core.MaxSecretSize)


def _target(namespace, name):
    return "ConfigMap/%s/%s" % (namespace, name)


def create(store, namespace, body):
    """POST a ConfigMap into ``namespace``; False when one of its name exists already (AlreadyExists), True when
    created."""
    status, data = store._request("POST", CONFIGMAP.path(namespace=namespace), body=body)  # pylint: disable=protected-access
    if status in (200, 201):
        return True
    if status == 409:
        return False
    raise store._error("POST", CONFIGMAP, _target(namespace, body["metadata"]["name"]), status, data)  # pylint: disable=protected-access


def get(store, namespace, name):
    """One ConfigMap, or None when it does not exist."""
    status, data = store._request("GET", CONFIGMAP.path(name, namespace))  # pylint: disable=protected-access
    if status == 404:
        return None
    if status != 200 or not isinstance(data, dict):
        raise store._error("GET", CONFIGMAP, _target(namespace, name), status, data)  # pylint: disable=protected-access
    return data


def list_labelled(store, namespace, selector):
    """Every ConfigMap of ``namespace`` with the labels of ``selector`` (``a=b,c=d``), paged as the store pages."""
    items, token = [], None
    while True:
        query = [("labelSelector", selector), ("limit", store.page_size)]
        if token:
            query.append(("continue", token))
        status, data = store._request("GET", CONFIGMAP.path(namespace=namespace), query)  # pylint: disable=protected-access
        if status == 410 and token:  # the continue token expired: start over, as client-go's pager does
            items, token = [], None
            continue
        if status != 200 or not isinstance(data, dict) or not isinstance(data.get("items"), list):
            if status == 200:
                raise KubernetesApiError(store=store.describe(), verb="list", target="configmaps",
                                         reason="the answer is not a Kubernetes List")
            raise store._error("GET", CONFIGMAP, "configmaps in %s (list)" % namespace, status, data)  # pylint: disable=protected-access
        items.extend(obj for obj in data["items"] if isinstance(obj, dict))
        token = (data.get("metadata") or {}).get("continue")
        if not token:
            return items


def delete(store, namespace, name):
    """DELETE one ConfigMap; one already gone is no error."""
    status, data = store._request("DELETE", CONFIGMAP.path(name, namespace))  # pylint: disable=protected-access
    if status not in (200, 202, 404):
        raise store._error("DELETE", CONFIGMAP, _target(namespace, name), status, data)  # pylint: disable=protected-access


def delete_labelled(store, namespace, selector):
    """DELETE the collection of ``namespace``'s ConfigMaps with the labels of ``selector``: one request for all."""
    status, data = store._request("DELETE", CONFIGMAP.path(namespace=namespace),  # pylint: disable=protected-access
                                  [("labelSelector", selector)])
    if status not in (200, 202, 404):
        raise store._error("DELETE", CONFIGMAP, "configmaps %s in %s (collection)" % (selector, namespace),  # pylint: disable=protected-access
                           status, data)
