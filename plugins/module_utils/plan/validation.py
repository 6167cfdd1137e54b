# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Refuse at plan time every name, quantity and pool a node module would refuse, before any intent is recorded.

The node modules check each volume item (node/volume.py volume_item: names.check_component for the PV name and the
pod uids, the API's rule for the volume handle, names.check_driver_name, NUL in volumeAttributes, the mode, a
non-negative capacity, mount options) and the driver checks what it alone refuses (drivers/base.py Driver.validate:
a handle the loop driver cannot name an image after; drivers/loop.py LoopDriver.pool and image_path). Those checks
stay on the node as the last line; this module runs the same rules (names.py's functions) on the cluster objects
while the desired state is built, so that a hostile PV, claim or pod is a blocked entry naming the object, the field,
the value and the rule, and nothing of it is attached, recorded or created anywhere. No node I/O: the pool is
checked as a path equal to one of the operator's pools (names.check_pool), never resolved on the controller.
A volume handle is opaque (common/handles.py): the API's rule, and the rule of a driver that names a file after it,
asked of that driver (volume/csi.py handle_refusal); a refusal shows it cut, with its sha256 (quote_handle).

refuse_unsafe_steps is the planner's last pass over its own steps (local and hostPath items too: their path absolute,
normalized and under the operator's directories for the plugin, driver_options): any step whose item still carries a value a
node would refuse (one built from node facts or a VolumeAttachment) is dropped and blocked, with the steps that
depend on it. Kubernetes' API server validates these names (apimachinery validation.IsDNS1123Subdomain, ValidatePodName;
pkg/apis/core/validation ValidatePersistentVolume) and the kubelet refuses a path outside its directory
(pkg/volume/util/subpath, utilpath); a snapshot file passes neither, so kubevol checks them itself.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options as driver_options_mod
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError, SettingRefused
from ansible_collections.kubevol.volumes.plugins.module_utils.common.handles import quote_handle
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import OBJECT_REFUSED
from ansible_collections.kubevol.volumes.plugins.module_utils import volume as volume_plugins
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import CSI
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import handle_refusal

# Most names are plain DNS labels or UUIDs: one C-level match, and the full check only for the rest. A plain name
# passes names.check_component and names.check_driver_name both (never '.' or '..': it starts with a letter or digit).
_PLAIN = plain_name = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,252}\Z").match  # plain_name: the desired state's
_MAX_VALUE = 80  # characters of a value's repr a message shows
FILESYSTEM, BLOCK = "Filesystem", "Block"
_MODES = (FILESYSTEM, BLOCK)
_EMPTY = {}
COMPONENT_RULE = ("names that become a path component on a node must be one safe component: no '/', '\\', '.' or "
                  "'..', NUL or control characters, at most 255 bytes")


def safe_repr(value):
    """repr() (control characters and NUL escaped), cut to a readable length."""
    text = repr(value)
    if len(text) > _MAX_VALUE:
        text = "%s... (%d characters)" % (text[:_MAX_VALUE], len(value) if hasattr(value, "__len__") else len(text))
    return text


def label(value):
    """A name as a blocked entry shows it: as it is when printable, else its safe repr."""
    if isinstance(value, str) and value.isprintable() and len(value) <= _MAX_VALUE:
        return value
    return safe_repr(value)


def refusal(kind, name, field, value, rule, shown=None):
    """One refusal's text: the object (kind namespace/name), the field, the value (``shown`` or its repr), the rule."""
    return "%s %s: %s %s is refused: %s" % (kind, label(name), field, shown or safe_repr(value), rule)


def _component_rule(field, value):
    """The rule names.check_component breaks, or None."""
    if value.__class__ is str and _PLAIN(value):
        return None
    try:
        names.check_component(field, value)
    except KubevolError as exc:
        return "%s (%s)" % (exc.kwargs.get("reason"), COMPONENT_RULE)
    return None


def _check(refusals, kind, name, field, value, check, *args):
    try:
        check(*args)
    except KubevolError as exc:
        refusals.append(refusal(kind, name, field, value, exc.kwargs.get("reason") or exc.msg))


def component(refusals, kind, name, field, value):
    rule = _component_rule(field, value)
    if rule is not None:
        refusals.append(refusal(kind, name, field, value, rule))


def check_loop_pools(pools):
    """The loop_pools option: absolute paths (the node ignores any other)."""
    where = "the pools of %s" % setting("driver_options", key=names.LOOP_DRIVER)
    if not isinstance(pools, (list, tuple)) or not pools:
        raise SettingRefused(field=where, value=pools, reason="must be a non-empty list of absolute paths")
    for pool in pools:
        if not isinstance(pool, str) or not pool.startswith("/") or "\x00" in pool:
            raise SettingRefused(field=where, value=pool, reason="must be an absolute path, as every pool")


def normalized_pools(pools):
    """The operator's pools as names.check_pool compares them: absolute paths, normalized (a tuple)."""
    return tuple(posixpath.normpath(p) for p in pools if isinstance(p, str) and p.startswith("/") and "\x00" not in p)


def _attributes(refusals, kind, name, field, attributes):
    for key, value in attributes:
        if "\x00" in key or "\x00" in value:
            refusals.append(refusal(kind, name, "%s.%s" % (field, label(key)), value,
                                    "NUL is not allowed in volumeAttributes"))


def _pool(refusals, kind, name, driver, attributes, pools):
    if driver != names.LOOP_DRIVER:
        return
    pool = dict(attributes).get(names.POOL_ATTRIBUTE)
    try:
        names.check_pool(pool, pools)
    except KubevolError as exc:
        refusals.append(refusal(kind, name, "spec.csi.volumeAttributes.pool", pool or names.DEFAULT_LOOP_POOL,
                                exc.kwargs.get("reason") or exc.msg))


def _pool_allowed(pools, pool):
    """The common case of names.check_pool in one set lookup: the pool, as written, is one of the pools."""
    return (pool or names.DEFAULT_LOOP_POOL) in pools


def _plain_attributes(driver, attributes, pools):
    """No NUL in any volumeAttributes pair and, for the loop driver, a pool that is one of ``pools``."""
    pool = None
    for key, value in attributes:
        if "\x00" in key or "\x00" in value:
            return False
        if key == names.POOL_ATTRIBUTE:
            pool = value
    return driver != names.LOOP_DRIVER or _pool_allowed(pools, pool)


def pv_refusals(pv, pools):
    """What a node would refuse of a CSI PV (node/volume.py volume_item, drivers/loop.py LoopDriver.pool): texts.
    pools: the operator's pools, normalized absolute paths (check_loop_pools)."""
    csi = pv.csi
    capacity = pv.capacity_bytes
    if (_PLAIN(pv.name) and _PLAIN(csi.volume_handle) and _PLAIN(csi.driver) and pv.volume_mode in _MODES
            and capacity.__class__ is int and capacity >= 0 and not pv.mount_options
            and _plain_attributes(csi.driver, csi.volume_attributes, pools)):
        return []  # the common case, one pass; anything else is checked field by field below
    refusals = []
    kind = "PersistentVolume"
    component(refusals, kind, pv.name, "metadata.name", pv.name)
    _check(refusals, kind, pv.name, "spec.csi.driver", csi.driver, names.check_driver_name, csi.driver)
    rule = handle_refusal(csi.driver, csi.volume_handle)  # the API's, and the driver's when it names a file after it
    if rule is not None:
        refusals.append(refusal(kind, pv.name, "spec.csi.volumeHandle", None, rule, quote_handle(csi.volume_handle)))
    _attributes(refusals, kind, pv.name, "spec.csi.volumeAttributes", csi.volume_attributes)
    if pv.volume_mode not in (FILESYSTEM, BLOCK):
        refusals.append(refusal(kind, pv.name, "spec.volumeMode", pv.volume_mode, "must be Filesystem or Block"))
    if pv.capacity_bytes.__class__ is not int or pv.capacity_bytes < 0:
        refusals.append(refusal(kind, pv.name, "spec.capacity.storage", pv.capacity_bytes,
                                "a size must not be negative"))
    for option in pv.mount_options:
        _check(refusals, kind, pv.name, "spec.mountOptions", option, names.check_mount_option, option)
    _pool(refusals, kind, pv.name, csi.driver, csi.volume_attributes, pools)
    return refusals


def name_refusals(pv):
    """A local or hostPath PV's name: it becomes the directory of its pod mounts (volume/ layouts)."""
    refusals = []
    component(refusals, "PersistentVolume", pv.name, "metadata.name", pv.name)
    return refusals


def pvc_refusals(pvc):
    """A claim's name (a key of the plan) and its quantities: a negative request or size is never planned."""
    if (_PLAIN(pvc.name) and pvc.request_bytes >= 0 and (pvc.capacity_bytes is None or pvc.capacity_bytes >= 0)
            and (pvc.allocated_bytes is None or pvc.allocated_bytes >= 0)):
        return []
    refusals = []
    kind, key = "PersistentVolumeClaim", "%s/%s" % (pvc.namespace, pvc.name)
    component(refusals, kind, key, "metadata.name", pvc.name)
    for field, value in (("spec.resources.requests.storage", pvc.request_bytes),
                         ("status.capacity.storage", pvc.capacity_bytes),
                         ("status.allocatedResources.storage", pvc.allocated_bytes)):
        if value is not None and value < 0:
            refusals.append(refusal(kind, key, field, value, "a quantity of storage must not be negative"))
    return refusals


def pod_refusals(pod):
    """A pod's uid and nodeName become directories on the node (pods/<uid>/..., the holder records): texts."""
    if _PLAIN(pod.uid) and _PLAIN(pod.node_name):
        return []
    refusals = []
    key = "%s/%s" % (pod.namespace, pod.name)
    component(refusals, "Pod", key, "metadata.uid", pod.uid)
    component(refusals, "Pod", key, "spec.nodeName", pod.node_name)
    return refusals


def inline_refusals(iv, pools):
    """An inline ephemeral volume's item: its name is the item's pv_name (a directory), its attributes and pool."""
    refusals = []
    kind, key = "Pod", iv.pod
    component(refusals, kind, key, "spec.volumes[].name", iv.volume_name)
    _check(refusals, kind, key, "spec.volumes[].csi.driver", iv.driver, names.check_driver_name, iv.driver)
    _attributes(refusals, kind, key, "spec.volumes[%s].csi.volumeAttributes" % label(iv.volume_name),
                iv.volume_attributes)
    _pool(refusals, kind, key, iv.driver, iv.volume_attributes, pools)
    return refusals


def refused_text(refusals):
    """The blocked reason of an object a node would refuse: each refusal (object, field, value, rule or remedy), then
    the code; nothing of it is set up or recorded anywhere (docs/errors.md says so under the code)."""
    return "%s; fix the object [%s]" % ("; ".join(refusals), OBJECT_REFUSED)


# -- the planner's last pass over its own steps --------------------------------------------------------------------

def step_problem(step, pools, cache=None, driver_options=None):
    """What a node module would refuse in this step's item and pod (node/volume.py volume_item, the loop driver's
    pool), or None. cache: {id(item): problems}, since the steps of a (volume, node) pair share one item."""
    item = step.get("item")
    problems = []
    if item is not None:
        key = id(item)
        found = cache.get(key) if cache is not None else None
        if found is None:
            found = _item_problems(item, pools, driver_options)
            if cache is not None:
                cache[key] = found
        problems.extend(found)
    uid = step.get("pod_uid")
    if uid is not None and step.get("unique_volume_name") is not None:
        rule = _component_rule("pod uid", uid)
        if rule is not None:
            problems.append("pod uid %s: %s" % (safe_repr(uid), rule))
    fs_group = step.get("pod_fs_group")
    if fs_group is not None and not names.is_group_id(fs_group):
        problems.append("fsGroup %s is not a group ID" % safe_repr(fs_group))
    return "; ".join(problems) or None


def _plain_item(item, pools):
    """The common case of _item_problems in one pass: plain names, no attribute with NUL, the pool one of ``pools``.
    A planner item always has these keys (planner._volume_item); anything unexpected takes the full check."""
    try:
        pv_name, handle, driver = item["pv_name"], item["volume_handle"], item["driver"]
        if (driver != names.LOOP_DRIVER and not (driver.__class__ is str and _PLAIN(driver))) or not (
                pv_name.__class__ is str and handle.__class__ is str and _PLAIN(pv_name) and _PLAIN(handle)):
            return False
        if item["mode"] not in _MODES or item["mount_options"]:
            return False
        capacity = item["capacity_bytes"]
        if capacity is not None and (capacity.__class__ is not int or capacity < 0):
            return False
        attributes = item["volume_attributes"]
    except (KeyError, TypeError):
        return False
    pool = None
    if attributes:
        for key, value in attributes.items():
            if key.__class__ is not str or value.__class__ is not str or "\x00" in key or "\x00" in value:
                return False
            if key == names.POOL_ATTRIBUTE:
                pool = value
    if driver == names.LOOP_DRIVER and (pool or names.DEFAULT_LOOP_POOL) not in pools:
        return False
    pods = item.get("pods")
    if pods:
        for pod in pods:
            uid = pod.get("uid")
            if uid.__class__ is not str or not _PLAIN(uid):
                return False
    return True


def _plugin_item_problems(item, plugin, driver_options):
    """An in-tree plugin's item (local, hostPath; contracts.md section 1): its names, mode (Block only for a plugin
    with Block mode), hostPath type (what the plugin's ITEM_TYPES allow), pods, and its path absolute, normalized and
    under the operator's directories for the plugin (driver_options; the node checks again with realpath). An item
    built from node facts alone (its PV gone: a teardown) carries no path and needs none."""
    cls = volume_plugins.get_plugin(plugin)
    problems = []
    for field, key in (("PV name", "pv_name"), ("volume handle", "volume_handle")):
        rule = _component_rule(field, item.get(key))
        if rule is not None:
            problems.append("%s %s: %s" % (field, safe_repr(item.get(key)), rule))
    mode = item.get("mode") or FILESYSTEM
    if mode not in (FILESYSTEM, BLOCK) or (not cls.BLOCK and mode == BLOCK):
        problems.append("mode %s: must be %s" % (safe_repr(mode), "Filesystem or Block" if cls.BLOCK
                                                 else "Filesystem"))
    # a plugin whose items carry no hostPath type (local): the node refuses one (node/volume.py)
    if cls.ITEM_TYPES != ("",) and item.get("host_path_type", "") not in cls.ITEM_TYPES:
        problems.append("hostPath type %s: not one of %s" % (safe_repr(item.get("host_path_type")),
                                                             ", ".join(repr(t) for t in cls.ITEM_TYPES)))
    path = item.get("path")
    if path is not None:
        roots = driver_options_mod.options_for(driver_options, plugin).get("paths") or []
        if not driver_options_mod.allowed(path, roots):
            problems.append("path %s: must be absolute, normalized and under the directories the operator allows for "
                            "%s (%s): the paths of %s" % (safe_repr(path), plugin, ", ".join(roots) or "none",
                                                          setting("driver_options", key=plugin)))
    for option in item.get("mount_options") or ():
        try:
            names.check_mount_option(option)
        except KubevolError as exc:
            problems.append("mount option %s: %s" % (safe_repr(option), exc.kwargs.get("reason")))
    for pod in item.get("pods") or ():
        rule = _component_rule("pod uid", pod.get("uid"))
        if rule is not None:
            problems.append("pod uid %s: %s" % (safe_repr(pod.get("uid")), rule))
    return problems


def _item_problems(item, pools, driver_options=None):
    if _plain_item(item, pools):
        return ()
    plugin = item.get("plugin")
    if plugin.__class__ is str and volume_plugins.is_in_tree(plugin):
        return _plugin_item_problems(item, plugin, driver_options)
    if plugin not in (None, CSI):
        return ["plugin %s: not a volume plugin kubevol serves (%s)" % (safe_repr(plugin),
                                                                        ", ".join(volume_plugins.names()))]
    attributes = item.get("volume_attributes") or {}
    capacity = item.get("capacity_bytes")
    driver = item.get("driver")
    rule = _component_rule("PV name", item.get("pv_name"))  # the node's volume_item
    problems = [] if rule is None else ["PV name %s: %s" % (safe_repr(item.get("pv_name")), rule)]
    rule = handle_refusal(driver, item.get("volume_handle"))  # the node's volume_item, then its driver's validate
    if rule is not None:
        problems.append("volume handle %s: %s" % (quote_handle(item.get("volume_handle")), rule))
    try:
        names.check_driver_name(driver)
    except KubevolError as exc:
        problems.append("driver %s: %s" % (safe_repr(driver), exc.kwargs.get("reason")))
    for key, value in attributes.items():
        if "\x00" in str(key) or "\x00" in str(value):
            problems.append("volumeAttributes %s: NUL is not allowed" % safe_repr(key))
    if (item.get("mode") or FILESYSTEM) not in (FILESYSTEM, BLOCK):
        problems.append("mode %s: must be Filesystem or Block" % safe_repr(item.get("mode")))
    if capacity is not None and (capacity.__class__ is not int or capacity < 0):
        problems.append("capacity %s: must be a non-negative integer" % safe_repr(capacity))
    for option in item.get("mount_options") or ():
        try:
            names.check_mount_option(option)
        except KubevolError as exc:
            problems.append("mount option %s: %s" % (safe_repr(option), exc.kwargs.get("reason")))
    if driver == names.LOOP_DRIVER:
        try:
            names.check_pool(attributes.get(names.POOL_ATTRIBUTE), pools)
        except KubevolError as exc:
            problems.append("pool %s: %s" % (safe_repr(attributes.get(names.POOL_ATTRIBUTE)),
                                             exc.kwargs.get("reason")))
    for pod in item.get("pods") or ():
        rule = _component_rule("pod uid", pod.get("uid"))
        if rule is not None:
            problems.append("pod uid %s: %s" % (safe_repr(pod.get("uid")), rule))
    return problems


def refuse_unsafe_steps(p, phases, pools, driver_options=None):
    """Drop every step a node would refuse, block it, and drop what depends on it: the later steps of the same
    (volume, node) pair (a device unmount after a refused pod unmount, a mount after a refused attach), and every
    attach of a volume whose detach was dropped (a ReadWriteOnce volume is never attached twice). Runs after the
    rules, before the plan is ordered; a plan of safe names passes untouched, checking each item once."""
    pools = normalized_pools(pools)
    seen = {}  # id(item) -> the item's problems (the items live as long as the steps: ids stay unique)
    refused_pairs = set()
    undetached = set()
    for phase in phases:
        steps = p.phases[phase]
        if not steps:
            continue
        kept = []
        newly = []
        check_pairs = bool(refused_pairs) or (phase == ("attach", "device") and bool(undetached))
        for step in steps:
            item = step.get("item")
            if item is not None:
                problems = seen.get(id(item))
                if problems is None:
                    problems = seen[id(item)] = _item_problems(item, pools, driver_options)
                uid = step.get("pod_uid")
                if (not problems and not check_pairs and (uid is None or (uid.__class__ is str and _PLAIN(uid)))
                        and step.get("pod_fs_group") is None):
                    kept.append(step)  # the common case: nothing refused so far, a plain item and pod
                    continue
            pair = (step.get("unique_volume_name"), step["node"])
            if pair in refused_pairs or (phase == ("attach", "device") and pair[0] in undetached):
                why = ("an earlier step of this volume on node %s was refused" % step["node"]
                       if pair in refused_pairs else "its detach from another node was refused")
                p.block(step["node"], label(step["volume"]), label(step["pod"]) if step.get("pod") else None,
                        "%s %s not planned: %s, fix what that step names [%s]" % (
                    phase[0], phase[1], why, OBJECT_REFUSED))
                newly.append(pair)
                if phase == ("detach", "device"):
                    undetached.add(pair[0])
                continue
            problem = step_problem(step, pools, seen, driver_options)
            if problem is None:
                kept.append(step)
                continue
            p.block(step["node"], label(step["volume"]), label(step.get("pod")) if step.get("pod") else None,
                    "%s %s on node %s refused at plan time: %s; fix the object [%s]"
                    % (phase[0], phase[1], step["node"], problem, OBJECT_REFUSED))
            newly.append(pair)
            if phase == ("detach", "device"):
                undetached.add(pair[0])
        if len(kept) != len(steps):
            steps[:] = kept
        refused_pairs.update(newly)
