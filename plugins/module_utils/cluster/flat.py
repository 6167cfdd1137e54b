# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The model's most numerous objects as plain tuples and back, for the part of a big file that another process reads
(cluster/load_split.py): marshal, the fastest way to hand objects between processes, takes plain tuples, strings,
numbers and dicts only, and its loads is a C loop where pickle calls each namedtuple's class from Python.

Only Nodes, Pods, PersistentVolumes without a parsed in-tree source or node affinity, and claims have a flat form; any
other object crosses as the List item it was built from, and is built again on this side. ``unflat(flat(obj))`` is
``obj``, class for class (tests/unit/test_cluster_flat.py over generated clusters).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.objects import (
    AttachedVolumeStatus, Cluster, Node, PersistentVolumeClaim, Taint)
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pod import Pod, PodVolume
from ansible_collections.kubevol.volumes.plugins.module_utils.cluster.pv import ClaimRef, CSISource, PersistentVolume

_make = tuple.__new__  # the class set on a plain tuple without the namedtuple's Python __new__


def _flat_node(node):
    return node[:2] + (tuple([tuple(taint) for taint in node[2]]), node[3],
                       tuple([tuple(status) for status in node[4]])) + node[5:]


def _node(flat):
    return _make(Node, flat[:2] + (tuple([_make(Taint, taint) for taint in flat[2]]), flat[3],
                                   tuple([_make(AttachedVolumeStatus, status) for status in flat[4]])) + flat[5:])


def _flat_volume(volume):
    csi = volume[5]
    return tuple(volume) if csi is None else volume[:5] + (tuple(csi),)


def _volume(flat):
    csi = flat[5]
    return _make(PodVolume, flat if csi is None else flat[:5] + (_make(CSISource, csi),))


def _flat_pod(pod):
    return pod[:7] + (tuple([_flat_volume(volume) for volume in pod[7]]),) + pod[8:]


def _pod(flat):
    # _volume's common case inline: a call less for each pod volume
    return _make(Pod, flat[:7] + (tuple([_make(PodVolume, volume) if volume[5] is None else _volume(volume)
                                         for volume in flat[7]]),) + flat[8:])


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
