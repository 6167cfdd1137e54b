# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Immutable value objects for the node code: what ``@dataclass(frozen=True)`` gives, without ``dataclasses``.

Importing ``dataclasses`` loads ``inspect`` (with ``ast``, ``dis`` and ``tokenize``), and each decorated class
generates its methods with ``exec``: every node run would pay that again, since a module's payload keeps no
bytecode (docs/performance.md). A class lists its fields once, in order, each with its default or ``REQUIRED``;
instances take them by position or keyword, compare and hash by value and refuse assignment.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

REQUIRED = object()


class Value:
    """Subclasses set ``FIELDS = (("name", REQUIRED), ("other", default), ...)``; a default must be immutable."""

    FIELDS = ()

    def __init__(self, *args, **kwargs):
        if len(args) > len(self.FIELDS):
            raise TypeError("%s takes at most %d arguments (%d given)" % (type(self).__name__, len(self.FIELDS), len(args)))
        values = dict(zip((name for name, _default in self.FIELDS), args))
        for name, value in kwargs.items():
            if name in values:
                raise TypeError("%s got two values for %s" % (type(self).__name__, name))
            values[name] = value
        known = set(name for name, _default in self.FIELDS)
        unknown = sorted(set(values) - known)
        if unknown:
            raise TypeError("%s has no field %s" % (type(self).__name__, ", ".join(unknown)))
        for name, default in self.FIELDS:
            value = values.get(name, default)
            if value is REQUIRED:
                raise TypeError("%s needs %s" % (type(self).__name__, name))
            object.__setattr__(self, name, value)

    def _values(self):
        return tuple(getattr(self, name) for name, _default in self.FIELDS)

    def __setattr__(self, name, value):
        raise AttributeError("cannot assign to field %r of %s: it is immutable" % (name, type(self).__name__))

    def __delattr__(self, name):
        raise AttributeError("cannot delete field %r of %s: it is immutable" % (name, type(self).__name__))

    def __eq__(self, other):
        return type(other) is type(self) and other._values() == self._values()

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((type(self).__name__,) + self._values())

    def __repr__(self):
        fields = ", ".join("%s=%r" % (name, getattr(self, name)) for name, _default in self.FIELDS)
        return "%s(%s)" % (type(self).__name__, fields)
