# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A CSI client over a unix socket, as the kubelet and the external-attacher/-resizer call a driver.

Kubernetes: pkg/volume/csi/csi_client.go (``newCsiDriverClient``, ``newGrpcConn``: one insecure gRPC
connection to the driver's unix socket per operation, closed after it; ``csiTimeout`` = 2 minutes per
operation in csi_plugin.go), csi_attacher.go / csi_mounter.go / expander.go (what each call carries), and
``isFinalError`` (errors.py) for what a failure means.

One ``CsiClient`` is one channel: ``with CsiClient(path) as csi: csi.call("NodeStageVolume", {...})``. Each
call is a unary call by method path (``/csi.v1.Node/NodeStageVolume``) with the message classes of
messages.py as (de)serializers and a deadline (``timeout``, default 120 s like csiTimeout).

Unlike the kubelet (whose non-blocking dial turns a missing socket into UNAVAILABLE, hence "uncertain"),
this client connects to the socket itself before every call: a missing socket, a refused connection (the
driver is gone) or a driver that does not answer is a CsiSocketError, final, since no call was sent.

Secrets: a request's ``secrets`` maps go to the driver and nowhere else. No request is logged or kept; an
error carries the driver's message with every secret value replaced by <redacted>.

grpcio and protobuf are imported on first use (errors.INSTALL_HINT when they are missing).
"""
import logging
import os
import socket as socket_module
import stat

from ansible_collections.kubevol.volumes.plugins.module_utils.common.handles import show_handle
from ansible_collections.kubevol.volumes.plugins.module_utils.csi import messages as csi_messages
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import (
    NON_FINAL_CODES, CsiDependencyError, CsiFinalError, CsiSocketError, CsiUncertainError, redact)

DEFAULT_TIMEOUT = 120.0  # kubelet pkg/volume/csi/csi_plugin.go csiTimeout = 2 * time.Minute
DEFAULT_CONNECT_TIMEOUT = 10.0
log = logging.getLogger(__name__)


def load_modules():
    """(grpc, json_format, Messages), or CsiDependencyError naming the packages to install."""
    try:
        import grpc
        from google.protobuf import json_format
        msgs = csi_messages.load()
    except ImportError as exc:
        raise CsiDependencyError(str(exc)) from None
    return grpc, json_format, msgs


def _secret_values(request, secret_fields):
    values = set()
    for name in secret_fields:
        for key, value in getattr(request, name).items():
            values.add(value)
    return values


class CsiClient(object):
    """One gRPC channel to a CSI driver's unix socket, for a sequence of calls (open/close or ``with``).

    ``driver`` and ``node`` only name things in error messages.
    """

    def __init__(self, socket_path, timeout=DEFAULT_TIMEOUT, connect_timeout=DEFAULT_CONNECT_TIMEOUT,
                 driver="", node=""):
        self.socket_path = os.path.abspath(socket_path)
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        self.driver = driver
        self.node = node
        self._channel = None
        self._grpc = self._json = self._messages = None

    def _load(self):
        if self._messages is None:
            self._grpc, self._json, self._messages = load_modules()

    @property
    def messages(self):
        """The CSI message classes (messages.Messages)."""
        self._load()
        return self._messages

    def __repr__(self):
        return "CsiClient(socket=%r, timeout=%r, open=%r)" % (
            self.socket_path, self.timeout, self._channel is not None)

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc_info):
        self.close()
        return False

    def _socket_error(self, method, message, hint, volume_id=""):
        return CsiSocketError(method, self.socket_path, message, volume_id=volume_id, hint=hint,
                              driver=self.driver, node=self.node)

    def check_socket(self, method="(connect)", volume_id=""):
        """Raise CsiSocketError unless something accepts connections on the socket. Sends nothing."""
        try:
            st = os.stat(self.socket_path)
        except FileNotFoundError:
            raise self._socket_error(method, "no socket at %s" % self.socket_path,
                                     "check that the CSI driver runs on this node and listens on this path "
                                     "(its --endpoint / csi-address, under the kubelet's plugins directory)",
                                     volume_id) from None
        except OSError as exc:
            raise self._socket_error(method, "cannot stat %s: %s" % (self.socket_path, exc.strerror),
                                     "check the path and its permissions", volume_id) from None
        if not stat.S_ISSOCK(st.st_mode):
            raise self._socket_error(method, "%s is not a unix socket" % self.socket_path,
                                     "point the client at the driver's socket, not at another file", volume_id)
        sock = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
        sock.settimeout(self.connect_timeout)
        try:
            sock.connect(self.socket_path)
        except ConnectionRefusedError:
            raise self._socket_error(method, "nothing listens on %s (connection refused)" % self.socket_path,
                                     "the driver that created the socket has exited: check its container or "
                                     "process and its log, then restart it", volume_id) from None
        except socket_module.timeout:
            raise self._socket_error(method, "%s accepts no connection within %gs"
                                     % (self.socket_path, self.connect_timeout),
                                     "check that the driver process is running and not stopped or overloaded",
                                     volume_id) from None
        except OSError as exc:
            raise self._socket_error(method, "cannot connect to %s: %s" % (self.socket_path, exc.strerror or exc),
                                     "check the socket's permissions and that the driver runs", volume_id) from None
        finally:
            sock.close()

    def open(self):
        """Check the socket, then open the channel and wait until the driver's gRPC server answers."""
        if self._channel is not None:
            return
        self._load()
        self.check_socket()
        grpc = self._grpc
        channel = grpc.insecure_channel("unix:" + self.socket_path)
        try:
            grpc.channel_ready_future(channel).result(timeout=self.connect_timeout)
        except grpc.FutureTimeoutError:
            channel.close()
            raise self._socket_error("(connect)", "%s accepts connections but no gRPC server answers within %gs"
                                     % (self.socket_path, self.connect_timeout),
                                     "check that the process listening there is the CSI driver and is not "
                                     "stopped or hung (its log, its state)") from None
        self._channel = channel

    def close(self):
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    def build(self, method, request=None):
        """The request message of ``method`` from a message, a dict (field names as in the spec) or None."""
        if method not in csi_messages.METHODS:
            raise ValueError("%r is no CSI method this client knows (%s)"
                             % (method, ", ".join(sorted(csi_messages.METHODS))))
        cls = self.messages.request(method)
        if request is None:
            return cls()
        if isinstance(request, cls):
            return request
        if not isinstance(request, dict):
            raise TypeError("CSI %s: the request must be a %s or a dict, not %s"
                            % (method, cls.DESCRIPTOR.name, type(request).__name__))
        secrets = set()
        for name in csi_messages.secret_fields(cls.DESCRIPTOR.name):
            secrets.update(str(v) for v in (request.get(name) or {}).values())
        try:
            return self._json.ParseDict(request, cls())
        except Exception as exc:  # json_format.ParseError and TypeErrors of bad values
            problem = redact(exc, secrets)
        # raised outside the except block: the parser's own exception (it may quote a secret) is not its context
        raise CsiFinalError(method, self.socket_path, "the request does not fit %s: %s"
                            % (cls.DESCRIPTOR.name, problem), volume_id=str(request.get("volume_id", "")),
                            hint="this is a bug in the caller: fix the request", driver=self.driver, node=self.node)

    def call(self, method, request=None, timeout=None):
        """Call ``method`` (e.g. "NodeStageVolume") and return its response message.

        Raises CsiFinalError (final status, or no call made), CsiSocketError (no call made: see its hint),
        CsiUncertainError (non-final status: the driver may have done it).
        """
        message = self.build(method, request)
        if self._channel is None:
            self.open()
        volume_id = getattr(message, "volume_id", "") if "volume_id" in message.DESCRIPTOR.fields_by_name else ""
        secrets = _secret_values(message, csi_messages.secret_fields(message.DESCRIPTOR.name))
        self.check_socket(method, volume_id)
        grpc = self._grpc
        rpc = self._channel.unary_unary(csi_messages.method_path(method),
                                        request_serializer=type(message).SerializeToString,
                                        response_deserializer=self.messages.response(method).FromString)
        deadline = self.timeout if timeout is None else float(timeout)
        log.debug("CSI %s on %s (volume %s, timeout %gs)", method, self.socket_path, show_handle(volume_id), deadline)
        try:
            return rpc(message, timeout=deadline)
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            code_name = code.name if code is not None else "UNKNOWN"
            details = redact((exc.details() if hasattr(exc, "details") else "") or "", secrets)
        kwargs = dict(volume_id=volume_id, driver=self.driver, node=self.node)
        if code_name not in NON_FINAL_CODES:
            log.debug("CSI %s on %s: final %s", method, self.socket_path, code_name)
            raise CsiFinalError(method, self.socket_path, details, code=code_name,
                                hint="the driver refused or failed the call, so nothing was done: fix the cause it "
                                "names (its log has more), then run again", **kwargs)
        if code_name == "DEADLINE_EXCEEDED":
            details = "no answer within %gs (%s)" % (deadline, details)
            hint = ("the outcome is uncertain, the driver may still be doing it: check the driver's log, then run "
                    "again (the same call is retried)")
        elif code_name == "UNAVAILABLE":
            hint = ("the driver went away during the call and the outcome is uncertain: check that it runs, then "
                    "run again (the same call is retried)")
        else:
            hint = "the outcome is uncertain: run again (the same call is retried)"
        log.debug("CSI %s on %s: uncertain %s", method, self.socket_path, code_name)
        raise CsiUncertainError(method, self.socket_path, details, code=code_name, hint=hint, **kwargs)

    def to_dict(self, message):
        """A response as a dict with the spec's field names (enum values as names, int64 as int)."""
        self._load()
        kwargs = {"preserving_proto_field_name": True}
        result = self._json.MessageToDict(message, **kwargs)
        return _ints(message, result)


def is_repeated(field):
    """protobuf 7 has FieldDescriptor.is_repeated and no .label; 4.21 has only .label."""
    flag = getattr(field, "is_repeated", None)
    return flag if flag is not None else field.label == field.LABEL_REPEATED


def _ints(message, result):
    """MessageToDict renders int64 as strings (the JSON mapping); give them back as ints."""
    for field in message.DESCRIPTOR.fields:
        if field.name not in result:
            continue
        value = getattr(message, field.name)
        if field.type in (field.TYPE_INT64, field.TYPE_UINT64) and not is_repeated(field):
            result[field.name] = int(value)
        elif field.type == field.TYPE_MESSAGE and not is_repeated(field) and \
                not field.message_type.GetOptions().map_entry and isinstance(result[field.name], dict):
            result[field.name] = _ints(value, result[field.name])
    return result
