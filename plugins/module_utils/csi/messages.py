# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CSI v1 messages and services kubevol speaks, built at run time from their spec numbers.

Source: the CSI spec (github.com/container-storage-interface/spec, csi.proto / spec.md, v1.x), package
``csi.v1``. No .proto file and no generated code are shipped: the tables below name each message, field,
field number and type as the spec defines them, ``file_descriptor()`` turns them into a
``google.protobuf.descriptor_pb2.FileDescriptorProto``, and ``load()`` adds it to a private DescriptorPool
and makes the message classes from it (``message_factory.GetMessageClass``, or
``MessageFactory(pool).GetPrototype`` on protobuf releases that lack it). This works alike on Debian 12's
python3-protobuf (4.21.12) and PyPI's protobuf 7.x: only the descriptor API common to both is used.

Covered: the Identity service, the Node service (stage, unstage, publish, unpublish, stats, expand,
capabilities, info) and the part of the Controller service that the kubelet's attacher and expander and the
external-attacher/-resizer/-provisioner/-snapshotter call (create, delete, publish, unpublish, expand, capabilities,
create and delete snapshot).
A field a driver sends that is not in these tables is kept as an unknown field, as protobuf does.

This file needs nothing of the collection, so a test driver can load it by path; protobuf is imported only
by ``load()``/``file_descriptor()``.
"""

PACKAGE = "csi.v1"
FILE_NAME = "kubevol/csi/v1/csi.proto"  # a name of our own: never clashes with a generated csi.proto

# Scalar type names -> FieldDescriptorProto type names (TYPE_...).
_SCALARS = {"string": "TYPE_STRING", "bool": "TYPE_BOOL", "int64": "TYPE_INT64", "int32": "TYPE_INT32"}
# well-known types of google/protobuf (wrappers.proto, timestamp.proto) the spec's messages use
_WRAPPERS = ("google.protobuf.BoolValue", "google.protobuf.Timestamp")

# Enums: dotted name (inside csi.v1) -> [(value name, number)] in spec order.
ENUMS = {
    "PluginCapability.Service.Type": [
        ("UNKNOWN", 0), ("CONTROLLER_SERVICE", 1), ("VOLUME_ACCESSIBILITY_CONSTRAINTS", 2),
        ("GROUP_CONTROLLER_SERVICE", 3), ("SNAPSHOT_METADATA_SERVICE", 4)],
    "PluginCapability.VolumeExpansion.Type": [("UNKNOWN", 0), ("ONLINE", 1), ("OFFLINE", 2)],
    "VolumeCapability.AccessMode.Mode": [
        ("UNKNOWN", 0), ("SINGLE_NODE_WRITER", 1), ("SINGLE_NODE_READER_ONLY", 2),
        ("MULTI_NODE_READER_ONLY", 3), ("MULTI_NODE_SINGLE_WRITER", 4), ("MULTI_NODE_MULTI_WRITER", 5),
        ("SINGLE_NODE_SINGLE_WRITER", 6), ("SINGLE_NODE_MULTI_WRITER", 7)],
    "ControllerServiceCapability.RPC.Type": [
        ("UNKNOWN", 0), ("CREATE_DELETE_VOLUME", 1), ("PUBLISH_UNPUBLISH_VOLUME", 2), ("LIST_VOLUMES", 3),
        ("GET_CAPACITY", 4), ("CREATE_DELETE_SNAPSHOT", 5), ("LIST_SNAPSHOTS", 6), ("CLONE_VOLUME", 7),
        ("PUBLISH_READONLY", 8), ("EXPAND_VOLUME", 9), ("LIST_VOLUMES_PUBLISHED_NODES", 10),
        ("VOLUME_CONDITION", 11), ("GET_VOLUME", 12), ("SINGLE_NODE_MULTI_WRITER", 13),
        ("MODIFY_VOLUME", 14), ("GET_SNAPSHOT", 15)],
    "NodeServiceCapability.RPC.Type": [
        ("UNKNOWN", 0), ("STAGE_UNSTAGE_VOLUME", 1), ("GET_VOLUME_STATS", 2), ("EXPAND_VOLUME", 3),
        ("VOLUME_CONDITION", 4), ("SINGLE_NODE_MULTI_WRITER", 5), ("VOLUME_MOUNT_GROUP", 6)],
    "VolumeUsage.Unit": [("UNKNOWN", 0), ("BYTES", 1), ("INODES", 2)],
}

# Messages: dotted name -> [(field, number, type[, oneof])]. Type: a scalar, "map" (map<string, string>),
# "repeated X", an enum or message name of this table, or a google.protobuf wrapper. A parent is listed
# before its nested messages. Order and numbers as in the spec's csi.proto.
MESSAGES = {
    # Identity
    "GetPluginInfoRequest": [],
    "GetPluginInfoResponse": [("name", 1, "string"), ("vendor_version", 2, "string"), ("manifest", 3, "map")],
    "GetPluginCapabilitiesRequest": [],
    "GetPluginCapabilitiesResponse": [("capabilities", 1, "repeated PluginCapability")],
    "PluginCapability": [("service", 1, "PluginCapability.Service", "type"),
                         ("volume_expansion", 2, "PluginCapability.VolumeExpansion", "type")],
    "PluginCapability.Service": [("type", 1, "PluginCapability.Service.Type")],
    "PluginCapability.VolumeExpansion": [("type", 1, "PluginCapability.VolumeExpansion.Type")],
    "ProbeRequest": [],
    "ProbeResponse": [("ready", 1, "google.protobuf.BoolValue")],
    # Shared
    "VolumeCapability": [("block", 1, "VolumeCapability.BlockVolume", "access_type"),
                         ("mount", 2, "VolumeCapability.MountVolume", "access_type"),
                         ("access_mode", 3, "VolumeCapability.AccessMode")],
    "VolumeCapability.BlockVolume": [],
    "VolumeCapability.MountVolume": [("fs_type", 1, "string"), ("mount_flags", 2, "repeated string"),
                                     ("volume_mount_group", 3, "string")],
    "VolumeCapability.AccessMode": [("mode", 1, "VolumeCapability.AccessMode.Mode")],
    "CapacityRange": [("required_bytes", 1, "int64"), ("limit_bytes", 2, "int64")],
    "Volume": [("capacity_bytes", 1, "int64"), ("volume_id", 2, "string"), ("volume_context", 3, "map"),
               ("content_source", 4, "VolumeContentSource"), ("accessible_topology", 5, "repeated Topology")],
    "VolumeContentSource": [("snapshot", 1, "VolumeContentSource.SnapshotSource", "type"),
                            ("volume", 2, "VolumeContentSource.VolumeSource", "type")],
    "VolumeContentSource.SnapshotSource": [("snapshot_id", 1, "string")],
    "VolumeContentSource.VolumeSource": [("volume_id", 1, "string")],
    "TopologyRequirement": [("requisite", 1, "repeated Topology"), ("preferred", 2, "repeated Topology")],
    "Topology": [("segments", 1, "map")],
    # Controller
    "CreateVolumeRequest": [("name", 1, "string"), ("capacity_range", 2, "CapacityRange"),
                            ("volume_capabilities", 3, "repeated VolumeCapability"), ("parameters", 4, "map"),
                            ("secrets", 5, "map"), ("volume_content_source", 6, "VolumeContentSource"),
                            ("accessibility_requirements", 7, "TopologyRequirement"),
                            ("mutable_parameters", 8, "map")],
    "CreateVolumeResponse": [("volume", 1, "Volume")],
    "DeleteVolumeRequest": [("volume_id", 1, "string"), ("secrets", 2, "map")],
    "DeleteVolumeResponse": [],
    "ControllerPublishVolumeRequest": [("volume_id", 1, "string"), ("node_id", 2, "string"),
                                       ("volume_capability", 3, "VolumeCapability"), ("readonly", 4, "bool"),
                                       ("secrets", 5, "map"), ("volume_context", 6, "map")],
    "ControllerPublishVolumeResponse": [("publish_context", 1, "map")],
    "ControllerUnpublishVolumeRequest": [("volume_id", 1, "string"), ("node_id", 2, "string"),
                                         ("secrets", 3, "map")],
    "ControllerUnpublishVolumeResponse": [],
    "ControllerGetCapabilitiesRequest": [],
    "ControllerGetCapabilitiesResponse": [("capabilities", 1, "repeated ControllerServiceCapability")],
    "ControllerServiceCapability": [("rpc", 1, "ControllerServiceCapability.RPC", "type")],
    "ControllerServiceCapability.RPC": [("type", 1, "ControllerServiceCapability.RPC.Type")],
    "CreateSnapshotRequest": [("source_volume_id", 1, "string"), ("name", 2, "string"), ("secrets", 3, "map"),
                              ("parameters", 4, "map")],
    "CreateSnapshotResponse": [("snapshot", 1, "Snapshot")],
    "Snapshot": [("size_bytes", 1, "int64"), ("snapshot_id", 2, "string"), ("source_volume_id", 3, "string"),
                 ("creation_time", 4, "google.protobuf.Timestamp"), ("ready_to_use", 5, "bool"),
                 ("group_snapshot_id", 6, "string")],
    "DeleteSnapshotRequest": [("snapshot_id", 1, "string"), ("secrets", 2, "map")],
    "DeleteSnapshotResponse": [],
    "ControllerExpandVolumeRequest": [("volume_id", 1, "string"), ("capacity_range", 2, "CapacityRange"),
                                      ("secrets", 3, "map"), ("volume_capability", 4, "VolumeCapability")],
    "ControllerExpandVolumeResponse": [("capacity_bytes", 1, "int64"), ("node_expansion_required", 2, "bool")],
    # Node
    "NodeStageVolumeRequest": [("volume_id", 1, "string"), ("publish_context", 2, "map"),
                               ("staging_target_path", 3, "string"), ("volume_capability", 4, "VolumeCapability"),
                               ("secrets", 5, "map"), ("volume_context", 6, "map")],
    "NodeStageVolumeResponse": [],
    "NodeUnstageVolumeRequest": [("volume_id", 1, "string"), ("staging_target_path", 2, "string")],
    "NodeUnstageVolumeResponse": [],
    "NodePublishVolumeRequest": [("volume_id", 1, "string"), ("publish_context", 2, "map"),
                                 ("staging_target_path", 3, "string"), ("target_path", 4, "string"),
                                 ("volume_capability", 5, "VolumeCapability"), ("readonly", 6, "bool"),
                                 ("secrets", 7, "map"), ("volume_context", 8, "map")],
    "NodePublishVolumeResponse": [],
    "NodeUnpublishVolumeRequest": [("volume_id", 1, "string"), ("target_path", 2, "string")],
    "NodeUnpublishVolumeResponse": [],
    "NodeGetVolumeStatsRequest": [("volume_id", 1, "string"), ("volume_path", 2, "string"),
                                  ("staging_target_path", 3, "string")],
    "NodeGetVolumeStatsResponse": [("usage", 1, "repeated VolumeUsage"), ("volume_condition", 2, "VolumeCondition")],
    "VolumeUsage": [("available", 1, "int64"), ("total", 2, "int64"), ("used", 3, "int64"),
                    ("unit", 4, "VolumeUsage.Unit")],
    "VolumeCondition": [("abnormal", 1, "bool"), ("message", 2, "string")],
    "NodeExpandVolumeRequest": [("volume_id", 1, "string"), ("volume_path", 2, "string"),
                                ("capacity_range", 3, "CapacityRange"), ("staging_target_path", 4, "string"),
                                ("volume_capability", 5, "VolumeCapability"), ("secrets", 6, "map")],
    "NodeExpandVolumeResponse": [("capacity_bytes", 1, "int64")],
    "NodeGetCapabilitiesRequest": [],
    "NodeGetCapabilitiesResponse": [("capabilities", 1, "repeated NodeServiceCapability")],
    "NodeServiceCapability": [("rpc", 1, "NodeServiceCapability.RPC", "type")],
    "NodeServiceCapability.RPC": [("type", 1, "NodeServiceCapability.RPC.Type")],
    "NodeGetInfoRequest": [],
    "NodeGetInfoResponse": [("node_id", 1, "string"), ("max_volumes_per_node", 2, "int64"),
                            ("accessible_topology", 3, "Topology")],
}

# Services: name -> [(method, request, response)], as in the spec (unary calls only).
SERVICES = {
    "Identity": [("GetPluginInfo", "GetPluginInfoRequest", "GetPluginInfoResponse"),
                 ("GetPluginCapabilities", "GetPluginCapabilitiesRequest", "GetPluginCapabilitiesResponse"),
                 ("Probe", "ProbeRequest", "ProbeResponse")],
    "Controller": [("CreateVolume", "CreateVolumeRequest", "CreateVolumeResponse"),
                   ("DeleteVolume", "DeleteVolumeRequest", "DeleteVolumeResponse"),
                   ("ControllerPublishVolume", "ControllerPublishVolumeRequest", "ControllerPublishVolumeResponse"),
                   ("ControllerUnpublishVolume", "ControllerUnpublishVolumeRequest",
                    "ControllerUnpublishVolumeResponse"),
                   ("ControllerGetCapabilities", "ControllerGetCapabilitiesRequest",
                    "ControllerGetCapabilitiesResponse"),
                   ("CreateSnapshot", "CreateSnapshotRequest", "CreateSnapshotResponse"),
                   ("DeleteSnapshot", "DeleteSnapshotRequest", "DeleteSnapshotResponse"),
                   ("ControllerExpandVolume", "ControllerExpandVolumeRequest", "ControllerExpandVolumeResponse")],
    "Node": [("NodeStageVolume", "NodeStageVolumeRequest", "NodeStageVolumeResponse"),
             ("NodeUnstageVolume", "NodeUnstageVolumeRequest", "NodeUnstageVolumeResponse"),
             ("NodePublishVolume", "NodePublishVolumeRequest", "NodePublishVolumeResponse"),
             ("NodeUnpublishVolume", "NodeUnpublishVolumeRequest", "NodeUnpublishVolumeResponse"),
             ("NodeGetVolumeStats", "NodeGetVolumeStatsRequest", "NodeGetVolumeStatsResponse"),
             ("NodeExpandVolume", "NodeExpandVolumeRequest", "NodeExpandVolumeResponse"),
             ("NodeGetCapabilities", "NodeGetCapabilitiesRequest", "NodeGetCapabilitiesResponse"),
             ("NodeGetInfo", "NodeGetInfoRequest", "NodeGetInfoResponse")],
}

# method name -> (service, request message, response message)
METHODS = dict((m, (svc, req, resp)) for svc, methods in SERVICES.items() for m, req, resp in methods)


def method_path(method):
    """The gRPC path of a CSI method: ``/csi.v1.<Service>/<Method>``."""
    return "/%s.%s/%s" % (PACKAGE, METHODS[method][0], method)


def secret_fields(message_name):
    """The fields of a request the spec marks ``(csi_secret) = true``: all are maps named ``secrets``."""
    return [f[0] for f in MESSAGES.get(message_name, ()) if f[0] == "secrets" and f[2] == "map"]


def _camel(name):
    return "".join(part[:1].upper() + part[1:] for part in name.split("_"))


def file_descriptor():
    """A FileDescriptorProto of package csi.v1 holding ENUMS, MESSAGES and SERVICES."""
    from google.protobuf import descriptor_pb2

    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.name = FILE_NAME
    fdp.package = PACKAGE
    fdp.syntax = "proto3"
    fdp.dependency.append("google/protobuf/wrappers.proto")
    fdp.dependency.append("google/protobuf/timestamp.proto")
    FD = descriptor_pb2.FieldDescriptorProto
    messages = {}

    def container(dotted):
        """The DescriptorProto that holds the last part of ``dotted`` (the file for a top-level name)."""
        parent = dotted.rpartition(".")[0]
        return messages[parent].nested_type if parent else fdp.message_type

    for name in MESSAGES:
        msg = container(name).add()
        msg.name = name.rpartition(".")[2]
        messages[name] = msg
    for name, values in ENUMS.items():
        parent = name.rpartition(".")[0]
        enum = (messages[parent].enum_type if parent else fdp.enum_type).add()
        enum.name = name.rpartition(".")[2]
        for value_name, number in values:
            value = enum.value.add()
            value.name = value_name
            value.number = number
    for name, fields in MESSAGES.items():
        msg = messages[name]
        oneofs = []
        for spec in fields:
            fname, number, ftype = spec[:3]
            field = msg.field.add()
            field.name = fname
            field.number = number
            field.json_name = fname[:1] + _camel(fname)[1:]
            field.label = FD.LABEL_OPTIONAL
            if ftype.startswith("repeated "):
                field.label = FD.LABEL_REPEATED
                ftype = ftype[len("repeated "):]
            if ftype == "map":
                # map<string, string> is, on the wire and in descriptors, a repeated nested XxxEntry message
                # with key = 1 and value = 2 and the map_entry option.
                entry = msg.nested_type.add()
                entry.name = _camel(fname) + "Entry"
                entry.options.map_entry = True
                for key_name, key_number in (("key", 1), ("value", 2)):
                    key = entry.field.add()
                    key.name = key_name
                    key.number = key_number
                    key.json_name = key_name
                    key.label = FD.LABEL_OPTIONAL
                    key.type = FD.TYPE_STRING
                field.label = FD.LABEL_REPEATED
                field.type = FD.TYPE_MESSAGE
                field.type_name = ".%s.%s.%s" % (PACKAGE, name, entry.name)
            elif ftype in _SCALARS:
                field.type = getattr(FD, _SCALARS[ftype])
            elif ftype in ENUMS:
                field.type = FD.TYPE_ENUM
                field.type_name = ".%s.%s" % (PACKAGE, ftype)
            elif ftype in _WRAPPERS:
                field.type = FD.TYPE_MESSAGE
                field.type_name = "." + ftype
            elif ftype in MESSAGES:
                field.type = FD.TYPE_MESSAGE
                field.type_name = ".%s.%s" % (PACKAGE, ftype)
            else:
                raise ValueError("CSI table: field %s.%s has unknown type %r" % (name, fname, ftype))
            if len(spec) > 3:
                if spec[3] not in oneofs:
                    oneofs.append(spec[3])
                    msg.oneof_decl.add().name = spec[3]
                field.oneof_index = oneofs.index(spec[3])
    for svc_name, methods in SERVICES.items():
        svc = fdp.service.add()
        svc.name = svc_name
        for method_name, request, response in methods:
            method = svc.method.add()
            method.name = method_name
            method.input_type = ".%s.%s" % (PACKAGE, request)
            method.output_type = ".%s.%s" % (PACKAGE, response)
    return fdp


class Messages(object):
    """The message classes by dotted name (``m["VolumeCapability.MountVolume"]`` or ``m.ProbeRequest``)."""

    def __init__(self, pool, classes):
        self.pool = pool
        self._classes = classes

    def __getitem__(self, name):
        return self._classes[name]

    def __getattr__(self, name):
        try:
            return self.__dict__["_classes"][name]
        except KeyError:
            raise AttributeError("no CSI message %r" % name)

    def names(self):
        return sorted(self._classes)

    def request(self, method):
        return self._classes[METHODS[method][1]]

    def response(self, method):
        return self._classes[METHODS[method][2]]

    def enum_value(self, enum, value_name):
        """The number of ``value_name`` in the enum ``enum`` (dotted name), e.g. ("NodeServiceCapability.RPC.Type",
        "STAGE_UNSTAGE_VOLUME") -> 1."""
        return dict(ENUMS[enum])[value_name]

    def enum_name(self, enum, number):
        for value_name, value in ENUMS[enum]:
            if value == number:
                return value_name
        return "UNKNOWN_%d" % number


_LOADED = []


def load():
    """Build (once per process) and return the CSI ``Messages``. Needs the protobuf package."""
    if _LOADED:
        return _LOADED[0]
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2, wrappers_pb2

    pool = descriptor_pool.DescriptorPool()
    for well_known in (wrappers_pb2, timestamp_pb2):
        proto = descriptor_pb2.FileDescriptorProto()
        well_known.DESCRIPTOR.CopyToProto(proto)
        pool.Add(proto)
    pool.Add(file_descriptor())
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is None:  # protobuf < 4.24 (Debian 12's 4.21.12)
        get_class = message_factory.MessageFactory(pool).GetPrototype
    classes = {}
    for name in MESSAGES:
        classes[name] = get_class(pool.FindMessageTypeByName("%s.%s" % (PACKAGE, name)))
    _LOADED.append(Messages(pool, classes))
    return _LOADED[0]
