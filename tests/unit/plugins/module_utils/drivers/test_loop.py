"""Unit tests of the loop driver and the driver registry (no devices needed)."""
import json
import os

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import words
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, UnknownDriver, UnsafeName
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import get_driver
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop import LoopDriver, parse_losetup
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import Runner
from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item

ITEM = {"pv_name": "pv-a", "driver": "loop.kubevol.io", "volume_handle": "a.img"}


def fake_runner(answers):
    return Runner(lambda argv, data=None: answers.get(argv[0], (0, "", "")), node="n1", volume="pv-a")


def test_parse_losetup_matches_by_inode_not_path():
    out = json.dumps({"loopdevices": [
        {"name": "/dev/loop0", "back-file": "/pool/a.img", "back-ino": 12, "back-maj:min": "   254:0  ", "ro": False},
        {"name": "/dev/loop1", "back-file": "/pool/a.img (deleted)", "back-ino": "13", "back-maj:min": "254:0"}]})
    devs = parse_losetup(out)
    assert [d.name for d in devs] == ["/dev/loop0", "/dev/loop1"]
    st_dev = os.makedev(254, 0)
    assert devs[0].backs(st_dev, 12) and not devs[0].backs(st_dev, 13) and devs[1].backs(st_dev, 13)
    assert not devs[0].backs(os.makedev(8, 1), 12)


def test_registry():
    assert get_driver("loop.kubevol.io") is LoopDriver
    with pytest.raises(UnknownDriver) as exc:
        get_driver("nfs.example.com", volume="pv-a")
    assert "loop.kubevol.io" in str(exc.value)
    assert "attachable" in LoopDriver.CAPABILITIES and "block" in LoopDriver.CAPABILITIES


def test_loop_handle_escaping_pool_refused(tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    (tmp_path / "secret").write_text("x")
    os.symlink(str(tmp_path / "secret"), str(pool / "evil.img"))
    driver = LoopDriver(fake_runner({}), str(tmp_path / "k"), "n1", {"loop_pools": [str(pool)]})
    with pytest.raises(UnsafeName):
        driver.validate(volume_item(dict(ITEM, volume_handle="evil.img", volume_attributes={"pool": str(pool)})))
    driver.validate(volume_item(dict(ITEM, volume_attributes={"pool": str(pool)})))


def test_loop_pool_must_be_one_of_the_nodes_pools(tmp_path):
    """volumeAttributes.pool is the PV's wish; the node's loop_pools decide (a symlink to a pool counts as it)."""
    pool, app = tmp_path / "pool", tmp_path / "app"
    pool.mkdir()
    app.mkdir()
    os.symlink(str(pool), str(tmp_path / "pool-link"))
    driver = LoopDriver(fake_runner({}), str(tmp_path / "k"), "n1", {"loop_pools": [str(pool)]})
    with pytest.raises(InvalidInput) as exc:
        driver.validate(volume_item(dict(ITEM, volume_handle="app.log", volume_attributes={"pool": str(app)})))
    assert "node n1 keeps loop images only in %s" % pool in str(exc.value)
    assert 'the pools of kubevol_driver_options["loop.kubevol.io"]' in words.say(str(exc.value), words.ROLE)
    driver.validate(volume_item(dict(ITEM, volume_attributes={"pool": str(tmp_path / "pool-link")})))
    default = LoopDriver(fake_runner({}), str(tmp_path / "k"), "n1")
    with pytest.raises(InvalidInput):
        default.validate(volume_item(dict(ITEM, volume_attributes={"pool": str(pool)})))


# -- inline ephemeral volumes ------------------------------------------------------------------------

def _ephemeral_item(pool, uid="u1", name="scratch"):
    from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import ephemeral_volume_handle
    return volume_item({"pv_name": name, "driver": "loop.kubevol.io",
                        "volume_handle": ephemeral_volume_handle(uid, name), "volume_attributes": {"pool": str(pool)}, "ephemeral": True,
                        "pods": [{"uid": uid, "name": "ns/p"}]})


def test_loop_deletes_only_the_image_its_evidence_names(tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    driver = LoopDriver(fake_runner({}), str(tmp_path / "k"), "n1", {"loop_pools": [str(pool)]})
    item = _ephemeral_item(pool)
    image = pool / item.volume_handle
    image.write_text("x")
    assert "ephemeral" in LoopDriver.CAPABILITIES
    assert driver.delete_ephemeral(item, None) is None                       # nothing says it is ephemeral
    assert driver.delete_ephemeral(item, {"image": str(pool / "other.img")}) is None  # names another image
    assert driver.delete_ephemeral(item, {"kubevol.io/image": str(image)}, check_mode=True) == str(image)
    assert image.exists()
    assert driver.delete_ephemeral(item, {"image": str(image)}) == str(image)
    assert not image.exists()
    assert driver.delete_ephemeral(item, {"image": str(image)}) is None      # already gone: nothing to do


def test_loop_ephemeral_record_is_not_an_attachment(tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    driver = LoopDriver(fake_runner({}), str(tmp_path / "k"), "n1", {"loop_pools": [str(pool)]})
    item = _ephemeral_item(pool)
    image = pool / item.volume_handle
    image.write_text("x")
    driver.write_record(item, str(image), "/dev/loop42", os.stat(str(image)))
    driver.loop_devices = lambda: []
    assert driver.attached_volumes() == []  # the kubelet reports no attachment for an inline volume
    [vol] = driver.ephemeral_volumes()
    assert (vol.pod_uid, vol.volume_name, vol.image, vol.device) == ("u1", "scratch", str(image), None)
    assert driver.ephemeral_record(item)["ephemeral"] is True
    assert driver.ephemeral_record(_ephemeral_item(pool, uid="u2")) is None


def test_a_node_waiting_on_an_image_lock_that_is_removed_locks_the_current_file(tmp_path):
    """The last detach removes the image's holder lock under it; a node that was waiting must not go on under the
    removed file while a third node locks the new one: it checks after locking and locks the current file."""
    import fcntl
    import threading

    pool = tmp_path / "pool"
    pool.mkdir()
    driver = LoopDriver(fake_runner({}), str(tmp_path / "k"), "n1", {"loop_pools": [str(pool)]})
    item = volume_item(dict(ITEM, volume_attributes={"pool": str(pool)}))
    lock_path = driver._holder_path(item, ".lock")
    open_fds = len(os.listdir("/proc/self/fd"))
    entered = threading.Event()
    locked_inode = []

    def waiter():
        with driver._holders_locked(item):
            locked_inode.append(os.stat(lock_path).st_ino)  # the file the name points to is the one held
            entered.set()

    with driver._holders_locked(item) as remove:
        thread = threading.Thread(target=waiter)
        thread.start()
        assert not entered.wait(0.3)  # waits for this holder
        remove()  # the last holder is gone: the lock file with it
        # a third node creates and takes the new lock file before the waiter gets the old one
        third = os.open(lock_path, os.O_RDWR | os.O_CREAT)
        fcntl.flock(third, fcntl.LOCK_EX)
    assert not entered.wait(0.3)  # the waiter got the removed file's lock, saw it gone, and waits on the new one
    os.close(third)
    thread.join(5)
    assert entered.is_set() and locked_inode == [os.stat(lock_path).st_ino]
    assert len(os.listdir("/proc/self/fd")) == open_fds  # the retry and both holds closed every descriptor


def test_a_handle_of_the_other_kind_of_volume_is_refused_before_anything_is_written(tmp_path):
    """One handle names one image and one record: an inline volume's image (deleted on unpublish) never backs a PV,
    and a PV's image is never published as an inline volume."""
    pool = tmp_path / "pool"
    pool.mkdir()
    calls = []
    runner = Runner(lambda argv, data=None: calls.append(argv) or (0, "/dev/loop9\n", ""), node="n1", volume="pv-a")
    driver = LoopDriver(runner, str(tmp_path / "k"), "n1", {"loop_pools": [str(pool)]})
    driver.loop_devices = lambda: []
    inline = _ephemeral_item(pool)
    image = pool / inline.volume_handle
    image.write_text("the pod's data")
    driver.write_record(inline, str(image), "/dev/loop42", os.stat(str(image)))
    as_pv = volume_item({"pv_name": "pv-a", "driver": "loop.kubevol.io", "volume_handle": inline.volume_handle,
                         "volume_attributes": {"pool": str(pool)}})
    with pytest.raises(InvalidInput) as refused:
        driver.attach(as_pv)
    assert "inline ephemeral volume scratch of pod u1" in refused.value.msg and "PV pv-a" in refused.value.msg
    assert "on node n1" in refused.value.msg and "so nothing was changed" in refused.value.msg
    assert calls == [] and driver.read_holders(as_pv) == {}
    assert driver.ephemeral_record(inline)["ephemeral"] is True  # the inline volume's record is untouched

    as_inline = _ephemeral_item(pool, uid="u2")  # a PV was given the handle this pod's inline volume derives
    pv_item = volume_item({"pv_name": "pv-b", "driver": "loop.kubevol.io", "volume_handle": as_inline.volume_handle,
                           "volume_attributes": {"pool": str(pool)}})
    pv_image = pool / pv_item.volume_handle
    pv_image.write_text("the PV's data")
    driver.write_record(pv_item, str(pv_image), "/dev/loop43", os.stat(str(pv_image)))
    with pytest.raises(InvalidInput) as refused:
        driver.attach(as_inline, provision=True)
    assert "a PV attached at /dev/loop43" in refused.value.msg and "inline volume scratch" in refused.value.msg
    assert calls == [] and pv_image.read_text() == "the PV's data"


def test_find_device_reads_only_the_recorded_device(tmp_path, monkeypatch):
    """find_device (every mount and detach) asks the kernel about the recorded device alone, not every loop device the
    node has; the answer is the same: that device while it still backs the recorded inode, else None."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import loop, loop_kernel
    pool = tmp_path / "pool"
    pool.mkdir()
    driver = LoopDriver(fake_runner({}), str(tmp_path / "k"), "n1", {"loop_pools": [str(pool)]})
    item = volume_item(dict(ITEM, volume_attributes={"pool": str(pool)}))
    (pool / "a.img").write_bytes(b"")
    st = os.stat(str(pool / "a.img"))
    driver.write_record(item, str(pool / "a.img"), "/dev/loop7", st)
    asked = []
    backing_inode = {"/dev/loop7": st.st_ino, "/dev/loop8": st.st_ino + 1}

    def kernel(only=None):
        asked.append(only)
        return [loop_kernel.LoopDevice(name=name, back_file="", back_ino=backing_inode[name],
                                       back_dev=(os.major(st.st_dev), os.minor(st.st_dev)))
                for name in (only if only is not None else sorted(backing_inode))]
    monkeypatch.setattr(loop, "kernel_loop_devices", kernel)
    assert driver.find_device(item) == "/dev/loop7" and asked == [["/dev/loop7"]]
    driver.write_record(item, str(pool / "a.img"), "/dev/loop8", st)  # loop8 backs another inode: not this volume's
    assert driver.find_device(item) is None and asked[-1] == ["/dev/loop8"]


def test_a_loop_device_that_cannot_be_read_is_never_taken_for_unbound(monkeypatch):
    """Without sysfs, or with a device bound in sysfs but no /dev node, the kernel listing answers None (the
    driver then asks losetup), never "no device": detach would otherwise drop the record and the holder of a
    device still bound. A recorded path that is not /dev/loopN reads nothing."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import loop
    real_open, real_listdir = os.open, os.listdir

    def no_sysfs(path):
        if path == "/sys/block":
            raise FileNotFoundError(2, "No such file or directory", path)
        return real_listdir(path)
    monkeypatch.setattr(loop.os, "listdir", no_sysfs)
    assert loop.kernel_loop_devices(only=["/dev/loop9"]) is None and loop.kernel_loop_devices() is None
    monkeypatch.setattr(loop.os, "listdir", lambda path: ["loop9"] if path == "/sys/block" else real_listdir(path))
    reader, writer = os.pipe()
    os.write(writer, b"/pool/a.img\n")
    os.close(writer)

    def bound_without_node(path, flags, *args, **kwargs):
        if path == "/sys/block/loop9/loop/backing_file":
            return reader
        if path == "/dev/loop9":
            raise FileNotFoundError(2, "No such file or directory", path)
        return real_open(path, flags, *args, **kwargs)
    monkeypatch.setattr(loop.os, "open", bound_without_node)
    assert loop.kernel_loop_devices(only=["/dev/loop9"]) is None
    assert loop.kernel_loop_devices(only=["/dev/sda", "/dev/loop9\x00", "/dev/loop9/../sda", 7]) == []


def test_a_record_naming_a_device_that_is_not_a_loop_device_detaches_nothing(tmp_path):
    """find_device reads only the recorded device: a record (stale or planted) that names /dev/sda, a path through
    /dev/loop0/.., or a loop device backing another inode makes detach run no command at all (no losetup -d of
    something that is not this volume's), and a device the kernel does not list is not read."""
    pool = tmp_path / "pool"
    pool.mkdir()
    ran = []
    runner = Runner(lambda argv, data=None: ran.append(list(argv)) or (0, "", ""), node="n1", volume="pv-a")
    driver = LoopDriver(runner, str(tmp_path / "k"), "n1", {"loop_pools": [str(pool)]})
    item = volume_item(dict(ITEM, volume_attributes={"pool": str(pool)}))
    (pool / "a.img").write_bytes(b"")
    st = os.stat(str(pool / "a.img"))
    for planted in ("/dev/sda", "/dev/loop0/../sda", "/dev/loop999999"):
        driver.write_record(item, str(pool / "a.img"), planted, st)
        assert driver.find_device(item) is None
        assert driver.detach(item) is None and not os.path.exists(driver.record_path(item.volume_handle))
    assert ran == []


def test_a_symlink_where_the_holder_lock_belongs_is_refused_and_leaks_nothing(tmp_path):
    """The holder lock is opened with O_NOFOLLOW under the pool: a symlink planted there (to a file outside the
    pool) is refused naming the volume, the file it points to is untouched, and no descriptor stays open."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import UnsafePath
    pool = tmp_path / "pool"
    pool.mkdir()
    outside = tmp_path / "outside"
    outside.write_text("keep")
    driver = LoopDriver(fake_runner({}), str(tmp_path / "k"), "n1", {"loop_pools": [str(pool)]})
    item = volume_item(dict(ITEM, volume_attributes={"pool": str(pool)}))
    lock_path = driver._holder_path(item, ".lock")
    os.makedirs(os.path.dirname(lock_path))
    os.symlink(str(outside), lock_path)
    open_fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(UnsafePath) as exc:
        with driver._holders_locked(item):
            pass
    assert "symlink where volume pv-a's holder lock belongs" in str(exc.value) and "n1" in str(exc.value)
    assert outside.read_text() == "keep" and len(os.listdir("/proc/self/fd")) == open_fds
