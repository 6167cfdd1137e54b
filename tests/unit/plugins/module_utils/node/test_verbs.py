"""The node operations call the driver's CSI verbs in the kubelet's order (pkg/volume/csi: csi_attacher.go Attach,
MountDevice, csi_mounter.go SetUpAt, TearDownAt, csi_attacher.go UnmountDevice, Detach), with a driver that keeps
everything in memory (fake_driver.py): ControllerPublish before NodeStage before NodePublish; NodeUnpublish before
NodeUnstage before ControllerUnpublish; a check run asks no verb to change anything."""
import importlib
import sys

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils import drivers
from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import UnknownDriver
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.base import STAGE_UNSTAGE
from ansible_collections.kubevol.volumes.plugins.module_utils.node import blockdev, mount, operations
from ansible_collections.kubevol.volumes.plugins.module_utils.node.context import NodeContext

FAKE_MODULE = "ansible_collections.kubevol.volumes.tests.unit.plugins.module_utils.node.fake_driver"
fake = importlib.import_module(FAKE_MODULE)  # the module the registry imports: one class, one backend
POD1, POD2 = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"


def no_commands(argv, data=None):
    raise AssertionError("the fake driver's volumes run no command: %r" % (argv,))


@pytest.fixture
def backend(monkeypatch):
    """The fake drivers registered (as a driver's one registry line), their in-memory storage and mount table."""
    drivers.DRIVERS.register(fake.FakeDriver)
    drivers.DRIVERS.register(fake.NoStageDriver)
    store = fake.Backend()
    monkeypatch.setattr(fake.FakeDriver, "backend", store)
    monkeypatch.setattr(mount, "list_mounts", lambda runner: store.mount_table())
    monkeypatch.setattr(blockdev, "device_number", fake.device_number)
    yield store
    drivers.DRIVERS.unregister(fake.NAME)
    drivers.DRIVERS.unregister(fake.NO_STAGE_NAME)


def context(tmp_path, check_mode=False):
    return NodeContext(no_commands, node_name="node1", kubelet_dir=str(tmp_path / "kubelet"),
                       run_dir=str(tmp_path / "run"), check_mode=check_mode)


def item(ctx, driver=fake.NAME, mode="Filesystem", pods=(POD1, POD2), **extra):
    raw = {"pv_name": "pv-a", "driver": driver, "volume_handle": "vol-a", "mode": mode, "capacity_bytes": 1 << 20,
           "pods": [{"uid": uid} for uid in pods]}
    raw.update(extra)
    [found] = ctx.items([raw])
    return found


def verbs(store):
    return [(verb, path) for verb, path, _check in store.calls]


def paths(ctx, vol, block=False):
    staging = names.device_mount_path(ctx.kubelet_dir, vol.driver, vol.volume_handle)
    pod = names.pod_device_path if block else names.pod_mount_path
    return staging, pod(ctx.kubelet_dir, POD1, vol.pv_name), pod(ctx.kubelet_dir, POD2, vol.pv_name)


def test_lifecycle_calls_the_verbs_in_the_kubelets_order(tmp_path, backend):
    ctx = context(tmp_path)
    vol = item(ctx)
    staging, target1, target2 = paths(ctx, vol)
    att = operations.attach_volume(ctx, vol)
    assert att["attached"] and att["device"] == "/dev/fake1" and att["changed"]
    res = operations.mount_volume(ctx, vol)
    assert res["changed"] and res["device"] == "/dev/fake1" and res["global_mount_path"] == staging
    assert res["published"] == [POD1, POD2]
    assert verbs(backend) == [("controller_publish", None), ("node_stage", staging), ("node_publish", target1),
                              ("node_publish", target2)]
    assert backend.mounts == {staging: "/dev/fake1", target1: "/dev/fake1", target2: "/dev/fake1"}

    del backend.calls[:]
    again = operations.mount_volume(ctx, vol)  # idempotent: the same verbs, nothing to do
    assert not again["changed"] and again["actions"] == [] and again["published"] == []

    del backend.calls[:]
    gone = operations.detach_volume(ctx, vol)
    assert verbs(backend) == [("node_unpublish", target1), ("node_unpublish", target2), ("node_unstage", staging),
                              ("controller_unpublish", None)]
    assert gone["unmounted"] == [target1, target2, staging] and gone["detached"] == "/dev/fake1"
    assert backend.mounts == {} and backend.attached == {}


def test_block_volumes_are_published_without_staging(tmp_path, backend):
    ctx = context(tmp_path)
    vol = item(ctx, mode="Block")
    _staging, dev1, dev2 = paths(ctx, vol, block=True)
    operations.attach_volume(ctx, vol)
    res = operations.mount_volume(ctx, vol)
    assert res["global_mount_path"] is None and res["published"] == [POD1, POD2]
    assert verbs(backend) == [("controller_publish", None), ("node_publish", dev1), ("node_publish", dev2)]


def test_a_driver_without_stage_unstage_is_published_straight(tmp_path, backend):
    ctx = context(tmp_path)
    vol = item(ctx, driver=fake.NO_STAGE_NAME)
    assert not ctx.driver(vol).can(STAGE_UNSTAGE)
    operations.attach_volume(ctx, vol)
    operations.mount_volume(ctx, vol)
    assert [verb for verb, _path in verbs(backend)] == ["controller_publish", "node_publish", "node_publish"]
    del backend.calls[:]
    operations.detach_volume(ctx, vol)
    assert [verb for verb, _path in verbs(backend)] == ["node_unpublish", "node_unpublish", "controller_unpublish"]


def test_one_pod_leaving_unpublishes_only_its_own_mount(tmp_path, backend):
    ctx = context(tmp_path)
    vol = item(ctx)
    staging, target1, target2 = paths(ctx, vol)
    operations.attach_volume(ctx, vol)
    operations.mount_volume(ctx, vol)
    del backend.calls[:]
    leaving = item(ctx, pods=(POD1,), detach=False, unmount_device=False)
    operations.detach_volume(ctx, leaving)
    assert verbs(backend) == [("node_unpublish", target1)]
    assert backend.mounts == {staging: "/dev/fake1", target2: "/dev/fake1"} and backend.attached


def test_check_mode_asks_no_verb_to_change_anything(tmp_path, backend):
    vol = item(context(tmp_path))
    check = context(tmp_path, check_mode=True)
    before = backend.snapshot()
    att = operations.attach_volume(check, vol)
    assert att["changed"] and att["device"] is None
    pending = operations.mount_volume(check, vol)  # nothing attached yet: reported pending, no node verb
    assert pending["changed"] and "pending" in pending
    assert backend.snapshot() == before and [c[2] for c in backend.calls] == [True]

    real = context(tmp_path)
    operations.attach_volume(real, vol)
    before = backend.snapshot()
    del backend.calls[:]
    res = operations.mount_volume(check, vol)
    assert res["changed"] and "stage" in res["actions"] and res["published"] == [POD1, POD2]
    operations.expand_controller(check, item(check, capacity_bytes=2 << 20))
    operations.expand_node(check, vol)
    assert [verb for verb, _p in verbs(backend)] == ["node_stage", "node_publish", "node_publish",
                                                     "controller_expand", "node_expand"]
    assert all(check_mode for _verb, _path, check_mode in backend.calls)
    assert backend.snapshot() == before

    operations.mount_volume(real, vol)
    before = backend.snapshot()
    del backend.calls[:]
    gone = operations.detach_volume(check, vol)
    assert gone["changed"] and gone["detached"] == "/dev/fake1"
    assert [verb for verb, _p in verbs(backend)] == ["node_unpublish", "node_unpublish", "node_unstage",
                                                     "controller_unpublish"]
    assert all(check_mode for _verb, _path, check_mode in backend.calls)
    assert backend.snapshot() == before


def test_expansion_is_controller_then_node(tmp_path, backend):
    ctx = context(tmp_path)
    vol = item(ctx)
    operations.attach_volume(ctx, vol)
    bigger = item(ctx, capacity_bytes=3 << 20)
    grown = operations.expand_controller(ctx, bigger)
    assert grown["changed"] and grown["backing_size_bytes"] == {"old": 1 << 20, "new": 3 << 20}
    node = operations.expand_node(ctx, bigger)
    assert node["changed"] and node["fs_size_bytes"] == {"old": 0, "new": 3 << 20}
    assert node["diff"]["after"]["pv-a"]["fs_size_bytes"] == 3 << 20
    assert [verb for verb, _p in verbs(backend)] == ["controller_publish", "controller_expand", "node_expand"]


def test_the_registry_imports_a_driver_on_first_use(backend):
    """A driver is one file plus one registry line (here registered by the fixture, as that line would): its class
    and its class data (capabilities, options spec) are read through the registry."""
    assert fake.NAME in drivers.DRIVERS and fake.NAME in sorted(drivers.DRIVERS)
    assert drivers.get_driver(fake.NAME) is fake.FakeDriver and drivers.DRIVERS.get(fake.NAME) is fake.FakeDriver
    assert drivers.capabilities(fake.NAME) == fake.FakeDriver.CAPABILITIES
    assert drivers.options_spec(fake.NAME) == {"zone": {"type": "str", "default": "a"}}
    assert drivers.capabilities("nfs.example.com") is None and drivers.options_spec("nfs.example.com") is None
    with pytest.raises(UnknownDriver):
        drivers.get_driver("nfs.example.com", volume="pv-a")
    assert [] not in drivers.DRIVERS  # an unhashable name is no driver's, never a TypeError


def test_the_loop_driver_is_not_imported_until_asked_for():
    """Importing the registry imports no driver (the registry loads when first read), and reading the names and a
    driver's class data (the planner) imports no node code (a subprocess: this one has imported both already)."""
    import subprocess
    code = ("import sys; from ansible_collections.kubevol.volumes.plugins.module_utils import drivers; "
            "assert 'ansible_collections.kubevol.volumes.plugins.module_utils.drivers.loop' not in sys.modules; "
            "names = sorted(drivers.DRIVERS); "
            "assert drivers.capabilities('loop.kubevol.io') >= {'attachable', 'stage_unstage', 'block'}; "
            "assert drivers.options_spec('loop.kubevol.io')['pools']['default'] == ['/var/lib/kubevol/pool']; "
            "node = sorted(m for m in sys.modules if '.module_utils.node' in m); "
            "assert not node, 'reading class data imported node code: %s' % node; "
            "print(names)")
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['loop.kubevol.io']"


def test_a_mode_the_driver_lacks_is_refused_before_anything_runs(tmp_path, backend, monkeypatch):
    """A Block volume of a driver without the block capability fails that volume on that node, naming the driver and
    what it lacks; no verb is called."""
    monkeypatch.setattr(fake.FakeDriver, "CAPABILITIES", fake.FakeDriver.CAPABILITIES - {"block"})
    ctx = context(tmp_path)
    raw = {"pv_name": "pv-b", "driver": fake.NAME, "volume_handle": "vol-b", "mode": "Block", "pods": [{"uid": POD1}]}
    assert ctx.items([raw]) == []
    [(refused, err)] = ctx.refused
    assert refused.pv_name == "pv-b" and err.kwargs["step"] == "validate"
    assert "driver fake.kubevol.io on node node1 does not support volumeMode Block" in err.msg, err.msg
    assert backend.calls == []
