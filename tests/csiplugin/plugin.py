"""A CSI plugin for kubevol's tests: Identity, Node and Controller over a unix socket, doing real work.

Test code only (never shipped). Run it as a script, as root, best in a private mount namespace:

    unshare --mount --propagation private python3 tests/csiplugin/plugin.py \\
        --socket /tmp/x/csi.sock --state-dir /tmp/x/state [--pool DIR] [--config /tmp/x/config.json] \\
        [--log /tmp/x/calls.jsonl]

Volumes are sparse images in STATE/pool, or in --pool (a pool several plugins share) (backend.py). The message
classes come from the collection's plugins/module_utils/csi/messages.py, loaded by path, so any interpreter with
grpcio and protobuf runs it.

The config file (JSON, read again at every call, so a test can change it between calls):
  name, version, node_id, max_volumes_per_node, ready (Probe; default true)
  plugin_caps       default ["CONTROLLER_SERVICE"]; expansion: "ONLINE" (default), "OFFLINE" or null
  node_caps         default ["STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME", "GET_VOLUME_STATS", "VOLUME_MOUNT_GROUP"]
  controller_caps   default ["CREATE_DELETE_VOLUME", "CREATE_DELETE_SNAPSHOT", "CLONE_VOLUME", "EXPAND_VOLUME"];
                    "PUBLISH_UNPUBLISH_VOLUME" turns on attach mode (ControllerPublishVolume attaches the loop
                    device, publish_context devicePath). A call whose capability is off answers UNIMPLEMENTED
                    (INVALID_ARGUMENT for a volume_mount_group without VOLUME_MOUNT_GROUP, or a content source
                    without CLONE_VOLUME / CREATE_DELETE_SNAPSHOT); CreateVolume/DeleteVolume always work, so a
                    test can make volumes whatever it switches off.
  topology          true, or {key: value}: VOLUME_ACCESSIBILITY_CONSTRAINTS, NodeGetInfo's accessible_topology
                    (true: topology.csi.kubevol.test/node = node_id); topology_serves: the segment maps
                    CreateVolume may make volumes in (default any). controller.py says how CreateVolume honours
                    accessibility_requirements; CreateSnapshot/DeleteSnapshot and clones are there too.
  fail              {method: {"code": "INTERNAL", "message": "..."}}: answer that status instead (a final error
                    when the code is one: nothing was done)
  fail_after        {method: {"code": "DEADLINE_EXCEEDED", ...}}: do the call's work, then answer that status (a
                    non-final error after the volume was made: the CO must call again with the same name)
  sleep             {method: seconds}: sleep before doing the call (past the client's timeout)
  exit_after        [method, ...]: exit the process right after answering that method
  expected_secrets  {key: value}: each call's secrets are compared with these
  Inline ephemeral volumes (volume_context csi.storage.k8s.io/ephemeral "true"): ephemeral.py.
  stage_records_only  true: NodeStageVolume mounts nothing at the staging path, it only records the volume as
                    staged, and NodePublishVolume mounts the device at the target itself (csi-driver-host-path's
                    way: the mount table cannot tell that such a volume is staged)

The log (JSON lines): per call its method, request with every secret value replaced by "<redacted>", whether
secrets came and were the expected ones ("none", "expected", "unexpected"), and the gRPC code answered.
"""
import argparse
import importlib.util
import json
import os
import signal
import socket
import sys
import threading
import time
from concurrent import futures

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from backend import PluginError, Pool, mount_at, run  # noqa: E402  (next to this script)
from controller import Controller, segments  # noqa: E402
import ephemeral  # noqa: E402

MESSAGES_PY = os.path.join(os.path.dirname(os.path.dirname(HERE)), "plugins", "module_utils", "csi", "messages.py")
DEFAULTS = {
    "name": "csi.kubevol.test", "version": "0.1.0", "ready": True, "max_volumes_per_node": 0,
    "plugin_caps": ["CONTROLLER_SERVICE"], "expansion": "ONLINE",
    "node_caps": ["STAGE_UNSTAGE_VOLUME", "EXPAND_VOLUME", "GET_VOLUME_STATS", "VOLUME_MOUNT_GROUP"],
    "controller_caps": ["CREATE_DELETE_VOLUME", "CREATE_DELETE_SNAPSHOT", "CLONE_VOLUME", "EXPAND_VOLUME"],
    "fail": {}, "fail_after": {}, "sleep": {}, "exit_after": [], "expected_secrets": None, "topology": False,
}


def load_messages_module():
    spec = importlib.util.spec_from_file_location("kubevol_csi_messages", MESSAGES_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Plugin(Controller):
    def __init__(self, args, grpc, json_format, csi):
        self.args = args
        self.grpc = grpc
        self.json_format = json_format
        self.csi = csi  # the messages module
        self.m = csi.load()
        self.pool = Pool(args.state_dir, args.pool)
        self.lock = threading.Lock()
        self.log_lock = threading.Lock()

    # -- config, log -----------------------------------------------------------------------------
    def config(self):
        conf = dict(DEFAULTS, node_id=socket.gethostname())
        if self.args.config and os.path.exists(self.args.config):
            with open(self.args.config) as handle:
                conf.update(json.load(handle))
        return conf

    def record(self, method, request, conf, code):
        data = self.json_format.MessageToDict(request, preserving_proto_field_name=True)
        secrets_state = "none"
        for name in self.csi.secret_fields(request.DESCRIPTOR.name):
            got = dict(getattr(request, name))
            if got:
                secrets_state = "expected" if got == conf.get("expected_secrets") else "unexpected"
                data[name] = dict((key, "<redacted>") for key in got)
        line = json.dumps({"time": time.time(), "method": method, "request": data, "secrets": secrets_state,
                           "code": code}, sort_keys=True)
        with self.log_lock:
            with open(self.args.log, "a") as handle:
                handle.write(line + "\n")

    # -- dispatch ----------------------------------------------------------------------------------
    def handler(self, method):
        def handle(request, context):
            conf = self.config()
            code = "OK"
            try:
                if method in conf["sleep"]:
                    time.sleep(float(conf["sleep"][method]))
                if method in conf["fail"]:
                    fail = conf["fail"][method]
                    raise PluginError(fail.get("code", "INTERNAL"), fail.get("message", "injected failure"))
                with self.lock:
                    response = getattr(self, method)(request, conf)
                if method in conf.get("fail_after", {}):  # the work is done; the CO is told otherwise
                    fail = conf["fail_after"][method]
                    raise PluginError(fail.get("code", "DEADLINE_EXCEEDED"), fail.get("message", "injected failure "
                                                                                      "after the work was done"))
                return response
            except PluginError as exc:
                code = exc.code
                context.abort(getattr(self.grpc.StatusCode, exc.code), exc.message)
            except Exception as exc:  # a bug or a command that failed unexpectedly: INTERNAL, logged
                code = "INTERNAL"
                context.abort(self.grpc.StatusCode.INTERNAL, "%s: %s" % (type(exc).__name__, exc))
            finally:
                self.record(method, request, conf, code)
                if method in conf["exit_after"]:
                    # exit once the answer is on its way: the next call finds no driver
                    threading.Timer(0.3, os._exit, (0,)).start()
        return handle

    def serve(self):
        grpc = self.grpc
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        for service, methods in self.csi.SERVICES.items():
            handlers = {}
            for method, request, response in methods:
                handlers[method] = grpc.unary_unary_rpc_method_handler(
                    self.handler(method), request_deserializer=self.m[request].FromString,
                    response_serializer=self.m[response].SerializeToString)
            server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
                "%s.%s" % (self.csi.PACKAGE, service), handlers),))
        if os.path.exists(self.args.socket):
            os.unlink(self.args.socket)
        server.add_insecure_port("unix:" + self.args.socket)
        server.start()
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        print("csiplugin: serving on %s" % self.args.socket, flush=True)
        stop.wait()
        server.stop(1).wait()

    # -- helpers -----------------------------------------------------------------------------------
    def attach_mode(self, conf):
        return "PUBLISH_UNPUBLISH_VOLUME" in conf["controller_caps"]

    def stage_mode(self, conf):
        return "STAGE_UNSTAGE_VOLUME" in conf["node_caps"]

    def capability(self, cap, conf):
        if cap.WhichOneof("access_type") is None:
            raise PluginError("INVALID_ARGUMENT", "volume_capability has neither mount nor block")
        if cap.WhichOneof("access_type") == "block":
            return None
        if cap.mount.volume_mount_group and "VOLUME_MOUNT_GROUP" not in conf["node_caps"]:
            # spec: the CO SHALL NOT set volume_mount_group unless the plugin has VOLUME_MOUNT_GROUP
            raise PluginError("INVALID_ARGUMENT", "volume_mount_group is set but VOLUME_MOUNT_GROUP is off")
        return {"fs_type": cap.mount.fs_type, "mount_flags": list(cap.mount.mount_flags),
                "volume_mount_group": cap.mount.volume_mount_group}

    def device_for(self, request, conf, state, image):
        """The volume's loop device on this node: from ControllerPublishVolume in attach mode, else our own."""
        if self.attach_mode(conf):
            return self.pool.check_device(request.publish_context.get("devicePath"), image)
        device = self.pool.attach(image)
        state["node_attached"][request.volume_id] = device
        return device

    def release(self, volume_id, conf, state):
        """Detach the device the node side attached (not in attach mode: ControllerUnpublish does it)."""
        if not self.attach_mode(conf) and state["node_attached"].pop(volume_id, None):
            self.pool.detach(self.pool.image(volume_id), state)

    # -- Identity ----------------------------------------------------------------------------------
    def GetPluginInfo(self, request, conf):
        return self.m.GetPluginInfoResponse(name=conf["name"], vendor_version=conf["version"],
                                            manifest={"backend": "loop"})

    def GetPluginCapabilities(self, request, conf):
        resp = self.m.GetPluginCapabilitiesResponse()
        names = list(conf["plugin_caps"])
        if segments(conf) and "VOLUME_ACCESSIBILITY_CONSTRAINTS" not in names:
            names.append("VOLUME_ACCESSIBILITY_CONSTRAINTS")
        for name in names:
            resp.capabilities.add().service.type = self.m.enum_value("PluginCapability.Service.Type", name)
        if conf.get("expansion"):
            resp.capabilities.add().volume_expansion.type = self.m.enum_value(
                "PluginCapability.VolumeExpansion.Type", conf["expansion"])
        return resp

    def Probe(self, request, conf):
        resp = self.m.ProbeResponse()
        resp.ready.value = bool(conf["ready"])
        return resp

    # -- Controller ----------------------------------------------------------------------------------
    def ControllerGetCapabilities(self, request, conf):
        resp = self.m.ControllerGetCapabilitiesResponse()
        for name in conf["controller_caps"]:
            resp.capabilities.add().rpc.type = self.m.enum_value("ControllerServiceCapability.RPC.Type", name)
        return resp

    def ControllerPublishVolume(self, request, conf):
        if not self.attach_mode(conf):
            raise PluginError("UNIMPLEMENTED", "PUBLISH_UNPUBLISH_VOLUME is off")
        device = self.pool.attach(self.pool.image(request.volume_id))
        return self.m.ControllerPublishVolumeResponse(publish_context={"devicePath": device})

    def ControllerUnpublishVolume(self, request, conf):
        if not self.attach_mode(conf):
            raise PluginError("UNIMPLEMENTED", "PUBLISH_UNPUBLISH_VOLUME is off")
        image = self.pool.image(request.volume_id, must_exist=False)
        if os.path.exists(image):
            self.pool.detach(image, self.pool.load())
        return self.m.ControllerUnpublishVolumeResponse()

    def ControllerExpandVolume(self, request, conf):
        if "EXPAND_VOLUME" not in conf["controller_caps"]:
            raise PluginError("UNIMPLEMENTED", "controller EXPAND_VOLUME is off")
        image = self.pool.image(request.volume_id)
        want = request.capacity_range.required_bytes
        if want > os.path.getsize(image):
            with open(image, "r+b") as handle:
                handle.truncate(want)
        device = self.pool.find_loop(image)
        if device:
            self.pool.grow_device(device)
        block = request.volume_capability.WhichOneof("access_type") == "block"
        return self.m.ControllerExpandVolumeResponse(capacity_bytes=os.path.getsize(image),
                                                     node_expansion_required=not block)

    # -- Node -------------------------------------------------------------------------------------------
    def NodeGetCapabilities(self, request, conf):
        resp = self.m.NodeGetCapabilitiesResponse()
        for name in conf["node_caps"]:
            resp.capabilities.add().rpc.type = self.m.enum_value("NodeServiceCapability.RPC.Type", name)
        return resp

    def NodeGetInfo(self, request, conf):
        resp = self.m.NodeGetInfoResponse(node_id=conf["node_id"],
                                          max_volumes_per_node=int(conf["max_volumes_per_node"]))
        if segments(conf):
            resp.accessible_topology.segments.update(segments(conf))
        return resp

    def NodeStageVolume(self, request, conf):
        if not self.stage_mode(conf):
            raise PluginError("UNIMPLEMENTED", "STAGE_UNSTAGE_VOLUME is off")
        if not os.path.isdir(request.staging_target_path):  # the CO creates it (spec: NodeStageVolume)
            raise PluginError("FAILED_PRECONDITION", "staging path %s is no directory"
                              % request.staging_target_path)
        image = self.pool.image(request.volume_id)
        state = self.pool.load()
        device = self.device_for(request, conf, state, image)
        mount_cap = self.capability(request.volume_capability, conf)
        try:
            if mount_cap is not None and not conf.get("stage_records_only"):
                self.pool.format_and_mount(device, request.staging_target_path, mount_cap)
            state["staged"][request.volume_id] = {"path": request.staging_target_path, "device": device,
                                                  "block": mount_cap is None}
        finally:
            self.pool.save(state)
        return self.m.NodeStageVolumeResponse()

    def NodeUnstageVolume(self, request, conf):
        if not self.stage_mode(conf):
            raise PluginError("UNIMPLEMENTED", "STAGE_UNSTAGE_VOLUME is off")
        state = self.pool.load()
        if mount_at(request.staging_target_path) is not None:
            run("umount", request.staging_target_path)
        state["staged"].pop(request.volume_id, None)
        try:
            self.release(request.volume_id, conf, state)
        finally:
            self.pool.save(state)
        return self.m.NodeUnstageVolumeResponse()

    def NodePublishVolume(self, request, conf):
        target = request.target_path
        if not os.path.isdir(os.path.dirname(target.rstrip("/"))):  # the CO creates the parent (spec)
            raise PluginError("FAILED_PRECONDITION", "parent of %s does not exist" % target)
        if ephemeral.requested(request):  # an inline volume: created here, deleted at NodeUnpublishVolume
            state = self.pool.load()
            try:
                ephemeral.publish(self.pool, state, request)
            finally:
                self.pool.save(state)
            return self.m.NodePublishVolumeResponse()
        image = self.pool.image(request.volume_id)
        state = self.pool.load()
        mount_cap = self.capability(request.volume_capability, conf)
        staged = state["staged"].get(request.volume_id)
        if self.stage_mode(conf):
            if not staged or staged["path"] != request.staging_target_path:
                raise PluginError("FAILED_PRECONDITION", "volume %s is not staged at %s"
                                  % (request.volume_id, request.staging_target_path))
            device = staged["device"]
        try:
            if not self.stage_mode(conf):
                device = self.device_for(request, conf, state, image)
            if mount_cap is None:  # block: the device node bound onto a file the plugin creates
                if not os.path.exists(target):
                    open(target, "a").close()
                if mount_at(target) is None:
                    run("mount", "--bind", device, target)
            else:
                os.makedirs(target, exist_ok=True)  # the SP creates target_path (spec: NodePublishVolume)
                if self.stage_mode(conf) and not conf.get("stage_records_only"):
                    if mount_at(target) is None:
                        run("mount", "--bind", request.staging_target_path, target)
                elif mount_at(target) is None:
                    self.pool.format_and_mount(device, target, mount_cap)
            if request.readonly:
                run("mount", "-o", "remount,bind,ro", target)
            state["published"][target] = {"volume_id": request.volume_id, "device": device,
                                          "block": mount_cap is None}
        finally:
            self.pool.save(state)
        return self.m.NodePublishVolumeResponse()

    def NodeUnpublishVolume(self, request, conf):
        target = request.target_path
        state = self.pool.load()
        while mount_at(target) is not None:
            run("umount", target)
        if os.path.isdir(target):
            os.rmdir(target)  # the SP removes what it created (spec: NodeUnpublishVolume)
        elif os.path.exists(target):
            os.unlink(target)
        state["published"].pop(target, None)
        ephemeral.delete(self.pool, state, request.volume_id)  # an inline volume: the plugin deletes it
        try:
            if not self.stage_mode(conf):
                self.release(request.volume_id, conf, state)
        finally:
            self.pool.save(state)
        return self.m.NodeUnpublishVolumeResponse()

    def NodeExpandVolume(self, request, conf):
        if "EXPAND_VOLUME" not in conf["node_caps"]:
            raise PluginError("UNIMPLEMENTED", "node EXPAND_VOLUME is off")
        image = self.pool.image(request.volume_id)
        device = self.pool.find_loop(image)
        if not device:
            raise PluginError("FAILED_PRECONDITION", "volume %s is not attached on this node" % request.volume_id)
        size = self.pool.grow_device(device)
        if request.volume_capability.WhichOneof("access_type") != "block":
            self.pool.grow_fs(device, request.volume_path)
        return self.m.NodeExpandVolumeResponse(capacity_bytes=size)

    def NodeGetVolumeStats(self, request, conf):
        if mount_at(request.volume_path) is None:
            raise PluginError("NOT_FOUND", "%s is not mounted" % request.volume_path)
        st = os.statvfs(request.volume_path)
        resp = self.m.NodeGetVolumeStatsResponse()
        for unit, total, free in (("BYTES", st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize),
                                  ("INODES", st.f_files, st.f_favail)):
            usage = resp.usage.add(total=total, available=free, used=total - free)
            usage.unit = self.m.enum_value("VolumeUsage.Unit", unit)
        return resp


def main(argv=None):
    parser = argparse.ArgumentParser(description="kubevol's test CSI plugin")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--pool", help="the volume images' directory (default STATE_DIR/pool)")
    parser.add_argument("--config")
    parser.add_argument("--log")
    args = parser.parse_args(argv)
    args.socket = os.path.abspath(args.socket)
    args.log = os.path.abspath(args.log or os.path.join(args.state_dir, "calls.jsonl"))
    import grpc
    from google.protobuf import json_format
    Plugin(args, grpc, json_format, load_messages_module()).serve()


if __name__ == "__main__":
    main()
