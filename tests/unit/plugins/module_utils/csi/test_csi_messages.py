"""The CSI messages built at run time: field numbers and types as the CSI spec (csi.proto, v1.x) defines them,
every message round-trips with every field set, and Debian's protobuf (4.21.12, /usr/bin/python3) writes the
same bytes as the venv's (PyPI protobuf 7.x)."""
import importlib.util
import json
import os
import subprocess

import pytest

from ansible_collections.kubevol.volumes.plugins.module_utils.csi import messages as csi_messages

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("csi_samples", os.path.join(HERE, "csi_samples.py"))
csi_samples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(csi_samples)

# Written from the CSI spec (container-storage-interface/spec csi.proto, v1.13.0): per message its fields as
# "type name = number", "oneof/ONEOF" before the type for oneof members, "{}" for an empty message.
SPEC = """
GetPluginInfoRequest {}
GetPluginInfoResponse: string name = 1; string vendor_version = 2; map manifest = 3
GetPluginCapabilitiesRequest {}
GetPluginCapabilitiesResponse: repeated PluginCapability capabilities = 1
PluginCapability: oneof/type PluginCapability.Service service = 1;
    oneof/type PluginCapability.VolumeExpansion volume_expansion = 2
PluginCapability.Service: PluginCapability.Service.Type type = 1
PluginCapability.VolumeExpansion: PluginCapability.VolumeExpansion.Type type = 1
ProbeRequest {}
ProbeResponse: .google.protobuf.BoolValue ready = 1
CreateVolumeRequest: string name = 1; CapacityRange capacity_range = 2;
    repeated VolumeCapability volume_capabilities = 3; map parameters = 4; map secrets = 5;
    VolumeContentSource volume_content_source = 6; TopologyRequirement accessibility_requirements = 7;
    map mutable_parameters = 8
VolumeContentSource: oneof/type VolumeContentSource.SnapshotSource snapshot = 1;
    oneof/type VolumeContentSource.VolumeSource volume = 2
VolumeContentSource.SnapshotSource: string snapshot_id = 1
VolumeContentSource.VolumeSource: string volume_id = 1
CreateVolumeResponse: Volume volume = 1
VolumeCapability: oneof/access_type VolumeCapability.BlockVolume block = 1;
    oneof/access_type VolumeCapability.MountVolume mount = 2; VolumeCapability.AccessMode access_mode = 3
VolumeCapability.BlockVolume {}
VolumeCapability.MountVolume: string fs_type = 1; repeated string mount_flags = 2; string volume_mount_group = 3
VolumeCapability.AccessMode: VolumeCapability.AccessMode.Mode mode = 1
CapacityRange: int64 required_bytes = 1; int64 limit_bytes = 2
Volume: int64 capacity_bytes = 1; string volume_id = 2; map volume_context = 3;
    VolumeContentSource content_source = 4; repeated Topology accessible_topology = 5
TopologyRequirement: repeated Topology requisite = 1; repeated Topology preferred = 2
Topology: map segments = 1
DeleteVolumeRequest: string volume_id = 1; map secrets = 2
DeleteVolumeResponse {}
ControllerPublishVolumeRequest: string volume_id = 1; string node_id = 2; VolumeCapability volume_capability = 3;
    bool readonly = 4; map secrets = 5; map volume_context = 6
ControllerPublishVolumeResponse: map publish_context = 1
ControllerUnpublishVolumeRequest: string volume_id = 1; string node_id = 2; map secrets = 3
ControllerUnpublishVolumeResponse {}
ControllerGetCapabilitiesRequest {}
ControllerGetCapabilitiesResponse: repeated ControllerServiceCapability capabilities = 1
ControllerServiceCapability: oneof/type ControllerServiceCapability.RPC rpc = 1
ControllerServiceCapability.RPC: ControllerServiceCapability.RPC.Type type = 1
CreateSnapshotRequest: string source_volume_id = 1; string name = 2; map secrets = 3; map parameters = 4
CreateSnapshotResponse: Snapshot snapshot = 1
Snapshot: int64 size_bytes = 1; string snapshot_id = 2; string source_volume_id = 3;
    .google.protobuf.Timestamp creation_time = 4; bool ready_to_use = 5; string group_snapshot_id = 6
DeleteSnapshotRequest: string snapshot_id = 1; map secrets = 2
DeleteSnapshotResponse {}
ControllerExpandVolumeRequest: string volume_id = 1; CapacityRange capacity_range = 2; map secrets = 3;
    VolumeCapability volume_capability = 4
ControllerExpandVolumeResponse: int64 capacity_bytes = 1; bool node_expansion_required = 2
NodeStageVolumeRequest: string volume_id = 1; map publish_context = 2; string staging_target_path = 3;
    VolumeCapability volume_capability = 4; map secrets = 5; map volume_context = 6
NodeStageVolumeResponse {}
NodeUnstageVolumeRequest: string volume_id = 1; string staging_target_path = 2
NodeUnstageVolumeResponse {}
NodePublishVolumeRequest: string volume_id = 1; map publish_context = 2; string staging_target_path = 3;
    string target_path = 4; VolumeCapability volume_capability = 5; bool readonly = 6; map secrets = 7;
    map volume_context = 8
NodePublishVolumeResponse {}
NodeUnpublishVolumeRequest: string volume_id = 1; string target_path = 2
NodeUnpublishVolumeResponse {}
NodeGetVolumeStatsRequest: string volume_id = 1; string volume_path = 2; string staging_target_path = 3
NodeGetVolumeStatsResponse: repeated VolumeUsage usage = 1; VolumeCondition volume_condition = 2
VolumeUsage: int64 available = 1; int64 total = 2; int64 used = 3; VolumeUsage.Unit unit = 4
VolumeCondition: bool abnormal = 1; string message = 2
NodeExpandVolumeRequest: string volume_id = 1; string volume_path = 2; CapacityRange capacity_range = 3;
    string staging_target_path = 4; VolumeCapability volume_capability = 5; map secrets = 6
NodeExpandVolumeResponse: int64 capacity_bytes = 1
NodeGetCapabilitiesRequest {}
NodeGetCapabilitiesResponse: repeated NodeServiceCapability capabilities = 1
NodeServiceCapability: oneof/type NodeServiceCapability.RPC rpc = 1
NodeServiceCapability.RPC: NodeServiceCapability.RPC.Type type = 1
NodeGetInfoRequest {}
NodeGetInfoResponse: string node_id = 1; int64 max_volumes_per_node = 2; Topology accessible_topology = 3
"""

SPEC_ENUMS = {
    "PluginCapability.Service.Type": "UNKNOWN CONTROLLER_SERVICE VOLUME_ACCESSIBILITY_CONSTRAINTS "
                                     "GROUP_CONTROLLER_SERVICE SNAPSHOT_METADATA_SERVICE",
    "PluginCapability.VolumeExpansion.Type": "UNKNOWN ONLINE OFFLINE",
    "VolumeCapability.AccessMode.Mode": "UNKNOWN SINGLE_NODE_WRITER SINGLE_NODE_READER_ONLY MULTI_NODE_READER_ONLY "
                                        "MULTI_NODE_SINGLE_WRITER MULTI_NODE_MULTI_WRITER SINGLE_NODE_SINGLE_WRITER "
                                        "SINGLE_NODE_MULTI_WRITER",
    "ControllerServiceCapability.RPC.Type": "UNKNOWN CREATE_DELETE_VOLUME PUBLISH_UNPUBLISH_VOLUME LIST_VOLUMES "
                                            "GET_CAPACITY CREATE_DELETE_SNAPSHOT LIST_SNAPSHOTS CLONE_VOLUME "
                                            "PUBLISH_READONLY EXPAND_VOLUME LIST_VOLUMES_PUBLISHED_NODES "
                                            "VOLUME_CONDITION GET_VOLUME SINGLE_NODE_MULTI_WRITER MODIFY_VOLUME "
                                            "GET_SNAPSHOT",
    "NodeServiceCapability.RPC.Type": "UNKNOWN STAGE_UNSTAGE_VOLUME GET_VOLUME_STATS EXPAND_VOLUME VOLUME_CONDITION "
                                      "SINGLE_NODE_MULTI_WRITER VOLUME_MOUNT_GROUP",
    "VolumeUsage.Unit": "UNKNOWN BYTES INODES",
}  # numbered 0, 1, 2, ... in this order, as in the spec

SPEC_SERVICES = {
    "Identity": "GetPluginInfo GetPluginCapabilities Probe",
    "Controller": "CreateVolume DeleteVolume ControllerPublishVolume ControllerUnpublishVolume "
                  "ControllerGetCapabilities CreateSnapshot DeleteSnapshot ControllerExpandVolume",
    "Node": "NodeStageVolume NodeUnstageVolume NodePublishVolume NodeUnpublishVolume NodeGetVolumeStats "
            "NodeExpandVolume NodeGetCapabilities NodeGetInfo",
}

SCALARS = {"string": "TYPE_STRING", "bool": "TYPE_BOOL", "int64": "TYPE_INT64", "int32": "TYPE_INT32"}


def spec_table():
    """{message: [(oneof or None, repeated, type, name, number)]} parsed from SPEC."""
    table = {}
    for entry in _entries():
        name, _colon, fields = entry.partition(":")
        rows = []
        for decl in filter(None, (f.strip() for f in fields.split(";"))):
            words = decl.replace("=", " ").split()
            oneof = words.pop(0)[len("oneof/"):] if words[0].startswith("oneof/") else None
            repeated = words[0] == "repeated"
            if repeated:
                words.pop(0)
            rows.append((oneof, repeated, words[0], words[1], int(words[2])))
        table[name.strip()] = rows
    return table


def _entries():
    entries, current = [], None
    for line in SPEC.strip().splitlines():
        if line.startswith(" "):
            current += " " + line.strip()
            continue
        if current is not None:
            entries.append(current)
        current = line.replace(" {}", ":")
    entries.append(current)
    return entries


@pytest.fixture(scope="module")
def msgs():
    return csi_messages.load()


def _repeated(field):
    flag = getattr(field, "is_repeated", None)
    return flag if flag is not None else field.label == field.LABEL_REPEATED


def test_every_message_has_the_specs_fields_numbers_and_types(msgs):
    table = spec_table()
    assert sorted(table) == msgs.names()
    for name, rows in table.items():
        desc = msgs[name].DESCRIPTOR
        assert desc.full_name == "csi.v1." + name
        assert sorted(f.name for f in desc.fields) == sorted(r[3] for r in rows), name
        for oneof, repeated, ftype, fname, number in rows:
            field = desc.fields_by_name[fname]
            where = "%s.%s" % (name, fname)
            assert field.number == number, where
            assert (field.containing_oneof.name if field.containing_oneof else None) == oneof, where
            if ftype == "map":
                assert field.message_type.GetOptions().map_entry, where
                assert [(f.name, f.number, f.type) for f in field.message_type.fields] == [
                    ("key", 1, field.TYPE_STRING), ("value", 2, field.TYPE_STRING)], where
                continue
            assert _repeated(field) == repeated, where
            if ftype in SCALARS:
                assert field.type == getattr(field, SCALARS[ftype]), where
            elif ftype in SPEC_ENUMS:
                assert field.type == field.TYPE_ENUM and field.enum_type.full_name == "csi.v1." + ftype, where
            elif ftype.startswith("."):
                assert field.message_type.full_name == ftype[1:], where
            else:
                assert field.type == field.TYPE_MESSAGE and field.message_type.full_name == "csi.v1." + ftype, where


def test_enums_have_the_specs_values(msgs):
    assert sorted(SPEC_ENUMS) == sorted(csi_messages.ENUMS)
    for name, values in SPEC_ENUMS.items():
        enum = msgs.pool.FindEnumTypeByName("csi.v1." + name)
        assert [(v.name, v.number) for v in enum.values] == [(v, i) for i, v in enumerate(values.split())], name
    assert msgs.enum_value("VolumeCapability.AccessMode.Mode", "SINGLE_NODE_SINGLE_WRITER") == 6
    assert msgs.enum_name("NodeServiceCapability.RPC.Type", 6) == "VOLUME_MOUNT_GROUP"


def test_services_and_method_paths(msgs):
    for service, methods in SPEC_SERVICES.items():
        desc = msgs.pool.FindServiceByName("csi.v1." + service)
        assert [m.name for m in desc.methods] == methods.split()
        for method in desc.methods:
            assert csi_messages.method_path(method.name) == "/csi.v1.%s/%s" % (service, method.name)
            assert method.input_type is msgs.request(method.name).DESCRIPTOR
            assert method.output_type is msgs.response(method.name).DESCRIPTOR
    assert csi_messages.method_path("Probe") == "/csi.v1.Identity/Probe"


def test_secret_fields_are_the_specs():
    # csi.proto: the fields marked (csi_secret) = true among the covered messages
    marked = sorted(name for name in csi_messages.MESSAGES if csi_messages.secret_fields(name))
    assert marked == sorted(["CreateVolumeRequest", "DeleteVolumeRequest", "ControllerPublishVolumeRequest",
                             "CreateSnapshotRequest", "DeleteSnapshotRequest",
                             "ControllerUnpublishVolumeRequest", "ControllerExpandVolumeRequest",
                             "NodeStageVolumeRequest", "NodePublishVolumeRequest", "NodeExpandVolumeRequest"])


def test_every_message_round_trips_with_every_field_set(msgs):
    samples = csi_samples.samples(msgs)
    assert len(samples) >= len(msgs.names())
    for key, message in samples.items():
        cls = type(message)
        data = message.SerializeToString()
        again = cls.FromString(data)
        assert again == message, key
        assert again.SerializeToString(deterministic=True) == message.SerializeToString(deterministic=True), key
        set_fields = set(f.name for f, _v in again.ListFields())
        expected = set(f.name for f in cls.DESCRIPTOR.fields if f.containing_oneof is None) | set(
            o.fields[int(key.split("#")[1]) % len(o.fields)].name for o in cls.DESCRIPTOR.oneofs)
        assert set_fields == expected, key
    # each oneof member was set in some sample
    cap = msgs["VolumeCapability"]
    assert {cap.FromString(samples["VolumeCapability#%d" % i].SerializeToString()).WhichOneof("access_type")
            for i in range(2)} == {"block", "mount"}


def test_wire_bytes_follow_the_spec_numbers(msgs):
    """Hand-encoded from the spec's numbers: tag = number << 3 | wire type (0 varint, 2 length-delimited)."""
    req = msgs.NodeStageVolumeRequest(volume_id="v", staging_target_path="/s")
    assert req.SerializeToString() == b"\x0a\x01v" + b"\x1a\x02/s"
    req = msgs.NodePublishVolumeRequest(readonly=True, target_path="/t", secrets={"k": "x"})
    assert req.SerializeToString() == b"\x22\x02/t" + b"\x30\x01" + b"\x3a\x06\x0a\x01k\x12\x01x"
    cap = msgs.VolumeCapability()
    cap.mount.volume_mount_group = "7"
    cap.access_mode.mode = msgs.enum_value("VolumeCapability.AccessMode.Mode", "MULTI_NODE_MULTI_WRITER")
    assert cap.SerializeToString() == b"\x12\x03\x1a\x017" + b"\x1a\x02\x08\x05"
    resp = msgs.ControllerExpandVolumeResponse.FromString(b"\x08\x80\x80\x80\x80\x10\x10\x01")
    assert (resp.capacity_bytes, resp.node_expansion_required) == (2 ** 32, True)
    probe = msgs.ProbeResponse.FromString(b"\x0a\x02\x08\x01")
    assert probe.HasField("ready") and probe.ready.value is True
    info = msgs.NodeGetInfoResponse.FromString(b"\x0a\x02n1\x10\x03\x1a\x08\x0a\x06\x0a\x01z\x12\x01a")
    assert (info.node_id, info.max_volumes_per_node, dict(info.accessible_topology.segments)) == ("n1", 3, {"z": "a"})


def test_debian_protobuf_writes_the_same_bytes(msgs):
    """The nodes run /usr/bin/python3 with Debian's python3-protobuf (4.21.12): same descriptors, same bytes."""
    python = "/usr/bin/python3"
    probe = subprocess.run([python, "-c", "import google.protobuf"], check=False, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    assert probe.returncode == 0, ("%s cannot import protobuf: apt-get install python3-protobuf python3-grpcio "
                                   "(the nodes' packages, bindep.txt profile node)" % python)
    proc = subprocess.run([python, os.path.join(HERE, "csi_samples.py")], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, check=True)
    theirs = json.loads(proc.stdout)
    ours = dict((key, m.SerializeToString(deterministic=True).hex()) for key, m in csi_samples.samples(msgs).items())
    assert theirs["samples"] == ours
    for key, hexdata in theirs["samples"].items():
        cls = msgs[key.split("#")[0]]
        assert cls.FromString(bytes.fromhex(hexdata)).SerializeToString(deterministic=True).hex() == hexdata
