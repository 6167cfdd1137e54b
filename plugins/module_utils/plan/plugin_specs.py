# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Local and hostPath PVs in the desired state: what Kubernetes and the operator refuse before any node acts.

Split from desired_state.py. Kubernetes: pkg/apis/core/validation ValidatePersistentVolumeSpec ("Local volume
requires node affinity"; validateLocalVolumeSource and validateHostPathVolumeSource: validatePathNoBacksteps
"must not contain '..'"; validateHostPathType "supported values: ..."; hostPath has no Block mode:
"may not specify more than 1 volume type", the kubelet's host_path.go is no BlockVolumePlugin), the scheduler's
VolumeBinding plugin (pkg/scheduler/framework/plugins/volumebinding: "node(s) had volume node affinity conflict";
pkg/volume/util CheckNodeAffinity). The operator's allowed directories: driver_options (common/driver_options.py),
checked as strings here and with realpath on the node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import node_matches
from ansible_collections.kubevol.volumes.plugins.module_utils.common import driver_options as options_mod
from ansible_collections.kubevol.volumes.plugins.module_utils.volume import HOST_PATH, LOCAL
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.base import DEFAULT_FS_TYPE, FS_TYPES
from ansible_collections.kubevol.volumes.plugins.module_utils.volume.host_path import HOST_PATH_TYPES

AFFINITY_CONFLICT = "volume node affinity conflict"
NODE = "\x00node\x00"  # a refusal's placeholder for "node <name>", filled per pod (node_text)


def node_text(reason, node=None):
    """A resolver reason with its node placeholder filled in (the resolver caches per claim, not per node)."""
    return reason.replace(NODE, "node %s" % node if node else "any node") if NODE in reason else reason


def _option_hint(plugin, roots):
    return ("driver_options[%r].paths (reconcile role: kubevol_driver_options; now: %s)"
            % (plugin, ", ".join(roots) if roots else "none: nothing is allowed"))


def path_refusal(pv_name, field, path, plugin, roots):
    """Why ``path`` (spec.local.path / spec.hostPath.path) is refused, or None: absolute, normalized, under one of the
    operator's directories for ``plugin``."""
    where = "PV %s: %s %r" % (pv_name, field, path)
    if not isinstance(path, str) or not path.startswith("/") or "\x00" in path:
        return ("%s is not an absolute path; nothing is mounted or created on %s. Write the PV's path as an "
                "absolute path" % (where, NODE))
    if ".." in path.split("/"):
        return ("%s must not contain '..' (Kubernetes: validatePathNoBacksteps); nothing is mounted or created on "
                "%s. Fix the PV's path" % (where, NODE))
    if path.startswith("//") or posixpath.normpath(path) != path:
        return ("%s is not a normalized path (no '.', '//' or trailing '/'), write it as %r; nothing is mounted or "
                "created on %s" % (where, posixpath.normpath(path), NODE))
    if not options_mod.allowed(path, roots):
        return ("%s is outside the directories the operator allows for %s; nothing is mounted or created on "
                "%s. Move the volume under an allowed directory, or add its directory to %s"
                % (where, plugin, NODE, _option_hint(plugin, roots)))
    return None


def local_refusals(pv, driver_options):
    """What is refused of a local PV whatever the node: texts."""
    refusals = []
    if pv.node_affinity is None:
        refusals.append("PV %s: spec.nodeAffinity: Required value: Local volume requires node affinity (Kubernetes "
                        "refuses a local PV without it: the volume exists on one node only); nothing is mounted on "
                        "%s. Add spec.nodeAffinity naming the node that has %s" % (pv.name, NODE, pv.local.path))
    roots = options_mod.options_for(driver_options, LOCAL).get("paths") or []
    problem = path_refusal(pv.name, "spec.local.path", pv.local.path, LOCAL, roots)
    if problem is not None:
        refusals.append(problem)
    fs_type = pv.local.fs_type or DEFAULT_FS_TYPE
    if pv.volume_mode != "Block" and fs_type not in FS_TYPES:
        refusals.append("PV %s: spec.local.fsType %r is not one kubevol formats or mounts (%s); fix the PV"
                        % (pv.name, pv.local.fs_type, ", ".join(sorted(FS_TYPES))))
    return refusals


def host_path_refusals(pv, driver_options):
    """What is refused of a hostPath PV whatever the node: texts."""
    refusals = []
    source = pv.host_path
    if pv.volume_mode == "Block":
        refusals.append("PV %s: spec.volumeMode Block is not supported by the kubernetes.io/host-path plugin (a "
                        "hostPath volume is a filesystem path; the kubelet has no block mapper for it); nothing is "
                        "set up on %s. Use volumeMode Filesystem, or a local PV for a block device"
                        % (pv.name, NODE))
    if source.type not in HOST_PATH_TYPES:
        refusals.append("PV %s: spec.hostPath.type: Unsupported value: %r: supported values: %s; nothing is checked "
                        "or created on %s. Fix the PV's type" % (
                            pv.name, source.type, ", ".join('"%s"' % t for t in HOST_PATH_TYPES), NODE))
    roots = options_mod.options_for(driver_options, HOST_PATH).get("paths") or []
    problem = path_refusal(pv.name, "spec.hostPath.path", source.path, HOST_PATH, roots)
    if problem is not None:
        refusals.append(problem)
    return refusals


def plugin_refusals(pv, driver_options):
    """The PV-level refusals of a local or hostPath PV (empty for any other PV)."""
    if pv.local is not None:
        return local_refusals(pv, driver_options)
    if pv.host_path is not None:
        return host_path_refusals(pv, driver_options)
    return []


def affinity_conflict(pv_name, terms, node):
    """The scheduler's reason when ``node`` (a cluster Node) is outside a PV's nodeAffinity ``terms``, else None
    (volumebinding CheckNodeAffinity; a PV without nodeAffinity fits every node)."""
    if terms is None or node is None:
        return None
    if node_matches(terms, node.name, dict(node.labels)):
        return None
    return ("PV %s: node(s) had %s: node %s is outside the PV's spec.nodeAffinity (the scheduler's VolumeBinding "
            "plugin never places a pod there); nothing is mounted. Schedule the pod onto a node the PV's "
            "nodeAffinity selects, or fix the PV's nodeAffinity" % (pv_name, AFFINITY_CONFLICT, node.name))


def plugin_volume_spec(spec_cls, pv, pvc, read_only, multi_attach):
    """The VolumeSpec of a local or hostPath PV (pvc None: a PV only actual state still refers to): driver None,
    volume_handle the PV name (contracts section 2), never attachable."""
    local = pv.local
    if local is not None:
        plugin, path, host_type, fs_type = LOCAL, local.path, "", local.fs_type or DEFAULT_FS_TYPE
    else:
        plugin, path, host_type, fs_type = HOST_PATH, pv.host_path.path, pv.host_path.type, DEFAULT_FS_TYPE
    return spec_cls(pv.name, "%s/%s" % (plugin, pv.name), None, pv.name, (), pv.capacity_bytes, pv.volume_mode,
                    fs_type, pv.mount_options, read_only, multi_attach, False,
                    pvc.namespace + "/" + pvc.name if pvc else None, pvc.request_bytes if pvc else 0,
                    pvc.capacity_bytes if pvc else None, tuple(pv.access_modes), "ReadWriteOnceWithFSType",
                    pvc.allocated_bytes if pvc else None, pvc.resize_status if pvc else None, plugin, path,
                    host_type, pv.node_affinity)
