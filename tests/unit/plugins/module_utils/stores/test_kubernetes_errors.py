# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KubernetesStore against a fake API server (tests/fakeapi) through the real kubernetes client: the API's errors
(forbidden, not found, unreachable, invalid) as the store reports them, its error family, the merge patch it sends,
and the node-side modules that import none of it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

pytest.importorskip("kubernetes")


from ansible_collections.kubevol.volumes.plugins.module_utils.stores.base import StoreError  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import KubernetesApiError  # noqa: E402
from ansible_collections.kubevol.volumes.plugins.module_utils.stores.k8s_writes import merge_patch  # noqa: E402
from kubestore_lib import DRIVER, VA_A, attached_record  # noqa: E402


# -- errors ----------------------------------------------------------------------------------------
def test_forbidden_names_the_verb_and_resource(store, api):
    api.deny.add(("patch", "nodes/status"))
    with pytest.raises(KubernetesApiError) as err:
        store().apply([attached_record()])
    msg = err.value.msg
    assert "HTTP 403" in msg and "'patch'" in msg and "nodes/status" in msg and "RBAC" in msg and "Node/node1" in msg
    api.deny = {("list", "volumeattachments")}
    with pytest.raises(KubernetesApiError) as err:
        store().load()
    assert "'list'" in err.value.msg and "volumeattachments (storage.k8s.io)" in err.value.msg


def test_not_found_api(store, api):
    from fakeapi import RESOURCES
    saved = RESOURCES.pop("csidrivers")
    try:
        with pytest.raises(KubernetesApiError) as err:
            store().load()
        assert "HTTP 404" in err.value.msg and "csidrivers" in err.value.msg
    finally:
        RESOURCES["csidrivers"] = saved


def test_unreachable_api_says_so(store, api):
    api.stop()
    with pytest.raises(KubernetesApiError) as err:
        store().load()
    assert "cannot reach the API server at %s" % api.url in err.value.msg
    assert "running and reachable" in err.value.msg


def test_invalid_is_reported(store, api):
    # a VolumeAttachment whose spec differs cannot be changed (spec is immutable): 422 names it
    api.put({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": VA_A},
             "spec": {"attacher": DRIVER, "nodeName": "node1", "source": {"persistentVolumeName": "pv-other"}}})
    with pytest.raises(KubernetesApiError) as err:
        store().apply([attached_record()])
    assert "HTTP 422" in err.value.msg and "VolumeAttachment/" + VA_A in err.value.msg


def test_merge_patch():
    assert merge_patch({"a": 1, "b": {"c": 1, "d": 2}, "l": [1]}, {"a": 1, "b": {"c": 2}, "l": [1, 2], "n": 3}) == \
        {"b": {"c": 2, "d": None}, "l": [1, 2], "n": 3}
    assert merge_patch({"a": 1}, {"a": 1}) == {}


def test_store_error_family():
    assert issubclass(KubernetesApiError, StoreError)


def test_node_side_modules_do_not_import_kubernetes():
    root = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "..", "plugins")
    for sub in ("modules", os.path.join("modules", "__internal"), os.path.join("module_utils", "node"),
                os.path.join("module_utils", "drivers")):
        for name in os.listdir(os.path.join(root, sub)):
            if name.endswith(".py") and not name.startswith("cluster_") and \
                    name not in ("volume_reconcile_plan.py", "reconcile_run.py", "pod_volumes_wait.py",
                                 "volume_audit.py"):  # controller-side
                with open(os.path.join(root, sub, name)) as fh:
                    text = fh.read()
                assert "stores" not in text and "k8s_auth" not in text and "import kubernetes" not in text, name
