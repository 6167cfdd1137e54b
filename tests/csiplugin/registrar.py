"""A node-driver-registrar for kubevol's tests: serves the kubelet's Registration API (GetInfo) on a unix socket.

Test code only (never shipped). As node-driver-registrar does, it answers GetInfo with type CSIPlugin, the
driver's name, the CSI socket's path (``--endpoint``, its --kubelet-registration-path) and the versions:

    python3 tests/csiplugin/registrar.py --socket KUBELET/plugins_registry/NAME-reg.sock --name NAME \\
        --endpoint KUBELET/plugins/NAME/csi.sock [--type CSIPlugin] [--versions 1.0.0]

The messages come from plugins/module_utils/drivers/external/registration.py, loaded by path.
"""
import argparse
import importlib.util
import os
import signal
import threading
from concurrent import futures

HERE = os.path.dirname(os.path.abspath(__file__))
REGISTRATION_PY = os.path.join(os.path.dirname(os.path.dirname(HERE)), "plugins", "module_utils", "drivers",
                               "external", "registration.py")


def load_registration():
    spec = importlib.util.spec_from_file_location("kubevol_pluginregistration", REGISTRATION_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None):
    parser = argparse.ArgumentParser(description="kubevol's test plugin registrar")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--endpoint", default="")
    parser.add_argument("--type", default="CSIPlugin")
    parser.add_argument("--versions", default="1.0.0", help="comma-separated")
    args = parser.parse_args(argv)
    import grpc
    reg = load_registration()
    msgs = reg.load()

    def get_info(request, context):
        return msgs["PluginInfo"](type=args.type, name=args.name, endpoint=args.endpoint,
                                  supported_versions=[v for v in args.versions.split(",") if v])

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handler = grpc.unary_unary_rpc_method_handler(get_info, request_deserializer=msgs["InfoRequest"].FromString,
                                                  response_serializer=msgs["PluginInfo"].SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "%s.Registration" % reg.PACKAGE, {"GetInfo": handler}),))
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    server.add_insecure_port("unix:" + os.path.abspath(args.socket))
    server.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print("registrar: serving on %s" % args.socket, flush=True)
    stop.wait()
    server.stop(1).wait()


if __name__ == "__main__":
    main()
