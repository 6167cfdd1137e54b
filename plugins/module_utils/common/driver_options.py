# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operator's options of each volume plugin and CSI driver: one mapping, ``driver_options``.

``{plugin or driver name: {option: value}}``: the module option ``driver_options`` (volume_reconcile_plan and
every node module), the reconcile role's ``kubevol_driver_options``. What a node may touch is the node's
operator's word, never a PV's: the loop driver's pools, the directories local and hostPath PVs may name. Each
name's defaults (DEFAULTS, a plugin's DEFAULT_OPTIONS) are merged per name, so an operator who sets one option keeps the others' defaults.

A driver declares its options spec as its class attribute ``OPTIONS`` (drivers/: read through the registry when
it exposes one); a volume plugin declares its ``OPTIONS`` and ``DEFAULT_OPTIONS`` as class data too (volume/: read
through the plugin registry: local's and hostPath's allowed directories). A spec maps each option to a check:
``"paths"`` (a list of absolute paths) or ``"normalized_paths"`` (absolute and normalized: no ``..``, no ``//``,
no trailing ``/``: a plan-time string check against them must mean what the node's realpath check means).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import importlib
import posixpath

from ansible_collections.kubevol.volumes.plugins.module_utils.common import csi_controller
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import InvalidInput
from ansible_collections.kubevol.volumes.plugins.module_utils.common.names import DEFAULT_LOOP_POOL, LOOP_DRIVER
from ansible_collections.kubevol.volumes.plugins.module_utils.common.registry import PLUGIN_REGISTRY
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import ROLE_VARIABLES, setting

# The one place each driver's default is written (a volume plugin's: its class's DEFAULT_OPTIONS, volume/)
DEFAULTS = {
    LOOP_DRIVER: {"pools": [DEFAULT_LOOP_POOL]},
}
# a driver class without OPTIONS yet: its spec here (drivers/loop.py LoopDriver: pools)
FALLBACK_DRIVER_OPTIONS = {LOOP_DRIVER: {"pools": "paths"}}

# an external CSI driver's entry (drivers/external/driver.py OPTIONS; a unit test keeps the two equal), for where
# the drivers package is not shipped (the planner). An entry with one of EXTERNAL_KEYS names a CSI driver kubevol
# drives over its plugin's socket (drivers/external/driver.py configured_drivers).
FALLBACK_EXTERNAL_OPTIONS = {"socket": {"type": "path"}, "controller": {"type": "str"},
                             "controller_socket": {"type": "path"}, "timeout": {"type": "float"}}
EXTERNAL_KEYS = ("socket", "controller", "controller_socket")

# the setting the refusals below name, said as the reader sets it (the module option, or kubevol_driver_options)
FIELD = setting("driver_options")
DRIVERS_PACKAGE = "ansible_collections.kubevol.volumes.plugins.module_utils.drivers"


def _drivers():
    """{driver name: options spec} of the drivers this collection has (the drivers registry)."""
    specs = dict(FALLBACK_DRIVER_OPTIONS)
    try:
        # Looked up by name, when asked (common/ imports nothing above it at its top). Where the registry is not
        # there (the planner run as a module on its own), the specs above stand in.
        drivers = importlib.import_module(DRIVERS_PACKAGE)
    except ImportError:
        return specs
    for name in sorted(getattr(drivers, "DRIVERS", {}) or {}):
        try:
            cls = drivers.get_driver(name)
        except Exception:  # pylint: disable=broad-except
            continue  # a driver the registry cannot load: its options keep the fallback spec
        spec = getattr(cls, "OPTIONS", None)
        if isinstance(spec, dict):
            specs[name] = spec
        else:
            specs.setdefault(name, {})
    return specs


def specs():
    """{plugin or driver name: options spec}: every name ``driver_options`` may use."""
    known = dict((name, dict(cls.OPTIONS)) for name, cls in PLUGIN_REGISTRY.items())
    known.update(_drivers())
    return known


def defaults():
    """{plugin or driver name: its default options}: the drivers' DEFAULTS and each volume plugin's DEFAULT_OPTIONS."""
    found = dict((name, copy.deepcopy(cls.DEFAULT_OPTIONS)) for name, cls in PLUGIN_REGISTRY.items()
                 if cls.DEFAULT_OPTIONS)
    found.update(copy.deepcopy(DEFAULTS))
    return found


def external_spec():
    """The options spec of an external CSI driver's entry: the driver's own OPTIONS, or the fallback copy."""
    try:
        return importlib.import_module(DRIVERS_PACKAGE).external_options_spec()
    except (ImportError, AttributeError):
        return dict(FALLBACK_EXTERNAL_OPTIONS)


def external_drivers(driver_options, builtin=()):
    """The CSI drivers ``driver_options`` configures as external (an entry with ``socket`` or ``controller``,
    other than the plugins' and ``builtin`` names): as drivers/external/driver.py configured_drivers, without
    importing driver code (the planner's known drivers)."""
    skip = set(PLUGIN_REGISTRY) | set(builtin)
    return sorted(name for name, own in (driver_options or {}).items()
                  if isinstance(name, str) and name not in skip and isinstance(own, dict)
                  and any(key in own for key in EXTERNAL_KEYS))


def allowed(path, roots):
    """True when ``path`` is absolute, normalized and equal to or under one of ``roots``.

    A pure string check for plan time (no disk access): normalized means no ``.`` or ``..`` component, no ``//``
    and no trailing ``/`` (except the root itself), so ``/mnt/disks/../etc`` never passes as under /mnt/disks.
    The node checks again with symlinks resolved."""
    if not normalized(path):
        return False
    for root in roots or ():
        if not normalized(root):
            continue
        if path == root or root == "/" or path.startswith(root + "/"):
            return True
    return False


def normalized(path):
    """An absolute path written the one way posixpath.normpath writes it (and not starting with ``//``)."""
    return (isinstance(path, str) and path.startswith("/") and "\x00" not in path
            and posixpath.normpath(path) == path and not path.startswith("//"))


def _check_paths(name, option, value, kind):
    where = "%s.%s" % (name, option)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(field=FIELD, value={name: {option: value}},
                           reason="%s must be a list of absolute paths" % where)
    for path in value:
        if not path.startswith("/") or "\x00" in path:
            raise InvalidInput(field=FIELD, value={name: {option: value}},
                               reason="%s: each entry must be an absolute path, not %r" % (where, path))
        if kind == "normalized_paths" and not normalized(path):
            raise InvalidInput(field=FIELD, value={name: {option: value}},
                               reason="%s: %r must be a normalized absolute path (no '..', '.', '//' or trailing "
                                      "'/'): write %r" % (where, path, "/" + posixpath.normpath(path).lstrip("/")))
    return list(value)


def _check_option(name, option, value, rule):
    """One option against its spec entry: a kind (paths, normalized_paths) or an argument-spec-like dict."""
    if isinstance(rule, dict):
        # an argument-spec-like entry ({"type": "list", "elements": "path"} ...): the path checks by the name's kind
        kind = rule.get("kind") or ("paths" if rule.get("type") == "list" and rule.get("elements") in ("path", "str")
                                    else None)
        if kind is None:
            choices = rule.get("choices")
            if choices is not None and value is not None and value not in choices:
                raise InvalidInput(field=FIELD, value={name: {option: value}},
                                   reason="%s.%s must be one of %s" % (name, option, ", ".join(map(str, choices))))
            if rule.get("type") == "path" and value is not None and (
                    not isinstance(value, str) or not value.startswith("/") or "\x00" in value):
                raise InvalidInput(field=FIELD, value={name: {option: value}},
                                   reason="%s.%s must be an absolute path" % (name, option))
            if rule.get("type") == "float" and value is not None and (
                    isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0):
                raise InvalidInput(field=FIELD, value={name: {option: value}},
                                   reason="%s.%s must be a positive number of seconds" % (name, option))
            return copy.deepcopy(value)
        rule = kind
    if rule in ("paths", "normalized_paths"):
        return _check_paths(name, option, value, rule)
    return copy.deepcopy(value)


def validate(driver_options):
    """The operator's ``driver_options``, checked: a new mapping with each given name's options checked against
    its spec (defaults are not filled in: options_for merges them). Raises InvalidInput naming the key and
    what is allowed: an unknown plugin or driver name, an unknown option of a known one, a bad value."""
    if driver_options is None:
        return {}
    if not isinstance(driver_options, dict):
        raise InvalidInput(field=FIELD, value=driver_options,
                           reason="must be a mapping of plugin or driver name to its options")
    known = specs()
    external = external_drivers(driver_options, builtin=known)
    if external:
        spec = external_spec()
        known.update((name, spec) for name in external)
    checked = {}
    for name in sorted(driver_options, key=str):
        options = driver_options[name]
        if name not in known:
            raise InvalidInput(field=FIELD, value=name,
                               reason="%r is neither a volume plugin nor a driver kubevol knows (known: %s), nor a "
                                      "CSI driver kubevol drives over its socket (an entry with 'controller: node' "
                                      "or 'socket'); correct the name or remove it" % (name, ", ".join(sorted(known))))
        if options is None:
            options = {}
        if not isinstance(options, dict):
            raise InvalidInput(field=FIELD, value={name: options},
                               reason="the options of %s must be a mapping (option: value)" % name)
        spec = known[name] or {}
        checked[name] = {}
        for option in sorted(options, key=str):
            if option not in spec:
                raise InvalidInput(field=FIELD, value={name: {option: options[option]}},
                                   reason="%s has no option %r (its options: %s)"
                                          % (name, option, ", ".join(sorted(spec)) or "none"))
            checked[name][option] = _check_option(name, option, options[option], spec[option])
        if name in external:
            csi_controller.check(name, checked[name])  # controller and controller_socket go together
    return checked


def options_for(driver_options, name):
    """The options of plugin or driver ``name``: its defaults (DEFAULTS, a plugin's DEFAULT_OPTIONS), overridden per
    option by ``driver_options``."""
    if name in DEFAULTS:
        own = DEFAULTS[name]
    else:
        plugin = PLUGIN_REGISTRY.get(name)
        own = plugin.DEFAULT_OPTIONS if plugin is not None else {}
    merged = copy.deepcopy(own)
    merged.update(copy.deepcopy((driver_options or {}).get(name) or {}))
    return merged


def loop_pools(driver_options):
    """The loop driver's pools (loop.kubevol.io's ``pools``)."""
    return list(options_for(driver_options, LOOP_DRIVER)["pools"])


def with_loop_pools_alias(driver_options, loop_pools_value, alias="loop_pools"):
    """``driver_options`` with the deprecated ``loop_pools`` (``alias``) folded in as loop.kubevol.io's pools.

    None when the alias is not given. Giving both with different values is an error: which one the operator
    meant cannot be known."""
    driver_options = dict(driver_options or {})
    if loop_pools_value is None:
        return driver_options
    given = (driver_options.get(LOOP_DRIVER) or {}).get("pools")
    if given is not None and list(given) != list(loop_pools_value):
        pools = setting("driver_options", key=LOOP_DRIVER)
        raise InvalidInput(field=alias, value=loop_pools_value,
                           reason="%s (deprecated) and the pools of %s are both given, with different values (%s): "
                                  "give only the pools of %s" % (setting(alias) if alias in ROLE_VARIABLES else alias,
                                                                 pools, list(given), pools))
    loop = dict(driver_options.get(LOOP_DRIVER) or {})
    loop["pools"] = list(loop_pools_value)
    driver_options[LOOP_DRIVER] = loop
    return driver_options
