# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model's most numerous objects as plain tuples and back, for the part of a big file that another process reads
(cluster/load_split.py): marshal, the fastest way to hand objects between processes, takes plain tuples, strings,
numbers and dicts only, and its loads is a C loop where pickle calls each namedtuple's class from Python.

Only Nodes, Pods without an inline CSI volume, PersistentVolumes without a parsed in-tree source or node affinity, and
claims have a flat form; any other object crosses as the List item it was built from, and is built again on this
side. ``unflat(flat(obj))`` is ``obj``, class for class (tests/unit/plugins/module_utils/test_cluster_split.py).
The nested namedtuples are typed again through ``map`` over a ``partial``: no Python frame per object.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from functools import partial

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (
    AttachedVolumeStatus, Cluster, Node, PersistentVolumeClaim, Taint)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pod import Pod, PodVolume
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import ClaimRef, CSISource, PersistentVolume

_make = tuple.__new__  # the class set on a plain tuple without the namedtuple's Python __new__


def _flat_node(node):
    return node[:2] + (tuple([tuple(taint) for taint in node[2]]), node[3],
                       tuple([tuple(status) for status in node[4]])) + node[5:]


_new_taint = partial(_make, Taint)
_new_status = partial(_make, AttachedVolumeStatus)


def _node(flat):
    return _make(Node, flat[:2] + (tuple(map(_new_taint, flat[2])), flat[3], tuple(map(_new_status, flat[4])))
                 + flat[5:])


def _flat_pod(pod):
    for volume in pod[7]:
        if volume[5] is not None:
            return None  # an inline CSI volume's source: rare enough to build again from the item
    return pod[:7] + (tuple([tuple(volume) for volume in pod[7]]),) + pod[8:]


_new_volume = partial(_make, PodVolume)


def _pod(flat):
    return _make(Pod, flat[:7] + (tuple(map(_new_volume, flat[7])),) + flat[8:])


def _flat_pv(pv):
    if pv[8] is not None or pv[9] is not None:
        return None  # an in-tree source or a node affinity: objects of their own, built again from the item
    claim_ref, csi = pv[5], pv[6]
    return pv[:5] + (None if claim_ref is None else tuple(claim_ref), None if csi is None else tuple(csi)) + pv[7:]


def _pv(flat):
    claim_ref, csi = flat[5], flat[6]
    return _make(PersistentVolume, flat[:5] + (None if claim_ref is None else _make(ClaimRef, claim_ref),
                                               None if csi is None else _make(CSISource, csi)) + flat[7:])


def _flat_claim(claim):
    return tuple(claim)


def _claim(flat):
    return _make(PersistentVolumeClaim, flat)


_SLOT = Cluster._fields.index
# Cluster slot -> (flat, unflat); flat gives None for an object that has no flat form
CODECS = {
    _SLOT("nodes"): (_flat_node, _node),
    _SLOT("pods"): (_flat_pod, _pod),
    _SLOT("persistent_volumes"): (_flat_pv, _pv),
    _SLOT("claims"): (_flat_claim, _claim),
}
