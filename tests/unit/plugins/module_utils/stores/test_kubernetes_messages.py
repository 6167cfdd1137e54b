# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the Kubernetes API store says when the API refuses (403: every permission kubevol needs, the docs' RBAC
the same list) or does not answer (which timeout expired, its value, the request, what to do)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import socket
import threading
import time

import pytest
import yaml

pytest.importorskip("kubernetes")

from fakeapi import FakeApiServer, make_certs, write_kubeconfig  # noqa: E402  (tests/ is on sys.path)

from ansible_collections.kubevol.volumes.plugins.module_utils.provision.snapshot import snapshot_created  # noqa
from ansible_collections.kubevol.volumes.plugins.module_utils.run import plan_record  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.k8s_errors import (  # noqa: E402
    PERMISSIONS, rbac_rules)
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import (  # noqa: E402
    DEFAULT_TIMEOUT, KubernetesApiError, KubernetesStore)

TOKEN = "test-token"
DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "..", "docs", "stores.md")
DRIVER = "loop.kubevol.io"


def store_for(server_url, tmp_path, **options):
    kubeconfig = write_kubeconfig(str(tmp_path / "kubeconfig"), {"x": dict(
        {"server": server_url, "token": TOKEN}, **options)})
    return KubernetesStore({"kubeconfig": kubeconfig}, environ={}, sleep=lambda s: None,
                           request_timeout=(0.5, 1.5))


@pytest.fixture
def api():
    server = FakeApiServer(tokens=[TOKEN]).start()
    server.load([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}, "status": {}}])
    yield server
    server.stop()


def every_permission_in(msg):
    for group, resource, verbs in PERMISSIONS:
        assert "%s on %s (%s)" % ("/".join(verbs), resource, group or "core") in msg, (resource, msg)
    assert "get/create/update on leases (coordination.k8s.io) in namespace kube-system" in msg
    assert "get/list/create/delete/deletecollection on configmaps (core) in namespace kube-system" in msg


def test_forbidden_lists_every_permission_leases_included(api, tmp_path):
    api.deny.add(("patch", "nodes/status"))
    store = store_for(api.url, tmp_path)
    try:
        with pytest.raises(KubernetesApiError) as err:
            store.apply([{"type": "in_use", "node": "node1", "unique_volume_names": ["kubernetes.io/csi/d^h"],
                          "in_use": True}])
        assert "HTTP 403" in err.value.msg and "needs verb 'patch' on nodes/status (core)" in err.value.msg
        every_permission_in(err.value.msg)
        # the run lock's own 403 says the same, in the Lease's namespace
        api.deny = {("create", "leases")}
        store.use_run_lock({"lease_namespace": "kubevol-system"})
        with pytest.raises(KubernetesApiError) as err:
            store.acquire_run_lock("run-1", timeout=0)
        assert "needs verb 'create' on leases (coordination.k8s.io)" in err.value.msg
        assert "get/create/update on leases (coordination.k8s.io) in namespace kubevol-system" in err.value.msg
    finally:
        store.close()


def test_the_docs_rbac_is_the_list_the_store_uses():
    """docs/stores.md section 7 RBAC: the ClusterRole and the Role are PERMISSIONS, nothing more or less."""
    with open(DOCS) as fh:
        text = fh.read()
    section = text[text.index("### RBAC"):]
    block = re.search(r"```yaml\n(.*?)```", section, re.S).group(1)
    documents = dict((d["kind"], d) for d in yaml.safe_load_all(block))
    assert documents["ClusterRole"]["rules"] == rbac_rules(namespaced=False)
    assert documents["Role"]["rules"] == rbac_rules(namespaced=True)
    assert documents["Role"]["metadata"]["namespace"] == "kube-system"
    # and the timeouts the docs give are the store's
    connect, read = DEFAULT_TIMEOUT
    assert "each request has %d s to connect (the TCP connection and the TLS handshake" % connect in text
    assert "and %d s to be answered" % read in text


def test_every_request_the_store_sends_is_in_the_permissions(api, tmp_path):
    """Reads, each kind of write and the run lock, against the fake server: each (verb, resource) it saw is in
    PERMISSIONS."""
    store = store_for(api.url, tmp_path)
    api.load([{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-a"},
               "spec": {"capacity": {"storage": "1Gi"}}},
              {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "ns"},
               "spec": {"volumeName": "pv-a"}, "status": {"capacity": {"storage": "1Gi"}}},
              {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "csi-creds", "namespace": "ns"}, "data": {}},
              {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
               "metadata": {"name": "new", "namespace": "ns", "uid": "u-new"},
               "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}])
    base = {"node": "node1", "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "pv-a.img"}
    new_pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pvc-u-new"},
              "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                       "claimRef": {"namespace": "ns", "name": "new", "uid": "u-new"},
                       "csi": {"driver": "csi.test", "volumeHandle": "pvc-u-new"}}}
    try:
        store.load()
        lock = store.acquire_run_lock("run-1")
        store.renew_run_lock("run-1")
        store.apply([dict(base, type="attach_intent")])
        store.apply([dict(base, type="attached", device_path="/dev/loop1"),
                     {"type": "detach_requested", "node": "node1", "driver": DRIVER, "volume_handle": "pv-a.img",
                      "requested_at": "2026-01-01T00:00:00Z"},
                     {"type": "resize_intent", "pvc": "ns/c", "stage": "controller", "capacity": "2Gi"},
                     {"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi", "pvc": "ns/c"}])
        store.apply([dict(base, type="detached")])
        # a claim's life (records/provision.py): the CSINode created then changed, a PV provisioned and bound,
        # released and deleted (its protection finalizer removed first), a deleted claim let go
        registration = {"type": "node_registration", "node": "node1", "driver": "csi.test", "node_id": "n1"}
        store.apply([dict(registration, topology={"zone": "a"}, max_volumes=4)])
        store.apply([dict(registration, node_id="n2")])
        store.apply([{"type": "provisioning_started", "pvc": "ns/new", "driver": "csi.test"},
                     {"type": "provisioned", "pvc": "ns/new", "claim_uid": "u-new", "pv": new_pv}])
        store.apply([{"type": "released", "pv_name": "pvc-u-new"}])
        store.apply([{"type": "pv_deleted", "pv_name": "pvc-u-new"}])
        api.request_delete("PersistentVolumeClaim", "new", "ns")
        store.apply([{"type": "claim_released", "pvc": "ns/new", "uid": "u-new"}])
        assert api.get("PersistentVolume", "pvc-u-new") is None and api.get("PersistentVolumeClaim", "new", "ns") is None
        # snapshots (records/snapshot.py): a content created with its status and its snapshot's status written, a
        # pre-provisioned one bound (its volumeSnapshotRef patched), then deleted
        api.load([{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshot",
                   "metadata": {"name": s, "namespace": "ns", "uid": "s-" + s}, "spec": {}} for s in ("snap", "pre")]
                 + [{"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotContent",
                     "metadata": {"name": "pre-content"},
                     "spec": {"driver": "csi.test", "source": {"snapshotHandle": "h"},
                              "volumeSnapshotRef": {"namespace": "ns", "name": "pre"}}}])
        store.apply([snapshot_created({"snapshot": "ns/snap", "snapshot_uid": "s-snap", "content_name": "c-snap",
                                       "driver": "csi.test", "source_volume_id": "pv-a.img", "class_name": "snaps",
                                       "deletion_policy": "Delete", "secret_ref": None},
                                      {"snapshot_id": "h-1", "size_bytes": 1024, "ready_to_use": True,
                                       "creation_time": "2026-11-28T10:00:00Z"})])
        store.apply([{"type": "snapshot_bound", "snapshot": "ns/pre", "snapshot_uid": "s-pre",
                      "content_name": "pre-content", "snapshot_handle": "h"}])
        store.apply([{"type": "snapshot_content_deleted", "content_name": "c-snap"}])
        assert api.get("VolumeSnapshot", "snap", "ns")["status"]["boundVolumeSnapshotContentName"] == "c-snap"
        assert api.get("VolumeSnapshotContent", "c-snap") is None
        assert api.get("VolumeSnapshotContent", "pre-content")["status"]["snapshotHandle"] == "h"
        store.get("Secret", "csi-creds", "ns")  # an external CSI driver's secret reference (run/csi_secrets.py)
        assert store.release_run_lock(lock["holder"])
    finally:
        store.close()
    # the run's plan record (run/plan_record_k8s.py): written, read, finished, an older finished one pruned
    connection = {"kubeconfig": str(tmp_path / "kubeconfig")}
    older = plan_record.write({"plan": [], "volume_items": {}}, "k8s:kube-system",
                              plan_record.new_run_id(time.time() - 60), connection=connection)
    plan_record.finish(older, connection)
    handle = plan_record.write({"plan": [], "volume_items": {}}, "k8s:kube-system", keep=1, connection=connection)
    assert plan_record.read_plan(handle, connection) == {"plan": [], "volume_items": {}}
    allowed = set((verb, resource) for _group, resource, verbs in PERMISSIONS for verb in verbs)
    seen = set()
    for entry in api.log:
        route = api._route(entry["path"])
        resource = route["plural"] + ("/" + route["sub"] if route["sub"] else "")
        verb = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[entry["method"]]
        if route["name"] is None and entry["method"] in ("GET", "DELETE"):
            verb = "list" if entry["method"] == "GET" else "deletecollection"
        seen.add((verb, resource))
    assert seen <= allowed, seen - allowed
    assert seen == allowed  # and nothing in the list is unused


class StallingServer:
    """A TCP listener that accepts connections and never answers (a frozen kube-apiserver: the kernel still
    completes the handshake). ``full=True``: a backlog of one, filled, so a new TCP connection is never made."""

    def __init__(self, full=False):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.held = []
        if full:
            self.sock.listen(0)
            filler = socket.create_connection(self.sock.getsockname(), timeout=2)
            self.held.append(filler)
        else:
            self.sock.listen(16)
            threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _peer = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    @property
    def port(self):
        return self.sock.getsockname()[1]

    def close(self):
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def stalling():
    made = []

    def make(full=False):
        made.append(StallingServer(full))
        return made[-1]

    yield make
    for server in made:
        server.close()


def timed(store, method, path, body=None):
    start = time.monotonic()
    try:
        with pytest.raises(KubernetesApiError) as err:
            store._request(method, path, body=body)
    finally:
        store.close()
    return err.value.msg, time.monotonic() - start


def test_a_server_that_takes_the_request_but_never_answers_fails_on_the_read_timeout(stalling, tmp_path):
    server = stalling()
    store = store_for("http://127.0.0.1:%d" % server.port, tmp_path)
    msg, took = timed(store, "GET", "/api/v1/nodes/node1")
    assert "GET /api/v1/nodes/node1 failed" in msg
    assert "the read timeout (1.5 s) expired waiting for the answer" in msg and "kubectl get --raw /readyz" in msg
    assert "writes only what is still missing" in msg
    assert 1.4 < took < 2.9  # once: urllib3 would have retried a GET three more times
    assert len(server.held) == 1


def test_a_frozen_tls_server_fails_on_the_connect_timeout_of_the_handshake(stalling, tmp_path):
    server = stalling()
    store = store_for("https://127.0.0.1:%d" % server.port, tmp_path, **{"insecure-skip-tls-verify": True})
    msg, took = timed(store, "PATCH", "/api/v1/nodes/node1/status", body={"status": {}})
    assert "PATCH /api/v1/nodes/node1/status failed" in msg
    assert "the connect timeout (0.5 s, TCP connect and TLS handshake) expired" in msg
    assert "did not complete the TLS handshake" in msg and "read timeout" not in msg.split("); ", 1)[-1]
    assert took < 1.4


def test_no_tcp_connection_fails_on_the_connect_timeout(stalling, tmp_path):
    server = stalling(full=True)
    store = store_for("http://127.0.0.1:%d" % server.port, tmp_path)
    msg, took = timed(store, "GET", "/api/v1/nodes")
    assert "the connect timeout (0.5 s) expired: no TCP connection to the API server" in msg
    assert took < 1.4


def test_the_default_timeouts_and_no_hidden_retries(tmp_path):
    store = store_for("https://127.0.0.1:1", tmp_path, **{"insecure-skip-tls-verify": True})
    try:
        assert DEFAULT_TIMEOUT == (10, 60)
        assert KubernetesStore({"kubeconfig": str(tmp_path / "kubeconfig")}, environ={}).timeout == (10, 60)
        assert store.configuration.retries is False
    finally:
        store.close()


def test_tls_errors_still_say_tls(tmp_path):
    certs = make_certs(str(tmp_path / "certs"))
    server = FakeApiServer(tokens=[TOKEN], tls={"cert": certs["server.crt"], "key": certs["server.key"]}).start()
    try:
        store = store_for(server.url, tmp_path)  # no CA given: the server's certificate is not trusted
        msg, _took = timed(store, "GET", "/api/v1/nodes")
        assert "TLS failed; check ca_cert" in msg and "timeout" not in msg
    finally:
        server.stop()
