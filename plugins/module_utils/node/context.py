# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every node phase needs: the node's settings group, runner, node name, directories, check mode; built in
one place (node_context)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options as options, names
from ansible_collections.kubevol.volumes.plugins.module_utils.drivers import (
    driver_names, get_driver, is_external)
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput, KubevolError, NoBackend
from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import load
from ansible_collections.kubevol.volumes.plugins.module_utils.node import node_args
from ansible_collections.kubevol.volumes.plugins.module_utils.node.lock import VolumeLock
from ansible_collections.kubevol.volumes.plugins.module_utils.node.runner import Runner, process_runner
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import get_plugin


def act(ctx, res, action, func=None, *args):
    """Record ``action`` in a volume's result; run ``func(*args)`` unless in check mode, so check mode reports
    exactly the actions a real run takes."""
    res["actions"].append(action)
    res["changed"] = True
    ctx.step = action
    if not ctx.check_mode and func is not None:
        return func(*args)
    return None


def default_node_name():
    """The kubelet's default: the host name, lower-cased."""
    return os.uname().nodename.strip().lower()  # what socket.gethostname() returns, without importing socket


def _check_dir(field, value):
    if not isinstance(value, str) or not os.path.isabs(value) or "\x00" in value:
        raise InvalidInput(field=field, value=value, reason="must be an absolute path")
    return os.path.normpath(value)


def handler_path(item, driver_options=None):
    """The dotted path of ``item``'s node handler: the NODE_HANDLER its plugin's class names (local, hostPath), or,
    for a CSI volume, the one its driver's class names (kubevol's own or an external driver configured in
    ``driver_options``), as the kubelet's VolumePluginMgr finds the plugin for a spec (FindPluginBySpec) and the CSI
    plugin hands the volume to its driver."""
    owner = get_plugin(item.plugin)
    if owner.NODE_HANDLER is None:
        owner = get_driver(item.driver, volume=item.pv_name, driver_options=driver_options)
    return owner.NODE_HANDLER


def node_context(params, check_mode=False, raw_runner=None):
    """The node module's one NodeContext: the node's settings group taken whole from ``params`` (node_args.settings_of:
    every setting given, else its default), commands bounded by the group's limits, and the node's name. Every node
    entry (facts, the volume phases, setup, audit, the controller-host and provisioning calls) builds its context
    here, so a setting the operator gives reaches each of them. ``raw_runner``: a test's fake commands."""
    settings = node_args.settings_of(params)
    if raw_runner is None:
        raw_runner = process_runner(settings["command_timeout"], settings["long_command_timeout"])
    return NodeContext(raw_runner, settings, node_name=params.get("node_name"), check_mode=check_mode)


class NodeContext:
    def __init__(self, raw_runner, settings=None, node_name=None, check_mode=False, **given):
        """settings: the node's settings group (node_args.SETTINGS_SPEC), kept whole in ``settings`` for the code
        that reads a setting; ``given``: single settings over it (tests), each checked as the group's. Its
        driver_options (common/driver_options.py) are validated here, with the deprecated loop_pools folded in."""
        self.settings = node_args.settings_of(dict(settings or {}, **given))
        unknown = sorted(set(given) - set(self.settings))
        if unknown:
            raise TypeError("NodeContext: not a node setting: %s" % ", ".join(unknown))
        self.node_name = node_name or default_node_name()
        names.check_component("node name", self.node_name)
        self.kubelet_dir = _check_dir("kubelet_dir", self.settings["kubelet_dir"])
        self.run_dir = _check_dir("run_dir", self.settings["run_dir"])
        self.lock_timeout = self.settings["lock_timeout"]
        self.check_mode = check_mode
        self.runner = Runner(raw_runner, node=self.node_name)
        # the node's configuration, never the PV's
        self.driver_options = options.validate(options.with_loop_pools_alias(self.settings["driver_options"],
                                                                             self.settings["loop_pools"]))
        self.warnings = []
        self.step = None  # the last step a volume's phase started (operations._act): named in unexpected errors
        self.refused = []  # (item, error) of the volumes items() refused
        self._drivers = {}
        self._handlers = {}

    def options_for(self, name):
        """The options of plugin or driver ``name`` on this node: its defaults, overridden by driver_options."""
        return options.options_for(self.driver_options, name)

    def driver_settings(self, name):
        """What a driver instance of ``name`` is constructed with: its options (options_for) and, for kubevol's own
        drivers, the node's settings group whole (each read there by its name, as node/driver_loop_holders.py reads
        the operator's release of holds) with ``loop_pools``, the loop driver's effective pools, under the key
        drivers/loop.py reads. An external CSI driver gets its own entry only (drivers/external/driver.py driver_settings refuses
        others)."""
        settings = self.options_for(name)
        if self.is_external(name):
            return settings
        for key, value in self.settings.items():
            if key not in ("driver_options", "loop_pools"):
                settings.setdefault(key, value)
        settings["loop_pools"] = options.loop_pools(self.driver_options)
        return settings

    def act(self, res, action, func=None, *args):
        """``act`` with this context: what a volume plugin's class runs on the node through the context it is given
        (volume/host_path.py checkType), importing no node code."""
        return act(self, res, action, func, *args)

    def warn(self, text):
        self.warnings.append(text)

    def runner_for(self, item):
        return self.runner.for_volume(item.pv_name)

    def is_external(self, name):
        """True for a CSI driver this node drives over its plugin's socket (drivers/external/)."""
        return is_external(name, self.driver_options)

    def knows(self, name):
        """True for a driver this node serves: kubevol's own or a configured external one."""
        return name in self.driver_names()

    def driver_names(self):
        return driver_names(self.driver_options)

    def driver(self, item):
        """A driver instance for ``item`` whose runner names the item's volume in errors: with the verbs that act on
        the node (its NODE_OPERATIONS class, built by the driver's constructor: drivers/base.py; node/operations.py
        names each for Ansible's finder)."""
        key = (item.driver, item.pv_name)
        if key not in self._drivers or not self.is_external(item.driver):
            cls = get_driver(item.driver, volume=item.pv_name, driver_options=self.driver_options)
            self._drivers[key] = cls(self.runner_for(item), self.kubelet_dir, self.node_name,
                                     self.driver_settings(item.driver))
        return self._drivers[key]

    def handler(self, item):
        """The node handler of ``item``'s kind (handler_path, loaded through the registry on first use): the node
        operations call its phase verbs (attach, mount, publish_ephemeral, expand_controller, expand_node, unmount,
        unpublish_ephemeral) and never ask which kind it is."""
        path = handler_path(item, self.driver_options)
        if path not in self._handlers:
            self._handlers[path] = load(path)()
        return self._handlers[path]

    def all_drivers(self):
        """Every driver this node serves, to read its attachments (the facts): the drivers' own classes, without
        the verbs that act (drivers/base.py reader), so that the facts module ships none of them."""
        return [get_driver(name, driver_options=self.driver_options).reader(
            self.runner, self.kubelet_dir, self.node_name, self.driver_settings(name)) for name in self.driver_names()]

    def lock(self, item):
        return VolumeLock(self.run_dir, item.unique_name, self.lock_timeout, node=self.node_name, volume=item.pv_name)

    def has_backend(self, item):
        """False for a volume of a driver kubevol has no backend for on this node."""
        return not item.csi or self.knows(item.driver)  # local, hostPath: node/plugin_ops.py serves them

    def no_backend(self, item):
        """The error of a volume this node cannot serve: it fails that volume, named with its driver and what the node
        lacks. A volume is never skipped silently: a skip read as done had the controller record an attachment
        nothing made (the kubelet's operation generator fails a volume whose plugin it cannot find, too:
        operation_generator.go, "MountVolume.FindPluginBySpec failed")."""
        return NoBackend(volume=item.pv_name, node=self.node_name, driver=item.driver,
                         known=", ".join(self.driver_names()) or "no driver", step="find driver")

    def items(self, raw_volumes):
        """Validate every item (names; driver paths) before anything runs.

        A volume refused here (a driver without a kubevol backend, a PV naming another pool, a handle escaping it)
        is kept in ``refused``: run_each reports it with the others' results, as that volume's failure."""
        # loaded on demand (common/registry.py ON_DEMAND): the facts module, on every node in every run, builds no item
        volume_item = load("node.volume.volume_item")
        items = [volume_item(raw) for raw in raw_volumes or ()]
        seen = set()
        for item in items:
            if item.unique_name in seen:
                raise InvalidInput(field="volumes", value=names.show_volume_name(item.unique_name),
                                   reason="listed twice")
            seen.add(item.unique_name)
        valid = []
        for item in items:
            try:
                if not self.has_backend(item):
                    raise self.no_backend(item)
                if item.csi:
                    self.driver(item).validate(item)
                valid.append(item)
            except KubevolError as err:
                # one volume that cannot be served never stops a node's other volumes
                err.kwargs.setdefault("step", "validate")
                self.refused.append((item, err))
        return valid

    def run_each(self, items, phase):
        """Run ``phase(item)`` per item under its lock. A volume that fails does not stop the others: every
        volume is tried, and when any failed one error is raised that carries, besides the first failure's own
        fields (step, cmd, stderr, ...), ``failures`` (one structured entry per failed volume), ``completed`` and
        ``volumes`` (the results of those that succeeded, so that they are recorded)."""
        results, failures = [], list(self.refused)
        for item in items:
            self.step = None
            try:
                with self.lock(item):
                    results.append(phase(item))
            except KubevolError as err:
                err.kwargs.setdefault("volume", item.pv_name)
                err.kwargs.setdefault("step", self.step or "start")
                failures.append((item, err))
            except Exception as err:  # pylint: disable=broad-except
                # an unexpected error on one volume (an OSError from the kernel, a bug) is reported like the
                # expected ones, with the node, volume and step, and never hides the other volumes' results
                failures.append((item, KubevolError(
                    "unexpected %s on node %s, volume %s, at step %s: %s; check the node's kernel log (dmesg), then "
                    "run again"
                    % (type(err).__name__, self.node_name, item.pv_name, self.step or "start", err),
                    node=self.node_name, volume=item.pv_name, step=self.step or "start")))
        if not failures:
            return results
        done = [r["pv_name"] for r in results]
        first_item, first = failures[0]
        entries = []
        for item, err in failures:
            if item.pv_name not in err.text:
                err.add(prefix="volume %s: " % item.pv_name)
            entry = dict((k, v) for k, v in err.to_result().items()
                         if k in ("step", "cmd", "rc", "stderr", "hint", "device", "path", "reason", "code",
                                  "grpc_code"))
            entry.update(volume=item.pv_name, unique_volume_name=item.unique_name, node=self.node_name, msg=err.msg)
            if getattr(err, "uncertain", False):
                # a CSI call's outcome is unknown (a non-final gRPC status): failed and uncertain, never absent
                entry["uncertain"] = True
            entries.append(entry)
        first.kwargs.update(failed_volume=first_item.pv_name, failures=entries, completed=done, volumes=results,
                            changed=any(r.get("changed") for r in results), node=self.node_name)
        # the first failure's message is the body, its code last; the others quoted whole, each with its own code
        others = "".join("; " + err.quoted_in(first) for _item, err in failures[1:])
        raise first.add(prefix="%d of %d volume(s) failed on node %s: " % (
            len(failures), len(items) + len(self.refused), self.node_name),
            suffix="%s (volumes completed: %s)" % (others, ", ".join(done) or "none"))
