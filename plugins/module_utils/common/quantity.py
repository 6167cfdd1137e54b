# -*- coding: utf-8 -*-
# Copyright: kubevol contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""resource.Quantity as Kubernetes parses, compares and prints it.

Source: kubernetes/apimachinery pkg/api/resource/quantity.go (ParseQuantity,
parseQuantityString, CanonicalizeBytes, Cmp) and suffix.go (the suffixer).
Values are exact: the number is read as an integer mantissa and a power of
ten, never through float. Like ParseQuantity, non-zero values are rounded up
(away from zero) to nano scale and BinarySI values are capped at 2^63-1.

The official Python client (kubernetes.utils.parse_quantity) is looser: it
accepts ``K`` and anything ``Decimal()`` accepts (``inf``, ``1_0``); this
module rejects those like the API server does.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from decimal import Decimal
from functools import lru_cache

from ansible_collections.kubevol.volumes.plugins.module_utils.common.errors import QuantityError

BINARY_SI = "BinarySI"
DECIMAL_SI = "DecimalSI"
DECIMAL_EXPONENT = "DecimalExponent"

# suffix -> (base, exponent); suffix.go newSuffixer
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXPONENT = dict((e, s) for s, e in _DECIMAL_SUFFIXES.items())
_BINARY_BY_EXPONENT = dict((e, s) for s, e in _BINARY_SUFFIXES.items())

_NUMBER = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?(.*)", re.DOTALL)
_EXPONENT_SUFFIX = re.compile(r"[eE][+-]?[0-9]+")
_NANO = 10 ** 9
_MAX_INT64 = (1 << 63) - 1


def _parse(value, field):
    """Return (nano-units int, format) for a quantity string; QuantityError if malformed."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise QuantityError(value=value, field=field, reason="must be a string such as 10Gi")
    text = str(value)
    if text == "":
        raise QuantityError(value=value, field=field, reason="quantities must match the regular expression "
                            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    match = _NUMBER.fullmatch(text)
    sign, whole, frac, suffix = match.groups()
    frac = frac or ""
    if whole == "" and frac == "":
        raise QuantityError(value=value, field=field, reason="no digits before the suffix")
    mantissa = int(whole + frac or "0")
    scale = -len(frac)  # value = mantissa * 10**scale
    if suffix in _BINARY_SUFFIXES:
        fmt, ten_exp, two_exp = BINARY_SI, 0, _BINARY_SUFFIXES[suffix]
    elif suffix in _DECIMAL_SUFFIXES:
        fmt, ten_exp, two_exp = DECIMAL_SI, _DECIMAL_SUFFIXES[suffix], 0
    elif _EXPONENT_SUFFIX.fullmatch(suffix):
        fmt, ten_exp, two_exp = DECIMAL_EXPONENT, int(suffix[1:]), 0
        if abs(ten_exp) > 1000:
            raise QuantityError(value=value, field=field, reason="exponent out of range")
    else:
        raise QuantityError(value=value, field=field, reason="unable to parse quantity's suffix %r" % suffix)
    # nano = ceil(mantissa * 10**(scale+ten_exp) * 2**two_exp * 1e9), away from zero
    numerator = mantissa * (2 ** two_exp)
    power = scale + ten_exp + 9
    if power >= 0:
        nano = numerator * 10 ** power
    else:
        nano = -((-numerator) // 10 ** (-power))
    if sign == "-":
        nano = -nano
    if fmt == BINARY_SI and nano > _MAX_INT64 * _NANO:
        nano = _MAX_INT64 * _NANO
    if fmt == BINARY_SI and 0 < nano < _NANO:
        fmt = DECIMAL_SI
    return nano, fmt


@lru_cache(maxsize=4096)
def _parse_hashable(value, field):
    return _parse(value, field)


def _parse_cached(value, field):
    """Capacities repeat across thousands of PVs: parse each distinct string once."""
    if isinstance(value, str):
        return _parse_hashable(value, field)
    return _parse(value, field)


def _nano_to_decimal(nano):
    return Decimal(nano).scaleb(-9).normalize() if nano % _NANO else Decimal(nano // _NANO)


def parse_quantity(value, field="quantity"):
    """The exact value of a Kubernetes quantity string as a Decimal ('1Gi' -> 1073741824)."""
    return _nano_to_decimal(_parse_cached(value, field)[0])


def _whole_bytes(nano):
    return -((-nano) // _NANO)  # rounded up: a capacity is never rounded down


@lru_cache(maxsize=4096)
def _string_bytes(value, field):
    """to_bytes of a quantity string: a cluster names a few sizes, three per PV/PVC pair (a refusal is never kept:
    it raises, naming its field)."""
    return _whole_bytes(_parse(value, field)[0])


def to_bytes(value, field="quantity"):
    """A size in whole bytes, rounded up (a capacity is never rounded down)."""
    if isinstance(value, str):
        return _string_bytes(value, field)
    return _whole_bytes(_parse(value, field)[0])


def compare(a, b, field="quantity"):
    """-1, 0 or 1 as resource.Quantity.Cmp: by value, whatever the suffix ('1Gi' > '1G')."""
    x, y = _parse_cached(a, field)[0], _parse_cached(b, field)[0]
    return (x > y) - (x < y)


def _strip_factor(n, factor, limit):
    count = 0
    while n and n % factor == 0 and count < limit:
        n //= factor
        count += 1
    return n, count


def format_quantity(value, field="quantity"):
    """The canonical string Kubernetes prints for a quantity (CanonicalizeBytes).

    Keeps the parsed format family and picks the largest suffix that leaves no
    fraction: 1024Mi -> 1Gi, 1.5Gi -> 1536Mi, 1000M -> 1G, 1.5 -> 1500m, 1e3 -> 1e3.
    """
    nano, fmt = _parse_cached(value, field)
    if nano == 0:
        return "0"
    sign = "-" if nano < 0 else ""
    magnitude = abs(nano)
    if fmt == BINARY_SI and (magnitude < 1024 * _NANO or magnitude % _NANO):
        fmt = DECIMAL_SI
    if fmt == BINARY_SI:
        number, count = _strip_factor(magnitude // _NANO, 1024, 6)
        return "%s%d%s" % (sign, number, _BINARY_BY_EXPONENT.get(count * 10, ""))
    # decimal: mantissa with the exponent a multiple of 3, starting from nano
    number, count = _strip_factor(magnitude, 10, 10 ** 6)
    exponent = count - 9
    while exponent % 3:
        number *= 10
        exponent -= 1
    if fmt == DECIMAL_EXPONENT:
        return "%s%d%s" % (sign, number, ("e%d" % exponent) if exponent else "")
    while exponent > 18:
        number *= 1000
        exponent -= 3
    return "%s%d%s" % (sign, number, _DECIMAL_BY_EXPONENT[exponent])


@lru_cache(maxsize=4096)  # the plan's messages and items say a few sizes over and over: thousands of calls
def format_bytes(size):
    """Bytes as a person writes them: the shorter of the canonical BinarySI and DecimalSI forms Kubernetes
    prints (1073741824 -> 1Gi, 10000000000 -> 10G, not 9765625Ki); BinarySI on a tie."""
    binary = format_quantity("%dKi" % (size // 1024)) if size and size % 1024 == 0 else format_quantity(str(size))
    decimal = format_quantity(str(size))
    return decimal if len(decimal) < len(binary) else binary
