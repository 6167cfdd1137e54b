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

The planner's last pass over its own steps (step_refusals.py refuse_unsafe_steps) runs these rules and texts on the
items it built (from node facts or a VolumeAttachment too). Kubernetes' API server validates these names (apimachinery
validation.IsDNS1123Subdomain, ValidatePodName; pkg/apis/core/validation ValidatePersistentVolume) and the kubelet
refuses a path outside its directory (pkg/volume/util/subpath, utilpath); a snapshot file passes neither, so kubevol
checks them itself.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

from ansible_collections.kubevol.volumes.plugins.module_utils.common import names
from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import KubevolError, SettingRefused
from ansible_collections.kubevol.volumes.plugins.module_utils.common.handles import quote_handle
from ansible_collections.kubevol.volumes.plugins.module_utils.common.words import setting
from ansible_collections.kubevol.volumes.plugins.module_utils.plan.codes import OBJECT_REFUSED
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
