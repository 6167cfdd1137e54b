# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a CSI driver's node plugin listens on this node, found as the kubelet finds it.

1. ``<kubelet>/plugins_registry/<driver>-reg.sock``: node-driver-registrar's registration socket; its GetInfo
   names the plugin's endpoint (pkg/kubelet/pluginmanager: the plugin watcher, operation_generator.go
   ``GenerateRegisterPluginFunc``; pkg/volume/csi/csi_plugin.go ``RegistrationHandler.ValidatePlugin``).
2. ``<kubelet>/plugins/<driver>/csi.sock``: where the driver's DaemonSets put it by convention (the path the
   registrar's ``--kubelet-registration-path`` usually names).
3. ``driver_options[<driver>]["socket"]``: the operator's word, for a plugin that listens elsewhere.
A registration socket that exists but does not answer, names another driver or another plugin type, or offers
no CSI 1.x version, fails: the kubelet would not have registered that plugin either.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.csi import client as csi_client
from ansible_collections.kubevol.volumes.plugins.module_utils.csi.errors import CsiError, redact
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external import registration
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers.external.errors import (
    CsiDriverUnreachable, from_csi, refused)


def registration_socket(kubelet_dir, name):
    return os.path.join(kubelet_dir, "plugins_registry", name + "-reg.sock")


def conventional_socket(kubelet_dir, name):
    return os.path.join(kubelet_dir, "plugins", name, "csi.sock")


def find_node_socket(driver, volume):
    """The node plugin's socket path for ``driver`` (an ExternalCsiDriver), or CsiDriverUnreachable naming every
    place looked at."""
    name, node = driver.NAME, driver.node_name
    reg = registration_socket(driver.kubelet_dir, name)
    if os.path.lexists(reg):
        return registered_endpoint(driver, reg, volume)
    conventional = conventional_socket(driver.kubelet_dir, name)
    if os.path.lexists(conventional):
        return conventional
    configured = driver.settings.get("socket")
    if configured:
        return configured  # the client says precisely what is wrong with it, if anything
    raise CsiDriverUnreachable(
        volume=volume, node=node, driver=name, step="find socket", socket="", grpc_code=None, uncertain=False,
        hint="", detail="CSI driver %s has no socket there (neither %s nor %s exists); start the driver's node "
                        "plugin and its node-driver-registrar on node %s, or set its socket in %s"
                        % (name, reg, conventional, node, setting("driver_options", key=name)))


def registered_endpoint(driver, reg, volume):
    """GetInfo on the registration socket ``reg``: the endpoint of a CSIPlugin named driver.NAME with a 1.x
    version."""
    name, node = driver.NAME, driver.node_name
    probe = csi_client.CsiClient(reg, timeout=driver.timeout, driver=name, node=node)
    try:
        probe.check_socket("GetInfo (registration)")
        grpc, _json, _msgs = csi_client.load_modules()
    except CsiError as exc:
        raise from_csi(exc, volume, node, name) from None
    msgs = registration.load()
    channel = grpc.insecure_channel("unix:" + reg)
    problem = code = None
    try:
        rpc = channel.unary_unary(registration.GET_INFO, request_serializer=msgs["InfoRequest"].SerializeToString,
                                  response_deserializer=msgs["PluginInfo"].FromString)
        driver.calls.append("GetInfo")
        info = rpc(msgs["InfoRequest"](), timeout=min(driver.timeout, csi_client.DEFAULT_CONNECT_TIMEOUT))
    except grpc.RpcError as exc:
        code = exc.code().name if hasattr(exc, "code") and exc.code() is not None else "UNKNOWN"
        problem = "%s: %s" % (code, redact(exc.details() if hasattr(exc, "details") else "", ()))
    finally:
        channel.close()
    if problem is not None:
        raise CsiDriverUnreachable(
            volume=volume, node=node, driver=name, step="GetInfo (registration)", socket=reg, grpc_code=code,
            uncertain=False, hint="", detail="the registration socket %s of CSI driver %s does not answer GetInfo "
                                             "(%s): check node-driver-registrar's container or process and its log"
                                             % (reg, name, problem))
    why = None
    if info.type != registration.CSI_PLUGIN_TYPE:
        why = "registers a plugin of type %r, not %r" % (info.type, registration.CSI_PLUGIN_TYPE)
    elif info.name != name:
        why = "registers driver %r, not %r" % (info.name, name)
    elif not registration.supported_version(info.supported_versions):
        why = ("offers CSI versions %s, none of them 1.x (the kubelet refuses such a driver)"
               % (list(info.supported_versions) or "(none)"))
    if why:
        raise refused(volume, node, name, "the registration socket %s %s" % (reg, why), "GetInfo (registration)",
                      "check which registrar listens there (its --kubelet-registration-path and the driver's name)")
    return registration.endpoint_path(info.endpoint, reg)
