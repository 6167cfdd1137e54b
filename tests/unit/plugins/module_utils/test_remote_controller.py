"""A CSI driver's Controller service on a host of the inventory (driver_options controller + controller_socket):
the options' checks, the plan's marks, the run's task sequence with and without such a controller, the controller
task's records and failures, and the node side's items."""
import copy

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.common import csi_controller, driver_options
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import unique_volume_name
from ansible_collections.kubevol.volumes.plugins.module_utils.node.controller_host import run_operations
from ansible_collections.kubevol.volumes.plugins.module_utils.plan import remote_controller
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.planner import lean_plan
from ansible_collections.kubevol.volumes.plugins.module_utils.run import controller_outcome, executor

DRIVER = "csi.vendor.example"
SOCKET = "/run/vendor/controller.sock"
OPTIONS = {DRIVER: {"controller": "ctl", "controller_socket": SOCKET}}
UNIQUE = unique_volume_name(DRIVER, "vol-a")


def item(**extra):
    base = {"pv_name": "pv-a", "driver": DRIVER, "volume_handle": "vol-a", "volume_attributes": {},
            "capacity_bytes": 1 << 30, "mode": "Filesystem", "fs_type": "xfs", "mount_options": [],
            "read_only": False, "pods": [], "secret_refs": {}}
    base.update(extra)
    return base


def step(action, target, node, pod_uid=None, **extra):
    it = item(pods=[{"uid": pod_uid, "name": "ns/" + pod_uid, "read_only": False}] if pod_uid else [])
    base = {"action": action, "target": target, "node": node, "volume": "pv-a", "pod": ("ns/" + pod_uid) if pod_uid
            else None, "pod_uid": pod_uid, "reason": "test", "unique_volume_name": UNIQUE, "item": it}
    base.update(extra)
    return base


def moving_plan():
    """pv-a moves from n1 to n2, and grows."""
    return lean_plan([
        step("unmount", "pod", "n1", pod_uid="old"), step("unmount", "device", "n1"), step("detach", "device", "n1"),
        step("attach", "device", "n2"), step("mount", "device", "n2"), step("mount", "pod", "n2", pod_uid="new"),
        step("expand", "controller", "n2", size_from=1 << 30, size_to=2 << 30, capacity="2Gi", pvc="ns/c"),
        step("expand", "node", "n2", size_from=1 << 30, size_to=2 << 30, capacity="2Gi", pvc="ns/c")])


FACTS = {"n1": {"csi_node_ids": {DRIVER: "id-n1"}}, "n2": {"csi_node_ids": {DRIVER: "id-n2"}}}


def marked_plan():
    return remote_controller.mark(moving_plan(), OPTIONS, ["n1", "n2", "ctl"], FACTS)


# -- the options -------------------------------------------------------------------------------------------
def test_a_controller_host_needs_its_socket_and_a_socket_needs_a_host():
    assert csi_controller.check(DRIVER, OPTIONS[DRIVER]) == {"host": "ctl", "socket": SOCKET}
    assert csi_controller.check(DRIVER, {"controller": "node"}) == "node"
    for own, field in (({"controller": "ctl"}, "controller_socket"),
                       ({"controller": "node", "controller_socket": SOCKET}, "controller_socket"),
                       ({"controller_socket": SOCKET}, "controller_socket"),
                       ({"controller": "ctl", "controller_socket": "run/c.sock"}, "controller_socket"),
                       ({"controller": "ctl", "controller_socket": "/run/../c.sock"}, "controller_socket"),
                       ({"controller": " ctl"}, ".controller"), ({"controller": 3}, ".controller")):
        with pytest.raises(InvalidInput) as info:
            csi_controller.check(DRIVER, own)
        assert "driver_options[%s]%s" % (DRIVER, "." + field.lstrip(".")) in str(info.value), info.value
        # the same refusal when the plan or a node checks the whole driver_options
        with pytest.raises(InvalidInput):
            driver_options.validate({DRIVER: own})


def test_a_controller_host_not_in_the_inventory_is_refused_at_plan_time_naming_the_option():
    assert csi_controller.remote_controllers(OPTIONS, ["n1", "ctl"]) == {DRIVER: {"host": "ctl", "socket": SOCKET}}
    with pytest.raises(InvalidInput) as info:
        csi_controller.remote_controllers(OPTIONS, ["n1", "n2"])
    assert "driver_options[%s].controller" % DRIVER in str(info.value) and "ctl" in str(info.value)
    assert "inventory" in str(info.value)
    with pytest.raises(InvalidInput):
        remote_controller.mark(moving_plan(), OPTIONS, ["n1", "n2"], FACTS)
    # 'node' and drivers with no controller are not remote
    assert csi_controller.remote_controllers({DRIVER: {"controller": "node"}, "x": {"socket": "/s"}}, []) == {}


# -- the plan and the run's tasks ------------------------------------------------------------------------------
def test_the_plan_marks_the_controller_steps_with_the_host_and_the_nodes_csi_ids():
    plan = marked_plan()
    marks = [(s["action"], s["target"], s["node"], s.get("controller_host"), s.get("csi_node_id"))
             for s in plan["plan"] if s.get("controller_host")]
    assert marks == [("detach", "device", "n1", "ctl", "id-n1"), ("attach", "device", "n2", "ctl", "id-n2"),
                     ("expand", "controller", "n2", "ctl", None)]
    assert plan["csi_controllers"] == {DRIVER: {"host": "ctl", "socket": SOCKET}}


def test_without_a_remote_controller_the_run_has_exactly_its_usual_tasks():
    plain = moving_plan()
    assert remote_controller.mark(plain, {DRIVER: {"controller": "node"}}, ["n1"], FACTS) is plain
    assert "csi_controllers" not in plain and not [s for s in plain["plan"] if s.get("controller_host")]
    assert executor.run_tasks(plain["plan"])["sequence"] == [
        {"name": "teardown", "phases": ["teardown"]},
        {"name": "setup", "phases": ["attach", "mount", "expand_controller", "expand_node"]}]


def test_a_remote_controller_runs_its_task_between_the_teardown_and_the_setup():
    plan = marked_plan()
    assert executor.run_tasks(plan["plan"])["sequence"] == [
        {"name": "teardown", "phases": ["teardown"]}, {"name": "controller", "phases": [], "hosts": ["ctl"]},
        {"name": "setup", "phases": ["attach", "mount", "expand_node"]}]
    # the controller expansion is the controller host's alone: no node work
    assert executor.phase_items(plan, "expand_controller", "n2") == []
    assert [i["pv_name"] for i in executor.phase_items(plan, "attach", "n2")] == ["pv-a"]
    ops = controller_outcome.controller_work(plan, "ctl")
    assert [(o["op"], o["node"], o["node_id"]) for o in ops] == [
        ("unpublish", "n1", "id-n1"), ("publish", "n2", "id-n2"), ("expand", "n2", None)]
    assert ops[2]["volume"]["capacity_bytes"] == 2 << 30 and "controller_host" not in ops[0]["volume"]


def _node_ok(plan, phase, node):
    items = executor.phase_items(plan, phase, node)
    return {"phase_results": {phase: {"changed": True, "volumes": [
        {"pv_name": i["pv_name"], "unique_volume_name": UNIQUE} for i in items]}}}


def test_records_in_kubernetes_order_and_the_publish_context_handed_to_the_node():
    plan = marked_plan()
    state, records, upcoming = executor.run_step(plan)
    assert [u["name"] for u in upcoming] == ["teardown", "controller", "setup"] and records == []
    # after the teardown: the node is done (not in use) but nothing is detached yet; the intents come before the
    # controller task publishes and grows
    state, records, upcoming = executor.run_step(plan, state, "teardown", {"n1": _node_ok(plan, "teardown", "n1")})
    assert [r["type"] for r in records] == ["in_use", "attach_intent", "resize_intent"], records
    assert records[0]["in_use"] is False and records[2]["stage"] == "controller"
    result = {"changed": True, "failures": [], "operations": [
        {"op": "unpublish", "node": "n1", "unique_volume_name": UNIQUE, "called": True},
        {"op": "publish", "node": "n2", "unique_volume_name": UNIQUE, "called": True,
         "publish_context": {"devicePath": "/dev/loop7", "lun": "3"}},
        {"op": "expand", "node": "n2", "unique_volume_name": UNIQUE, "called": True, "capacity_bytes": 2 << 30}]}
    state, records, upcoming = executor.run_step(plan, state, "controller", {"ctl": result})
    assert [r["type"] for r in records] == ["detached", "attached", "controller_expanded"], records
    assert records[0]["node"] == "n1" and records[1]["node"] == "n2"
    assert records[1]["attachment_metadata"] == {"devicePath": "/dev/loop7", "lun": "3"}
    assert records[1]["device_path"] == "/dev/loop7"
    assert records[2] == {"type": "controller_expanded", "pv_name": "pv-a", "capacity": "2Gi", "pvc": "ns/c"}
    assert state["published"] == {UNIQUE: {"n2": {"devicePath": "/dev/loop7", "lun": "3"}}}
    assert [u["name"] for u in upcoming] == ["setup"]
    # the node's attach gets it; its own outcome records no second attachment (the controller task's is written)
    attach = controller_outcome.with_published(executor.phase_items(plan, "attach", "n2"), state["published"], "n2")
    assert attach[0]["controller_publish_context"] == {"devicePath": "/dev/loop7", "lun": "3"}
    setup = {"n2": {"phase_results": dict(_node_ok(plan, "attach", "n2")["phase_results"],
                                          **_node_ok(plan, "mount", "n2")["phase_results"],
                                          **_node_ok(plan, "expand_node", "n2")["phase_results"])}}
    state, records, upcoming = executor.run_step(plan, state, "setup", setup)
    assert [r["type"] for r in records] == ["in_use", "node_expanded"], records
    assert upcoming == [] and state["errors"] == []


def test_a_controller_host_unreachable_fails_its_volumes_naming_driver_host_and_socket():
    plan = marked_plan()
    state, _records, _upcoming = executor.run_step(plan)
    state, _records, _upcoming = executor.run_step(plan, state, "teardown", {"n1": _node_ok(plan, "teardown", "n1")})
    gone = {"unreachable": True, "failed": True, "msg": "controller host ctl is unreachable: ssh: no route"}
    state, records, upcoming = executor.run_step(plan, state, "controller", {"ctl": gone})
    assert records == [] and state["published"] == {}
    assert [e["node"] for e in state["errors"]] == ["ctl"]
    msg = state["errors"][0]["msg"]
    assert "ctl" in msg and DRIVER in msg and SOCKET in msg and "unreachable" in msg, msg
    # what depends on it (the node's attach, stage, publish, expansion) is not attempted
    assert UNIQUE in state["failures"]["volumes"]
    assert executor.phase_items(plan, "attach", "n2", state["failures"]) == []
    assert set(b["action"] for b in state["blocked"]) >= {"attach", "mount"}


def test_a_failed_call_records_nothing_for_its_volume():
    plan = marked_plan()
    state, _r, _u = executor.run_step(plan)
    state, _r, _u = executor.run_step(plan, state, "teardown", {"n1": _node_ok(plan, "teardown", "n1")})
    failed = {"failed": True, "msg": "1 controller call(s) failed", "operations": [], "failures": [
        {"op": "unpublish", "node": "n1", "unique_volume_name": UNIQUE, "uncertain": True,
         "msg": "controller host ctl (driver %s, socket %s): DEADLINE_EXCEEDED" % (DRIVER, SOCKET)},
        {"op": "publish", "node": "n2", "unique_volume_name": UNIQUE, "msg": "not attempted: ..."}]}
    state, records, _u = executor.run_step(plan, state, "controller", {"ctl": failed})
    assert records == [], records  # no detached: the attachment to n1 stays recorded, uncertain
    assert "DEADLINE_EXCEEDED" in state["errors"][0]["msg"]


def test_a_failed_node_teardown_gets_no_controller_unpublish():
    plan = marked_plan()
    failures = {"nodes": {}, "volumes": {UNIQUE: "teardown on node n1 failed: busy"}}
    assert controller_outcome.controller_work(plan, "ctl", failures) == []
    assert controller_outcome.controller_work(plan, "ctl", {"nodes": {"n1": "unreachable"}, "volumes": {}})[0][
        "op"] == "publish"


# -- the controller host's side ---------------------------------------------------------------------------------
def test_the_controller_host_refuses_a_call_without_the_nodes_csi_id_and_stops_that_volume():
    vol = dict(item(), pods=[], secret_refs={}, secrets={"controller_publish": {"password": "s3cret-value"}})
    ops = [{"op": "unpublish", "node": "n1", "node_id": None, "volume": copy.deepcopy(vol)},
           {"op": "publish", "node": "n2", "node_id": "id-n2", "volume": copy.deepcopy(vol)}]
    results, failures = run_operations(None, "ctl", ops, OPTIONS)
    assert results == [] and [f["op"] for f in failures] == ["unpublish", "publish"]
    assert "node n1" in failures[0]["msg"] and DRIVER in failures[0]["msg"] and "NodeGetInfo" in failures[0]["msg"]
    assert "ctl" in failures[0]["msg"] and SOCKET in failures[0]["msg"]
    assert failures[1]["msg"].startswith("not attempted")
    # each failure carries its kubevol code, and the gRPC status apart (none: no call was made)
    assert failures[0]["code"] == "KV-CSI-REFUSED" and failures[0]["msg"].endswith("[KV-CSI-REFUSED]")
    # where the controller host made the call comes first, the code stays last and once
    assert failures[0]["msg"].startswith("controller host ctl (driver %s, socket %s): controller unpublish of volume "
                                         "%s for node n1: volume %s on node n1: " % (DRIVER, SOCKET, vol["pv_name"],
                                                                                     vol["pv_name"])), failures[0]
    assert failures[0]["msg"].count("[KV-") == 1
    assert failures[0]["grpc_code"] is None and failures[0]["uncertain"] is False
    assert failures[1]["code"] == "KV-CSI-REFUSED" and failures[1]["msg"].count("[KV-") == 1
    assert "s3cret-value" not in repr((results, failures))


def test_a_controller_host_without_the_drivers_controller_refuses_with_its_code_in_the_operators_words():
    ops = [{"op": "publish", "node": "n2", "node_id": "id-n2", "volume": item()}]
    results, failures = run_operations(None, "ctl", ops, {})
    assert results == [] and len(failures) == 1
    entry = failures[0]
    assert (entry["code"], entry["grpc_code"], entry["uncertain"]) == ("KV-CSI-REFUSED", None, False)
    assert entry["msg"].startswith("volume pv-a on node n2: driver %s has no controller host on host ctl" % DRIVER)
    # the setting is a token, said by the edge that shows the message (the module option or kubevol_driver_options)
    assert "@{driver_options[%s]}" % DRIVER in entry["msg"] and entry["msg"].endswith("[KV-CSI-REFUSED]")


def test_the_node_never_calls_a_remote_controller():
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.driver import external_driver_class
    from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.errors import CsiDriverRefused
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item

    drv = external_driver_class(DRIVER)(None, "/var/lib/kubelet", "n1", OPTIONS)
    assert drv.settings["remote"] == {"host": "ctl", "socket": SOCKET}
    with pytest.raises(CsiDriverRefused, match="runs on host ctl"):
        drv.controller_publish(volume_item(item()), "id-n1")


def test_a_volume_mounted_without_an_attach_in_this_run_gets_the_attachments_metadata():
    """The controller host published it and the VolumeAttachment says so, but the node kept no record (a run that
    stopped between the two): the mount item carries the attachmentMetadata, as the kubelet reads it back."""
    from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import VolumeAttachment

    plan = lean_plan([step("mount", "device", "n2"), step("mount", "pod", "n2", pod_uid="new")])
    va = VolumeAttachment("va", DRIVER, "n2", "pv-a", True, "/dev/loop7", {}, (("devicePath", "/dev/loop7"),))
    remote_controller.mark(plan, OPTIONS, ["ctl"], FACTS, {("pv-a", "n2"): va})
    assert executor.phase_items(plan, "mount", "n2")[0]["controller_publish_context"] == {"devicePath": "/dev/loop7"}
    assert executor.run_tasks(plan["plan"])["sequence"] == [{"name": "setup", "phases": ["mount"]}]
    # an attach in this run: the controller task's answer is the one the node gets, never an older record's
    moving = marked_plan()
    remote_controller.mark(moving, OPTIONS, ["ctl"], FACTS, {("pv-a", "n2"): va})
    assert "controller_publish_context" not in executor.phase_items(moving, "mount", "n2")[0]
    # not attached (an intent, an uncertain attach): nothing
    unattached = lean_plan([step("mount", "device", "n2")])
    remote_controller.mark(unattached, OPTIONS, ["ctl"], FACTS, {("pv-a", "n2"): va._replace(attached=False)})
    assert "controller_publish_context" not in executor.phase_items(unattached, "mount", "n2")[0]


def test_the_node_keeps_the_attachments_metadata_when_it_has_no_record_of_its_own(tmp_path):
    from types import SimpleNamespace

    from ansible_collections.kubevol.volumes.plugins.module_utils.node import external_ops
    from ansible_collections.kubevol.volumes.plugins.module_utils.node.volume import volume_item

    ctx = SimpleNamespace(run_dir=str(tmp_path), check_mode=False)
    assert external_ops._publish_context(ctx, volume_item(item())) is None  # nothing: "run the attach first"
    given = volume_item(item(controller_publish_context={"devicePath": "/dev/loop7"}))
    assert external_ops._publish_context(ctx, given) == {"devicePath": "/dev/loop7"}
    # kept: the node's facts list it as published here, and the next mount reads it without the item's
    assert external_ops._publish_context(ctx, volume_item(item())) == {"devicePath": "/dev/loop7"}
    assert [d.unique_volume_name for d in external_ops.published_volumes(ctx, DRIVER)] == [UNIQUE]


# -- a node gone or out of service: unpublished by the controller with the node id its VolumeAttachment kept ----
def _released_plan():
    """pv-a leaves n1, which is gone (no facts, no Node): a record-only release, then the attach to n2."""
    return lean_plan([step("detach", "device", "n1", record_only=True, forced=True),
                      step("attach", "device", "n2"), step("mount", "device", "n2")])


def _va(node, annotations):
    from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import VolumeAttachment
    return VolumeAttachment("va", DRIVER, node, "pv-a", True, "/dev/loop7", annotations, ())


def test_a_record_only_release_is_unpublished_with_the_node_id_its_volume_attachment_kept():
    """external-attacher csi_handler.go getNodeID: CSINode first, then the VA's csi.alpha.kubernetes.io/node-id; the
    release is recorded only once ControllerUnpublishVolume succeeded (the VA stays while the detach fails)."""
    plan = remote_controller.mark(_released_plan(), OPTIONS, ["n2", "ctl"], {"n2": FACTS["n2"]},
                                  {("pv-a", "n1"): _va("n1", (("csi.alpha.kubernetes.io/node-id", "id-n1"),))})
    marks = [(s["action"], s["node"], s.get("controller_host"), s.get("csi_node_id")) for s in plan["plan"]]
    assert marks[:2] == [("detach", "n1", "ctl", "id-n1"), ("attach", "n2", "ctl", "id-n2")], marks
    assert not plan.get("warnings")
    assert [(o["op"], o["node"], o["node_id"]) for o in controller_outcome.controller_work(plan, "ctl")] == [
        ("unpublish", "n1", "id-n1"), ("publish", "n2", "id-n2")]
    state, records, upcoming = executor.run_step(plan)
    assert [u["name"] for u in upcoming] == ["teardown", "controller", "setup"]
    # the teardown records nothing for it: the controller task does, after its call
    state, records, upcoming = executor.run_step(plan, state, "teardown", {})
    assert [r["type"] for r in records if r["type"] == "detached"] == [], records
    failed = {"changed": False, "operations": [], "failures": [
        {"op": "unpublish", "node": "n1", "unique_volume_name": UNIQUE, "msg": "backend says no"}]}
    _state, records, _upcoming = executor.run_step(plan, copy.deepcopy(state), "controller", {"ctl": failed})
    assert records == [], records  # not released: the next run calls again
    done = {"changed": True, "failures": [], "operations": [
        {"op": "unpublish", "node": "n1", "unique_volume_name": UNIQUE, "called": True},
        {"op": "publish", "node": "n2", "unique_volume_name": UNIQUE, "called": True,
         "publish_context": {"devicePath": "/dev/loop8"}}]}
    _state, records, _upcoming = executor.run_step(plan, state, "controller", {"ctl": done})
    assert [(r["type"], r["node"]) for r in records] == [("detached", "n1"), ("attached", "n2")], records
    assert records[1]["node_id"] == "id-n2"


def test_a_record_only_release_without_any_node_id_is_released_in_the_records_only_with_a_warning():
    plan = remote_controller.mark(_released_plan(), OPTIONS, ["n2", "ctl"], {"n2": FACTS["n2"]},
                                  {("pv-a", "n1"): _va("n1", ())})
    detach = plan["plan"][0]
    assert detach["action"] == "detach" and not detach.get("controller_host"), detach
    assert len(plan["warnings"]) == 1 and "without ControllerUnpublishVolume" in plan["warnings"][0]
    assert "pv-a" in plan["warnings"][0] and "n1" in plan["warnings"][0] and DRIVER in plan["warnings"][0]
    state, _records, _upcoming = executor.run_step(plan)
    _state, records, _upcoming = executor.run_step(plan, state, "teardown", {})
    assert [(r["type"], r["node"]) for r in records if r["type"] == "detached"] == [("detached", "n1")], records


def test_the_attachment_a_controller_host_published_keeps_the_node_id_as_the_external_attacher_does():
    from ansible_collections.kubevol.volumes.plugins.module_utils.records.record import RecordApplier

    data = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}, "status": {}}]}
    record = {"type": "attached", "node": "n2", "pv_name": "pv-a", "driver": DRIVER, "volume_handle": "vol-a",
              "device_path": "/dev/loop8", "attachment_metadata": {"devicePath": "/dev/loop8"}, "node_id": "id-n2"}
    intent = dict(record, type="attach_intent")
    for records in ([record], [intent, record]):
        cluster = copy.deepcopy(data)
        assert RecordApplier(cluster).apply_all(records)
        va = [o for o in cluster["items"] if o["kind"] == "VolumeAttachment"]
        assert va[0]["metadata"]["annotations"] == {"csi.alpha.kubernetes.io/node-id": "id-n2"}, va
        assert va[0]["status"]["attached"] is True
        assert not RecordApplier(cluster).apply_all([record])  # recorded once: a second run changes nothing
