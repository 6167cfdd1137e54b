# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes API as the API store speaks it: the resources it reads and writes (their REST paths), the
request time limits, and ``send``, one request through the client's own ApiClient in the form each client
generation has."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:  # imported only when the kubernetes store is used (stores.get_store)
    from kubernetes.client.exceptions import ApiException
except ImportError:  # KubernetesStore() raises MissingLibrary (k8s_auth.require_client)
    ApiException = None

# Seconds per request: to connect (the TCP connection and the TLS handshake, as client-go's TLSHandshakeTimeout
# bounds it: 10 s) and to wait for the answer. Each request is sent once: urllib3's own retries are off
# (configuration.retries), so a frozen API server fails a request after these, not after four times them.
DEFAULT_TIMEOUT = (10, 60)


class Resource:
    def __init__(self, kind, api_version, plural, namespaced, list_query=None, optional=False):
        self.kind = kind
        self.api_version = api_version
        self.plural = plural
        self.namespaced = namespaced
        self.list_query = list_query or []
        # a kind a cluster may not serve at all (a CRD not installed): a list answered 404 has none of it
        self.optional = optional

    @property
    def prefix(self):
        return "/api/v1" if self.api_version == "v1" else "/apis/" + self.api_version

    def path(self, name=None, namespace=None, subresource=None):
        parts = [self.prefix]
        if self.namespaced and namespace:
            parts.append("namespaces/" + _quote(namespace))
        parts.append(self.plural)
        if name is not None:
            parts.append(_quote(name))
        if subresource:
            parts.append(subresource)
        return "/".join(parts)

    @property
    def group(self):
        return self.api_version.rpartition("/")[0] if "/" in self.api_version else ""


def _quote(text):
    from urllib.parse import quote
    return quote(text, safe="")


RESOURCES = (
    Resource("Node", "v1", "nodes", False),
    Resource("Pod", "v1", "pods", True, [("fieldSelector", "spec.nodeName!=")]),
    Resource("PersistentVolume", "v1", "persistentvolumes", False),
    Resource("PersistentVolumeClaim", "v1", "persistentvolumeclaims", True),
    Resource("VolumeAttachment", "storage.k8s.io/v1", "volumeattachments", False),
    Resource("CSIDriver", "storage.k8s.io/v1", "csidrivers", False),
    Resource("StorageClass", "storage.k8s.io/v1", "storageclasses", False),
    Resource("CSINode", "storage.k8s.io/v1", "csinodes", False),
    # the external-snapshotter's CRDs (snapshot.storage.k8s.io/v1): a cluster without them has no snapshot
    Resource("VolumeSnapshotClass", "snapshot.storage.k8s.io/v1", "volumesnapshotclasses", False, optional=True),
    Resource("VolumeSnapshot", "snapshot.storage.k8s.io/v1", "volumesnapshots", True, optional=True),
    Resource("VolumeSnapshotContent", "snapshot.storage.k8s.io/v1", "volumesnapshotcontents", False, optional=True),
)
BY_KIND = dict((r.kind, r) for r in RESOURCES)
LEASE = Resource("Lease", "coordination.k8s.io/v1", "leases", True)
# the run's plan record (run/plan_record_k8s.py), in the run lock's namespace; never in BY_KIND: no record names one
CONFIGMAP = Resource("ConfigMap", "v1", "configmaps", True)
# read one by one (store.get), for an external CSI driver's secret references; never listed
BY_KIND["Secret"] = Resource("Secret", "v1", "secrets", True)


def send(api_client, method, path, query, headers, body, timeout):
    """One request through ``api_client.call_api``; returns (HTTP status, raw body) for any status.

    The generated client changed shape in kubernetes 37: ``param_serialize`` builds the request and
    ``call_api(method, url, headers, body, post_params, _request_timeout)`` sends it and returns the
    response whatever its status. Before (24.2 to 36.x), ``call_api(resource_path, method, ...)`` did
    both and raised ApiException for a non-2xx answer. Both apply the configuration's auth settings
    (``BearerToken``) and the client's default headers. Connection and TLS failures raise (ApiException
    with status 0, urllib3 errors, OSError).
    """
    if hasattr(api_client, "param_serialize"):  # kubernetes >= 37
        request = api_client.param_serialize(method, path, query_params=query, header_params=headers, body=body,
                                             auth_settings=["BearerToken"])
        response = api_client.call_api(*request, _request_timeout=timeout)
        return response.status, response.read()
    try:  # kubernetes 24.2 - 36: the raw urllib3 response (not preloaded, not deserialized)
        response = api_client.call_api(path, method, query_params=query, header_params=headers, body=body,
                                       auth_settings=["BearerToken"], _preload_content=False,
                                       _return_http_data_only=True, _request_timeout=timeout)
    except ApiException as err:
        if not err.status:
            raise
        return err.status, err.body
    try:
        return response.status, response.data
    finally:
        response.release_conn()
