"""volume_provision_calls' failures: each entry carries the kubevol code its message ends with, and the driver's gRPC
status apart (none for a refusal of kubevol's own). The CSI driver's statuses over a real socket:
tests/integration/csi/test_provisioner_calls.py."""
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import Runner
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.calls import run_operations


def _no_command(argv, data=None):
    raise AssertionError("a refused operation runs no command: %r" % (argv,))


def _create(name, capacity, parameters=None):
    return {"op": "create_volume", "driver": "loop.kubevol.io", "claim": "shop/" + name, "name": name,
            "request": {"capacity_bytes": capacity, "access_modes": ["ReadWriteOnce"], "volume_mode": "Filesystem",
                        "fs_type": "xfs", "mount_flags": [], "parameters": parameters or {},
                        "accessibility_requirements": None, "content_source": None}}


def test_a_refused_operation_carries_its_code_and_no_grpc_code(tmp_path):
    ops = [_create("pvc-a", 0), _create("pvc-b", 1 << 20, {"replicas": "3"}), {"op": "resize", "driver": "x"}]
    results, failures = run_operations(Runner(_no_command, node="node1"), str(tmp_path), "node1", ops, {})
    assert results == [] and len(failures) == 3
    for failure in failures[:2]:
        assert failure["code"] == "KV-LOOP-PROVISION" and failure["grpc_code"] is None, failure
        assert failure["msg"].endswith(" [KV-LOOP-PROVISION]") and failure["msg"].count("[KV-") == 1, failure
        assert failure["uncertain"] is False
    assert "requests no storage size" in failures[0]["msg"] and "replicas" in failures[1]["msg"]
    assert "unknown operation 'resize'" in failures[2]["msg"]  # the others went on
