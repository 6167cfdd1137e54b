"""An external CSI driver's secrets read from the Kubernetes API (run/csi_secrets.py secrets_by_volume), through the
real kubernetes client against the fake API server: one GET per Secret, never a list; a missing or forbidden
Secret fails naming the PV, the reference field and the Secret, never a value."""
import base64

from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.secrets import SecretUnavailable
from ansible_collections.kubevol.volumes.plugins.module_utils.run.csi_secrets import secrets_by_volume

DRIVER = "hostpath.csi.k8s.io"
VALUE = "hunter2-from-the-api"


def secret(name, namespace="apps", **data):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": namespace},
            "type": "Opaque", "data": dict((k, base64.b64encode(v.encode()).decode()) for k, v in data.items())}


def store(kubeconfig):
    return {"cluster_source": "kubernetes", "kubeconfig": kubeconfig, "context": "kind-kubevol"}


def item(pv, **refs):
    return {"pv_name": pv, "driver": DRIVER, "volume_handle": pv + "-h", "secret_refs": refs}


def test_secrets_are_read_one_by_one_from_the_api(api, kubeconfig):
    api.load([secret("stage", password=VALUE), secret("publish", namespace="other", token="t0k")])
    items = [item("pv-a", node_stage="apps/stage", node_publish="other/publish"),
             {"pv_name": "pv-b", "driver": DRIVER, "volume_handle": "b"}]
    got, refused = secrets_by_volume(items, store(kubeconfig))
    assert refused == []
    assert got[0]["secrets"] == {"node_stage": {"password": VALUE}, "node_publish": {"token": "t0k"}}
    assert got[1] is items[1] and "secrets" not in items[0]
    gets = [r["path"] for r in api.requests("GET") if "/secrets" in r["path"]]
    assert sorted(gets) == ["/api/v1/namespaces/apps/secrets/stage", "/api/v1/namespaces/other/secrets/publish"]
    assert not [r for r in api.requests("GET") if r["path"].endswith("/secrets")]  # never listed


def test_no_secret_is_read_when_no_item_references_one(api, kubeconfig):
    items = [{"pv_name": "pv-b", "driver": DRIVER, "volume_handle": "b"}]
    assert secrets_by_volume(items, store(kubeconfig)) == (items, [])
    assert secrets_by_volume(items, store(kubeconfig))[0] is items
    assert api.requests() == []  # not even a connection


def test_a_missing_secret_names_the_pv_field_and_reference(api, kubeconfig):
    ready, [(_item, err)] = secrets_by_volume([item("pv-a", node_stage="apps/gone")], store(kubeconfig))
    assert ready == [] and isinstance(err, SecretUnavailable)
    assert "pv-a" in err.msg and "apps/gone" in err.msg and "nodeStageSecretRef" in err.msg


def test_a_forbidden_secret_fails_without_its_value(api, kubeconfig):
    api.load([secret("stage", password=VALUE)])
    api.deny.add(("get", "secrets"))
    ready, [(_item, err)] = secrets_by_volume([item("pv-a", node_stage="apps/stage")], store(kubeconfig))
    assert ready == [] and isinstance(err, SecretUnavailable)
    text = err.msg
    assert "pv-a" in text and "nodeStageSecretRef" in text and "apps/stage" in text, text
    assert "HTTP 403" in text and "verb 'get' on secrets" in text, text
    assert VALUE not in text and base64.b64encode(VALUE.encode()).decode() not in text
