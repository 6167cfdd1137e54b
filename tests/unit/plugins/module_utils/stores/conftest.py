# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures of the KubernetesStore tests (test_kubernetes.py, test_kubernetes_auth.py, test_kubernetes_errors.py): a
fake API server holding kubestore_lib's cluster, a kubeconfig for it, and a maker of stores closed after the test.
A test file that defines a fixture of the same name uses its own."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from fakeapi import FakeApiServer, write_kubeconfig  # (tests/ is on sys.path)
from kubestore_lib import NO_ENV, TOKEN, cluster_objects

from ansible_collections.kubevol.volumes.plugins.module_utils.stores.kubernetes import KubernetesStore


@pytest.fixture
def api():
    server = FakeApiServer(tokens=[TOKEN], users={"admin": "s3cret"}).start()
    server.load(cluster_objects())
    yield server
    server.stop()


@pytest.fixture
def kubeconfig(api, tmp_path):
    return write_kubeconfig(str(tmp_path / "kubeconfig"), {
        "good": {"server": api.url, "token": TOKEN},
        "bad": {"server": api.url, "token": "wrong"},
    }, current="good")


@pytest.fixture
def store(kubeconfig):
    made = []

    def make(**options):
        options.setdefault("kubeconfig", kubeconfig)
        page_size = options.pop("page_size", None)
        environ = options.pop("environ", NO_ENV)
        made.append(KubernetesStore(options, page_size=page_size, environ=environ, sleep=lambda s: None))
        return made[-1]

    yield make
    for one in made:
        one.close()
