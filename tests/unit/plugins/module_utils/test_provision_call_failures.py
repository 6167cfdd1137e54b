"""volume_provision_calls' failures: each entry carries the kubevol code its message ends with, and the driver's gRPC
status apart (none for a refusal of kubevol's own). The CSI driver's statuses over a real socket:
tests/integration/csi/test_provisioner_calls.py."""
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.errors import (
    CsiVolumeFailed, CsiVolumeUncertain)
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import Runner
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner import calls
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.calls import run_operations


def _no_command(argv, data=None):
    raise AssertionError("a refused operation runs no command: %r" % (argv,))


def _create(name, capacity, parameters=None):
    return {"op": "create_volume", "driver": "loop.kubevol.io", "claim": "shop/" + name, "name": name,
            "request": {"capacity_bytes": capacity, "access_modes": ["ReadWriteOnce"], "volume_mode": "Filesystem",
                        "fs_type": "xfs", "mount_flags": [], "parameters": parameters or {},
                        "accessibility_requirements": None, "content_source": None}}


def test_a_refused_operation_carries_its_code_and_no_grpc_code(tmp_path):
    ops = [_create("pvc-a", 0), _create("pvc-b", 1 << 20, {"replicas": "3"}),
           {"op": "resize", "driver": "x", "pv_name": "pv-c"}]
    results, failures = run_operations(Runner(_no_command, node="node1"), str(tmp_path), "node1", ops, {})
    assert results == [] and len(failures) == 3
    for failure in failures[:2]:
        assert failure["code"] == "KV-LOOP-PROVISION" and failure["grpc_code"] is None, failure
        assert failure["msg"].endswith(" [KV-LOOP-PROVISION]") and failure["msg"].count("[KV-") == 1, failure
        assert failure["uncertain"] is False
    assert "requests no storage size" in failures[0]["msg"] and "replicas" in failures[1]["msg"]
    assert "unknown operation 'resize'" in failures[2]["msg"]  # the others went on
    # a refusal of its own, with its code, not said as a DeleteVolume it is not
    assert failures[2]["msg"].startswith("operation 3 of 3 on host node1 (PV pv-c, driver x) refused: unknown "
                                         "operation 'resize' "), \
        failures[2]
    assert failures[2]["msg"].endswith("modules of its own kubevol.volumes collection [KV-UNKNOWN-OPERATION]")
    assert failures[2]["code"] == "KV-UNKNOWN-OPERATION" and failures[2]["msg"].count("[KV-") == 1


def _failing(monkeypatch, cls):
    def run_operation(runner, kubelet_dir, host, op, driver_options, secret, check_mode):
        raise cls(volume=op["name"], node=host, driver=op["driver"], detail="CSI CreateVolume failed: slow",
                  step="CreateVolume", grpc_code="DEADLINE_EXCEEDED", uncertain=cls.uncertain)
    monkeypatch.setattr(calls, "run_operation", run_operation)


def test_a_failed_call_says_the_operation_and_host_first_and_what_the_next_run_does_before_the_code(
        tmp_path, monkeypatch):
    op = dict(_create("pvc-u", 1 << 20), driver="csi.vendor.example")
    _failing(monkeypatch, CsiVolumeUncertain)
    _results, [failure] = run_operations(Runner(_no_command, node="ctl"), str(tmp_path), "ctl", [op], {})
    msg = failure["msg"]
    assert msg.startswith("CreateVolume pvc-u for claim shop/pvc-u on host ctl (driver csi.vendor.example): volume "
                          "pvc-u on node ctl: CSI CreateVolume failed: slow; the next run calls CreateVolume pvc-u "
                          "again with the same name"), msg
    assert msg.endswith("so no second volume is made [KV-CSI-CALL]") and msg.count("[KV-") == 1, msg
    assert failure["uncertain"] is True and failure["grpc_code"] == "DEADLINE_EXCEEDED"
    _failing(monkeypatch, CsiVolumeFailed)  # final: nothing was made, nothing to say of the next run
    _results, [failure] = run_operations(Runner(_no_command, node="ctl"), str(tmp_path), "ctl", [op], {})
    assert failure["msg"].endswith("CSI CreateVolume failed: slow [KV-CSI-CALL]"), failure
