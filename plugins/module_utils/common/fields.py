# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The field checks every object builder of the cluster model shares (cluster/objects.py, cluster/pv.py, and the PV
sources the in-tree volume plugins parse: volume/local.py, volume/host_path.py): a field of the wrong type is refused
with its path, never carried into a plan."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def pairs(mapping, where):
    if not mapping:
        return ()
    if not isinstance(mapping, dict):
        raise TypeError("%s must be a mapping" % where)
    if len(mapping) == 1:  # most labels, annotations and volumeAttributes: nothing to sort
        for k, v in mapping.items():
            return ((str(k), str(v)),)
    return tuple(sorted([(str(k), str(v)) for k, v in mapping.items()]))


def require_str(value, what):
    if not isinstance(value, str) or not value:
        raise TypeError("%s must be a non-empty string, got %r" % (what, value))
    return value


def optional_str(value, what):
    """A string field Kubernetes may leave out: None or "" stay as they are, anything else but a string is refused
    (a namespace or a claim name used as a key later must not be a list or a mapping)."""
    if value is not None and value.__class__ is not str:
        raise TypeError("%s must be a string, got %r" % (what, value))
    return value


def strings(values, what):
    """A list of strings (accessModes, mountOptions) as a tuple."""
    values = tuple(values or ())
    for value in values:
        if value.__class__ is not str:
            raise TypeError("%s entries must be strings, got %r" % (what, value))
    return values
