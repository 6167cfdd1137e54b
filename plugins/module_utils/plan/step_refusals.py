# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's last pass over its own steps: whatever a node module would refuse in a step's item or pod is dropped
and blocked, with the steps that depend on it.

Split from validation.py, which refuses the cluster's objects while the desired state is built; this pass checks the
items the planner built itself (from node facts or a VolumeAttachment too), with the same rules (names.py's
functions, validation.py's texts): CSI items as node/volume.py volume_item and the loop driver's pool, local and
hostPath items too (their path absolute, normalized and under the operator's directories for the plugin,
driver_options). The kubelet refuses a path outside its directory (pkg/volume/util/subpath, utilpath); a snapshot
file passes no API server, so kubevol checks them itself.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options as driver_options_mod
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError
from ansible_collections.kubevol.volumes.plugins.module_utils.common.handles import quote_handle
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import OBJECT_REFUSED
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.validation import (
    BLOCK, FILESYSTEM, _MODES, _PLAIN, _component_rule, label, normalized_pools, safe_repr)
from ansible_collections.kubevol.volumes.plugins.module_utils import volume as volume_plugins
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import CSI
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.csi import handle_refusal


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
