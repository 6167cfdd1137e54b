"""pod_wait's selection (module_utils/run/pod_wait.py): the pods named or matched by an equality label selector."""
import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.run.pod_wait import parse_selector, select_pods


def pod(ns, name, **labels):
    return {"kind": "Pod", "metadata": {"namespace": ns, "name": name, "labels": labels}}


ITEMS = [pod("shop", "db-0", app="db", tier="data"), pod("shop", "web-0", app="web"), pod("default", "tool"),
         {"kind": "Node", "metadata": {"name": "node1"}}]


def test_selector_terms():
    assert parse_selector("app=db, tier!=cache,x==y") == [("app", "=", "db"), ("tier", "!=", "cache"), ("x", "=", "y")]


@pytest.mark.parametrize("text", ["app in (db)", "=db", "app"])
def test_set_based_or_malformed_selectors_are_refused(text):
    with pytest.raises(InvalidInput) as err:
        parse_selector(text)
    assert "label_selector" in err.value.msg


def test_pods_by_name_and_by_label():
    assert select_pods(ITEMS, ["tool"], "app=db") == ["shop/db-0", "default/tool"]
    assert select_pods(ITEMS, [], "app!=db") == ["shop/web-0", "default/tool"]
    assert select_pods(ITEMS, ["shop/web-0"]) == ["shop/web-0"]


def test_a_named_pod_the_cluster_lacks_is_an_error():
    with pytest.raises(InvalidInput) as err:
        select_pods(ITEMS, ["shop/db-1"])
    assert "shop/db-1" in err.value.msg and "no such pod" in err.value.msg
