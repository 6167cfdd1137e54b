"""The loop driver tears down a volume whose PV is gone (issue 25): the item names no pool, the node's record does.

The planner sends such a volume with its driver and handle only (the PV's volumeAttributes went with it). The device
is found by this node's attachment record, in the pool the record names when it is one of the node's, and identified
by the record's inode: never another image of the same name in another pool, never another device."""
import os

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import loop, loop_kernel
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop import LoopDriver
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import Runner
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item

HANDLE = "pv-x6.img"


@pytest.fixture
def setup(tmp_path, monkeypatch):
    """Pools default/ and other/ (both the node's); pv-x6.img attached from other/ as /dev/loop7; a file of the same
    name in default/ (another inode). The kernel lists loop7 backing other/pv-x6.img, loop8 backing default's."""
    default, other = tmp_path / "default", tmp_path / "other"
    default.mkdir()
    other.mkdir()
    (other / HANDLE).write_bytes(b"")
    (default / HANDLE).write_bytes(b"")
    monkeypatch.setattr(loop, "DEFAULT_POOL", str(default))
    ran = []
    runner = Runner(lambda argv, data=None: ran.append(list(argv)) or (0, "", ""), node="n1", volume="pv-x6")
    driver = LoopDriver(runner, str(tmp_path / "k"), "n1", {"loop_pools": [str(default), str(other)]})
    live = volume_item({"pv_name": "pv-x6", "driver": "loop.kubevol.io", "volume_handle": HANDLE,
                        "volume_attributes": {"pool": str(other)}})
    st = os.stat(str(other / HANDLE))
    driver.write_record(live, str(other / HANDLE), "/dev/loop7", st)
    with driver._holders_locked(live):
        driver._hold(live, {})
    other_st = os.stat(str(default / HANDLE))
    backing = {"/dev/loop7": st, "/dev/loop8": other_st}

    def kernel(only=None):
        return [loop_kernel.LoopDevice(name=name, back_file="", back_ino=backing[name].st_ino,
                                       back_dev=(os.major(backing[name].st_dev), os.minor(backing[name].st_dev)))
                for name in (only if only is not None else sorted(backing)) if name in backing]
    monkeypatch.setattr(loop, "kernel_loop_devices", kernel)
    gone = volume_item({"pv_name": "pv-x6", "driver": "loop.kubevol.io", "volume_handle": HANDLE})
    return driver, live, gone, ran, other


def test_gone_pv_in_another_pool_is_found_and_detached_by_its_record(setup):
    driver, live, gone, ran, other = setup
    driver.validate(gone)
    # the old driver looked in the default pool, found an image of another inode there, called the record stale
    # and dropped it: /dev/loop7 stayed attached with nothing left on the node that knew it
    assert driver.find_device(gone) == "/dev/loop7"
    assert driver.detach(gone) == "/dev/loop7"
    assert ran == [["losetup", "-d", "/dev/loop7"]]
    assert not os.path.exists(driver.record_path(HANDLE))
    assert driver.read_holders(live) == {}  # the hold in the record's pool is released
    assert driver.detach(gone) is None and ran == [["losetup", "-d", "/dev/loop7"]]  # a second time: nothing


def test_a_record_outside_the_nodes_pools_is_not_followed(setup, tmp_path):
    driver, live, gone, ran, other = setup
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / HANDLE).write_bytes(b"")
    driver.write_record(live, str(elsewhere / HANDLE), "/dev/loop8", os.stat(str(elsewhere / HANDLE)))
    assert driver._as_recorded(gone, driver.read_record(HANDLE)) is gone
    assert driver.find_device(gone) is None  # default/pv-x6.img is loop8's file, not the recorded inode
    assert ran == []


def test_a_pool_named_by_the_item_wins_over_the_record(setup, tmp_path):
    driver, live, gone, ran, other = setup
    named = volume_item({"pv_name": "pv-x6", "driver": "loop.kubevol.io", "volume_handle": HANDLE,
                         "volume_attributes": {"pool": str(tmp_path / "default")}})
    assert driver.find_device(named) is None  # its image is another inode than the record's: stale for it


def test_no_pool_known_and_the_default_not_the_nodes(tmp_path):
    """A gone PV's item with nothing recorded, on a node without the default pool: validated (nothing is reached
    through it), no device, nothing run; a live PV without a pool is still refused where it needs the image."""
    pool = tmp_path / "pool"
    pool.mkdir()
    ran = []
    runner = Runner(lambda argv, data=None: ran.append(list(argv)) or (0, "", ""), node="n1", volume="pv-x6")
    driver = LoopDriver(runner, str(tmp_path / "k"), "n1", {"loop_pools": [str(pool)]})
    gone = volume_item({"pv_name": "pv-x6", "driver": "loop.kubevol.io", "volume_handle": HANDLE})
    driver.validate(gone)
    assert driver.find_device(gone) is None and driver.detach(gone) is None and ran == []
    with pytest.raises(InvalidInput):
        driver.attach(gone)
