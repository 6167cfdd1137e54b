"""The provisioner's calls on a host (provisioner/calls.py) against the test CSI plugin over a real socket, and the
loop driver's on a real pool with real loop devices: CreateVolume as the external-provisioner makes it (capabilities,
parameters, secrets, topology only for a plugin with VOLUME_ACCESSIBILITY_CONSTRAINTS), idempotent by name,
RESOURCE_EXHAUSTED final, a non-final answer uncertain and retried without a second volume; DeleteVolume, refused
while the volume is attached."""
import os
import subprocess

from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import Runner, process_runner
from ansible_collections.kubevol.volumes.plugins.module_utils.provisioner.calls import run_operations

NAME = "csi.kubevol.test"
MiB = 1024 * 1024
KEY = "topology.csi.kubevol.test/node"


def create_op(name="pvc-u1", size=64 * MiB, driver=NAME, topology=None, parameters=None, **request):
    body = {"capacity_bytes": size, "access_modes": ["ReadWriteOnce", "ReadOnlyMany"], "volume_mode": "Filesystem",
            "fs_type": "xfs", "mount_flags": ["noatime"], "parameters": parameters or {"tier": "gold"},
            "accessibility_requirements": topology, "content_source": None}
    body.update(request)
    return {"op": "create_volume", "driver": driver, "claim": "ns/data", "name": name, "storage_class": "fast",
            "request": body}


def delete_op(name="pvc-u1", driver=NAME, pool=None):
    return {"op": "delete_volume", "driver": driver, "pv_name": name, "volume_id": name,
            "volume_attributes": {"pool": pool} if pool else {}}


def run(driver_options, operations, secrets=None, kubelet_dir="/var/lib/kubelet", check_mode=False):
    return run_operations(Runner(process_runner(30, 60), node="host1"), kubelet_dir, "host1", operations,
                          driver_options, secrets, check_mode)


def images(pool):
    return sorted(n for n in os.listdir(pool) if n.endswith(".img"))


def test_create_volume_as_the_external_provisioner_makes_it(driver):
    driver.start(topology=True, node_id="node2", expected_secrets={"key": "s3cret"})
    options = {NAME: {"socket": driver.socket, "controller": "node"}}
    topology = {"requisite": [{"segments": {KEY: "node1"}}, {"segments": {KEY: "node2"}}],
                "preferred": [{"segments": {KEY: "node2"}}, {"segments": {KEY: "node1"}}]}
    results, failures = run(options, [create_op(topology=topology)], [{"key": "s3cret"}])
    assert failures == []
    result, = results
    assert (result["called"], result["topology_supported"]) == (True, True)
    volume = result["volume"]
    assert (volume["volume_id"], volume["capacity_bytes"]) == ("pvc-u1", 64 * MiB)
    assert volume["accessible_topology"] == [{"segments": {KEY: "node2"}}]
    call = [c for c in driver.calls() if c["method"] == "CreateVolume"][0]
    request = call["request"]
    assert call["secrets"] == "expected" and request["secrets"] == {"key": "<redacted>"}
    assert request["parameters"] == {"tier": "gold"} and request["capacity_range"] == {"required_bytes": str(64 * MiB)}
    # one capability per access mode (getVolumeCapabilities), the class's fsType and mountOptions
    assert request["volume_capabilities"] == [
        {"mount": {"fs_type": "xfs", "mount_flags": ["noatime"]}, "access_mode": {"mode": "SINGLE_NODE_WRITER"}},
        {"mount": {"fs_type": "xfs", "mount_flags": ["noatime"]}, "access_mode": {"mode": "MULTI_NODE_READER_ONLY"}}]
    assert request["accessibility_requirements"] == topology
    # the same name again: the volume made before, not a second one
    again, failures = run(options, [create_op(topology=topology)], [{"key": "s3cret"}])
    assert not failures and again[0]["volume"]["volume_id"] == "pvc-u1"
    assert images(driver.path("csi-state", "pool")) == ["pvc-u1.img"]
    # a plugin without topology gets no requirements, and no nodeAffinity follows
    driver.configure(topology=False)
    results, failures = run(options, [create_op("pvc-u2", topology=topology)], [{"key": "s3cret"}])
    assert not failures and results[0]["topology_supported"] is False
    assert "accessibility_requirements" not in [c for c in driver.calls() if c["method"] == "CreateVolume"][-1][
        "request"]
    # DeleteVolume, then nothing left
    results, failures = run(options, [delete_op("pvc-u1"), delete_op("pvc-u2")], [{"key": "s3cret"}] * 2)
    assert not failures and [r["called"] for r in results] == [True, True]
    assert images(driver.path("csi-state", "pool")) == []


def test_create_volume_failures_final_and_uncertain(driver):
    driver.start(fail={"CreateVolume": {"code": "RESOURCE_EXHAUSTED", "message": "pool full"}})
    options = {NAME: {"socket": driver.socket, "controller": "node"}}
    results, failures = run(options, [create_op()])
    assert results == [] and failures[0]["uncertain"] is False  # checkError: final for CreateVolume
    assert "pool full" in failures[0]["msg"] and "pvc-u1" in failures[0]["msg"]
    assert failures[0]["code"] == "KV-CSI-CALL" and failures[0]["grpc_code"] == "RESOURCE_EXHAUSTED"
    driver.configure(fail={}, fail_after={"CreateVolume": {"code": "DEADLINE_EXCEEDED", "message": "slow"}})
    results, failures = run(options, [create_op()])
    assert failures[0]["uncertain"] is True and images(driver.path("csi-state", "pool")) == ["pvc-u1.img"]
    # what the next run does is said before the code, which stays last and once
    msg = failures[0]["msg"]
    assert msg.endswith("so no second volume is made [KV-CSI-CALL]") and msg.count("[KV-") == 1, msg
    assert failures[0]["code"] == "KV-CSI-CALL" and failures[0]["grpc_code"] == "DEADLINE_EXCEEDED"
    driver.configure(fail_after={})
    results, failures = run(options, [create_op()])
    assert not failures and images(driver.path("csi-state", "pool")) == ["pvc-u1.img"]  # retried: no second volume
    # a plugin that does not provision is refused before any volume call
    driver.configure(controller_caps=["EXPAND_VOLUME"])
    before = len(driver.calls())
    results, failures = run(options, [create_op("pvc-u3"), delete_op("pvc-u1")])
    assert len(failures) == 2 and all("controller CREATE_DELETE_VOLUME capability is not reported" in f["msg"]
                                      for f in failures)
    assert not [c for c in driver.calls()[before:] if c["method"] in ("CreateVolume", "DeleteVolume")]
    # check mode makes only the read-only calls
    driver.configure(controller_caps=["CREATE_DELETE_VOLUME"])
    before = len(driver.calls())
    results, failures = run(options, [create_op("pvc-u4")], check_mode=True)
    assert not failures and results[0]["called"] is False
    assert "CreateVolume" not in [c["method"] for c in driver.calls()[before:]]


def test_the_loop_driver_makes_and_deletes_images_in_its_pool(tmp_path):
    pool = str(tmp_path / "pool")
    options = {"loop.kubevol.io": {"pools": [pool]}}
    op = create_op("pvc-l1", driver="loop.kubevol.io", parameters={"pool": pool})
    results, failures = run(options, [op], kubelet_dir=str(tmp_path))
    assert not failures
    assert results[0]["volume"] == {"volume_id": "pvc-l1", "capacity_bytes": 64 * MiB,
                                    "volume_context": {"pool": pool}}
    image = os.path.join(pool, "pvc-l1")
    st = os.stat(image)
    assert st.st_size == 64 * MiB and st.st_blocks == 0  # sparse
    assert run(options, [op], kubelet_dir=str(tmp_path))[0][0]["called"] is False  # idempotent by name
    # refusals: another pool, an unknown parameter, a smaller existing image
    other = create_op("pvc-l2", driver="loop.kubevol.io", parameters={"pool": "/srv/elsewhere"})
    odd = create_op("pvc-l3", driver="loop.kubevol.io", parameters={"fast": "yes"})
    big = create_op("pvc-l1", driver="loop.kubevol.io", size=128 * MiB, parameters={"pool": pool})
    results, failures = run(options, [other, odd, big], kubelet_dir=str(tmp_path))
    assert results == [] and len(failures) == 3
    assert "@{driver_options[loop.kubevol.io]}" in failures[0]["msg"]
    assert "takes only pool" in failures[1]["msg"] and "ALREADY_EXISTS" in failures[2]["msg"]
    # DeleteVolume is refused while a loop device is bound to the image, then removes it
    device = subprocess.run(["losetup", "--find", "--show", image], stdout=subprocess.PIPE, universal_newlines=True,
                            check=True).stdout.strip()
    try:
        results, failures = run(options, [delete_op("pvc-l1", "loop.kubevol.io", pool)], kubelet_dir=str(tmp_path))
        assert "still attached (device %s)" % device in failures[0]["msg"] and os.path.exists(image)
    finally:
        subprocess.run(["losetup", "-d", device], check=True)
    results, failures = run(options, [delete_op("pvc-l1", "loop.kubevol.io", pool)], kubelet_dir=str(tmp_path))
    assert not failures and not os.path.exists(image)
    assert run(options, [delete_op("pvc-l1", "loop.kubevol.io", pool)], kubelet_dir=str(tmp_path))[1] == []
