# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kubelet's plugin registration API, to learn a CSI node plugin's socket from its registrar.

Kubernetes: staging/src/k8s.io/kubelet/pkg/apis/pluginregistration/v1/api.proto (package
``pluginregistration``: ``PluginInfo {string type = 1; string name = 2; string endpoint = 3; repeated string
supported_versions = 4}``, ``InfoRequest {}``, service ``Registration`` with ``GetInfo``), served by
node-driver-registrar on ``<kubelet>/plugins_registry/<driver>-reg.sock``. The kubelet's plugin manager
(pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go ``GenerateRegisterPluginFunc``) calls
GetInfo, takes the socket path itself when ``endpoint`` is empty, and the CSI handler
(pkg/volume/csi/csi_plugin.go ``ValidatePlugin``, ``highestSupportedVersion``) accepts a CSIPlugin only with
a supported version (1.x). kubevol only reads: it never calls NotifyRegistrationStatus (that is the kubelet's
word to the registrar, and a "not registered" makes node-driver-registrar exit).

The messages are built from those field numbers at run time, as csi/messages.py builds CSI's. This file
needs nothing of the collection (the test registrar loads it by path); protobuf is imported by ``load()``.
"""

PACKAGE = "pluginregistration"
FILE_NAME = "kubevol/pluginregistration/v1/api.proto"  # a name of our own: never clashes with another
CSI_PLUGIN_TYPE = "CSIPlugin"  # k8s.io/kubelet/pkg/apis/pluginregistration/v1 constants.go CSIPlugin
GET_INFO = "/pluginregistration.Registration/GetInfo"
MESSAGES = {
    "PluginInfo": [("type", 1, "string"), ("name", 2, "string"), ("endpoint", 3, "string"),
                   ("supported_versions", 4, "repeated string")],
    "InfoRequest": [],
}

_LOADED = []


def file_descriptor():
    from google.protobuf import descriptor_pb2

    fdp = descriptor_pb2.FileDescriptorProto()
    fdp.name = FILE_NAME
    fdp.package = PACKAGE
    fdp.syntax = "proto3"
    FD = descriptor_pb2.FieldDescriptorProto
    for name, fields in MESSAGES.items():
        msg = fdp.message_type.add()
        msg.name = name
        for fname, number, ftype in fields:
            field = msg.field.add()
            field.name = fname
            field.number = number
            field.json_name = fname.split("_", 1)[0] + "".join(p.title() for p in fname.split("_")[1:])
            field.type = FD.TYPE_STRING
            field.label = FD.LABEL_REPEATED if ftype.startswith("repeated ") else FD.LABEL_OPTIONAL
    svc = fdp.service.add()
    svc.name = "Registration"
    method = svc.method.add()
    method.name = "GetInfo"
    method.input_type = ".%s.InfoRequest" % PACKAGE
    method.output_type = ".%s.PluginInfo" % PACKAGE
    return fdp


def load():
    """{message name: class} (built once per process). Needs the protobuf package."""
    if _LOADED:
        return _LOADED[0]
    from google.protobuf import descriptor_pool, message_factory

    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor())
    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is None:  # protobuf < 4.24 (Debian 12's 4.21.12)
        get_class = message_factory.MessageFactory(pool).GetPrototype
    classes = dict((name, get_class(pool.FindMessageTypeByName("%s.%s" % (PACKAGE, name)))) for name in MESSAGES)
    _LOADED.append(classes)
    return classes


def supported_version(versions):
    """True when one of ``versions`` is a CSI 1.x version, as csi_plugin.go highestSupportedVersion accepts
    ("1.0.0", "v1.5.0"; a 0.x-only driver is refused)."""
    for version in versions or ():
        text = str(version).strip().lstrip("vV")
        if text.split(".", 1)[0] == "1":
            return True
    return False


def endpoint_path(endpoint, registration_socket):
    """The CSI socket a PluginInfo names: ``unix://`` stripped; the registration socket itself when empty
    (operation_generator.go: ``if infoResp.Endpoint == "" { infoResp.Endpoint = socketPath }``)."""
    endpoint = (endpoint or "").strip()
    if endpoint.startswith("unix://"):
        endpoint = endpoint[len("unix://"):]
    elif endpoint.startswith("unix:"):
        endpoint = endpoint[len("unix:"):]
    return endpoint or registration_socket
