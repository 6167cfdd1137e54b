# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.scope import select_pods


def pod(namespace, name, labels=None):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}}}


CLUSTER = {"apiVersion": "v1", "kind": "List", "items": [
    pod("prod", "web-0", {"app": "web"}),
    pod("prod", "db-0", {"app": "db"}),
    pod("dev", "web-0", {"app": "web"}),
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "prod"}},
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node1"}},
]}


def test_by_namespace():
    assert select_pods(CLUSTER, "[?kind=='Pod' && metadata.namespace=='prod']") == {("prod", "web-0"), ("prod", "db-0")}


def test_by_label():
    assert select_pods(CLUSTER, "[?metadata.labels.app=='web']") == {("prod", "web-0"), ("dev", "web-0")}


def test_only_pods_count():
    assert select_pods(CLUSTER, "[?metadata.namespace=='prod']") == {("prod", "web-0"), ("prod", "db-0")}
    assert select_pods(CLUSTER, "[?kind=='Node']") == set()


def test_single_object_result():
    assert select_pods(CLUSTER, "[0]") == {("prod", "web-0")}


@pytest.mark.parametrize("expression", [None, "", "   "])
def test_no_scope(expression):
    assert select_pods(CLUSTER, expression) is None


def test_bad_expression_carries_jmespath_message():
    with pytest.raises(InvalidInput) as err:
        select_pods(CLUSTER, "[?kind=='Pod'")
    said = words.say(str(err.value), words.ROLE)
    assert said.startswith("kubevol_scope ") and "Invalid jmespath expression: Incomplete expression" in said
    assert said.endswith("[KV-SETTING]") and "\n" not in said


@pytest.mark.parametrize("expression", ["[?kind=='Pod'].metadata.name", "foo", "length(@)"])
def test_expression_that_does_not_select_objects(expression):
    with pytest.raises(InvalidInput, match="must select objects"):
        select_pods(CLUSTER, expression)


def test_runtime_type_error():
    with pytest.raises(InvalidInput, match="JMESPath evaluation failed"):
        select_pods(CLUSTER, "[?length(kind) > `3` && abs(kind)]")
