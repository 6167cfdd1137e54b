"""Fixtures for the kubernetes store integration tests: a fake API server (tests/fakeapi) and kubeconfigs."""
import os
import sys

import pytest

pytest.importorskip("kubernetes")

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # tests/

from fakeapi import FakeApiServer, write_kubeconfig  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TOKEN = "kubevol-test-token"


@pytest.fixture
def api():
    server = FakeApiServer(tokens=[TOKEN], users={"admin": "s3cret"}).start()
    yield server
    server.stop()


@pytest.fixture
def kubeconfig(api, tmp_path):
    return write_kubeconfig(str(tmp_path / "kubeconfig"), {
        "kind-kubevol": {"server": api.url, "token": TOKEN},
        "wrong-token": {"server": api.url, "token": "nope"},
    }, current="wrong-token")
