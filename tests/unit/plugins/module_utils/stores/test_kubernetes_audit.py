# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the audit cleans through the Kubernetes API store (fake API server, real client): a VolumeAttachment named by
its name (its PV is gone) is deleted and nothing else; an expired run-lock Lease is released."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime

import pytest

pytest.importorskip("kubernetes")

from fakeapi import FakeApiServer, write_kubeconfig  # noqa: E402  (tests/ is on sys.path)

from ansible_collections.kubevol.volumes.plugins.module_utils.audit import audit_task

from ansible_collections.kubevol.volumes.plugins.module_utils.stores import run_lock  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import volume_attachment_name  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import KubernetesStore  # noqa: E402

DRIVER = "loop.kubevol.io"
TOKEN = "test-token"
GONE_VA = volume_attachment_name("pv-gone.img", DRIVER, "node1")


def objects():
    return [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}, "spec": {},
             "status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            {"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": GONE_VA},
             "spec": {"attacher": DRIVER, "nodeName": "node1", "source": {"persistentVolumeName": "pv-gone"}},
             "status": {"attached": True}}]


@pytest.fixture
def api():
    server = FakeApiServer(tokens=[TOKEN]).start()
    server.load(objects())
    yield server
    server.stop()


@pytest.fixture
def kubeconfig(api, tmp_path):
    return write_kubeconfig(str(tmp_path / "kubeconfig"), {"good": {"server": api.url, "token": TOKEN}},
                            current="good")


def test_a_detached_record_by_name_deletes_only_that_volume_attachment(api, kubeconfig):
    store = KubernetesStore({"kubeconfig": kubeconfig}, environ={}, sleep=lambda s: None)
    result = store.apply([{"type": "detached", "name": GONE_VA, "node": "node1"}])
    assert result["changed"] and api.get("VolumeAttachment", GONE_VA) is None
    assert [(r["method"], r["path"]) for r in api.writes()] == [
        ("DELETE", "/apis/storage.k8s.io/v1/volumeattachments/" + GONE_VA)]
    assert not store.apply([{"type": "detached", "name": GONE_VA, "node": "node1"}])["changed"]


def test_the_cluster_share_cleans_through_the_api_and_releases_an_expired_lease(api, kubeconfig):
    def long_ago():
        return datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)
    old = KubernetesStore({"kubeconfig": kubeconfig}, environ={}, sleep=lambda s: None)
    old.acquire_run_lock("dead-run", 60, 0, who={"host": "elsewhere", "pid": None, "pid_start": None}, now=long_ago)
    facts = {"node_name": "node1", "devices": [], "global_mounts": [], "pod_mounts": [], "ephemeral_volumes": []}
    params = dict((k, v.get("default")) for k, v in audit_task.argspec().items())
    params.update(scope="cluster", cluster_source="kubernetes", kubeconfig=kubeconfig, clean=True,
                  node_reports=[{"node_name": "node1", "node_facts": facts, "kubelet_dir": "/k"}])
    result = audit_task.cluster_scope(params, owner={"host": "h", "pid": None, "pid_start": None})
    kinds = dict((f["kind"], f) for f in result["findings"])
    assert kinds["stale_run_lock"]["cleaned"] and "expired" in kinds["stale_run_lock"]["why"]
    assert kinds["stale_volume_attachment"]["cleaned"] and api.get("VolumeAttachment", GONE_VA) is None
    lease = api.get("Lease", run_lock.DEFAULT_LEASE_NAME, run_lock.DEFAULT_LEASE_NAMESPACE)
    assert not lease["spec"].get("holderIdentity")  # the audit's own hold is released too
