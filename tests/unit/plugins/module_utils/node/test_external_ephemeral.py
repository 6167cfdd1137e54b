# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node/external_ephemeral.py's order and bookkeeping, with a stand-in for the driver (one function each; the
real driver and plugin: tests/e2e/test_csi_external_inline.py). csi_mounter.go SetUpAt: vol_data.json before
NodePublishVolume, removeMountDir after a finished failure only; TearDownAt: NodeUnpublishVolume, then the
directories."""

import json
import os

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import ephemeral_volume_handle
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.driver import CsiStep
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.errors import (
    CsiVolumeFailed, CsiVolumeUncertain)
from ansible_collections.kubevol.volumes.plugins.module_utils.node import external_ephemeral
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item

DRIVER = "csi.kubevol.test"
UID = "uid-1"


class FakeDriver:
    """Records the calls; ``fail`` raises that error from node_publish after the plugin 'made' the target."""

    def __init__(self, fail=None):
        self.calls, self.fail, self.seen_vol_data = [], fail, None

    def node_publish(self, item, target, staging, context, pod, check_mode=False):
        vol_data = os.path.join(os.path.dirname(target), "vol_data.json")
        self.seen_vol_data = os.path.exists(vol_data) and json.load(open(vol_data))
        if self.fail is not None:
            raise self.fail
        if not check_mode:
            self.calls.append("NodePublishVolume")
            os.mkdir(target)
        assert staging is None and context == {}
        return CsiStep(called=True, readonly=item.pods[0].read_only)

    def node_unpublish(self, item, target, check_mode=False):
        if not check_mode:
            self.calls.append("NodeUnpublishVolume")
            os.rmdir(target)
        return CsiStep(called=True)


class Ctx:
    def __init__(self, kubelet, driver, check_mode=False):
        self.kubelet_dir, self._driver, self.check_mode = kubelet, driver, check_mode
        self.node_name, self.step = "node1", None

    def runner_for(self, item):
        return None

    def driver(self, item):
        return self._driver


def item():
    return volume_item({"pv_name": "certs", "driver": DRIVER, "volume_handle": ephemeral_volume_handle(UID, "certs"),
                        "ephemeral": True, "fs_type": "", "pods": [{"uid": UID, "name": "apps/web"}]})


def error(cls):
    return cls(volume="certs", node="node1", driver=DRIVER, detail="CSI NodePublishVolume failed: boom", step="x",
               uncertain=cls.uncertain)


@pytest.fixture
def kubelet(tmp_path):
    path = tmp_path / "kubelet"
    path.mkdir()
    return str(path)


def vol_dir(kubelet):
    return os.path.join(kubelet, "pods", UID, "volumes", "kubernetes.io~csi", "certs")


def test_vol_data_first_then_publish_then_unpublish_removes_the_directories(kubelet):
    driver = FakeDriver()
    res = external_ephemeral.publish(Ctx(kubelet, driver), item())
    assert driver.calls == ["NodePublishVolume"] and res["changed"] and res["published"] == [UID]
    assert driver.seen_vol_data["volumeLifecycleMode"] == "Ephemeral"  # written before the call
    assert driver.seen_vol_data["volumeHandle"] == ephemeral_volume_handle(UID, "certs")
    assert "kubevol.io/image" not in json.dumps(driver.seen_vol_data)
    res = external_ephemeral.unpublish(Ctx(kubelet, driver), item())
    assert driver.calls == ["NodePublishVolume", "NodeUnpublishVolume"] and res["changed"]
    assert not os.path.exists(vol_dir(kubelet))
    again = external_ephemeral.unpublish(Ctx(kubelet, driver), item())  # gone: nothing called
    assert driver.calls[-1] == "NodeUnpublishVolume" and len(driver.calls) == 2 and not again["changed"]


def test_check_mode_writes_nothing(kubelet):
    driver = FakeDriver()
    res = external_ephemeral.publish(Ctx(kubelet, driver, check_mode=True), item())
    assert res["changed"] and driver.calls == [] and not os.path.exists(vol_dir(kubelet))


def test_a_final_failure_removes_what_setup_wrote_an_uncertain_one_keeps_it(kubelet):
    with pytest.raises(CsiVolumeFailed) as err:
        external_ephemeral.publish(Ctx(kubelet, FakeDriver(fail=error(CsiVolumeFailed))), item())
    assert "inline volume of pod apps/web" in err.value.msg and "node1" in err.value.msg
    assert not os.path.exists(vol_dir(kubelet))
    with pytest.raises(CsiVolumeUncertain) as err:
        external_ephemeral.publish(Ctx(kubelet, FakeDriver(fail=error(CsiVolumeUncertain))), item())
    assert err.value.uncertain and "apps/web" in err.value.msg
    assert os.path.exists(os.path.join(vol_dir(kubelet), "vol_data.json"))  # reported by facts, retried


def test_another_volumes_directory_is_refused(kubelet):
    os.makedirs(vol_dir(kubelet))
    with open(os.path.join(vol_dir(kubelet), "vol_data.json"), "w") as handle:
        json.dump({"driverName": DRIVER, "volumeHandle": "other", "specVolID": "certs"}, handle)
    driver = FakeDriver()
    for step in (external_ephemeral.publish, external_ephemeral.unpublish):
        with pytest.raises(KubevolError) as err:
            step(Ctx(kubelet, driver), item())
        assert "does not name this pod's inline volume" in err.value.msg and "apps/web" in err.value.msg
    assert driver.calls == [] and os.path.exists(os.path.join(vol_dir(kubelet), "vol_data.json"))


class StillThere(FakeDriver):
    """A plugin that answers NodeUnpublishVolume with OK and leaves its mount at the target."""

    def node_unpublish(self, item, target, check_mode=False):
        self.calls.append("NodeUnpublishVolume")
        return CsiStep(called=True)


class Table:
    def __init__(self, target):
        self.target = target

    def at(self, path):
        return type("Mount", (), {"source": "tmpfs", "target": path})() if path == self.target else None


def test_a_target_left_mounted_after_node_unpublish_fails_with_its_code_and_keeps_the_directories(
        kubelet, monkeypatch):
    driver = StillThere()
    external_ephemeral.publish(Ctx(kubelet, driver), item())
    target = os.path.join(vol_dir(kubelet), "mount")
    monkeypatch.setattr(external_ephemeral.mount, "list_mounts", lambda runner: Table(target))
    with pytest.raises(external_ephemeral.LeftMounted) as err:
        external_ephemeral.unpublish(Ctx(kubelet, driver), item())
    msg = err.value.msg
    assert driver.calls == ["NodePublishVolume", "NodeUnpublishVolume"]
    assert msg.startswith("inline volume certs of pod apps/web (driver %s) on node node1: NodeUnpublishVolume "
                          "succeeded but %s is still mounted (from tmpfs)" % (DRIVER, target)), msg
    assert msg.endswith("then run again [KV-CSI-LEFT-MOUNTED]") and msg.count("[KV-") == 1, msg
    assert err.value.to_result()["code"] == "KV-CSI-LEFT-MOUNTED" and err.value.to_result()["pod"] == "apps/web"
    assert os.path.exists(os.path.join(vol_dir(kubelet), "vol_data.json")) and os.path.isdir(target)
